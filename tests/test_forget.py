"""forget(): evidence removed everywhere, derived rows with it, and a receipt (DESIGN §14)."""

import pytest
from payloads import chat, sensor

T0 = 1_760_000_000.0
DAY = 86400.0


@pytest.fixture
def moved(memory):
    memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
    memory.ingest(chat("I moved to Jiaxing with my cat Miso.", at=T0 + 30 * DAY, session="s2", item="e2"))
    memory.ingest(sensor("visit_page", {"url": "https://jiaxing.example/"}, at=T0 + 31 * DAY, item="v1"))
    memory.process_pending()
    memory.run_due(now=T0 + 40 * DAY)
    return memory


def fts_hits(memory, word):
    return memory.db.reader().execute("SELECT count(*) FROM fact_events_fts WHERE fact_events_fts MATCH ?",
                                      (word,)).fetchone()[0]


def test_forgetting_an_event_removes_it_everywhere_with_a_receipt(moved):
    assert fts_hits(moved, "Jiaxing") >= 1
    rowid = moved.db.reader().execute("SELECT id FROM fact_events WHERE source_item_id = 'e2'").fetchone()[0]
    chunks = moved.db.reader().execute("SELECT count(*) FROM event_chunks WHERE event_rowid = ?",
                                       (rowid,)).fetchone()[0]
    assert chunks >= 1
    receipt = moved.forget(source_item_ids=["e2"])
    assert receipt["removed"]["fact_events"] == 1 and receipt["removed"]["event_chunks"] == chunks
    assert receipt["removed"]["chunk_vectors"] == chunks and receipt["removed"]["l2_evidence"] >= 1
    assert fts_hits(moved, "Miso") == 0                                     # no full-text hit
    assert moved.db.reader().execute("SELECT count(*) FROM chunk_vectors WHERE event_rowid = ?",
                                     (rowid,)).fetchone()[0] == 0           # no vector hit
    pack = moved.query("where do I live now?", now=T0 + 40 * DAY)
    assert not any("Jiaxing" in f.text and f.layer in ("L1", "L2") for f in pack.findings)
    homes = [b.value for b in moved.beliefs("assertions", state="current") if b.relation == "lives_in"]
    assert homes == ["Shanghai"]                                             # what it replaced is current again
    assert not any("Miso" in s[0] for s in moved.db.reader().execute("SELECT content FROM l3_summaries"))
    assert moved.forget_receipts()[0]["receipt_id"] == receipt["receipt_id"]
    assert "Miso" not in str(receipt)                                        # a receipt names no content
    assert moved.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_forgetting_by_source_and_time_range_and_the_summaries_come_back_from_what_remains(moved):
    receipt = moved.forget(source="browser", start=T0 + 30 * DAY, end=T0 + 32 * DAY)
    assert receipt["removed"]["fact_events"] == 1 and moved.stats()["events"]["total"] == 2
    moved.run_due(now=T0 + 41 * DAY)
    day = moved.db.reader().execute("SELECT content FROM l3_summaries WHERE summary_type = 'temporal' AND "
                                    "granularity = 'day' AND content LIKE '%moved to Jiaxing%'").fetchone()
    assert day is not None                                                   # its day summarised again
    with pytest.raises(ValueError):
        moved.forget()


def test_forgetting_an_entity(moved):
    e2 = moved.db.reader().execute("SELECT event_id FROM fact_events WHERE source_item_id = 'e2'").fetchone()[0]
    receipt = moved.forget(entity="jiaxing")                                 # a name, any case
    assert e2 in receipt["event_ids"] and receipt["removed"]["fact_events"] == len(receipt["event_ids"])
    assert not [b for b in moved.beliefs("facts") if b.value == "Jiaxing"]


def test_magi_forget_prints_a_receipt(tmp_path):
    import json
    import subprocess
    import sys

    from magi_desktop.core import Memory

    with Memory.open(tmp_path / "d", embedder="hashing") as memory:
        memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
        memory.ingest(chat("Nothing to see.", at=T0 + 1, item="e2"))
    env = {"MAGI_DATA_DIR": str(tmp_path / "d"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "forget", "--item", "e1", "--json"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["removed"]["fact_events"] == 1
    nothing = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "forget"], capture_output=True, text=True,
                             env=env, timeout=120)
    assert nothing.returncode == 2 and "say what to forget" in nothing.stderr


def test_forgetting_a_message_deletes_the_facts_that_point_at_it(memory):
    said = memory.ingest(chat("Remember that my locker code is 2231.", at=T0, item="m1")).event_id
    other = memory.ingest(chat("I drink tea every morning.", at=T0 + 1, item="m2")).event_id
    kept = memory.remember("I drink tea", "The user drinks tea every morning.",
                           [{"id": other, "role": "user", "text": "I drink tea every morning.",
                             "provenance": "human_input"}])
    gone = memory.remember("my locker code is 2231", "The user's locker code is 2231.",
                           [{"id": "m1", "role": "user", "text": "Remember that my locker code is 2231.",
                             "provenance": "human_input"}])        # the runtime's own message id: the item id
    merged = memory.merge_facts([kept, gone], "Tea, and locker 2231.")
    receipt = memory.forget(event_ids=[said])
    assert receipt["removed"]["memory_facts"] == 2                 # the fact and the merge that holds its words
    assert [f["fact_id"] for f in memory.facts(status=None)] == [kept]
    assert memory.fact(kept)["status"] == "active" and merged not in {f["fact_id"] for f in memory.facts(None)}


def test_forgetting_an_extracted_conversation_takes_its_facts_and_episode(memory):
    ids = [memory.ingest(chat(text, at=T0 + i, session="s9", role=role,
                              provenance="human_input" if role == "user" else None)).event_id
           for i, (role, text) in enumerate([("user", "Which shell?"), ("assistant", "Use fish."),
                                             ("user", "Sounds good.")])]
    memory.end_session("s9")
    memory.extract_facts(now=T0 + 10)
    assert len(memory.facts()) == 1 and len(memory.extractions()) == 1
    receipt = memory.forget(event_ids=ids[2:])                      # the acceptance alone
    assert receipt["removed"]["memory_facts"] == 1 and memory.facts() == []
    assert len(memory.extractions()) == 1                           # two of its messages remain
    receipt = memory.forget(event_ids=ids[:2])
    assert receipt["removed"]["fact_extractions"] == 1 and memory.extractions() == []


def test_forgetting_runtime_traces_re_derives_the_tool_experience(memory):
    from test_l4 import run

    memory.ingest(run("web_search", True, T0, query="private medical question"))
    memory.ingest(run("web_search", False, T0 + 60, error="timeout"))
    memory.ingest(run("web_search", True, T0 + 3 * DAY))
    memory.process_pending(queues=("l4",))
    receipt = memory.forget(start=T0 - 1, end=T0 + DAY)
    assert receipt["removed"]["runtime_traces"] == 2 and receipt["removed"]["l4_execution_traces"] == 2
    skill, = memory.skills()
    assert (skill["runs"], skill["successes"], skill["failures"]) == (1, 1, 0)
    memory.process_pending(queues=("l4",))
    assert "private medical" not in str(memory.skills())
    conn = memory.db.reader()
    assert "private medical" not in str(conn.execute("SELECT * FROM l4_execution_traces").fetchall())
    memory.forget(start=T0, end=T0 + 4 * DAY)
    assert memory.skills() == [] and conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
