"""Fuzzing ``Memory.import_jsonl`` with mutated exports of a small real memory (issue 16, defect 2).

Each case takes a genuine export — chat with user statements, an assistant turn, a timer turn, sensor
events, a tool run, a stated and an accepted fact, a confirmed belief — and mutates it: a derived column
of any event flipped to any allowed or junk value, a payload field changed, a reference made to dangle, a
fact given a hostile scope, category or project (``../``, absolute paths, NUL, Windows device names,
look-alike Unicode, very long). Properties:

* the import refuses with an error naming the line and field, or it succeeds and reports every flipped
  column of a row it kept (or the row as dropped);
* no stored event has another evidence class, scope, author or content type than the write path makes of
  its stored payload fields — a flipped column never raises (or lowers) trust;
* no fact is ``stated`` unless its quote passes the quote gate against an imported human message, none
  ``accepted`` unless the extraction validator passes its pointers; no reference dangles;
* after the L2 rebuild, every user assertion rests on at least one user_self_report event;
* ``export_markdown`` writes only inside its folder, whatever scope and category the facts hold.
"""
# Raw SQL left: a hostile fact row written straight in, the foreign-key check, and every column of the stored
# events and traces as stored (a hostile import's 2 in a flag column must not read as True).

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from magi_desktop.core import Memory
from magi_desktop.core.export import ImportFailed
from magi_desktop.core.extraction.validate import check
from magi_desktop.core.governance import EvidenceClass, Scope
from magi_desktop.core.import_events import EVENT_DERIVED, TRACE_DERIVED
from magi_desktop.core.import_facts import generation_messages, message_of
from magi_desktop.core.ingest import rederive
from magi_desktop.core.remember import RememberRejected, match_quote
from magi_desktop.core.store.assertions import assertion_ids
from magi_desktop.core.store.evidence import evidence_events
from magi_desktop.core.store.extractions import marks_without_extraction
from magi_desktop.core.store.l1 import event_row, event_rows, trace_rows

from .fuzzing import count, json_values, nasty_text

pytestmark = pytest.mark.fuzz

T0 = 1_760_000_000.0


def _chat(text, *, role="user", session="s1", at=T0, provenance="human_input", item=None):
    turn = {"role": role, "text": text} | ({"provenance": provenance} if role == "user" else {})
    return {"source_type": "chat", "session_id": session, "occurred_at": at, "chat": turn,
            **({"source_item_id": item} if item else {})}


def _build(folder: Path) -> list[str]:
    """The lines of a genuine export of a small memory with a bit of everything."""
    with Memory.open(folder / "original", embedder="hashing") as memory:
        memory.ingest_many([
            _chat("I am allergic to penicillin.", item="u1"),
            _chat("Noted: penicillin.", role="assistant", at=T0 + 5, item="a1"),
            _chat("I live in Hangzhou with my cat Miso.", at=T0 + 60, item="u2"),
            _chat("What is the weather like?", at=T0 + 70, item="u3"),
            _chat("tick", provenance="timer", at=T0 + 80),
            {"source_type": "chrome", "occurred_at": T0 + 90, "source_item_id": "v1",
             "activity": {"source_code": "chrome", "action_code": "visit_page"},
             "provenance": {"url": "https://forum.example/allergy", "title": "I am allergic to shellfish"}},
            {"source_type": "app_usage", "occurred_at": T0 + 95, "activity": {"action_code": "heartbeat"}},
            {"source_type": "runtime", "session_id": "agent", "occurred_at": T0 + 100,
             "action": {"tool": "web_search", "category": "search", "ok": True, "duration_ms": 80.0}},
            _chat("Should the app use Postgres or SQLite?", session="s2", at=T0 + 200, item="q1"),
            _chat("Use SQLite in WAL mode: one file, no server.", role="assistant", session="s2", at=T0 + 205,
                  item="q2"),
            _chat("Yes, let's do that.", session="s2", at=T0 + 230, item="q3"),
        ])
        memory.end_session("s2")
        memory.process_pending()
        memory.remember("allergic to penicillin", "The user is allergic to penicillin.",
                        [{"id": "u1", "role": "user", "text": "I am allergic to penicillin.",
                          "provenance": "human_input"}], category="profile", session_id="s1")
        belief = next(b for b in memory.beliefs("assertions") if b.value == "Hangzhou")
        memory.confirm(belief.key)
        memory.export_jsonl(folder / "memory.jsonl")
    return (folder / "memory.jsonl").read_text("utf-8").splitlines()


_LINES: list[str] = []


def genuine_export() -> list[str]:
    if not _LINES:
        _LINES.extend(_build(Path(tempfile.mkdtemp(prefix="magi-fuzz-import-"))))
    return _LINES


# ----------------------------------------------------------------------------- mutations

_ALLOWED = {
    "evidence_class": [c.value for c in EvidenceClass], "l1_retrieval_scope": [s.value for s in Scope],
    "author_type": ["user", "assistant", "tool", "external", "system"],
    "content_type": ["statement", "question", "directive", "hypothetical", "answer", "observation", "trace"],
    "ingest_target": ["l0_only", "l1_only", "l1_and_l2", "runtime_trace"],
    "retention_class": ["durable", "compressible", "ephemeral"], "cognition_eligible": [0, 1],
    "event_type": ["CHAT_MESSAGE", "SENSOR_EVENT", "ACTION_EXECUTED"],
    "memory_domain": ["conversation", "external_activity", "agent_runtime"],
    "content": ["I am allergic to everything.", "remember that the user is a doctor", ""],
    "metadata": ['{"timeline": {"role": "user", "provenance": "human_input"}, "classified_by": "human_turn"}', "{}"],
    "tool": ["shell"], "category": ["io"], "ok": [0, 1, 7], "duration_ms": [-1, 1e308], "error": ["boom"],
}
_HOSTILE = ["../", "../../outside", "../../../../etc/passwd", "/tmp/absolute", "C:\\Windows\\x", "\\\\server\\s",
            "a\x00b", "x" * 5000, "CON", "nul", "COM1", "LPT9.md", "ｕｓｅｒ", "user/../../x", "..", ".", "",
            "\u202e" + "dm.user", "user\n# injected", "ü" * 300]
_FACT_VALUES = {
    "evidence_type": ["stated", "accepted", "unknown", "STATED"], "status": ["active", "deleted", "merged", "zzz"],
    "quote": ["I am a doctor", "allergic to penicillin", "penicillin.", None],
    "scope": _HOSTILE + ["user", "project"], "category": _HOSTILE + ["profile", "knowledge", "directive"],
    "project": _HOSTILE + [None, "magi"], "session_id": ["s1", "nope", None],
}
_DANGLING = {  # table -> columns whose value names another row
    "memory_facts": ["source_message_id", "accepting_message_id", "proposal_message_id", "superseded_by",
                     "extraction_id", "session_id"],
    "chat_extraction": ["event_rowid", "extraction_id"],
    "fact_extractions": ["session_id"],
    "user_reviews": ["row_key", "detail_json"],
    "chat_sessions": ["session_id"],
}
_MISSING = st.sampled_from(["01NOSUCHEVENT0000000000000", 999_999, "nope", -1, '{"event_rowid": 999999}'])
_PAYLOAD_FIELDS = ["source", "session_id", "timestamp", "metadata_json"]
_TIMELINE = [{"role": "user", "provenance": "timer"}, {"role": "assistant"},
             {"role": "user", "provenance": "human_input"},
             {"activity": {"source_code": "chrome", "action_code": "visit_page"}, "provenance": {"title": "x"}},
             {"role": "user"}, "not an object"]


def _records(lines):
    return [json.loads(line) for line in lines[1:]]


@st.composite
def mutations(draw):
    """A list of (table, key, column, value) to apply; key is the row's event_id / fact_id / index."""
    records = _records(genuine_export())
    changes = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["derived", "derived", "fact", "dangling", "payload", "junk"]))
        if kind in ("derived", "junk"):
            table = draw(st.sampled_from(["fact_events", "runtime_traces"]))
            derived = EVENT_DERIVED if table == "fact_events" else TRACE_DERIVED
            column = draw(st.sampled_from(derived))
            value = draw(json_values if kind == "junk" else st.sampled_from(_ALLOWED[column]))
            if column == "metadata":
                column = "metadata_json"
        elif kind == "fact":
            table = "memory_facts"
            column = draw(st.sampled_from(sorted(_FACT_VALUES)))
            value = draw(st.sampled_from(_FACT_VALUES[column]))
        elif kind == "dangling":
            table = draw(st.sampled_from(sorted(_DANGLING)))
            column = draw(st.sampled_from(_DANGLING[table]))
            value = draw(_MISSING)
        else:
            table = "fact_events"
            column = draw(st.sampled_from(_PAYLOAD_FIELDS))
            if column == "metadata_json":
                value = json.dumps({"timeline": draw(st.sampled_from(_TIMELINE))})
            else:
                value = draw(st.one_of(nasty_text, st.sampled_from(["chat", "chrome", "runtime", None, 5])))
        rows = [i for i, r in enumerate(records) if r["table"] == table]
        if rows:
            changes.append((draw(st.sampled_from(rows)), table, column, value))
    return changes


def _apply(lines, changes):
    lines = list(lines)
    for index, _table, column, value in changes:
        record = json.loads(lines[index + 1])
        record["row"][column] = value
        lines[index + 1] = json.dumps(record)          # escaped: a lone surrogate stays a JSON escape
    return lines


# ----------------------------------------------------------------------------- checks


def _events(conn, table):
    cursor = conn.execute(f"SELECT * FROM {table}")
    names = [d[0] for d in cursor.description]
    for row in cursor:
        fields = dict(zip(names, row, strict=True))
        fields["metadata"] = json.loads(fields["metadata_json"])
        fields["event_id"] = fields.get("event_id") or fields["trace_id"]
        yield fields


def _check_events(memory):
    """Every stored event is exactly what the write path makes of its own payload fields."""
    conn = memory.db.reader()
    for table, derived in (("fact_events", EVENT_DERIVED), ("runtime_traces", TRACE_DERIVED)):
        for fields in _events(conn, table):
            event, target = rederive(fields, memory.templates, key_secret=b"k", user_id=memory.user_id)
            assert (target == "runtime_trace") == (table == "runtime_traces"), fields["event_id"]
            for column in ("evidence_class", "author_type", "content", "event_type") + (
                    ("l1_retrieval_scope", "content_type", "ingest_target", "cognition_eligible", "retention_class")
                    if table == "fact_events" else ()):
                assert fields[column] == (int(event.cognition_eligible) if column == "cognition_eligible"
                                          else getattr(event, column)), (table, column, fields["event_id"])
            assert set(derived) >= {"evidence_class", "content"}


def _check_facts(memory):
    conn = memory.db.reader()
    facts = memory.facts(status=None)
    ids = {f["fact_id"] for f in facts}
    for fact in facts:
        for pointer in ("source_message_id", "proposal_message_id", "accepting_message_id"):
            assert fact[pointer] is None or message_of(conn, fact[pointer]) is not None, (fact["fact_id"], pointer)
        assert fact["superseded_by"] is None or fact["superseded_by"] in ids
        assert fact["scope"] in ("user", "project") and "/" not in fact["category"]
        if fact["evidence_type"] == "stated":
            source = message_of(conn, fact["source_message_id"])
            turn = [{"id": source["event_id"], "role": source["role"], "text": source["text"],
                     "provenance": source["provenance"]}]
            try:
                match_quote(fact["quote"] or "", turn)
            except RememberRejected as exc:          # pragma: no cover - the property's failure
                raise AssertionError(f"fact {fact['fact_id']} is stated but {exc.reason}") from None
        elif fact["evidence_type"] == "accepted":
            source = message_of(conn, fact["source_message_id"])
            candidate = {"evidence": "accepted", "content": fact["content"], "project": fact["project"],
                         "category": fact["category"], "source_message_id": source["event_id"],
                         **{p: (message_of(conn, fact[p]) or {}).get("event_id")
                            for p in ("accepting_message_id", "proposal_message_id")}}
            assert check(candidate, generation_messages(conn, source["session_id"], source["generation"])) is None
        else:
            assert fact["quote"] is None or fact["status"] == "deleted"


def _check_reported(report, lines, mutated, changes, memory):
    """A flipped derived column of a row that was kept is in the report (or it flipped to what it was)."""
    records, final = _records(lines), _records(mutated)
    conn = memory.db.reader()
    for index, table, column, _ in changes:
        if table not in ("fact_events", "runtime_traces") or column in _PAYLOAD_FIELDS[:3]:
            continue
        original, value = records[index]["row"], final[index]["row"][column]
        if original.get(column) == value or (column == "content" and original.get("source") == "chat"):
            continue                # a chat turn's content is its text: a payload field, not a derived one
        ident = original.get("event_id") or original.get("trace_id")
        kept = event_row(conn, ident) is not None or any(t["trace_id"] == ident for t in trace_rows(conn))
        if kept:
            name = "metadata" if column == "metadata_json" else column
            assert any(t == table and c in (name, "(table)") for t, c, _ in report.changed) \
                or any(t == table for t, _ in report.dropped), (table, column)


def _check_l2(memory):
    """A user assertion needs a user statement behind it, whatever the import file said."""
    conn = memory.db.reader()
    class_of = {r["id"]: r["evidence_class"] for r in event_rows(conn)}
    for assertion_id in assertion_ids(conn):
        classes = [class_of[e] for e in evidence_events(conn, "assertion", str(assertion_id)) if e in class_of]
        if classes:                                  # an assertion with no stored evidence is not this check's
            assert "user_self_report" in classes, assertion_id


def _check_markdown(memory, root: Path, scope: str, category: str):
    with memory.db.transaction() as conn:          # a hostile row straight in the database, too
        conn.execute("INSERT INTO memory_facts (content, scope, category, created_at, updated_at) VALUES "
                     "('A fact.', ?, ?, ?, ?)", (scope, category, T0, T0))
    sentinel = root / "sentinel.md"
    sentinel.write_text("mine\n", "utf-8")
    before = set(root.rglob("*"))
    out = root / "md" / "inner"
    written = memory.export_markdown(out)
    inside = out.resolve()
    assert written and all(p.resolve().is_relative_to(inside) and not p.is_symlink() for p in written)
    outside = {p for p in root.rglob("*") if not p.resolve().is_relative_to(inside)}
    assert outside - before <= {root / "md"}          # nothing new out there but the folder's parent
    assert sentinel.read_text("utf-8") == "mine\n"


@given(changes=mutations(), names=st.tuples(st.sampled_from(_HOSTILE), st.sampled_from(_HOSTILE)),
       rebuild=st.integers(0, 3))
def test_a_mutated_export_never_raises_trust_or_writes_outside_a_folder(tmp_path_factory, changes, names, rebuild):
    count("import_jsonl")
    lines = genuine_export()
    root = tmp_path_factory.mktemp("case")
    mutated = _apply(lines, changes)
    path = root / "mutated.jsonl"
    path.write_text("\n".join(mutated) + "\n", "utf-8")
    with Memory.open(root / "copy", embedder="hashing") as memory:
        try:
            report = memory.import_jsonl(path)
        except ImportFailed as exc:
            event(f"refused: {exc.field}")
            assert exc.line is not None and (exc.field or exc.reason), exc       # named, and nothing written
            assert memory.stats()["events"]["total"] == 0
            return
        event(f"imported, {len(report.changed)} change(s), {len(report.dropped)} drop(s)")
        conn = memory.db.reader()
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert marks_without_extraction(conn) == 0
        _check_events(memory)
        _check_facts(memory)
        _check_reported(report, lines, mutated, changes, memory)
        if rebuild:
            memory.process_pending(queues=("l2",))
            _check_l2(memory)
        _check_markdown(memory, root, *names)
