"""Background fact extraction (architecture §9; the quote-gate seed's extraction tests are the model):
segments return the full revised candidate set, only the final set is checked and committed in
one transaction with the episode and the "extracted" marks, a failure commits nothing, claims keep
two extractors apart, and messages arriving meanwhile are noticed."""
# Raw SQL left: a generation set dead by hand (no API puts it there at once).

import time

import pytest

from magi_desktop.core import Memory
from magi_desktop.core.extraction import pipeline as extraction_run
from magi_desktop.core.l0 import IDLE_SECONDS
from magi_desktop.core.llm import LLMError, ScriptedLLM
from magi_desktop.core.store.extractions import extraction_marks
from magi_desktop.core.store.queue import EXTRACTION_RETRIES
from magi_desktop.core.store.tables import row_count

T0 = 1_700_000_000.0
# Every test conversation is long over by then: an idle conversation is due when both its messages'
# times and their arrival (ingested now, in the tests) are IDLE_SECONDS old.
LATER = time.time() + 2 * IDLE_SECONDS


class Chat:
    """Say things in one session, one message every ten seconds."""

    def __init__(self, memory, session="s1"):
        self.memory, self.session, self.at, self.ids = memory, session, T0, []

    def say(self, role, text, provenance=None):
        self.at += 10
        chat = {"role": role, "text": text}
        if provenance or role == "user":
            chat["provenance"] = provenance or "human_input"
        result = self.memory.ingest({"source_type": "chat", "session_id": self.session, "occurred_at": self.at,
                                     "chat": chat})
        self.ids.append(result.event_id)
        return result.event_id


def open_with(path, llm):
    return Memory.open(path, embedder="hashing", llm=llm)


def state(memory):
    conn = memory.db.reader()
    return {"facts": row_count(conn, "memory_facts"),
            "extractions": row_count(conn, "fact_extractions"),
            "extracted": extraction_marks(conn).extracted,
            "claimed": extraction_marks(conn).claimed}


def candidate(key, evidence, content, source, accepting=None, proposal=None, quote=None, category="knowledge"):
    return {"key": key, "content": content, "category": category, "evidence": evidence, "quote": quote,
            "source_message_id": source, "proposal_message_id": proposal, "accepting_message_id": accepting}


@pytest.fixture
def small_segments(monkeypatch):
    monkeypatch.setattr(extraction_run, "SEGMENT_MAX_MESSAGES", 2)


def discussion(chat):
    """Four messages, two segments: the agent's proposal in the first, the user's yes in the second."""
    ask = chat.say("user", "Which database should the sync service use?")
    propose = chat.say("assistant", "SQLite in WAL mode fits: one writer, many readers.")
    chat.say("user", "Hmm, let me think about the load first.")
    accept = chat.say("user", "Yes, let's go with SQLite in WAL mode.")
    return ask, propose, accept


def test_only_the_last_segment_confirms_and_nothing_is_marked_between_calls(tmp_path, small_segments):
    seen_between = []

    def second_segment(inputs):
        seen_between.append(state(memory))           # the first segment's answer is not in the database
        return inputs["segment"] == 2 and inputs["candidates"][0]["evidence"] == "pending"

    llm = ScriptedLLM([])
    memory = open_with(tmp_path / "m", llm)
    chat = Chat(memory)
    ask, propose, accept = discussion(chat)
    llm.steps += [
        ("facts.extract_segment", lambda i: i["segment"] == 1 and i["candidates"] == [], {
            "candidates": [candidate("db", "pending", "Use SQLite (WAL) for the sync service.", ask,
                                     proposal=propose)],
            "episode": "Chose a database for the sync service; undecided."}),
        ("facts.extract_segment", second_segment, {
            "candidates": [candidate("db", "accepted", "The sync service uses SQLite in WAL mode.", ask,
                                     accepting=accept, proposal=propose)],
            "episode": "Chose SQLite in WAL mode for the sync service."}),
    ]
    report = memory.process_pending(now=LATER, queues=("facts",))["facts"]
    assert report["runs"] == 1 and report["facts"] == 1 and llm.finished
    assert seen_between == [{"facts": 0, "extractions": 0, "extracted": 0, "claimed": 4}]
    fact, = memory.facts()
    assert fact["evidence_type"] == "accepted" and fact["content"] == "The sync service uses SQLite in WAL mode."
    assert (fact["source_message_id"], fact["proposal_message_id"], fact["accepting_message_id"]) == (
        ask, propose, accept)
    trail = memory.fact(fact["fact_id"])
    assert trail["accepting_message"]["content"].startswith("Yes, let's go with SQLite")
    assert trail["proposal_message"]["author_type"] == "assistant"
    extraction, = memory.extractions()
    assert extraction["segments"] == 2 and extraction["episode"] == "Chose SQLite in WAL mode for the sync service."
    assert state(memory) == {"facts": 1, "extractions": 1, "extracted": 4, "claimed": 0}
    assert memory.process_pending(now=LATER, queues=("facts",))["facts"]["runs"] == 0   # never extracted twice


def test_a_failure_in_segment_two_commits_nothing_and_is_retried(tmp_path, small_segments):
    llm = ScriptedLLM([])
    memory = open_with(tmp_path / "m", llm)
    ask, propose, accept = discussion(Chat(memory))
    good = {"candidates": [candidate("db", "accepted", "The sync service uses SQLite.", ask, accept, propose)],
            "episode": "Picked SQLite."}
    llm.steps += [
        ("facts.extract_segment", None, {"candidates": [candidate("x", "stated", "A temporary guess.", ask,
                                                                  quote="Which database")], "episode": "…"}),
        ("facts.extract_segment", None, LLMError("the endpoint went away")),
    ]
    report = memory.process_pending(now=LATER, queues=("facts",))["facts"]
    # The endpoint, not the conversation, failed: no attempt is charged, the generation waits.
    assert report["failed"] == 0 and report["runs"] == 0 and "went away" in report["provider_unavailable"]
    assert state(memory) == {"facts": 0, "extractions": 0, "extracted": 0, "claimed": 0}
    assert memory.pending_by_queue()["facts"] == 0                 # waiting out its backoff
    assert [job.attempts for job in EXTRACTION_RETRIES.jobs(memory.db.reader()).values()] == [0]
    llm.steps += [("facts.extract_segment", None, {"candidates": [], "episode": "…"}),
                  ("facts.extract_segment", None, good)]
    assert memory.process_pending(now=LATER + 120, queues=("facts",))["facts"]["facts"] == 1
    assert llm.finished and state(memory)["extracted"] == 4


def test_a_schema_breaking_answer_is_a_failure_too(tmp_path):
    llm = ScriptedLLM([("facts.extract_segment", None, {"candidates": [{"content": "no pointers"}],
                                                        "episode": ""})])
    memory = open_with(tmp_path / "m", llm)
    discussion(Chat(memory))
    report = memory.process_pending(now=LATER, queues=("facts",))["facts"]
    assert report["failed"] == 1 and "$.candidates[0].key: missing" in report["errors"][0]
    assert state(memory)["facts"] == 0


def test_concurrent_extractors_do_not_extract_the_same_messages(tmp_path):
    """A second extractor (another process on the same database) finds the messages claimed."""
    path = tmp_path / "m"
    second = {}

    def meanwhile(inputs):
        other = open_with(path, "rules")
        second["report"] = other.process_pending(now=LATER, queues=("facts",))["facts"]
        second["state"] = state(other)
        other.close()
        return True

    llm = ScriptedLLM([])
    memory = open_with(path, llm)
    ask, propose, accept = discussion(Chat(memory))
    llm.steps.append(("facts.extract_segment", meanwhile, {
        "candidates": [candidate("db", "accepted", "The sync service uses SQLite.", ask, accept, propose)],
        "episode": "Picked SQLite."}))
    assert memory.process_pending(now=LATER, queues=("facts",))["facts"]["facts"] == 1
    assert second["report"]["runs"] == 0 and second["report"]["aborted"] == {"claimed_elsewhere": 1}
    assert second["state"]["facts"] == 0
    assert state(memory) == {"facts": 1, "extractions": 1, "extracted": 4, "claimed": 0}


def test_a_claim_whose_lease_ran_out_is_taken_over_and_the_late_commit_writes_nothing(tmp_path):
    path = tmp_path / "m"

    def lease_runs_out(inputs):
        other = open_with(path, "rules")
        other.process_pending(now=LATER + extraction_run.LEASE_SECONDS + 1, queues=("facts",))
        other.close()
        return True

    llm = ScriptedLLM([])
    memory = open_with(path, llm)
    ask, propose, accept = discussion(Chat(memory))
    llm.steps.append(("facts.extract_segment", lease_runs_out, {
        "candidates": [candidate("db", "accepted", "A second copy of the decision.", ask, accept, propose)],
        "episode": "late"}))
    report = memory.process_pending(now=LATER, queues=("facts",))["facts"]
    assert report["aborted"] == {"claim_lost": 1} and report["facts"] == 0
    # The rules read the same messages (the "yes" answers the user's own "hmm", not the agent): no fact,
    # and the late scripted commit added none either.
    assert memory.facts() == []
    assert [e["extractor"] for e in memory.extractions()] == ["rules"]


def test_new_messages_during_extraction_abort_it_and_the_next_run_reads_them(tmp_path):
    llm = ScriptedLLM([])
    memory = open_with(tmp_path / "m", llm)
    chat = Chat(memory)
    ask, propose, accept = discussion(chat)

    def user_goes_on(inputs):
        chat.say("user", "Actually no, scratch that: we need Postgres for the load.")
        return True

    llm.steps += [
        ("facts.extract_segment", user_goes_on, {
            "candidates": [candidate("db", "accepted", "The sync service uses SQLite.", ask, accept, propose)],
            "episode": "Picked SQLite."}),
        ("facts.extract_segment", "Postgres", {"candidates": [], "episode": "Picked SQLite, then took it back."}),
    ]
    report = memory.process_pending(now=LATER, queues=("facts",))["facts"]
    assert report["aborted"] == {"new_messages": 1} and state(memory)["facts"] == 0
    assert state(memory)["claimed"] == 0
    assert memory.process_pending(now=LATER, queues=("facts",))["facts"]["runs"] == 1
    assert memory.facts() == [] and state(memory)["extracted"] == 5 and llm.finished


def test_only_valid_pointers_are_committed(tmp_path):
    llm = ScriptedLLM([])
    memory = open_with(tmp_path / "m", llm)
    chat = Chat(memory)
    ask = chat.say("user", "Which port does the dev server use? I always use 8080 locally.")
    propose = chat.say("assistant", "The dev server listens on 5173.")
    result = chat.say("user", "Task result: build green", "task_result")
    question = chat.say("user", "Are you sure?")
    conditional = chat.say("user", "If it builds cleanly, then yes.")
    accept = chat.say("user", "Yes, that's right.")
    memory.end_session("s1")
    other_generation = chat.say("user", "Yes, do that.")        # after the session ended: its next generation
    good = candidate("ok", "accepted", "The dev server listens on 5173.", ask, accept, propose)
    stated = candidate("port", "stated", "The user uses port 8080 locally.", ask, quote="I always use 8080 locally")
    bad = [
        candidate("agent", "accepted", "Accepted by the agent itself.", ask, accepting=propose),
        candidate("machine", "accepted", "Accepted by a task result.", ask, accepting=result),
        candidate("question", "accepted", "Accepted by a question.", ask, accepting=question),
        candidate("missing", "accepted", "Accepted by nobody.", ask, accepting="01NOSUCHMESSAGE"),
        candidate("generation", "accepted", "Accepted in the next generation.", ask, accepting=other_generation),
        candidate("early", "accepted", "Accepted before it was said.", accept, accepting=ask),
        candidate("source", "stated", "Said by the agent.", propose, quote="listens on 5173"),
        candidate("paraphrase", "stated", "Port 8080.", ask, quote="I use port 8080"),
        candidate("noquote", "stated", "No quote kept.", ask),
        candidate("pending", "pending", "Not accepted yet.", ask, proposal=propose),
        candidate("cell", "stated", "Wrong cell.", ask, quote="Which port", category="directive"),
        candidate("conditional", "accepted", "Accepted on a condition.", ask, conditional, propose),
        candidate("unsaid", "accepted", "Whose conclusion?", ask, accepting=accept),
        candidate("asked", "stated", "The user is sure.", question, quote="Are you sure"),
        candidate("short", "stated", "The user uses 8080.", ask, quote="8080"),
        candidate("midword", "stated", "Port.", ask, quote="hich port"),
    ]
    llm.steps.append(("facts.extract_segment", None, {"candidates": [good, stated, *bad], "episode": "Ports."}))
    assert memory.process_pending(now=T0 + 100, queues=("facts",))["facts"]["facts"] == 2
    assert {(f["content"], f["evidence_type"]) for f in memory.facts()} == {
        ("The dev server listens on 5173.", "accepted"), ("The user uses port 8080 locally.", "stated")}
    reasons = {r["key"]: r["reason"] for r in memory.extractions()[0]["report"]["rejected"]}
    assert reasons == {"agent": "acceptance_not_human", "machine": "acceptance_not_human",
                       "question": "acceptance_is_a_question", "missing": "acceptance_missing",
                       "generation": "acceptance_missing", "early": "acceptance_before_source",
                       "source": "source_not_human", "paraphrase": "quote_not_in_source",
                       "noquote": "stated_without_quote", "pending": "not_accepted", "cell": "invalid_category",
                       "conditional": "acceptance_is_conditional", "unsaid": "proposal_missing",
                       "asked": "stated_in_a_question", "short": "quote_too_short", "midword": "quote_not_in_source"}
    assert state(memory)["extracted"] == 6                      # the next generation waits for its own run


def test_a_conversation_is_due_once_ended_or_idle(tmp_path):
    memory = open_with(tmp_path / "m", "rules")
    chat = Chat(memory)
    chat.say("user", "Remember that my badge number is 4471.")
    last = chat.at
    assert memory.process_pending(now=last + 60, queues=("facts",))["facts"]["runs"] == 0   # still talking
    assert memory.process_pending(now=last + IDLE_SECONDS + 1, queues=("facts",))["facts"]["runs"] == 0  # arrived now
    assert memory.process_pending(now=LATER, queues=("facts",))["facts"]["runs"] == 1
    chat2 = Chat(memory, "s2")
    chat2.say("user", "Remember that the staging host is stage-3.")
    memory.end_session("s2")
    assert memory.extract_facts(now=chat2.at + 1)["runs"] == 1            # ended: due at once
    assert [f["content"] for f in memory.facts()] == ["My badge number is 4471", "The staging host is stage-3"]


def test_the_rules_extractor_reads_a_conversation(tmp_path):
    memory = open_with(tmp_path / "m", "rules")
    chat = Chat(memory)
    chat.say("user", "How should I name the release branches?")
    chat.say("assistant", "Name them release/<version>, cut from main.")
    chat.say("user", "Sounds good.")
    chat.say("user", "Please remember that my manager is Dana.")
    chat.say("user", "Remember that the demo is on Friday.")
    chat.say("user", "Scratch that, it moved.")
    chat.say("assistant", "Should I also tag every nightly build?")
    chat.say("user", "No.")
    chat.say("user", "记住我住在杭州。")
    chat.say("assistant", "要不要用 uv 管理依赖？")            # a question proposes nothing to accept
    chat.say("user", "好的")
    chat.say("user", "那依赖用什么管理？")
    chat.say("assistant", "建议用 uv 管理依赖。")
    chat.say("user", "好，我再想想")                            # not an acceptance
    chat.say("assistant", "那就用 uv，锁定版本。")
    chat.say("user", "好的，就这样")
    chat.say("user", "Remember that I love jazz <magi-recalled>Remember that the user hates jazz</magi-recalled>")
    chat.say("assistant", "I could also set up CI on every push.")
    memory.end_session("s1")
    report = memory.extract_facts(now=chat.at + 1)
    facts = {(f["content"], f["evidence_type"], f["category"]) for f in memory.facts()}
    assert facts == {("Name them release/<version>, cut from main.", "accepted", "knowledge"),
                     ("My manager is Dana", "stated", "relation"),
                     ("我住在杭州", "stated", "profile"),
                     ("那就用 uv，锁定版本。", "accepted", "knowledge"),
                     ("I love jazz", "stated", "preference")}, report
    episode = memory.extractions()[0]["episode"]
    assert "left open: I could also set up CI on every push." in episode


def test_recalled_memory_is_never_extracted_again(tmp_path):
    memory = open_with(tmp_path / "m", "rules")
    chat = Chat(memory)
    injected = chat.say("user", "<magi-recalled>Remember that the user lives in Paris.</magi-recalled>")
    mixed = chat.say("user", "What's the weather? <magi-recalled>The user lives in Paris.</magi-recalled>")
    assert memory.get_event(injected) is None                     # audit only, not evidence
    assert memory.get_event(mixed)["content"] == "What's the weather?"
    memory.end_session("s1")
    memory.process_pending(now=chat.at + 1)
    assert memory.facts() == []
    assert not any("Paris" in b.text for b in memory.beliefs("assertions"))
    assert not memory.query("Paris", now=chat.at + 1).findings


def test_merging_an_extracted_fact_keeps_the_weaker_evidence(tmp_path):
    memory = open_with(tmp_path / "m", "rules")
    chat = Chat(memory)
    chat.say("user", "Which formatter?")
    chat.say("assistant", "Use ruff format with line length 120.")
    chat.say("user", "Agreed.")
    chat.say("user", "Remember that I use ruff for linting.")
    memory.end_session("s1")
    memory.extract_facts(now=chat.at + 1)
    accepted, stated = sorted(memory.facts(), key=lambda f: f["evidence_type"])
    merged = memory.merge_facts([accepted["fact_id"], stated["fact_id"]], "The user uses ruff, line length 120.")
    fact = memory.fact(merged)
    assert fact["evidence_type"] == "accepted" and fact["accepting_message_id"] == accepted["accepting_message_id"]


def test_facts_are_recalled_with_their_evidence(tmp_path):
    memory = open_with(tmp_path / "m", "rules")
    chat = Chat(memory)
    chat.say("user", "Where should the nightly backups go?")
    chat.say("assistant", "Store the nightly backups on the NAS under /volume1/backups.")
    chat.say("user", "Agreed.")
    said = chat.say("user", "Remember that my backup drive is a Samsung T7.")
    memory.end_session("s1")
    memory.extract_facts(now=chat.at + 1)
    pack = memory.query("where do the nightly backups go?", now=chat.at + 1)
    fact = next(f for f in pack.findings if f.evidence_class.startswith("fact_"))
    assert fact.text.startswith("[fact · accepted: the user accepted the agent's conclusion] Store the nightly")
    assert fact.author == "memory" and len(fact.supporting_event_ids) == 3
    assert any("only 'stated' ones are the user's words" in h for h in pack.answering_hints)
    pack = memory.query("what backup drive do I have?", now=chat.at + 1)
    fact = next(f for f in pack.findings if f.evidence_class.startswith("fact_"))
    assert fact.author == "user" and "(the user: “my backup drive is a Samsung T7.”)" in fact.text
    assert fact.supporting_event_ids == [said]
    before = memory.query("what backup drive do I have?", now=T0).findings      # asked before it was said
    assert not [f for f in before if f.evidence_class.startswith("fact_")]
    memory.delete_fact(int(fact.event_id.split(":")[1]))
    assert fact.event_id not in {f.event_id for f in memory.query("what backup drive do I have?",
                                                                  now=chat.at + 1).findings}


def test_a_dead_letter_comes_back_when_asked_or_when_the_conversation_goes_on(tmp_path):
    from magi_desktop.core.retry import MAX_ATTEMPTS

    bad = {"candidates": [{"content": "no pointers"}], "episode": ""}
    llm = ScriptedLLM([("facts.extract_segment", None, bad)] * MAX_ATTEMPTS)
    memory = open_with(tmp_path / "m", llm)
    chat = Chat(memory)
    chat.say("user", "Remember that the wifi password rotates monthly.")
    memory.end_session("s1")
    for attempt in range(MAX_ATTEMPTS):
        report = memory.extract_facts(now=LATER + attempt * 7200)
    assert report["dead"] == 1 and memory.stats()["facts"]["failed"] == {"dead": 1}
    assert memory.extract_facts(now=LATER + 10 * 86400)["runs"] == 0          # dead: left alone
    assert memory.retry_dead_jobs() >= 1
    llm.steps.append(("facts.extract_segment", None, {"candidates": [], "episode": "nothing"}))
    assert memory.extract_facts(now=LATER + 10 * 86400)["runs"] == 1 and llm.finished
    conn = memory.db.reader()
    # A generation dead again is revived by the next message in it (a fresh start for the run).
    chat2 = Chat(memory, "s2")
    chat2.say("user", "Remember that the printer is on floor 3.")
    with memory.db.transaction() as wconn:
        wconn.execute("INSERT INTO extraction_retries (session_id, generation, attempts, state) "
                      "VALUES ('s2', 0, 5, 'dead')")
    chat2.say("user", "And the scanner too.")
    assert [key for key in EXTRACTION_RETRIES.jobs(conn) if key[0] == "s2"] == []
    # Forgetting a whole session leaves no retry state behind for the next session of that id.
    with memory.db.transaction() as wconn:
        wconn.execute("INSERT INTO extraction_retries (session_id, generation, attempts, state) "
                      "VALUES ('s2', 0, 5, 'dead')")
    memory.forget(event_ids=chat2.ids)
    assert [key for key in EXTRACTION_RETRIES.jobs(conn) if key[0] == "s2"] == []
