"""L0 working memory: a session's workbench, its dialogue threads, cleared when the session ends."""
# The one SQL-looking literal is a chat turn's text about SQLite, not a statement.

from payloads import chat

T0 = 1_765_000_000.0


def tool(name, ok, at, session="s1", error=None):
    action = {"tool": name, "category": "search", "ok": ok, "duration_ms": 50}
    if error:
        action["error"] = error
    return {"source_type": "runtime", "session_id": session, "occurred_at": at, "action": action}


def test_the_workbench_holds_goal_focus_tools_and_a_running_summary(memory):
    memory.ingest(chat("I live in Hangzhou.", at=T0 - 86400, session="old"))
    memory.process_pending()                       # "Hangzhou" is now a known entity
    memory.ingest(chat("Help me plan a weekend trip from Hangzhou to Suzhou.", at=T0))
    memory.ingest(chat("Sure — by train it takes about 90 minutes.", role="assistant", at=T0 + 5))
    memory.ingest(tool("train_timetable", False, T0 + 10, error="HTTP 503"))
    memory.ingest(tool("train_timetable", True, T0 + 20))
    memory.ingest(chat("Which train leaves Hangzhou earliest on Saturday?", at=T0 + 30))
    work = memory.working_memory("s1")
    assert work["goal"] == "Help me plan a weekend trip from Hangzhou to Suzhou." and work["goal_set_by"] == "inferred"
    assert work["focus_entities"][0] == "Hangzhou"
    assert [(t["tool"], t["ok"]) for t in work["tool_context"]] == [("train_timetable", False),
                                                                    ("train_timetable", True)]
    assert "Goal: Help me plan" in work["running_summary"] and "train_timetable failed" in work["running_summary"]
    memory.set_goal("s1", "Book the Saturday train")
    assert memory.working_memory("s1")["goal_set_by"] == "agent"
    pack = memory.query("which train?", session_id="s1")
    assert pack.working_memory["goal"] == "Book the Saturday train"
    assert pack.to_dict()["working_memory"]["session_id"] == "s1"
    assert all(f.layer != "L0" for f in pack.findings)           # context, never evidence


def test_threads_follow_the_dialogue_and_a_topic_shift_starts_a_new_one(memory):
    turns = [("user", "How do I tune the sqlite page cache?"),
             ("assistant", "Set PRAGMA cache_size; negative values are KiB."),
             ("user", "And the sqlite mmap size for the page cache?"),
             ("assistant", "PRAGMA mmap_size, in bytes."),
             ("user", "Unrelated: what should I cook for dinner tonight?"),
             ("assistant", "A quick noodle soup."),
             ("user", "Back to sqlite: does the cache size apply per connection?")]
    for i, (role, text) in enumerate(turns):
        memory.ingest(chat(text, role=role, at=T0 + i * 30))
    work = memory.working_memory("s1")
    threads = {t["thread"] for t in work["turns"]}
    assert len(threads) == 2
    by_text = {t["text"][:12]: t for t in work["turns"]}
    assert by_text["Unrelated: w"]["parent"] is None                         # a new root
    assert by_text["Back to sqli"]["thread"] == by_text["How do I tun"]["thread"]
    assert by_text["A quick nood"]["thread"] == by_text["Unrelated: w"]["thread"]
    assert by_text["And the sqli"]["parent"] == 1                            # under the answer it follows


def test_ending_a_session_clears_it_and_idle_sessions_end(memory):
    memory.ingest(chat("Remind me what we are doing.", at=T0, session="a"))
    memory.ingest(chat("Draft the release notes.", at=T0, session="b"))
    memory.end_session("a")
    assert memory.working_memory("a") is None and memory.working_memory("b") is not None
    assert memory.run_due(now=T0 + 31 * 60)["l0_sessions_ended"] == 1
    assert memory.working_memory("b") is None
    assert memory.stats()["events"]["total"] == 2                             # L1 keeps what was said
