"""Fuzzing ``Memory.query`` (architecture §5, §12): any question text — any Unicode, huge strings, control
characters, FTS5 and SQL syntax — with valid and invalid modes, times, limits and sessions.

Properties: the answer is an evidence pack whose ``to_dict()`` is JSON, ``ok`` exactly when one of its
findings answers; the only exception is the
documented ValueError (an empty question, an unknown mode or summary type, a limit outside
1..100, an invalid ``now``), raised exactly when one of those is wrong; a query writes nothing.
"""
# Raw SQL left: PRAGMA data_version, which tells whether the file was written at all.

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.contracts import PayloadError, parse_timestamp
from magi_desktop.core.retrieval import MODES
from magi_desktop.core.retrieval.summaries import SUMMARY_TYPES

from .fuzzing import _SYNTAX, count, huge_text, integrity_ok, nasty_text, rarely, timestamps

pytestmark = pytest.mark.fuzz

DAY = 86_400.0
START = 1_764_000_000.0


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A memory with something on every recall path: chat (English, Chinese), sensors, a tool run, L2, L3."""
    memory = Memory.open(tmp_path_factory.mktemp("fuzz-query"), embedder="hashing")
    memory.ingest_many([
        chat("I got a new pressure cooker, any soup recipes?", at=START, session="a"),
        chat("Try a miso soup.", role="assistant", at=START + 60, session="a"),
        chat("I just bought an air fryer", at=START + DAY, session="b"),
        chat("我新买了一个电饭煲", at=START + 2 * DAY, session="c"),
        chat("I live in Hangzhou and my sister is Anna", at=START + 2 * DAY + 5, session="c"),
        sensor("visit_page", {"url": "https://example.com/air-fryer", "title": "Air fryer reviews"},
               at=START + DAY + 30, item="v1"),
        sensor("run_command", {"command": "make test", "cwd": "/src/app"}, source="terminal", at=START + 3 * DAY),
        {"source_type": "runtime", "occurred_at": START + 3 * DAY,
         "action": {"tool": "web_search", "category": "search", "ok": False, "error": "timeout"}},
    ])
    memory.process_pending()
    memory.run_due(now=START + 40 * DAY)
    memory.process_pending()
    yield memory
    assert integrity_ok(memory)
    memory.close()


_question = st.one_of(
    nasty_text,
    st.lists(st.sampled_from(_SYNTAX + ["air", "fryer", "soup", "什么", "买", "before", "yesterday", "last week"]),
             min_size=1, max_size=10).map(" ".join),
    huge_text(20_000),
    st.sampled_from(["", " ", "\x00", "\t\n", "\u200b", "\ud800", "*", '"', "NEAR", "-", ":", "(", "AND",
                     "content:soup", "speaker:user", "{content}: x", '"unterminated', "a NEAR/2 b", "^start"]),
    st.integers(), st.none(), st.binary(max_size=8),
)


@st.composite
def query_args(draw):
    """Text of any kind; each other argument valid most of the time, so most cases reach the recall paths."""
    def sometimes_odd(valid, odd):
        return draw(odd if rarely(draw, 8) else valid)

    return (draw(_question),
            sometimes_odd(st.one_of(st.none(), st.sampled_from(MODES)), nasty_text),
            sometimes_odd(st.one_of(st.none(), st.floats(START - 10 * DAY, START + 60 * DAY)), timestamps()),
            sometimes_odd(st.integers(1, 100), st.one_of(st.integers(-2, 105), st.sampled_from([True, 2.5, "10"]))),
            draw(st.one_of(st.none(), st.sampled_from(["a", "b", "c"]), nasty_text)),
            sometimes_odd(st.one_of(st.none(), st.sampled_from(SUMMARY_TYPES)), nasty_text))


def _documented_error(text, mode, now, limit, summary_type) -> bool:
    """Whether the arguments break one of query's documented preconditions."""
    if not isinstance(text, str) or not text.strip():
        return True
    if mode is not None and mode not in MODES or summary_type is not None and summary_type not in SUMMARY_TYPES:
        return True
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 100:
        return True
    if now is not None:
        try:
            parse_timestamp(now, "now")
        except PayloadError:
            return True
    return False


def _data_version(memory) -> int:
    """SQLite's counter of commits made by other connections (every write goes through the writer)."""
    return memory.db.reader().execute("PRAGMA data_version").fetchone()[0]


@given(query_args())
def test_query_answers_any_text_with_an_evidence_pack(seeded, args):
    count("Memory.query")
    text, mode, now, limit, session_id, summary_type = args
    before = _data_version(seeded)
    expected_error = _documented_error(text, mode, now, limit, summary_type)
    try:
        pack = seeded.query(text, mode=mode, now=now, limit=limit, session_id=session_id,
                            summary_type=summary_type)
    except ValueError:
        assert expected_error, "ValueError for valid arguments"
    else:
        assert not expected_error, "invalid arguments were accepted"
        assert pack.status in ("ok", "insufficient")
        assert pack.query_mode in MODES
        json.dumps(pack.to_dict())
        assert len([f for f in pack.findings if f.layer == "L1"]) <= limit
        # architecture §16: "ok" exactly when some finding answers; insufficient_evidence mirrors the status.
        assert all(isinstance(f.answers, bool) for f in pack.findings)
        assert (pack.status == "ok") == any(f.answers for f in pack.findings)
        assert pack.insufficient_evidence == (pack.status == "insufficient")
    assert _data_version(seeded) == before                  # asking never writes
