"""Fuzzing the write path: validate_payload, Memory.ingest and Memory.ingest_many (architecture §3.1, §14).

Properties: the only exception is PayloadError, naming a field of the payload; validation is
deterministic and never changes its input; a rejected payload or batch writes nothing (every table
byte-for-byte as before, apart from the per-source rejection counter); an accepted payload is stored
where its result says; the database passes ``PRAGMA integrity_check`` at the end.
"""

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magi_desktop.core.contracts import _TOP_LEVEL_FIELDS, PayloadError, validate_payload
from magi_desktop.core.recalled import has_recalled
from magi_desktop.core.store.l1 import trace_rows
from magi_desktop.core.store.queue import EMBEDDING_JOBS, EXTRACTION_RETRIES, L2_PROJECTION_JOBS

from .fuzzing import (
    REJECTION_COUNTERS,
    FuzzMemory,
    chat_payloads,
    count,
    counters,
    digest,
    huge_text,
    integrity_ok,
    json_safe_repr,
    mutated,
    nasty_text,
    payloads,
    valid_shaped,
)

# The payloads carry a user_id now and then: deprecated (tests/test_one_person.py), still accepted and fuzzed.
pytestmark = [pytest.mark.fuzz, pytest.mark.filterwarnings("ignore:a payload's user_id:DeprecationWarning")]


@pytest.fixture(scope="module")
def fuzz_memory(tmp_path_factory):
    holder = FuzzMemory(tmp_path_factory.mktemp("fuzz-ingest"))
    yield holder
    if holder._memory is not None:
        assert integrity_ok(holder._memory)
    holder.close()


def _names_a_field(error: PayloadError) -> bool:
    """The error names a known field, or the unknown one that was sent (as an escaped repr if it is odd)."""
    error.field.encode("utf-8")                             # printable and storable, whatever was sent
    if not error.field or error.field.endswith("."):
        return False
    root = error.field.split(".")[0].split("[")[0]
    return root in _TOP_LEVEL_FIELDS or root == "payload" or error.reason.startswith("unknown field")


def _valid(raw) -> bool:
    try:
        validate_payload(raw)
    except PayloadError:
        return False
    return True


@given(payloads)
def test_validation_accepts_or_names_the_bad_field(raw):
    count("validate_payload")
    before = json_safe_repr(raw)
    try:
        first = validate_payload(raw)
    except PayloadError as error:
        assert _names_a_field(error), error.field
        assert str(error).startswith(error.field + ":")
        with pytest.raises(PayloadError) as again:
            validate_payload(raw)
        assert again.value.field == error.field            # deterministic
    else:
        assert validate_payload(raw) == first
        assert first.kind in ("chat", "sensor", "runtime")
    assert json_safe_repr(raw) == before                    # the input is not modified


def _assert_nothing_written(memory, before, before_counts, rejected=1):
    conn = memory.db.reader()
    assert digest(conn, skip=(REJECTION_COUNTERS,)) == before
    after_counts = counters(conn)
    for source, (accepted, duplicates, _) in after_counts.items():
        assert before_counts.get(source, (0, 0, 0))[:2] == (accepted, duplicates)
    assert sum(r for _, _, r in after_counts.values()) == sum(r for _, _, r in before_counts.values()) + rejected


def _assert_stored(memory, result):
    conn = memory.db.reader()
    if result.target == "l0_only":
        assert not result.duplicate
    elif result.target == "runtime_trace":
        assert [t for t in trace_rows(conn) if t["trace_id"] == result.event_id]
    else:
        event = memory.get_event(result.event_id)
        assert event is not None and event["ingest_target"] == result.target
        assert isinstance(event["content"], str) and event["content"].encode("utf-8")


@given(payloads)
def test_ingest_stores_or_rejects_without_a_partial_write(fuzz_memory, raw):
    count("Memory.ingest")
    memory = fuzz_memory.memory
    conn = memory.db.reader()
    before, before_counts = digest(conn, skip=(REJECTION_COUNTERS,)), counters(conn)
    try:
        result = memory.ingest(raw)
    except PayloadError as error:
        assert _names_a_field(error), error.field
        _assert_nothing_written(memory, before, before_counts)
    else:
        _assert_stored(memory, result)
        again = memory.ingest(raw)                          # replaying the same payload stores nothing new
        assert again.duplicate or again.target == "l0_only"
        assert again.event_id == result.event_id or again.target == "l0_only"


@given(st.lists(payloads, min_size=1, max_size=5), st.booleans())
def test_ingest_many_is_all_or_nothing(fuzz_memory, batch, report):
    count("Memory.ingest_many")
    memory = fuzz_memory.memory
    conn = memory.db.reader()
    before, before_counts = digest(conn, skip=(REJECTION_COUNTERS,)), counters(conn)
    valid = [_valid(raw) for raw in batch]
    if report:
        results = memory.ingest_many(batch, on_error="report")
        assert [r.ok for r in results] == valid
        for result in results:
            if result.ok:
                _assert_stored(memory, result)
            else:
                assert _names_a_field(result.error)
        if not any(valid):
            _assert_nothing_written(memory, before, before_counts, rejected=len(batch))
        return
    try:
        results = memory.ingest_many(batch)
    except PayloadError as error:
        first_bad = valid.index(False)
        assert error.index == (first_bad if len(batch) > 1 else None)
        assert _names_a_field(error)
        _assert_nothing_written(memory, before, before_counts)
    else:
        assert all(valid) and len(results) == len(batch)
        for result in results:
            _assert_stored(memory, result)


# Chat text is where arbitrary Unicode arrives in bulk: any code point, and strings at the size limit.
_chat_text = st.one_of(nasty_text, st.text(), huge_text())


@given(mutated(chat_payloads(text=_chat_text)))
def test_chat_text_of_any_unicode_is_stored_intact_or_rejected(fuzz_memory, raw):
    count("chat ingestion (Unicode)")
    memory = fuzz_memory.memory
    conn = memory.db.reader()
    before, before_counts = digest(conn, skip=(REJECTION_COUNTERS,)), counters(conn)
    try:
        result = memory.ingest(raw)
    except PayloadError as error:
        assert _names_a_field(error)
        _assert_nothing_written(memory, before, before_counts)
        return
    _assert_stored(memory, result)
    if result.target not in ("l0_only", "runtime_trace") and not result.duplicate:
        event = memory.get_event(result.event_id)
        text = raw["chat"]["text"]
        if "redactions" not in event["metadata"] and not has_recalled(text):
            assert event["content"] == unicodedata.normalize("NFC", text)      # stored exactly as said


@pytest.fixture(scope="module")
def processing_memory(tmp_path_factory):
    holder = FuzzMemory(tmp_path_factory.mktemp("fuzz-process"), rotate=40)
    yield holder
    if holder._memory is not None:
        assert integrity_ok(holder._memory)
    holder.close()


_FAILURES = {"l2_projection_jobs": L2_PROJECTION_JOBS, "embedding_jobs": EMBEDDING_JOBS,
             "extraction_retries": EXTRACTION_RETRIES}


# Times within a few weeks: the periodic jobs walk every hour from the last run to ``now``, so decades
# between two cases would spend the budget walking windows (the app runs them on the real clock).
_RECENT = st.floats(1_764_000_000.0, 1_764_000_000.0 + 30 * 86_400.0)


@st.composite
def recent_batches(draw):
    batch = draw(st.lists(valid_shaped, min_size=1, max_size=4))
    for payload in batch:
        payload["occurred_at"] = draw(_RECENT)
    return batch


@given(recent_batches())
def test_what_is_accepted_is_processed_without_a_failure(processing_memory, batch):
    """The layers after ingest see only what validation let through: every accepted payload goes through
    embedding, L2 projection, fact extraction and the periodic jobs without a job failing."""
    count("ingest + process_pending + run_due")
    memory = processing_memory.memory
    results = memory.ingest_many(batch, on_error="report")
    if not any(r.ok for r in results):
        return
    latest = 1_764_000_000.0 + 30 * 86_400.0
    memory.process_pending(now=latest + 60)
    for raw in batch:
        if isinstance(raw, dict) and isinstance(raw.get("session_id"), str):
            try:
                memory.end_session(raw["session_id"])
            except UnicodeEncodeError:
                pass                       # a session id that failed validation was never stored
    memory.process_pending(now=latest + 120)
    memory.run_due(now=latest + 2 * 86_400)
    conn = memory.db.reader()
    # extraction_retries holds a row only for a generation that failed or waited: any row is one.
    failures = {table: [job.last_error for job in queue.jobs(conn).values()
                        if job.last_error is not None or table == "extraction_retries"]
                for table, queue in _FAILURES.items()}
    assert failures == {table: [] for table in _FAILURES}, failures
