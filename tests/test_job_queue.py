"""The job-queue primitive (store/queue.py) alone, on the real queue tables of a temporary memory."""
# Raw SQL left: the SELECT a JobQueue.requeue call takes as its argument (its contract); ANALYZE and EXPLAIN QUERY
# PLAN, to see the claim's plans whatever the statistics.

import threading

import pytest
from payloads import chat

from magi_desktop.core import Memory
from magi_desktop.core.store import Database
from magi_desktop.core.store.queue import (
    EMBEDDING_JOBS,
    EXTRACTION_RETRIES,
    L2_PROJECTION_JOBS,
    LEASE_SECONDS,
    MAX_ATTEMPTS,
    MAX_BACKOFF_SECONDS,
    PROVIDER_BACKOFF_SECONDS,
    Job,
    backoff_delay,
)

NOW = 1_800_000_000.0
L2 = L2_PROJECTION_JOBS


@pytest.fixture
def queued(tmp_path):
    """A memory holding six chat events — an embedding job and an L2 job each — in sessions a, a, a, b, b, c,
    and nothing else running. Yields (memory, event rowids)."""
    memory = Memory.open(tmp_path / "m", embedder="hashing")
    sessions = ["a", "a", "a", "b", "b", "c"]
    for i, session in enumerate(sessions):
        memory.ingest(chat(f"note number {i}", session=session, at=NOW - 100 + i))
    rowids = L2.due(memory.db.reader(), NOW, 100)
    assert len(rowids) == len(sessions) and EMBEDDING_JOBS.due(memory.db.reader(), NOW, 100) == rowids
    yield memory, rowids
    memory.close()


def state(memory, key, queue=L2):
    return queue.job(memory.db.reader(), key)


def test_backoff_doubles_from_thirty_seconds_up_to_an_hour():
    assert [backoff_delay(n) for n in (0, 1, 2, 3, 4)] == [30.0, 30.0, 60.0, 120.0, 240.0]
    assert backoff_delay(50) == MAX_BACKOFF_SECONDS == 3600.0


def test_a_claim_holds_a_lease_and_an_expired_lease_makes_the_job_due_again(queued):
    memory, rowids = queued
    claimed = L2.claim(memory.db, NOW, 2)
    assert claimed == rowids[:2]                       # oldest first, the batch's own group (session a)
    assert state(memory, rowids[0]) == Job("running", 0, NOW + LEASE_SECONDS, None)
    assert L2.due_count(memory.db.reader(), NOW) == 4  # running jobs are not due
    assert L2.claim(memory.db, NOW, 2) == [rowids[2]]  # the rest of group a, never a held one
    assert L2.recover_expired(memory.db, NOW + LEASE_SECONDS - 1) == 0   # leases still hold
    assert L2.recover_expired(memory.db, NOW + LEASE_SECONDS) == 3
    assert state(memory, rowids[0]) == Job("pending", 0, NOW + LEASE_SECONDS, None)
    assert L2.counts(memory.db.reader()) == {"pending": 6}


def test_a_group_is_claimed_together_and_a_job_that_failed_before_alone(queued):
    memory, rowids = queued
    assert L2.claim(memory.db, NOW, 24) == rowids[:3]              # session a
    assert L2.fail(memory.db, rowids[:3], "boom", NOW) == 0
    later = NOW + backoff_delay(1)
    assert L2.claim(memory.db, later, 24) == [rowids[0]]           # failed before: alone
    assert L2.claim(memory.db, later, 24) == [rowids[1]]
    assert L2.claim(memory.db, later, 24, below=rowids[3]) == [rowids[2]]
    assert L2.claim(memory.db, later, 24, below=rowids[3]) == []   # ``below`` holds session b back
    assert L2.claim(memory.db, later, 24) == rowids[3:5]           # session b, never failed: together


def test_two_connections_never_claim_the_same_job(queued):
    memory, rowids = queued
    other = Database(memory.path)
    try:
        taken: dict[str, list[int]] = {"memory": [], "other": []}

        def drain(name, db):
            while keys := L2.claim(db, NOW, 1):
                taken[name].extend(keys)

        threads = [threading.Thread(target=drain, args=(name, db))
                   for name, db in (("memory", memory.db), ("other", other))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(taken["memory"] + taken["other"]) == rowids     # every job once, none twice
        assert not set(taken["memory"]) & set(taken["other"])
        assert L2.claim(other, NOW, 24) == []
    finally:
        other.close()


def test_postponing_charges_no_attempt_and_holds_the_whole_queue(queued):
    memory, rowids = queued
    claimed = L2.claim(memory.db, NOW, 24)
    L2.postpone(memory.db, claimed, "ConnectionError: down", NOW)
    until = NOW + PROVIDER_BACKOFF_SECONDS
    assert state(memory, claimed[0]) == Job("pending", 0, until, "ConnectionError: down")
    assert state(memory, rowids[5]) == Job("pending", 0, until, None)   # not claimed, waits as long
    assert L2.claim(memory.db, until - 1, 24) == []
    assert L2.claim(memory.db, until, 24) == claimed


def test_a_failure_backs_off_then_goes_to_the_dead_letter_and_revive_brings_it_back(queued):
    memory, rowids = queued
    now = NOW
    for attempt in range(1, MAX_ATTEMPTS + 1):
        claimed = L2.claim(memory.db, now, 24)
        assert claimed == (rowids[:3] if attempt == 1 else [rowids[0]])
        dead = L2.fail(memory.db, [rowids[0]], "ValueError: " + "x" * 3000, now)
        L2.release(memory.db, claimed[1:])                             # the others of its batch, put back
        job = state(memory, rowids[0])
        assert (job.attempts, job.next_attempt_at, len(job.last_error)) == (attempt, now + backoff_delay(attempt), 2000)
        assert dead == (attempt == MAX_ATTEMPTS) and job.state == ("dead" if dead else "pending")
        now += backoff_delay(attempt)
    assert rowids[0] not in L2.due(memory.db.reader(), now + 10**6, 100)   # dead letters stay put
    assert L2.counts(memory.db.reader())["dead"] == 1
    assert L2.revive(memory.db) == 1
    assert state(memory, rowids[0]) == Job("pending", 0, 0.0, job.last_error)
    assert L2.claim(memory.db, now, 24) == rowids[:3]                 # a fresh job again: with its group


def test_finishing_deletes_or_marks_done_and_a_vanished_job_is_not_charged(queued):
    memory, rowids = queued
    with memory.db.transaction() as conn:
        assert L2.finish(conn, rowids[:2], NOW) == 2
        assert EMBEDDING_JOBS.finish(conn, [rowids[0]], NOW) == 1
        assert EMBEDDING_JOBS.finish(conn, [rowids[0]], NOW) == 0   # gone already (forgotten, embedded)
    assert state(memory, rowids[0]) == Job("done", 0, 0.0, None)
    assert L2.counts(memory.db.reader()) == {"done": 2, "pending": 4}
    assert state(memory, rowids[0], EMBEDDING_JOBS) is None
    assert EMBEDDING_JOBS.fail(memory.db, [rowids[0]], "boom", NOW) == 0    # no row: nothing to charge
    assert state(memory, rowids[0], EMBEDDING_JOBS) is None
    age = EMBEDDING_JOBS.oldest_pending_age(memory.db.reader(), NOW)
    assert age is not None and EMBEDDING_JOBS.oldest_pending_age(memory.db.reader(), NOW + 10) == age + 10


def test_a_sparse_queue_has_a_row_only_once_a_job_failed_or_waited(queued):
    memory, _ = queued
    retries, one, two = EXTRACTION_RETRIES, ("s1", 0), ("s1", 1)
    reader = memory.db.reader()
    assert retries.job(reader, one) is None                 # no row: pending, no attempt yet
    retries.postpone(memory.db, [one], "ConnectionError: down", NOW)
    assert retries.job(reader, one) == Job("pending", 0, NOW + PROVIDER_BACKOFF_SECONDS, "ConnectionError: down")
    assert retries.fail(memory.db, [one, two], "E" * 900, NOW) == 0
    assert retries.job(reader, one) == Job("pending", 1, NOW + backoff_delay(1), "E" * 500)
    retries.postpone(memory.db, [one], "ConnectionError: down", NOW)
    assert retries.job(reader, one).attempts == 1          # postponing keeps the attempts it had
    for _ in range(MAX_ATTEMPTS - 1):
        dead = retries.fail(memory.db, [two], "boom", NOW)
    assert dead == 1 and retries.counts(reader) == {"dead": 1, "pending": 1}
    assert retries.revive(memory.db) == 1
    assert retries.job(reader, two) is None                # revived: a fresh job again
    with memory.db.transaction() as conn:
        assert retries.finish(conn, [one], NOW) == 1
    assert retries.counts(reader) == {}


def test_a_key_of_the_wrong_shape_is_refused(queued):
    memory, _ = queued
    with pytest.raises(ValueError, match="2 column"):
        EXTRACTION_RETRIES.job(memory.db.reader(), "s1")


def test_requeueing_makes_a_fresh_job_of_a_finished_a_dead_or_a_waiting_one(queued):
    memory, rowids = queued
    with memory.db.transaction() as conn:
        EMBEDDING_JOBS.finish(conn, [rowids[0]], NOW)                    # embedded: no job left
    for _ in range(MAX_ATTEMPTS):
        EMBEDDING_JOBS.fail(memory.db, [rowids[1]], "boom", NOW)         # dead
    with memory.db.transaction() as conn:
        assert EMBEDDING_JOBS.requeue(conn, "SELECT ?", (rowids[0],), NOW) == 1
        assert EMBEDDING_JOBS.requeue(conn, "SELECT ? UNION SELECT ?", rowids[1:3], NOW) == 2
    for rowid in rowids[:3]:
        assert state(memory, rowid, EMBEDDING_JOBS) == Job("pending", 0, 0.0, None)
    assert EMBEDDING_JOBS.due(memory.db.reader(), NOW, 100) == rowids


def test_a_claim_reads_indexes_in_key_order_whatever_the_statistics_say(tmp_path):
    """Migration 0028: the claim names its indexes, so no statistics make it sort every pending job (none) or walk
    every done job (stale ones, taken while all were pending); the answer is the oldest due job's group."""
    memory = Memory.open(tmp_path / "m", embedder="hashing")
    for i in range(40):
        memory.ingest(chat(f"note number {i}", session=f"s{i % 4}", at=NOW - 100 + i))
    rowids = L2.due(memory.db.reader(), NOW, 100)
    with memory.db.transaction() as conn:
        conn.execute("ANALYZE")                    # statistics of a back-log: every job pending
        L2.finish(conn, rowids[:30], NOW)
    L2.fail(memory.db, [rowids[30]], "a passing fault", NOW)      # waits for its backoff
    statements: list[str] = []
    with memory.db.writer() as conn:
        conn.set_trace_callback(statements.append)
    try:
        claimed = L2.claim(memory.db, NOW, 24)
    finally:
        with memory.db.writer() as conn:
            conn.set_trace_callback(None)
    # rowids[30] waits (backoff); the oldest due is rowids[31] (session s3), with the rest of s3 after it
    assert claimed == [rowids[31], rowids[35], rowids[39]]
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT") and "l2_projection_jobs" in s]
    assert len(reads) == 3                          # anything due, the head, its group
    conn = memory.db.reader()
    for sql in reads:
        plan = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "TEMP B-TREE" not in plan and "SCAN" not in plan, (sql, plan)
    memory.close()


def test_a_queue_with_nothing_due_claims_nothing(queued):
    memory, rowids = queued
    L2.postpone(memory.db, [], "provider down", NOW)     # holds the whole queue
    assert L2.claim(memory.db, NOW, 24) == []
    assert L2.claim(memory.db, NOW + PROVIDER_BACKOFF_SECONDS, 24) == rowids[:3]
