"""Speakers read from the "Name: text" convention (issue 17, item 6; core/speakers.py)."""


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from payloads import chat
from reliability.fuzzing import nasty_text

from magi_desktop.core.ingest import stored_payload
from magi_desktop.core.mentioned_times import mentioned_windows
from magi_desktop.core.speakers import LABELS, NAME_PREFIX, prefixed_name
from magi_desktop.core.store.entities import catalog, linked_events
from magi_desktop.core.store.l1 import event_row, event_rows
from magi_desktop.core.store.tables import row_count

T = 1_700_000_000.0


def rows(memory):
    out = []
    for r in event_rows(memory.db.reader()):
        out.append({"content": r["content"], "author": r["author_type"], "class": r["evidence_class"],
                    "scope": r["l1_retrieval_scope"], "type": r["content_type"], "timeline": r["metadata"]["timeline"]})
    return out


@pytest.mark.parametrize("text, name", [
    ("Caroline: I went to the LGBTQ support group yesterday", "Caroline"),
    ("Mary Jane Watson: hi there", "Mary Jane Watson"),
    ("O'Neil: see you", "O'Neil"),
    ("Jean-Luc：bonjour", "Jean-Luc"),
    ("张伟：我今天去了西湖", "张伟"),
    ("欧阳娜娜: 好的", "欧阳娜娜"),
])
def test_names_are_candidates(text, name):
    assert prefixed_name(text) == name


@pytest.mark.parametrize("text", [
    "Note: buy milk", "Error: disk full", "Q: what is it?", "A: nothing", "TODO: fix", "Warning: hot",
    "Step 1: open the lid", "https://example.com/a", "10:30 meeting", "Meeting at 10:30", "FYI: late",
    "User: hello", "Assistant: hi", "注意：小心", "问题：怎么办", "Caroline:", "caroline: lower case",
    "Four Words Are Here: too long", "Re: your mail", "P.S.: later", "Summary: done",
])
def test_labels_urls_and_times_are_not_speakers(text):
    assert prefixed_name(text) is None


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=st.sampled_from(sorted(LABELS)), rest=st.text(min_size=1, max_size=40),
       colon=st.sampled_from([":", "：", " :"]))
def test_no_label_is_ever_a_speaker(label, rest, colon):
    for form in (label, label.capitalize(), label.upper(), label.title()):
        assert prefixed_name(f"{form}{colon} {rest}x") is None


def test_a_name_is_accepted_when_it_recurs_and_the_first_turn_is_settled_too(memory):
    memory.ingest(chat("Anna: I moved to Berlin last month", at=T))
    memory.ingest(chat("Note: buy milk", at=T + 1))
    first = rows(memory)
    assert "speaker" not in first[0]["timeline"] and first[0]["timeline"]["speaker_candidate"] == "Anna"
    memory.ingest(chat("Anna: the flat is nice", session="s2", at=T + 2))
    anna, note, again = rows(memory)
    for turn in (anna, again):
        assert turn["timeline"]["speaker"] == "Anna" and turn["timeline"]["speaker_source"] == NAME_PREFIX
        assert "speaker_candidate" not in turn["timeline"]
    assert "speaker" not in note["timeline"] and "speaker_candidate" not in note["timeline"]
    conn = memory.db.reader()
    linked = len({rowid for anna_entity in catalog(conn, name_key="anna")
                  for rowid, confidence in linked_events(conn, anna_entity.entity_id).items() if confidence == 1.0})
    assert linked == 2     # both turns are linked to the person, as a speaker field would


def test_a_speaker_field_makes_a_prefixed_name_known(memory):
    memory.ingest(chat("hello", speaker="Melanie", at=T))
    memory.ingest(chat("Melanie: I painted a lake", at=T + 1))
    assert rows(memory)[1]["timeline"]["speaker"] == "Melanie"


def test_the_same_turn_sent_twice_is_no_recurrence(memory):
    turn = chat("Anna: I moved to Berlin", at=T, item="t1")
    memory.ingest(turn)
    memory.ingest(turn)
    memory.ingest_many([chat("Bob: hi", at=T + 1, item="t2"), chat("Bob: hi", at=T + 1, item="t2")])
    assert all("speaker" not in r["timeline"] for r in rows(memory))


@pytest.mark.parametrize("role, provenance", [("user", "human_input"), ("user", "task_result"),
                                              ("user", "interjection"), ("assistant", None), ("tool", None)])
def test_role_author_content_and_evidence_class_never_change(tmp_path, role, provenance):
    from magi_desktop.core import Memory

    texts = ["Anna: I live in Berlin", "Anna: I have a cat called Tom", "Anna: what should I cook?"]
    twice = Memory.open(tmp_path / "twice", embedder="hashing")
    twice.ingest_many([chat(t, role=role, provenance=provenance, session=f"s{i}", at=T + i)
                       for i, t in enumerate(texts)])
    accepted = rows(twice)
    assert len(accepted) == len(texts)
    assert all(r["timeline"].get("speaker") == "Anna" for r in accepted)
    plain = Memory.open(tmp_path / "plain", embedder="hashing")   # the same words without any name
    plain.ingest_many([chat(t.split(": ", 1)[1], role=role, provenance=provenance, session=f"s{i}", at=T + i)
                       for i, t in enumerate(texts)])
    for with_name, without in zip(accepted, rows(plain), strict=True):
        assert (with_name["author"], with_name["class"], with_name["scope"], with_name["type"]) == \
               (without["author"], without["class"], without["scope"], without["type"])
        assert with_name["timeline"]["role"] == role and with_name["timeline"].get("provenance") == provenance
    assert [r["content"] for r in accepted] == texts
    for mem in (twice, plain):
        mem.close()


def test_what_was_sent_has_no_speaker_field(memory):
    memory.ingest_many([chat("Anna: one", at=T), chat("Anna: two", at=T + 1)])
    for r in rows(memory):
        sent = stored_payload({"source": "chat", "timestamp": T, "content": r["content"],
                               "metadata": {"timeline": r["timeline"]}})
        assert "speaker" not in sent["chat"]


def test_a_retry_of_a_prefixed_turn_is_still_a_retry(memory):
    import time

    now = time.time()
    memory.ingest_turn(chat("Anna: one", at=now - 2), retry_within=60)
    first = memory.ingest_turn(chat("Anna: two", at=now - 1), retry_within=60)
    assert rows(memory)[1]["timeline"]["speaker"] == "Anna"     # accepted: the stored turn now has a speaker
    again = memory.ingest_turn(chat("Anna: two", at=now), retry_within=60)
    assert again.duplicate and again.event_id == first.event_id
    assert row_count(memory.db.reader(), "fact_events") == 2


def test_the_prefix_is_indexed_once(memory):
    memory.ingest_many([chat("Anna: one", at=T), chat("Anna: two", at=T + 1)])
    from magi_desktop.core.text import index_text

    assert index_text("Anna: one", "Anna") == "Anna: one"
    assert index_text("one", "Anna") == "Anna: one"


def test_the_users_own_sentence_about_a_named_person_still_answers(memory):
    memory.ingest_many([chat("Anna: hi, how was your week?", session="a", at=T),
                        chat("Anna: I started pottery", session="a", at=T + 30),
                        chat("Anna lives in Berlin since the spring", session="b", at=T + 60)])
    memory.process_pending()
    pack = memory.query("Where does Anna live?", now=T + 3600)
    assert any(f.text == "Anna lives in Berlin since the spring" for f in pack.findings if f.layer == "L1")


def test_a_turn_labelled_with_another_name_does_not_answer_for_the_user(memory):
    memory.ingest_many([chat("Anna: I live in Oslo.", session="a", at=T),
                        chat("Anna: I love the fjords.", session="a", at=T + 30)])
    memory.process_pending()
    mine = memory.query("Where do I live?", now=T + 3600)
    assert mine.status == "insufficient"                      # Anna's "I" is Anna's: related, not an answer
    assert any(f.text == "Anna: I live in Oslo." and not f.answers for f in mine.findings)
    hers = memory.query("Where does Anna live?", now=T + 3600)
    assert hers.status == "ok" and any(f.text == "Anna: I live in Oslo." and f.answers for f in hers.findings)


def test_a_label_with_the_users_own_name_still_answers_for_the_user(memory):
    memory.ingest_many([chat("My name is Anna.", session="a", at=T),
                        chat("Anna: I live in Oslo.", session="b", at=T + 30),
                        chat("Anna: I love the fjords.", session="b", at=T + 60)])
    memory.process_pending()
    pack = memory.query("Where do I live?", now=T + 3600)
    assert pack.status == "ok" and any(f.text == "Anna: I live in Oslo." and f.answers for f in pack.findings)


def test_a_named_speaker_is_preferred_not_required(memory):
    memory.ingest_many([chat("Anna: I adopted a dog called Rex", session="a", at=T),
                        chat("Ben: I adopted a dog from the shelter", session="a", at=T + 30),
                        chat("Ben: my week was busy", session="a", at=T + 60),
                        chat("Anna: my week was quiet", session="a", at=T + 90)])
    memory.process_pending()
    pack = memory.query("What dog did Ben adopt?", now=T + 3600)
    texts = [f.text for f in pack.findings if f.layer == "L1"]
    assert texts[0] == "Ben: I adopted a dog from the shelter"
    assert "Anna: I adopted a dog called Rex" in texts   # the other speaker is not filtered out


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["Anna", "张伟", "Mary Jane"]), text=nasty_text)
def test_any_text_gives_a_prefix_of_itself_or_nothing(name, text):
    from reliability.fuzzing import count

    count("speakers.prefixed_name")
    for candidate in (text, f"{name}: {text}"):
        found = prefixed_name(candidate)
        assert found is None or candidate.lstrip().startswith(found)
    assert mentioned_windows(text, T) is not None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(nasty_text, min_size=1, max_size=4), name=st.sampled_from(["Anna", "张伟", "Note", "Q"]))
def test_any_prefixed_turns_keep_their_class_and_words(memory, texts, name):
    sent = [chat(f"{name}: {t}", at=T + i, session="fuzz") for i, t in enumerate(texts)]
    before = {r["content"] for r in rows(memory)}
    results = memory.ingest_many(sent, on_error="report")
    for result in results:
        if result.error is not None or result.duplicate or result.target != "l1_and_l2":
            continue
        row = event_row(memory.db.reader(), result.event_id)
        assert row["author_type"] == "user" and row["evidence_class"] == result.evidence_class
        timeline = row["metadata"]["timeline"]
        assert timeline.get("speaker") in (None, name) and timeline["role"] == "user"
        if name in ("Note", "Q"):
            assert "speaker" not in timeline and "speaker_candidate" not in timeline
    assert before <= {r["content"] for r in rows(memory)}


def test_a_waiting_turn_says_nothing_of_the_user_and_is_projected_under_its_speaker_once_settled(memory):
    memory.ingest(chat("I work at Acme.", session="a", at=T, item="mine"))
    memory.process_pending()
    memory.ingest(chat("Dad: I got laid off and I moved to Lisbon.", session="a", at=T + 60, item="dad1"))
    memory.process_pending()                      # "Dad" is only a candidate: nothing is filed under the user
    def current():
        return {(b.subject, b.relation, b.value) for b in memory.beliefs("assertions", state="current")}

    assert current() == {("the user", "works_at", "Acme")}          # not ended, and Lisbon is nobody's yet
    memory.ingest(chat("Dad: how is the weather there?", session="a", at=T + 120, item="dad2"))
    memory.process_pending()                      # the name recurs: the first turn is projected again, as Dad's
    assert current() == {("the user", "works_at", "Acme"), ("Dad", "lives_in", "Lisbon")}


@pytest.mark.parametrize("text, question", [("Dinner: I cooked a mushroom risotto.", "What did I cook for dinner?"),
                                            ("Weight: I'm down to 72 kg.", "What is my weight?")])
def test_a_label_that_is_no_speaker_does_not_stop_the_users_words_answering(memory, text, question):
    memory.ingest(chat(text, session="a", at=T))
    memory.process_pending()
    pack = memory.query(question, now=T + 3600)
    assert pack.status == "ok" and any(f.text == text and f.answers for f in pack.findings)
