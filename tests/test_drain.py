"""One drain for the CLI and the workers (issue 18, item 3): done only when every queue is, waiting (bounded)
for a batch another connection holds."""

import json
import threading
import time

from payloads import chat

from magi_desktop.cli import main
from magi_desktop.core import Memory
from magi_desktop.core import memory as memory_module
from magi_desktop.core.embed import resolve_embedder
from magi_desktop.core.l2 import jobs as l2_jobs
from magi_desktop.workers import drain


def test_magi_ingest_leaves_nothing_queued(tmp_path, monkeypatch):
    monkeypatch.setattr(memory_module, "resolve_embedder", lambda _spec: resolve_embedder("hashing"))
    data = tmp_path / "data"
    with Memory.open(data) as memory:
        for n in range(25):         # ended conversations: more than two extraction batches (10 each) take
            memory.ingest(chat(f"My sister lives in Oslo and has a cat called Miso {n}", session=f"s{n}",
                               at=1.7e9 + n))
            memory.end_session(f"s{n}")
        memory.process_pending(queues=("embedding",))      # embedding done; L2 and the extraction wait
        before = memory.queue_state()
        assert before.due["embedding"] == 0 and before.due["l2"] > 0 and before.due["facts"] == 25
    file = tmp_path / "more.jsonl"
    file.write_text(json.dumps(chat("I moved to Hangzhou", session="s99", at=1.7e9 + 100)) + "\n")
    assert main(["ingest", str(file), "--data-dir", str(data)]) == 0
    with Memory.open(data) as memory:
        left = memory.queue_state()
        assert left.done, left
        assert memory.stats()["l2"]["jobs"]["pending"] == 0 and memory.stats()["facts"]["conversations_due"] == 0


def _with_l2_work(memory):
    memory.ingest_many([chat(f"I have a cat called Miso {n}", at=1.7e9 + n) for n in range(3)])
    memory.process_pending(queues=("embedding",))
    assert memory.queue_state().due["l2"] == 3


def test_drain_waits_for_a_batch_another_connection_holds(memory):
    _with_l2_work(memory)
    other = Memory.open(memory.path, embedder="hashing")
    try:
        claimed = l2_jobs.claim_batch(other.db, time.time())     # the other process's batch, lease live
        assert len(claimed) == 3

        def finish():
            time.sleep(0.4)
            with other.db.transaction() as conn:
                l2_jobs.mark_done(conn, claimed, time.time())

        holder = threading.Thread(target=finish)
        holder.start()
        report = drain(memory, poll=0.05)
        holder.join()
    finally:
        other.close()
    assert report.done and report.waited_seconds >= 0.3
    assert report.projected == 0                  # the other connection did the batch; the drain waited for it
    assert memory.stats()["l2"]["jobs"]["done"] == 3


def test_drain_takes_over_a_batch_whose_lease_runs_out(memory):
    _with_l2_work(memory)
    other = Memory.open(memory.path, embedder="hashing")
    try:
        # A claim made as if LEASE_SECONDS ago less half a second: its lease ends half a second from now.
        assert len(l2_jobs.claim_batch(other.db, time.time() - l2_jobs.LEASE_SECONDS + 0.5)) == 3
    finally:
        other.close()                             # and its holder is gone
    report = drain(memory, poll=0.05)
    assert report.done and report.waited_seconds >= 0.3
    assert report.projected == 3                  # done here once the lease ran out
    assert memory.stats()["l2"]["jobs"]["done"] == 3


def test_drain_waits_for_held_work_no_longer_than_its_patience(memory):
    _with_l2_work(memory)
    other = Memory.open(memory.path, embedder="hashing")
    try:
        l2_jobs.claim_batch(other.db, time.time())
        started = time.monotonic()
        report = drain(memory, poll=0.05, patience=0.3)
        took = time.monotonic() - started
    finally:
        other.close()
    assert not report.done and report.left.held["l2"] == 3
    assert 0.3 <= took < 5


def test_the_drain_report_reads_as_the_dict_it_was(memory):
    memory.ingest(chat("I have a cat"))
    report = drain(memory)
    assert report.done and report["embedded"] == 1 and report["projected"] == 1
    assert report.to_dict() == {"batches": 1, "embedded": 1, "projected": 1, "failed": 0} == dict(report)
