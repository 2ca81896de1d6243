"""What agents get besides the MCP transport (issue 9): the current turn that remember() checks, the
usage record behind Settings → Agents, the user's snapshot and the recent summaries, and the README's
agent loop run as it is written."""

import os
import re
import subprocess
import sys
from pathlib import Path

from payloads import chat

from magi_desktop.agents.turns import TurnLog

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_772_000_000.0


def message(i, role="user", provenance="human_input"):
    return {"id": f"m{i}", "role": role, "text": f"message {i}", "provenance": provenance}


def test_the_current_turn_is_everything_logged_since_the_last_assistant_message():
    turns = TurnLog()
    assert turns.current("s") is None                               # nothing logged here
    turns.add("s", message(1))
    turns.add("s", message(2, role="assistant", provenance=None))
    assert turns.current("s") == []                                 # the assistant spoke last
    turns.add("s", message(3))
    turns.add("s", message(4, role="tool", provenance=None))        # a tool's output stays in the turn:
    turns.add("s", message(5, provenance="task_result"))            # the quote gate says why it is refused
    turns.add("other", message(6))
    assert [m["id"] for m in turns.current("s")] == ["m3", "m4", "m5"]
    assert [m["id"] for m in turns.current("other")] == ["m6"]


def test_the_turn_log_is_bounded():
    turns = TurnLog(sessions_kept=2, messages_kept=3)
    for i in range(5):
        turns.add("a", message(i))
    assert [m["id"] for m in turns.current("a")] == ["m2", "m3", "m4"]
    turns.add("b", message(9))
    turns.add("c", message(9))
    assert turns.current("a") is None and turns.current("c") is not None     # least recently used goes first


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
