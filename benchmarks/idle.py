"""Idle footprint of the running app: RSS and CPU after the embedder is released, collectors on.

    .venv/bin/python benchmarks/idle.py [--events 2000] [--sample 60] [--idle-release 20]

Builds a data folder with ``--events`` stored and processed events (the workload mix) and every
first-party collector enabled on small local sources made here (a Git repository, a shell
history, an .ics file, a play log, a Chromium history file; app usage samples whatever window
system there is). Starts ``magi app`` (offscreen Qt) as a separate process with the model released
after ``--idle-release`` seconds, waits until its queues are empty and the model has been released,
then samples its RSS and CPU for ``--sample`` seconds. Prints one JSON line; targets: RSS ≤ 150 MB,
CPU < 1 %.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import payloads

from magi_desktop.core import Memory
from magi_desktop.core.store.connection import connect

RSS_TARGET_MB = 150
CPU_TARGET_PERCENT = 1.0


def sources(folder: Path) -> dict:
    import git

    repo = git.Repo.init(folder / "repo", initial_branch="main")
    (folder / "repo" / "a.txt").write_text("a\n")
    repo.index.add([str(folder / "repo" / "a.txt")])
    who = git.Actor("Ana", "ana@example.com")
    repo.index.commit("Initial import", author=who, committer=who)
    (folder / "zsh_history").write_text(": 1764000000:0;make test\n: 1764000060:0;git push\n")
    (folder / "cal.ics").write_text("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//bench//EN\nBEGIN:VEVENT\n"
                                    "UID:w@x\nDTSTART:20261201T090000Z\nDTEND:20261201T091500Z\n"
                                    "RRULE:FREQ=WEEKLY\nSUMMARY:Standup\nEND:VEVENT\nEND:VCALENDAR\n")
    (folder / "plays.jsonl").write_text(json.dumps({"played_at": time.time() - 3600, "track": "So What",
                                                    "artist": "Miles Davis", "duration_sec": 545}) + "\n")
    history = folder / "History"
    conn = sqlite3.connect(history)
    conn.executescript("CREATE TABLE urls(id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER, "
                       "typed_count INTEGER, last_visit_time INTEGER, hidden INTEGER);"
                       "CREATE TABLE visits(id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER, "
                       "from_visit INTEGER, transition INTEGER, segment_id INTEGER, visit_duration INTEGER);")
    raw = int((time.time() - 600 + 11_644_473_600) * 1e6)
    conn.execute("INSERT INTO urls VALUES (1, 'https://example.com/', 'Example', 1, 0, ?, 0)", (raw,))
    conn.execute("INSERT INTO visits VALUES (1, 1, ?, 0, 0, 0, 0)", (raw,))
    conn.commit()
    conn.close()
    return {
        "git": {"enabled": True, "settings": {"repositories": [str(folder / "repo")]}},
        "terminal": {"enabled": True, "settings": {"files": [str(folder / "zsh_history")]}},
        "calendar": {"enabled": True, "settings": {"paths": [str(folder / "cal.ics")]}},
        "music": {"enabled": True, "settings": {"play_log": str(folder / "plays.jsonl")}},
        "browser": {"enabled": True, "settings": {"profiles": [str(history)]}},
        "app_usage": {"enabled": True},
    }


def probe(data: Path) -> tuple[int, dict]:
    """Queued work and collector statuses, read-only (the benchmark must not disturb the app)."""
    conn = connect(data / "memory.db", readonly=True)
    try:
        now = time.time()
        pending = conn.execute("SELECT (SELECT count(*) FROM embedding_jobs WHERE state = 'pending' AND "
                               "next_attempt_at <= ?) + (SELECT count(*) FROM l2_projection_jobs WHERE "
                               "state = 'pending' AND next_attempt_at <= ?)", (now, now)).fetchone()[0]
        statuses = {name: json.loads(text) for name, text in conn.execute(
            "SELECT name, status_json FROM plugin_state WHERE status_json IS NOT NULL")}
    finally:
        conn.close()
    return pending, statuses


def measure(data: Path, collectors: dict, *, sample: float, idle_release: float, timeout: float,
            config: Path) -> dict:
    """Start ``magi app`` (offscreen) on ``data``; once every collector in ``collectors`` has run, the queues are
    empty and the model has been released, sample its RSS and CPU for ``sample`` seconds."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", MAGI_DATA_DIR=str(data),
               MAGI_EMBEDDER_IDLE_SECONDS=str(idle_release), XDG_CONFIG_HOME=str(config))
    started = time.monotonic()
    app = subprocess.Popen([sys.executable, "-m", "magi_desktop.cli", "app"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    proc = psutil.Process(app.pid)
    peak = 0.0
    try:
        # Settle: collectors' first runs are stored and embedded, then the model is released.
        quiet_since = None
        settled = False
        while time.monotonic() - started < timeout:
            if app.poll() is not None:
                said = app.stderr.read() if app.stderr else ""
                raise SystemExit(f"the app exited with {app.returncode}: {said[-2000:]}")
            peak = max(peak, proc.memory_info().rss / 2**20)
            pending, stored = probe(data)
            if pending == 0 and len(stored) == len(collectors):
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > idle_release + 10:
                    settled = True
                    break
            else:
                quiet_since = None
            time.sleep(1.0)
        settle = time.monotonic() - started
        _, before = probe(data)
        rss = []
        cpu_start = sum(proc.cpu_times()[:2])
        t0 = time.monotonic()
        while time.monotonic() - t0 < sample:
            time.sleep(1.0)
            rss.append(proc.memory_info().rss / 2**20)
        cpu = (sum(proc.cpu_times()[:2]) - cpu_start) / (time.monotonic() - t0) * 100
    finally:
        app.terminate()
        try:
            app.wait(30)
        except subprocess.TimeoutExpired:
            app.kill()
    _, statuses = probe(data)
    return {
        "collector_runs": {name: s["runs"] for name, s in statuses.items()},
        # What the collectors did while the CPU was sampled: runs that found nothing new store nothing.
        "runs_during_sample": {name: s["runs"] - before.get(name, {}).get("runs", 0) for name, s in statuses.items()},
        "stored_during_sample": {name: s["counts"].get("stored", 0)
                                 - before.get(name, {}).get("counts", {}).get("stored", 0)
                                 for name, s in statuses.items()},
        "collector_errors": {name: s["last_error"] for name, s in statuses.items() if s["last_error"]},
        "collector_health": {name: (s.get("health") or {}).get("state") for name, s in statuses.items()},
        "settled": settled, "settle_seconds": round(settle, 1), "sample_seconds": sample,
        "rss_mb_idle": round(max(rss), 1), "rss_mb_idle_mean": round(sum(rss) / len(rss), 1),
        "rss_mb_peak_before_idle": round(peak, 1), "cpu_percent_idle": round(cpu, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--sample", type=float, default=60.0, help="seconds of idle sampling")
    parser.add_argument("--idle-release", type=float, default=20.0, help="MAGI_EMBEDDER_IDLE_SECONDS for the app")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="magi-idle-"))
    data = folder / "data"
    with Memory.open(data) as memory:
        memory.ingest_many(list(payloads(args.events)))
        memory.process_pending()
    collectors = sources(folder)
    (data / "collectors.json").write_text(json.dumps({"collectors": collectors}))
    measured = measure(data, collectors, sample=args.sample, idle_release=args.idle_release, timeout=args.timeout,
                       config=folder / "config")
    result = {
        "benchmark": "idle", "events": args.events, "collectors": sorted(collectors), **measured,
        "targets": {"rss_mb": RSS_TARGET_MB, "cpu_percent": CPU_TARGET_PERCENT},
        "meets_targets": measured["rss_mb_idle"] <= RSS_TARGET_MB and measured["cpu_percent_idle"] < CPU_TARGET_PERCENT,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
