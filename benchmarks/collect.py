"""Collectors' back-fill rate on generated real-format sources, and the app's CPU while they idle. One JSON line.

    .venv/bin/python benchmarks/collect.py                     # 100k visits, 50k commands, 20k commits, 5k events
    .venv/bin/python benchmarks/collect.py --quick             # a smoke run: small sources, a 20-s sample
    .venv/bin/python benchmarks/collect.py --only git,calendar --no-idle

**Back-fill.** For each collector, sources are generated in a temporary folder (``collector_sources.py``): a
Chromium ``History`` and a Firefox ``places.sqlite`` (70 % / 30 % of the visits), a bash (``HISTTIMEFORMAT``) and
a zsh extended history (60 % / 40 % of the commands), a repository written by ``git fast-import`` (commits by two
authors changing real files), an ``.ics`` file (single, all-day, cancelled and weekly recurring events, EXDATEs,
moved occurrences, Europe/Berlin time). The collector alone is enabled in a new data folder and run by the real
``Supervisor`` (``build_supervisor``, as the app builds it) into a real ``Memory`` with the hashing embedder; the
embedding queue is left waiting (the app embeds in the background; MiniLM's rate is in ``ingest.py``). A run the
supervisor cuts at ``MAX_PER_RUN`` items is followed at once by the next one (made due with ``Supervisor.wake``;
the app would wait for the collector's interval), until a run ends uncut: the back-fill is complete (a cut run
that stores nothing new, or ``--max-runs`` cut runs, is "looping"). Meanwhile the supervisor is ticked every
``TICK_SECONDS``, as the app ticks it, so a run longer than the host's hang timeout is abandoned here as it would
be there. Reported per collector: runs, items stored (and what a reader should store: not-web visits, cancelled
occurrences left out), wall and CPU seconds (this process, all threads; ``git`` subprocesses apart), items/s,
per-run figures, what was skipped and rejected by reason, the health the last run left, and one more run with
nothing new.

**Idle.** A new data folder with all six collectors enabled on small sources (the same generators, a play
log; app usage samples whatever window system there is); ``magi app`` starts as its own process (offscreen
Qt). Once every collector has run, the queues are empty and the model has been released (``idle.py``), its
CPU (user + system seconds over wall seconds, psutil) is sampled for ``--sample`` seconds: the collectors'
runs in that time find nothing new. Target < 1 %.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import collector_sources as sources
from idle import measure

from magi_desktop.collectors import build_supervisor
from magi_desktop.collectors.supervisor import MAX_PER_RUN, RUN_TIMEOUT_SECONDS
from magi_desktop.core import Memory

SIZES = {"browser": 100_000, "terminal": 50_000, "git": 20_000, "calendar": 5_000}
QUICK_SIZES = {"browser": 6_000, "terminal": 3_000, "git": 300, "calendar": 300}
IDLE_SIZES = {"browser": 300, "terminal": 200, "git": 50, "calendar": 40}
UNITS = {"browser": "visits", "terminal": "commands", "git": "commits", "calendar": "VEVENTs"}
FIREFOX_SHARE = 0.3
BASH_SHARE = 0.6
TICK_SECONDS = 5.0            # the app's scheduler ticks the supervisor this often (ui/scheduler.py)
MAX_RUNS = 20                 # a back-fill still cut after this many runs is reported as looping
CPU_TARGET_PERCENT = 1.0


def make_sources(name: str, size: int, folder: Path, now: float) -> tuple[dict[str, Any], sources.Made]:
    """Generate ``size`` items for collector ``name`` under ``folder``: (its settings, what was made)."""
    if name == "browser":
        firefox = int(size * FIREFOX_SHARE)
        chrome = sources.chromium_history(folder / "google-chrome" / "Default" / "History", size - firefox, now)
        fox = sources.firefox_places(folder / "firefox" / "bench.default-release" / "places.sqlite", firefox, now)
        made = sources.Made(chrome.paths + fox.paths, chrome.items + fox.items, chrome.expected + fox.expected)
        return {"profiles": [str(p) for p in made.paths]}, made
    if name == "terminal":
        bash_lines = int(size * BASH_SHARE)
        bash = sources.bash_history(folder / "bash_history", bash_lines, now)
        zsh = sources.zsh_history(folder / "zsh_history", size - bash_lines, now)
        made = sources.Made(bash.paths + zsh.paths, bash.items + zsh.items, bash.expected + zsh.expected)
        return {"files": [str(p) for p in made.paths]}, made
    if name == "git":
        made = sources.git_repository(folder / "repo", size, now)
        return {"repositories": [str(made.paths[0])]}, made
    if name == "calendar":
        made = sources.calendar_file(folder / "calendar.ics", size, now)
        return sources.calendar_settings(made.paths[0]), made
    raise ValueError(f"no generated source for collector {name!r}; one of {', '.join(SIZES)}")


def _size(paths: list[Path]) -> int:
    return sum(p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
               for p in paths)


def _cpu() -> tuple[float, float]:
    """(this process's CPU seconds, its waited-for children's): user + system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def one_run(supervisor: Any, memory: Memory, name: str) -> dict[str, Any]:
    """Make ``name`` due, run it to its end under the ticking supervisor; what the run did and cost."""
    before = Counter(supervisor.status[name].counts)
    runs_before = supervisor.status[name].runs
    cpu0, child0 = _cpu()
    started = time.perf_counter()
    supervisor.wake(name)
    if name not in supervisor.tick():
        raise RuntimeError(f"collector {name} did not start: {supervisor.status[name].to_dict()}")
    while not supervisor.wait_idle(timeout=TICK_SECONDS):
        supervisor.tick()             # as the app does: abandons a run past the hang timeout
    wall = time.perf_counter() - started
    cpu1, child1 = _cpu()
    status = memory.collector_statuses()[name]
    done = Counter(supervisor.status[name].counts)
    done.subtract(before)
    return {
        "stored": done["stored"], "yielded": done["yielded"], "duplicates": done["duplicates"],
        "retired": done["retired"], "rejected": done["rejected"], "cut": done["throttled"] > 0,
        "ended": supervisor.status[name].runs > runs_before, "error": status["last_error"],
        "quarantined": status["quarantined"], "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu1 - cpu0, 2),
        "child_cpu_seconds": round(child1 - child0, 2),
    }


def backfill(name: str, size: int, folder: Path, max_runs: int) -> dict[str, Any]:
    """Generate ``name``'s sources and back-fill them into a new memory until a run ends uncut."""
    now = time.time()
    started = time.perf_counter()
    settings, made = make_sources(name, size, folder / "sources", now)
    generated = {"items": made.items, "unit": UNITS[name], "bytes": _size(made.paths),
                 "seconds": round(time.perf_counter() - started, 1)}
    data = folder / "data"
    data.mkdir(parents=True)
    (data / "collectors.json").write_text(json.dumps({"collectors": {name: {"enabled": True, "settings": settings}}}))
    memory = Memory.open(data, embedder="hashing")
    supervisor, errors = build_supervisor(memory, data, env={})
    if supervisor is None or name not in supervisor.collectors:
        raise RuntimeError(f"collector {name} could not be enabled: {errors}")
    runs: list[dict[str, Any]] = []
    outcome = "looping"               # every run cut, up to max_runs
    try:
        while len(runs) < max_runs:
            last = one_run(supervisor, memory, name)
            runs.append(last)
            if last["error"] or last["quarantined"]:
                outcome = "failed"
                break
            if not last["cut"]:
                outcome = "complete"
                break
            if last["stored"] == 0:
                break                 # cut again with nothing new: it reads the same items every run
        complete = outcome == "complete"
        nothing_new = one_run(supervisor, memory, name) if complete else None
        status = memory.collector_statuses()[name]
        events = memory.stats().events
    finally:
        supervisor.stop()
        memory.close()
    wall = sum(r["wall_seconds"] for r in runs)
    stored = sum(r["stored"] for r in runs)
    health = status.get("health") or {}
    return {
        "generated": generated, "expected_stored": made.expected, "runs": len(runs), "outcome": outcome,
        "complete": complete,
        "stored": stored, "events_in_memory": events["total"] - events["activity_blocks"],
        "activity_blocks": events["activity_blocks"], "events_by_source": events["by_source"],
        "duplicates": sum(r["duplicates"] for r in runs), "retired": sum(r["retired"] for r in runs),
        "rejected": sum(r["rejected"] for r in runs), "last_rejection": status.get("last_rejection"),
        "skipped": status.get("skipped") or {},
        "wall_seconds": round(wall, 2), "cpu_seconds": round(sum(r["cpu_seconds"] for r in runs), 2),
        "child_cpu_seconds": round(sum(r["child_cpu_seconds"] for r in runs), 2),
        "items_per_s": round(stored / wall, 1) if wall else None,
        "cpu_ms_per_item": round(sum(r["cpu_seconds"] + r["child_cpu_seconds"] for r in runs) / stored * 1000, 3)
        if stored else None,
        "longest_run_seconds": max(r["wall_seconds"] for r in runs),
        "per_run": runs, "nothing_new_run": nothing_new,
        "health": {"state": health.get("state"), "reason": health.get("reason"),
                   "sources": {source: s.get("state") for source, s in (health.get("sources") or {}).items()}},
    }


def idle_cpu(folder: Path, sample: float, idle_release: float, timeout: float) -> dict[str, Any]:
    """The app's CPU while all six collectors idle on small sources."""
    now = time.time()
    collectors: dict[str, dict[str, Any]] = {}
    for name, size in IDLE_SIZES.items():
        settings, _ = make_sources(name, size, folder / "sources" / name, now)
        collectors[name] = {"enabled": True, "settings": settings}
    plays = sources.play_log(folder / "sources" / "plays.jsonl", 50, now)
    collectors["music"] = {"enabled": True, "settings": {"play_log": str(plays.paths[0])}}
    collectors["app_usage"] = {"enabled": True}
    data = folder / "data"
    Memory.open(data).close()         # a new memory, as the app's first start makes it (the probe reads it)
    (data / "collectors.json").write_text(json.dumps({"collectors": collectors}))
    measured = measure(data, collectors, sample=sample, idle_release=idle_release, timeout=timeout,
                       config=folder / "config")
    return {"collectors": sorted(collectors), **measured, "target_cpu_percent": CPU_TARGET_PERCENT,
            "meets_target": measured["cpu_percent_idle"] < CPU_TARGET_PERCENT}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sources and a 20-s idle sample (a smoke run)")
    parser.add_argument("--only", help=f"comma-separated collectors to back-fill (default: {','.join(SIZES)})")
    for name, size in SIZES.items():
        parser.add_argument(f"--{name}", type=int, help=f"{UNITS[name]} to generate (default {size:,})")
    parser.add_argument("--max-runs", type=int, default=MAX_RUNS, help="runs before a back-fill counts as looping")
    parser.add_argument("--no-idle", action="store_true", help="skip the app's idle CPU")
    parser.add_argument("--sample", type=float, help="seconds of idle CPU sampling (default 60; --quick 20)")
    parser.add_argument("--idle-release", type=float, default=20.0, help="MAGI_EMBEDDER_IDLE_SECONDS for the app")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds the app may take to settle")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path goes to stderr)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(SIZES)
    unknown = sorted(set(names) - set(SIZES))
    if unknown:
        parser.error(f"--only: no back-fill for {', '.join(unknown)}; choose from {', '.join(SIZES)}")
    if args.sample is None:
        args.sample = 20.0 if args.quick else 60.0
    sizes = {name: getattr(args, name) or (QUICK_SIZES if args.quick else SIZES)[name] for name in names}

    folder = Path(tempfile.mkdtemp(prefix="magi-collect-"))
    print(f"collect: working in {folder}", file=sys.stderr)
    result: dict[str, Any] = {"benchmark": "collect", "quick": args.quick, "max_per_run": MAX_PER_RUN,
                              "run_timeout_seconds": RUN_TIMEOUT_SECONDS, "cpus": os.cpu_count(),
                              "load_average_1m_before": round(os.getloadavg()[0], 2), "backfill": {}}
    try:
        for name in names:
            print(f"collect: back-filling {name} ({sizes[name]:,} {UNITS[name]})", file=sys.stderr)
            result["backfill"][name] = backfill(name, sizes[name], folder / name, args.max_runs)
            figures = result["backfill"][name]
            print(f"collect: {name}: {figures['stored']:,} stored in {figures['runs']} runs, "
                  f"{figures['items_per_s']} items/s", file=sys.stderr)
        if not args.no_idle:
            print(f"collect: the app's idle CPU ({args.sample:.0f} s sample)", file=sys.stderr)
            result["idle"] = idle_cpu(folder / "idle", args.sample, args.idle_release, args.timeout)
        result["load_average_1m_after"] = round(os.getloadavg()[0], 2)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
