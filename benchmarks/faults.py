"""Crash and fault injection (issue 10, part B). Prints one JSON line.

* ``crash`` — ``--runs`` runs (default 20) of tests/reliability/crashing.py: a worker process doing
  mixed work (chat / sensor / runtime ingest, ``process_pending``, ``run_due`` with an advancing
  clock, ended sessions, backups) SIGKILLed ``--kills`` times at random points (restarted in
  between, replaying its source from the start), then reopened and checked: acknowledged payloads
  lost, duplicates after replaying the source, ``integrity_check`` failures, queues that did not
  resume (past the 600 s leases); which operation each kill interrupted.
* ``disk_full`` — a memory filled to a real SQLITE_FULL (``max_page_count``; and a 4 MB tmpfs when
  mounting is permitted): writes refused with DiskFull, acknowledged events kept, queries answered,
  the next write after space returns accepted in the same process.
* ``corruption`` — each kind of damage (garbled pages, truncation, overwritten header, emptied file)
  detected at open and repaired from the automatic backup.
* ``llm_endpoint`` — an endpoint answering 500 for half an hour of queue retries (one
  ``process_pending`` a minute): requests it received with the provider's breaker and without.
* ``backup`` — the daily backup of a 100k-event memory (``--backup-events``; 0 skips): seconds, size.

    .venv/bin/python benchmarks/faults.py
    .venv/bin/python benchmarks/faults.py --runs 3 --backup-events 0
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "reliability"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from crashing import crash_run  # noqa: E402

from magi_desktop.core import DatabaseCorrupt, DiskFull, Memory, restore_backup  # noqa: E402


def crashes(runs: int, kills: int, total: int, first_seed: int) -> dict:
    started = time.perf_counter()
    results = []
    for seed in range(first_seed, first_seed + runs):
        with tempfile.TemporaryDirectory() as folder:
            results.append(crash_run(Path(folder), seed, total=total, kills=kills, max_lines=330))
    during = Counter(d for r in results for d in r["killed_during"])
    return {"runs": runs, "kills": runs * kills, "payloads_per_run": total,
            "acknowledged": sum(r["acked"] for r in results), "lost": sum(r["lost"] for r in results),
            "duplicates": sum(r["duplicates"] for r in results),
            "integrity_failures": sum(not r["integrity_ok"] for r in results),
            "resume_failures": sum(not r["resume_ok"] for r in results),
            "killed_during": dict(during.most_common()),
            "failed_seeds": [{"seed": r["seed"], "problems": r["problems"]} for r in results if r["problems"]],
            "seconds": round(time.perf_counter() - started, 1)}


def _burst(n: int, start: int = 0) -> list[dict]:
    filler = " ".join(f"word{i}" for i in range(60))
    return [{"source_type": "chrome", "source_item_id": f"v{start + i}", "occurred_at": 1.7e9 + start + i,
             "activity": {"action_code": "visit_page"},
             "provenance": {"url": f"https://example.com/{start + i}", "title": f"Basil care {start + i} {filler}"}}
            for i in range(n)]


def _fill_and_recover(memory: Memory, free_space) -> dict:
    acknowledged, refused = 0, None
    for start in range(0, 1_000_000, 50):
        try:
            memory.ingest_many(_burst(50, start))
            acknowledged += 50
        except DiskFull as exc:
            refused = str(exc)
            break
    stored = memory.db.reader().execute("SELECT count(*) FROM fact_events").fetchone()[0]
    answered = bool(memory.query("basil care", mode="exact_fact").findings)
    read_only = not memory.stats()["storage"]["writable"]
    free_space()
    try:
        memory.ingest_many(_burst(50, acknowledged))
        recovered = memory.db.reader().execute("SELECT count(*) FROM fact_events").fetchone()[0] == stored + 50
    except DiskFull:
        recovered = False
    integrity = memory.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    return {"acknowledged": acknowledged, "lost": acknowledged - stored, "refused_with_disk_full": refused is not None,
            "read_only_reported": read_only, "queries_answered": answered, "integrity_ok": integrity,
            "recovered_without_restart": recovered}


def disk_full() -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        memory = Memory.open(folder, embedder="hashing")
        memory.ingest_many(_burst(100))
        with memory.db.writer() as conn:
            conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0] + 200}")

        def lift():
            with memory.db.writer() as conn:
                conn.execute("PRAGMA max_page_count = 1073741823")

        out["page_limit"] = _fill_and_recover(memory, lift)
        memory.close()
    if os.name == "posix" and os.geteuid() == 0:
        with tempfile.TemporaryDirectory() as folder:
            mount = Path(folder)
            if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", folder],
                              capture_output=True).returncode == 0:
                try:
                    memory = Memory.open(mount / "data", embedder="hashing")
                    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
                    (mount / "filler").write_bytes(b"\0" * max(0, free - 600_000))
                    out["tmpfs_4mb"] = _fill_and_recover(memory, (mount / "filler").unlink)
                    memory.close()
                finally:
                    subprocess.run(["umount", "-l", folder], check=False)
    out.setdefault("tmpfs_4mb", "skipped: mounting a tmpfs is not permitted here")
    return out


def corruption() -> dict:
    from payloads import mixed_stream
    from test_corruption import DAMAGE

    out = {}
    for name, damage in DAMAGE.items():
        with tempfile.TemporaryDirectory() as folder:
            memory = Memory.open(folder, embedder="hashing")
            memory.ingest_many(list(mixed_stream(1200)))
            memory.backup_now("daily")
            memory.close()
            damage(Path(folder) / "memory.db")
            try:
                Memory.open(folder, embedder="hashing").close()
                detected = False
            except DatabaseCorrupt:
                detected = True
            restore_backup(folder)
            memory = Memory.open(folder, embedder="hashing")
            events = memory.db.reader().execute("SELECT count(*) FROM fact_events").fetchone()[0]
            memory.close()
            kept = any(p.name.startswith("memory.db.replaced-") for p in Path(folder).iterdir())
            out[name] = {"detected_at_open": detected, "restored_events": events, "expected_events": 1200,
                         "damaged_file_kept": kept}
    return out


def llm_endpoint(minutes: int = 30) -> dict:
    from test_llm_faults import Clock, FaultyEndpoint, conversations

    from magi_desktop.core.llm import OpenAICompatibleLLM, OpenAISettings
    from magi_desktop.core.llm.openai import Breaker

    out = {"minutes": minutes}
    for label, after in (("with_breaker", None), ("without_breaker", 10**9)):
        endpoint, clock = FaultyEndpoint(), Clock()
        endpoint.mode = "500"
        breaker = Breaker(clock=clock) if after is None else Breaker(after=after, clock=clock)
        llm = OpenAICompatibleLLM(OpenAISettings(base_url=endpoint.url, model="fast", timeout=1, backoff=0),
                                  api_key="", sleep=lambda s: None, breaker=breaker)
        with tempfile.TemporaryDirectory() as folder:
            memory = Memory.open(folder, embedder="hashing", llm=llm)
            conversations(memory)
            now = 1.8e9
            for _ in range(minutes):
                memory.process_pending(queues=("l2",), now=now)
                now += 60
                clock.now += 60
            derived = memory.db.reader().execute("SELECT count(*) FROM kg_edges").fetchone()[0]
            charged = memory.db.reader().execute("SELECT max(attempts) FROM l2_projection_jobs").fetchone()[0]
            memory.close()
        endpoint.close()
        out[label] = {"requests": len(endpoint.requests), "breaker_opened": breaker.opened,
                      "derived_rows_written": derived, "attempts_charged": charged}
    return out


def backup_timing(events: int) -> dict:
    from workload import payloads

    with tempfile.TemporaryDirectory() as folder:
        memory = Memory.open(folder, embedder="hashing")
        batch = []
        for payload in payloads(events):
            batch.append(payload)
            if len(batch) == 1000:
                memory.ingest_many(batch)
                batch = []
        if batch:
            memory.ingest_many(batch)
        memory.process_pending(queues=("embedding",))
        started = time.perf_counter()
        made = memory.backup_now("daily")
        seconds = time.perf_counter() - started
        size = memory.stats()["size_bytes"]
        memory.close()
        started = time.perf_counter()
        Memory.open(folder, embedder="hashing").close()          # the check at open (quick_check)
        opened = time.perf_counter() - started
    return {"events": events, "database_mb": round(size / 1e6, 1), "backup_mb": round(made["size_bytes"] / 1e6, 1),
            "backup_seconds": round(seconds, 2), "open_with_quick_check_seconds": round(opened, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--kills", type=int, default=2, help="SIGKILLs per run (the worker restarts in between)")
    parser.add_argument("--total", type=int, default=1500, help="payloads in each run's source")
    parser.add_argument("--seed", type=int, default=1, help="first run's seed (runs use seed, seed+1, …)")
    parser.add_argument("--backup-events", type=int, default=100_000)
    args = parser.parse_args()
    report = {"benchmark": "faults", "crash": crashes(args.runs, args.kills, args.total, args.seed),
              "disk_full": disk_full(), "corruption": corruption(), "llm_endpoint": llm_endpoint()}
    if args.backup_events:
        report["backup"] = backup_timing(args.backup_events)
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    main()
