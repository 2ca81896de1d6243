"""What agents get besides the MCP transport (issue 9): the current turn that remember() checks, the
usage record behind Settings → Agents, the user's snapshot and the recent summaries, and the README's
agent loop run as it is written."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from payloads import chat

from magi_desktop.core import InvalidInput

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_772_000_000.0


def test_the_current_turn_is_what_the_memory_stored_since_the_last_assistant_message(memory):
    """Read from the stored events — so another server, a restarted one or the CLI sees the same turn — each
    message as stored (secrets redacted), every role kept (the quote gate says why a tool's words are refused)."""
    assert memory.current_turn("s") is None                         # nothing stored for the session
    ids = [memory.ingest(chat(text, role=role, session="s", at=T0 + i, provenance=provenance)).event_id
           for i, (role, text, provenance) in enumerate([
               ("user", "message one", None), ("assistant", "an answer", None),
               ("user", "my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789", None),
               ("tool", "a tool's output", None), ("user", "Done: 3 files uploaded.", "task_result")])]
    memory.ingest(chat("another session", session="other", at=T0 + 9))
    turn = memory.current_turn("s")
    assert [m["id"] for m in turn] == ids[2:]
    assert [(m["role"], m.get("provenance")) for m in turn] == [("user", "human_input"), ("tool", None),
                                                                 ("user", "task_result")]
    assert "ghp_" not in turn[0]["text"] and "[REDACTED]" in turn[0]["text"]
    memory.ingest(chat("Noted.", role="assistant", session="s", at=T0 + 10))
    assert memory.current_turn("s") == []                           # the assistant spoke last
    assert [m["text"] for m in memory.current_turn("other")] == ["another session"]


def test_a_conversation_quiet_past_the_idle_time_or_imported_has_no_current_turn(memory, tmp_path):
    """An old message is not this turn's: after 30 idle minutes the conversation ended, and an imported one was
    never said to the agent now asking — neither may confirm a remember() or a forget."""
    import time

    from magi_desktop.core import Memory
    from magi_desktop.core.session_constants import SESSION_IDLE_SECONDS

    memory.ingest(chat("My cat is called Miso.", session="old", at=T0))
    assert [m["text"] for m in memory.current_turn("old")] == ["My cat is called Miso."]
    assert memory.current_turn("old", now=time.time() + SESSION_IDLE_SECONDS + 1) is None
    memory.export_jsonl(tmp_path / "export.jsonl")
    # The export of a memory that received the message long ago: the import keeps when it was received.
    export = (tmp_path / "export.jsonl").read_text("utf-8")
    received = re.search(r'"ingested_at":([0-9.]+)', export).group(1)
    (tmp_path / "old.jsonl").write_text(export.replace(f'"ingested_at":{received}', f'"ingested_at":{T0}'), "utf-8")
    with Memory.open(tmp_path / "other", embedder="hashing") as other:
        assert other.import_jsonl(tmp_path / "old.jsonl").to_dict()["imported"]["fact_events"] == 1
        assert [m["text"] for m in other.session_messages("old")] == ["My cat is called Miso."]
        assert other.current_turn("old") is None


def test_the_current_turn_is_bounded_and_a_sessions_messages_page_back(memory):
    from magi_desktop.core.services.sessions import TURN_MESSAGES

    memory.ingest_many([chat(f"message {i}", session="long", at=T0 + i, item=f"m{i}")
                        for i in range(TURN_MESSAGES + 5)])
    turn = memory.current_turn("long")
    assert len(turn) == TURN_MESSAGES and turn[-1]["text"] == f"message {TURN_MESSAGES + 4}"
    assert turn[0]["text"] == "message 5"                           # the latest, oldest first
    last = memory.session_messages("long", limit=3)
    assert [m["text"] for m in last] == [f"message {i}" for i in range(TURN_MESSAGES + 2, TURN_MESSAGES + 5)]
    before = memory.session_messages("long", limit=3, before=last[0]["id"])
    assert [m["source_item_id"] for m in before] == [f"m{i}" for i in range(TURN_MESSAGES - 1, TURN_MESSAGES + 2)]
    with pytest.raises(InvalidInput, match="no message"):
        memory.session_messages("other", before=last[0]["id"])      # a message of another session is no anchor


def test_usage_is_counted_per_client_and_tool_without_content(memory):
    memory.record_agent_call("Claude Desktop", "memory_query", now=T0)
    memory.record_agent_call("Claude Desktop", "memory_query", now=T0 + 5)
    memory.record_agent_call("Claude Desktop", "remember", now=T0 + 6)
    memory.record_agent_call("Claude Desktop", "remember", rejected="quote_not_found", now=T0 + 7)
    memory.record_agent_call("Claude Desktop", "log_turn", rejected="chat.provenance", now=T0 + 8)
    memory.record_agent_call("Claude Desktop", "log_turn", now=T0 + 9)
    memory.record_agent_call("cursor", "log_tool_run", now=T0 + 20)
    memory.record_agent_call(None, "user_snapshot", now=T0 + 1)
    usage = memory.agent_usage()
    assert [u["client"] for u in usage] == ["cursor", "Claude Desktop", "unknown client"]   # latest first
    cursor, desktop, unknown = usage
    assert (cursor["client"], cursor["tool_runs"], cursor["calls"]) == ("cursor", 1, 1)
    assert desktop["client"] == "Claude Desktop"
    assert (desktop["queries"], desktop["remembers"], desktop["turns"], desktop["rejections"]) == (2, 1, 1, 2)
    assert desktop["last_rejection"] == "log_turn: chat.provenance" and desktop["last_rejected_at"] == T0 + 8
    assert (desktop["first_used_at"], desktop["last_used_at"]) == (T0, T0 + 9)
    assert desktop["by_tool"]["remember"] == {"calls": 2, "rejections": 1}
    assert (unknown["client"], unknown["reads"]) == ("unknown client", 1)


def test_the_user_snapshot_holds_beliefs_and_saved_facts(memory):
    said = memory.ingest(chat("I live in Hangzhou.", at=T0, item="c1")).event_id
    memory.process_pending()
    memory.remember("I live in Hangzhou", "The user lives in Hangzhou.", [
        {"id": said, "role": "user", "text": "I live in Hangzhou.", "provenance": "human_input"}], category="profile")
    snapshot = memory.user_snapshot(now=T0 + 60)
    assert snapshot["traits"]["lives_in"][0]["value"] == "Hangzhou"
    assert [f["content"] for f in snapshot["facts"]] == ["The user lives in Hangzhou."]
    assert snapshot["facts"][0]["evidence_type"] == "stated"


def test_recent_summaries_come_newest_first(memory):
    for day in range(3):
        memory.ingest(chat(f"Day {day}: I worked on the garden.", at=T0 + day * 86400, item=f"d{day}"))
    memory.run_due(now=T0 + 4 * 86400)
    recent = memory.recent_summaries(limit=2, summary_type="temporal")
    assert len(recent) == 2 and recent[0]["window_end"] >= recent[1]["window_end"]
    assert all(s["summary_type"] == "temporal" and s["event_count"] >= 1 and s["content"] for s in recent)
    assert len(memory.recent_summaries(limit=50)) > 2


def readme_agent_loop() -> str:
    """The README's "An agent loop in Python" example, exactly as written there."""
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme.split("### An agent loop in Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_readme_agent_loop_runs_as_written(tmp_path):
    env = {**os.environ, "MAGI_DATA_DIR": str(tmp_path / "data")}
    out = subprocess.run([sys.executable, "-c", readme_agent_loop()], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Miso" in out.stdout and "saved fact" in out.stdout and "refused: quote_not_found" in out.stdout
    assert "web_search: open" in out.stdout
