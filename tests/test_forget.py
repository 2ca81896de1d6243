"""forget(): evidence removed everywhere, derived rows with it, and a receipt (architecture §14)."""
# Raw SQL left is about the file: its integrity and foreign-key checks after a forget.

import pytest
from payloads import chat, sensor

from magi_desktop.core.store import vectors
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.search import match_count
from magi_desktop.core.store.summaries import summary_texts
from magi_desktop.core.store.tables import all_rows

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
    return match_count(memory.db.reader(), "fact_events_fts", word)


def test_forgetting_an_event_removes_it_everywhere_with_a_receipt(moved):
    assert fts_hits(moved, "Jiaxing") >= 1
    rowid = event_rows(moved.db.reader(), source_item_id="e2")[0]["id"]
    chunks = vectors.chunk_count(moved.db.reader(), rowid)
    assert chunks >= 1
    receipt = moved.forget(source_item_ids=["e2"])
    assert receipt["removed"]["fact_events"] == 1 and receipt["removed"]["event_chunks"] == chunks
    assert receipt["removed"]["chunk_vectors"] == chunks and receipt["removed"]["l2_evidence"] >= 1
    assert fts_hits(moved, "Miso") == 0                                     # no full-text hit
    assert vectors.chunk_vector_count(moved.db.reader(), rowid) == 0       # no vector hit
    pack = moved.query("where do I live now?", now=T0 + 40 * DAY)
    assert not any("Jiaxing" in f.text and f.layer in ("L1", "L2") for f in pack.findings)
    homes = [b.value for b in moved.beliefs("assertions", state="current") if b.relation == "lives_in"]
    assert homes == ["Shanghai"]                                             # what it replaced is current again
    assert not any("Miso" in s for s in summary_texts(moved.db.reader()))
    assert moved.forget_receipts()[0]["receipt_id"] == receipt["receipt_id"]
    assert "Miso" not in str(receipt)                                        # a receipt names no content
    assert moved.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_forgetting_by_source_and_time_range_and_the_summaries_come_back_from_what_remains(moved):
    receipt = moved.forget(source="browser", start=T0 + 30 * DAY, end=T0 + 32 * DAY)
    assert receipt["removed"]["fact_events"] == 1 and moved.stats()["events"]["total"] == 2
    moved.run_due(now=T0 + 41 * DAY)
    days = summary_texts(moved.db.reader(), summary_type="temporal", granularity="day")
    assert [d for d in days if "moved to jiaxing" in d.lower()]              # its day summarised again
    with pytest.raises(ValueError):
        moved.forget()


def test_forgetting_an_entity(moved):
    e2 = event_rows(moved.db.reader(), source_item_id="e2")[0]["event_id"]
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
    out = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "forget", "--item", "e1", "--json",
                          "--yes"],
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
    assert receipt["removed"]["memory_facts"] == 1 and receipt["removed"]["fact_extractions"] == 1
    memory.extract_facts(now=T0 + 20)                               # the rest is read again: no acceptance left
    assert memory.facts() == [] and "Use fish" in memory.extractions()[0]["episode"]
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
    assert "private medical" not in str(all_rows(conn, "l4_execution_traces"))
    memory.forget(start=T0, end=T0 + 4 * DAY)
    assert memory.skills() == [] and conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _said(memory, text, at, item):
    event_id = memory.ingest(chat(text, at=at, item=item)).event_id
    return event_id, [{"id": event_id, "role": "user", "text": text, "provenance": "human_input"}]


def test_forgetting_a_fact_in_a_chain_never_brings_back_what_was_replaced_or_deleted_later(memory):
    a_id, a = _said(memory, "I drink coffee every morning.", T0, "a")
    _, b = _said(memory, "I drink green tea at night.", T0 + 1, "b")
    _, r = _said(memory, "These days I drink only tea, no coffee.", T0 + 2, "r")
    fa = memory.remember("I drink coffee every morning", "Coffee in the morning.", a)
    fb = memory.remember("I drink green tea at night", "Green tea at night.", b)
    merged = memory.merge_facts([fa, fb], "Coffee in the morning, green tea at night.")
    latest = memory.remember("I drink only tea, no coffee", "Only tea.", r, replaces=merged)
    receipt = memory.forget(event_ids=[a_id])                   # takes fa and the merge that holds its words
    assert receipt["removed"]["memory_facts"] == 2
    assert [f["fact_id"] for f in memory.facts()] == [latest]   # fb stays replaced: by the survivor now
    assert memory.fact(fb)["superseded_by"] == latest


def test_forgetting_a_fact_the_user_deleted_keeps_what_it_absorbed_retired(memory):
    a_id, a = _said(memory, "My gym locker is number 12.", T0, "a")
    _, b = _said(memory, "My gym is on Elm Street.", T0 + 1, "b")
    fa = memory.remember("My gym locker is number 12", "Locker 12.", a)
    fb = memory.remember("My gym is on Elm Street", "Gym on Elm Street.", b)
    merged = memory.merge_facts([fa, fb], "Locker 12 at the Elm Street gym.")
    memory.delete_fact(merged)
    assert "Locker 12" not in str(memory.fact(merged))        # the words are erased, not only hidden
    memory.forget(event_ids=[a_id])
    assert memory.facts() == [] and memory.fact(fb)["status"] == "merged"


def test_a_forgotten_message_takes_its_extractions_episode_and_the_rest_is_read_again(memory):
    rows = [("user", "My HIV test came back positive, which clinic?"), ("assistant", "Go to the Rivera clinic."),
            ("user", "Sounds good."), ("user", "Remember that my doctor is Dr. Osei.")]
    ids = [memory.ingest(chat(text, at=T0 + i, session="s9", role=role,
                              provenance="human_input" if role == "user" else None)).event_id
           for i, (role, text) in enumerate(rows)]
    memory.end_session("s9")
    memory.extract_facts(now=T0 + 10)
    assert len(memory.facts()) == 2 and "HIV" in memory.extractions()[0]["episode"]
    receipt = memory.forget(event_ids=ids[:1])
    assert receipt["removed"]["fact_extractions"] == 1 and memory.extractions() == []
    assert [f["content"] for f in memory.facts()] == ["My doctor is Dr. Osei"]
    memory.extract_facts(now=T0 + 20)                           # what remains is read again: nothing doubled
    assert [f["content"] for f in memory.facts()] == ["My doctor is Dr. Osei"]
    assert "HIV" not in str(memory.extractions()) and "HIV" not in str(all_rows(memory.db.reader(), "memory_facts"))
    conn = memory.db.reader()
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_a_fact_is_gone_from_the_index_and_the_answers_once_its_message_is_forgotten(memory):
    said, turn = _said(memory, "My blood type is AB negative.", T0, "m1")
    memory.remember("My blood type is AB negative", "The user's blood type is AB negative.", turn)
    assert any(f.evidence_class == "fact_stated" for f in memory.query("what is my blood type?", now=T0 + 5).findings)
    memory.forget(event_ids=[said])
    conn = memory.db.reader()
    assert match_count(conn, "memory_facts_fts", "blood") == 0
    assert not memory.query("what is my blood type?", now=T0 + 5).findings


def test_a_turn_of_recalled_memory_alone_keeps_no_copy(memory):
    memory.ingest(chat("<magi-recalled>The user has Crohn's disease.</magi-recalled>", at=T0, item="r1"))
    assert "Crohn" not in str(all_rows(memory.db.reader(), "runtime_traces"))


def test_forgotten_words_leave_no_bytes_in_the_database_files(memory):
    memory.ingest(chat("My secret hobby is zebrafinchbreeding on Tuesdays.", at=T0, item="z1"))
    memory.ingest(chat("I live in Shanghai.", at=T0 + 1, item="z2"))
    memory.process_pending()
    memory.run_due(now=T0 + 3 * DAY)
    memory.forget(source_item_ids=["z1"])
    files = [p for p in memory.path.parent.iterdir() if p.name.startswith(memory.path.name)]
    assert files and not any(b"zebrafinch" in p.read_bytes() for p in files)
    assert memory.query("where do I live?", now=T0 + 3 * DAY).findings            # the rest still answers


def test_magi_forget_shows_a_dry_run_asks_in_a_terminal_and_never_blocks_a_script(tmp_path, monkeypatch, capsys):
    """Issue 22, item 4: --dry-run removes nothing; without --yes a terminal is asked and a script is refused
    (exit 2, never waiting for an answer); criteria that match nothing say so and write no receipt."""
    import io
    import json
    import subprocess
    import sys

    from magi_desktop.cli import main
    from magi_desktop.core import Memory

    folder = tmp_path / "d"
    with Memory.open(folder, embedder="hashing") as memory:
        memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
        memory.ingest(chat("Nothing to see.", at=T0 + 1, item="e2"))

    def run(*args, stdin=""):
        return subprocess.run([sys.executable, "-m", "magi_desktop.cli", "forget", "--data-dir", str(folder), *args],
                              capture_output=True, text=True, input=stdin, timeout=120)

    dry = run("--item", "e1", "--dry-run")
    assert dry.returncode == 0 and "would remove 1 event(s) (chat 1)" in dry.stdout
    assert "I live in Shanghai" in dry.stdout
    dry_json = json.loads(run("--item", "e1", "--dry-run", "--json").stdout)
    assert dry_json["dry_run"] and dry_json["would_forget"]["events"] == 1
    script = run("--item", "e1", stdin="y\n")                 # piped stdin is no terminal: no question, no forget
    assert script.returncode == 2 and "--yes" in script.stderr
    nothing = run("--item", "nope-123", "--yes")
    assert nothing.returncode == 0 and "nothing matches --item nope-123" in nothing.stderr
    with Memory.open(folder, embedder="hashing") as memory:
        assert memory.forget_receipts() == [] and memory.stats()["events"]["total"] == 2

    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert main(["forget", "--data-dir", str(folder), "--item", "e1"]) == 1        # the person said no
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert main(["forget", "--data-dir", str(folder), "--item", "e1"]) == 0
    said = capsys.readouterr()
    assert "this removes, everywhere and for good, 1 event(s)" in said.err and "receipt 1: 1 event(s)" in said.out
    with Memory.open(folder, embedder="hashing") as memory:
        assert memory.stats()["events"]["total"] == 1
