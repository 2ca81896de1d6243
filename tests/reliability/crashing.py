"""Crash injection shared by tests/reliability/test_crash_injection.py (a few runs) and
benchmarks/faults.py (twenty): a child process does MIXED work on one memory — ingest of chat,
sensor and runtime payloads, L2 projection and the other queues (``process_pending``), summaries
(``run_due`` with an advancing clock), ended sessions, backups — and acknowledges each committed
ingest on stdout; the parent SIGKILLs it at a random point, maybe restarts it (it replays the
source from the start, as a collector that lost its cursor would) and kills it again, then checks:

* ``PRAGMA integrity_check`` and ``foreign_key_check`` pass;
* every acknowledged payload is stored (re-sending it is a duplicate): **lost** counts those that
  were not;
* replaying the whole source leaves each (source, event_type, idempotency_key) once: **duplicates**
  counts extra rows, in L1 and in the runtime traces, and runs L4 counted twice;
* the queues resume: with the clock moved past the 600 s leases (a job a killed process left
  ``running``), ``process_pending`` drains the embedding, L2, L4 and extraction queues to nothing
  due, nothing ``running``, nothing dead, no claim held, and ``run_due`` completes the summaries.
"""
# Raw SQL left is about the file a kill left: its integrity and foreign-key checks.

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("crash_worker.py")
T0 = 1_750_000_000.0          # 2025-06-15: the source's first event
STEP = 240.0                  # seconds between events: 1,500 payloads span four days

_SAID = ["I live in Hangzhou and cycle to work", "I bought an air fryer last week", "I prefer green tea to coffee",
         "My sister Lin is visiting in July", "I started learning the guitar", "我最近在学习吉他",
         "I moved from Shanghai to Jiaxing", "我住在上海", "Remember that I am allergic to peanuts",
         "My manager Chen approved the sync service design"]
_REPLIES = ["Noted.", "That sounds great!", "Here is a summary of what you said.", "好的，我记住了。"]
_SITES = ["github.com", "docs.python.org", "www.zhihu.com", "news.ycombinator.com"]
_TOOLS = [("web_search", "search"), ("run_tests", "code"), ("send_mail", "mail")]


def source(n: int) -> list[dict[str, Any]]:
    """The deterministic source the worker ingests: half chat (sessions of 30 turns), sensors, tool runs."""
    out = []
    for i in range(n):
        at = T0 + i * STEP
        kind = i % 10
        session = f"chat-{i // 60}"
        if kind < 5:
            if kind % 2 == 0:
                turn = {"role": "user", "provenance": "human_input", "text": f"{_SAID[i % len(_SAID)]} (note {i})"}
            else:
                turn = {"role": "assistant", "text": f"{_REPLIES[i % len(_REPLIES)]} [{i}]"}
            out.append({"source_type": "chat", "session_id": session, "occurred_at": at, "chat": turn})
        elif kind < 8:
            site = _SITES[i % len(_SITES)]
            out.append({"source_type": "chrome", "source_item_id": f"visit-{i}", "occurred_at": at,
                        "activity": {"action_code": "visit_page"},
                        "provenance": {"url": f"https://{site}/page/{i}", "title": f"Reading {site} page {i}"}})
        else:
            tool, category = _TOOLS[i % len(_TOOLS)]
            ok = i % 7 != 0
            action = {"tool": tool, "category": category, "ok": ok, "duration_ms": 100 + i % 50,
                      "input": {"q": f"query {i}"}, "output": "done" if ok else None}
            if not ok:
                action["error"] = "timeout"
            out.append({"source_type": "runtime", "session_id": "agent-1", "source_item_id": f"run-{i}",
                        "occurred_at": at, "action": action})
    return out


@dataclass
class Incarnation:
    acked: int = -1                 # highest acknowledged payload index (acks cover a prefix)
    killed: bool = False
    during: str = "?"               # the operation in flight when the kill landed
    lines: int = 0


def run_worker(db_path: Path, total: int, seed: int, kill_after_lines: int | None, jitter: float,
               timeout: float = 300.0) -> Incarnation:
    """Start the worker; SIGKILL it ``jitter`` seconds after its ``kill_after_lines``-th line (None: let it end)."""
    proc = subprocess.Popen([sys.executable, str(WORKER), str(db_path), str(total), str(seed)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    result = Incarnation()
    current = "start"
    try:
        for line in proc.stdout:
            result.lines += 1
            word, _, rest = line.strip().partition(" ")
            if word == "ack":
                result.acked = max(result.acked, int(rest))
            elif word == "op":
                current = rest
            elif word == "ok":
                current = "between operations"
            elif word == "done":
                break
            if kill_after_lines is not None and result.lines >= kill_after_lines:
                time.sleep(jitter)
                os.kill(proc.pid, signal.SIGKILL)
                result.killed, result.during = True, current
                # Acks already written to the pipe were committed before the kill: read them too.
                for late in proc.stdout:
                    word, _, rest = late.strip().partition(" ")
                    if word == "ack":
                        result.acked = max(result.acked, int(rest))
                    elif word == "op":
                        result.during = rest
                break
    finally:
        proc.wait(timeout=timeout)
    if not result.killed and proc.returncode != 0:
        raise RuntimeError(f"the worker failed (exit {proc.returncode}): {proc.stderr.read()[-2000:]}")
    return result


@dataclass
class Check:
    integrity_ok: bool = True
    lost: int = 0
    duplicates: int = 0
    resume_ok: bool = True
    problems: list[str] = field(default_factory=list)

    def fail(self, problem: str) -> None:
        self.problems.append(problem)


def check(db_path: Path, total: int, acked: int) -> Check:
    """Reopen after the crash(es) and check everything the module docstring promises."""
    from magi_desktop.core import Memory
    from magi_desktop.core.extraction import pipeline as extraction
    from magi_desktop.core.l2 import jobs as l2_jobs
    from magi_desktop.core.store import backup, vectors
    from magi_desktop.core.store.extractions import extraction_marks
    from magi_desktop.core.store.l1 import event_rows, trace_rows
    from magi_desktop.core.store.queue import L2_PROJECTION_JOBS
    from magi_desktop.core.store.skills import skills_due
    from magi_desktop.core.store.tables import row_count

    result = Check()
    payloads = source(total)
    memory = Memory.open(db_path, embedder="hashing")
    try:
        conn = memory.db.reader()
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        fk = conn.execute("PRAGMA foreign_key_check").fetchall()
        if integrity != ["ok"] or fk:
            result.integrity_ok = False
            result.fail(f"integrity: {integrity[:3]}, foreign keys: {fk[:3]}")
        for made in backup.list_backups(db_path):
            problem = backup.verify(made.path)
            if problem:
                result.integrity_ok = False
                result.fail(f"backup {made.path.name}: {problem}")

        # Every acknowledged payload is there: sending it again is a duplicate.
        replay = memory.ingest_many(payloads[:acked + 1]) if acked >= 0 else []
        result.lost = sum(not r.duplicate for r in replay)
        # Replaying the whole source completes it without duplicates.
        memory.ingest_many(payloads)
        targets = Counter("runtime_traces" if r.target == "runtime_trace" else "fact_events"
                          for r in memory.ingest_many(payloads) if r.target != "l0_only")
        for table, stored in (("fact_events", event_rows(conn)), ("runtime_traces", trace_rows(conn))):
            rows = [(r["source"], r["event_type"], r["idempotency_key"]) for r in stored]
            expected = targets[table]
            extra = len(rows) - len(set(rows))
            result.duplicates += extra
            if len(set(rows)) != expected:
                result.fail(f"{table}: {len(set(rows))} distinct rows, expected {expected}")
        runs = sum(skill["runs"] for skill in memory.skills())
        traces = row_count(conn, "runtime_traces")
        if runs != traces:
            result.duplicates += max(0, runs - traces)
            result.fail(f"L4 counted {runs} tool runs for {traces} traces")
        fts = row_count(conn, "fact_events_fts")
        events = row_count(conn, "fact_events")
        if fts != events:
            result.fail(f"full-text rows {fts} != events {events}")

        # The queues resume: past the leases of whatever a killed process held, they drain.
        later = time.time() + max(l2_jobs.LEASE_SECONDS, extraction.LEASE_SECONDS) + 1
        l2_jobs.recover_running(memory.db, now=later)
        for _ in range(1000):
            report = memory.process_pending(now=later)
            handled = (report["embedded"] + report["l2"]["events"] + report["l2"]["failed"]
                       + report["l4"]["distilled"] + report["facts"]["runs"] + report["facts"]["failed"])
            if not handled:
                break
        l2 = Counter(L2_PROJECTION_JOBS.counts(conn))
        stuck = {
            "embedding pending": row_count(conn, "embedding_jobs"),
            "l2 pending or running": l2["pending"] + l2["running"],
            "l2 dead": l2["dead"],
            "extractions due": extraction.pending_count(conn, later),
            "extraction claims held": extraction_marks(conn).claimed,
            "distillations due": len(skills_due(conn, row_count(conn, "procedural_skills") + 1)),
        }
        chunks = vectors.chunked_event_count(conn)
        if chunks != events:
            stuck["events without vectors"] = events - chunks
        last = payloads[-1]["occurred_at"] + 86400
        memory.run_due(now=last)
        if not row_count(conn, "l3_summaries"):
            stuck["summaries"] = 0
        if any(stuck.values()) or "summaries" in stuck:
            result.resume_ok = False
            errors = list(dict.fromkeys(job.last_error for job in L2_PROJECTION_JOBS.jobs(conn).values()
                                        if job.state != "done" and job.last_error is not None))[:3]
            result.fail(f"queues did not resume: { {k: v for k, v in stuck.items() if v or k == 'summaries'} }"
                        + (f"; L2 errors: {errors}" if errors else ""))
    finally:
        memory.close()
    return result


def crash_run(folder: Path, seed: int, total: int = 1500, kills: int = 2, max_lines: int = 400) -> dict[str, Any]:
    """One run: ``kills`` incarnations of the worker, each SIGKILLed at a random line (plus up to 30 ms),
    on a fresh memory in ``folder``; then :func:`check`."""
    rng = random.Random(seed)
    db_path = folder / "memory.db"
    acked, during = -1, []
    for k in range(kills):
        incarnation = run_worker(db_path, total, seed * 100 + k, rng.randint(3, max_lines), rng.uniform(0, 0.03))
        acked = max(acked, incarnation.acked)
        during.append(incarnation.during if incarnation.killed else "finished before the kill")
    checked = check(db_path, total, acked)
    return {"seed": seed, "acked": acked + 1, "killed_during": during, "integrity_ok": checked.integrity_ok,
            "lost": checked.lost, "duplicates": checked.duplicates, "resume_ok": checked.resume_ok,
            "problems": checked.problems}
