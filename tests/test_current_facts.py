"""Current facts when the wording differs (issue 17, item 4): ingest → L2 → query, as of a time after both
statements. The newer statement of an attribute leads, the older is history; another person's move, a
visit and a supposition change nothing."""

import pytest
from payloads import chat

from magi_desktop.core.store.l1 import event_rows

DAY = 86400.0
T0 = 1_760_000_000.0
ASKED_AT = T0 + 40 * DAY


def told(memory, old, new):
    memory.ingest(chat(old, at=T0, item="old"))
    memory.ingest(chat(new, at=T0 + 30 * DAY, session="s2", item="new"))
    memory.process_pending()


def cites(finding, item):
    return finding.source_item_id == item or item in finding.supporting_source_item_ids


UPDATES = [
    # (attribute, first statement, the update worded differently, question, new value, old value)
    ("job", "I work at Acme.", "I started at Stripe last week.", "Where do I work now?", "Stripe", "Acme"),
    ("job", "I work at Acme.", "I got a new job at Stripe!", "Where do I work?", "Stripe", "Acme"),
    ("employer", "I work at Acme.", "Today was my first day at Stripe.", "Who is my employer now?", "Stripe", "Acme"),
    ("employer", "I work for Acme.", "I've been hired by Stripe.", "Which company do I work for?", "Stripe", "Acme"),
    ("home", "I live in Berlin.", "We finally moved — loving Lisbon so far.", "Where do I live now?", "Lisbon",
     "Berlin"),
    ("home", "I live in Berlin.", "Now that I'm in Lisbon, the coffee is better.", "Where do I live?", "Lisbon",
     "Berlin"),
    ("job", "I work at Acme.", "I quit Acme and joined Google.", "Where do I work now?", "Google", "Acme"),
    ("job", "I work at Acme.", "I'm now working for Google.", "Where do I work?", "Google", "Acme"),
    ("home", "I live in Berlin.", "Finally moved last week. Porto is lovely.", "Where do I live now?", "Porto",
     "Berlin"),
    ("home", "I live in Berlin.", "Our new flat in Vienna is great.", "Where do I live?", "Vienna", "Berlin"),
    ("relationship", "I'm dating someone.", "We broke up last month.", "What is my relationship status now?",
     "single", "in a relationship"),
    ("school", "I'm studying at Tsinghua.", "I started grad school at MIT.", "Where do I study now?", "MIT",
     "Tsinghua"),
    ("job_zh", "我在阿里巴巴工作。", "我跳槽到了腾讯。", "我现在在哪工作？", "腾讯", "阿里巴巴"),
    ("home_zh", "我住在北京。", "我们搬家到了上海。", "我现在住在哪里？", "上海", "北京"),
    ("relationship_zh", "我有女朋友了。", "我们分手了。", "我现在单身吗？", "single", "in a relationship"),
    ("school_zh", "我开始上大学了。", "我开始读研了。", "我现在在读什么学校？", "graduate school", "undergraduate"),
]


@pytest.mark.parametrize("attribute, old, new, question, value, previous", UPDATES,
                         ids=[f"{u[0]}-{i}" for i, u in enumerate(UPDATES)])
def test_the_newer_statement_leads_and_the_older_is_history(memory, attribute, old, new, question, value, previous):
    told(memory, old, new)
    pack = memory.query(question, now=ASKED_AT)
    top = pack.findings[0]
    assert top.status == "current" and cites(top, "new"), [f.text for f in pack.findings]
    assert any(value in f.text for f in pack.findings[:2] if f.status == "current" and cites(f, "new"))
    for finding in pack.findings:
        if cites(finding, "old") and not cites(finding, "new"):
            assert finding.status == "history", finding      # the old statement is never offered as current
    current = [b for b in memory.beliefs("assertions", state="current") if b.value in (value, previous)]
    assert [b.value for b in current] == [value]
    history = [b.value for b in memory.beliefs("assertions", state="history")]
    assert previous in history


def test_the_older_statement_found_by_its_words_is_labelled_history(memory):
    told(memory, "I work at Acme.", "I got a new job at Stripe!")
    pack = memory.query("Where do I work?", now=ASKED_AT)
    old = next(f for f in pack.findings if f.layer == "L1" and f.source_item_id == "old")
    assert old.status == "history" and pack.findings.index(old) > 0
    assert pack.to_dict()["findings"][pack.findings.index(old)]["status"] == "history"
    assert any("marked 'history' state an older value" in hint for hint in pack.answering_hints)


def test_as_of_a_time_between_the_statements_the_older_one_is_current(memory):
    told(memory, "I live in Berlin.", "We finally moved — loving Lisbon so far.")
    pack = memory.query("Where do I live now?", now=T0 + 10 * DAY)
    assert "Berlin" in pack.findings[0].text and pack.findings[0].status == "current"
    assert all("Lisbon" not in f.text for f in pack.findings)


def test_asking_about_the_past_gets_the_history_first(memory):
    told(memory, "I work at Acme.", "I started at Stripe last week.")
    pack = memory.query("Where did I work before?", now=ASKED_AT)
    first = next(f for f in pack.findings if f.layer == "L2")
    assert first.status == "history" and "Acme" in first.text


def test_a_new_pet_is_current_next_to_the_old_one(memory):
    told(memory, "I have a cat.", "我们领养了一只狗。")
    pack = memory.query("我现在有什么宠物？", now=ASKED_AT)
    pets = [f.text for f in pack.findings if f.layer == "L2" and f.status == "current"]
    assert "狗" in pets[0] and any("cat" in p for p in pets)      # the newest first; a second pet is no update


NOT_THE_USERS_MOVE = [
    "A friend moved to Lisbon.",
    "I visited Lisbon last week.",
    "What if I moved to Lisbon?",
    "If we moved, we'd love Lisbon.",
    "I might move to Lisbon one day.",
    "My sister got a new job at Stripe.",
    "She said we broke up.",
    "My brother quit Initech and joined Google.",
    "I left the party and joined my friends.",
    "Finally moved the sofa. Life is great.",
    "We moved! This is great.",
    "Our new flat in the old town is great.",
    "I'm out of work until Monday with the flu.",
    "I left my job early today to see the doctor.",
    "I lost my job badge again",
    "I finally left my job on time for once!",
    "I got fired up by the keynote.",
    "I left Acme today.",
    "I left Acme yesterday and drove home.",
    "Dad: I got laid off last week.",
    "My brother quit his job at Acme.",
    "我朋友搬到了上海。",
    "如果我搬到上海呢？",
    "我们没分手。",
    "他们分手了。",
]


@pytest.mark.parametrize("text", NOT_THE_USERS_MOVE)
def test_other_subjects_visits_and_suppositions_change_nothing(memory, text):
    told(memory, "I live in Berlin. I work at Acme. I'm dating someone.", text)
    assert not memory.beliefs("assertions", state="history")
    for question, value in (("Where do I live now?", "Berlin"), ("Where do I work now?", "Acme"),
                            ("What is my relationship status now?", "in a relationship")):
        pack = memory.query(question, now=ASKED_AT)
        top = pack.findings[0]
        assert value in top.text and top.status == "current", (question, [f.text for f in pack.findings])
        assert not [f for f in pack.findings if f.status == "history"]


ENDINGS = [
    # (first statement, the ending, question, the value that is history now)
    ("I work at Acme.", "I quit my job at Acme.", "Where do I work now?", "Acme"),
    ("I work at Acme.", "I got laid off last week.", "Where do I work?", "Acme"),
    ("I work at Acme Corp as a data engineer.", "I quit Acme.", "Where do I work now?", "Acme Corp"),
    ("I live in Berlin.", "We moved out of Berlin.", "Where do I live now?", "Berlin"),
    ("I'm studying at Tsinghua.", "I graduated from Tsinghua.", "Where do I study now?", "Tsinghua"),
    ("我在阿里巴巴工作。", "我从阿里巴巴离职了。", "我现在在哪工作？", "阿里巴巴"),
]


@pytest.mark.parametrize("old, ending, question, value", ENDINGS, ids=[e[1] for e in ENDINGS])
def test_a_fact_that_ended_without_a_new_value_is_history(memory, old, ending, question, value):
    told(memory, old, ending)
    assert value not in [b.value for b in memory.beliefs("assertions", state="current")]
    assert value in [b.value for b in memory.beliefs("assertions", state="history")]
    pack = memory.query(question, now=ASKED_AT)
    for finding in pack.findings:
        if finding.layer == "L2" and value in finding.text:
            assert finding.status == "history" and not finding.answers, finding
    # Said again afterwards, it is current once more.
    memory.ingest(chat(old, at=T0 + 35 * DAY, session="s3", item="again"))
    memory.process_pending()
    assert value in [b.value for b in memory.beliefs("assertions", state="current")]


def test_an_ending_that_names_another_value_or_comes_first_ends_nothing(memory):
    memory.ingest(chat("I quit my job at Initech.", at=T0 - DAY, item="before"))     # before the job was told
    told(memory, "I work at Acme.", "I quit Initech ages ago, long before Acme.")
    assert [b.value for b in memory.beliefs("assertions", state="current") if b.value in ("Acme", "Initech")] == [
        "Acme"]


def test_forgetting_the_ending_makes_the_fact_current_again(memory):
    told(memory, "I work at Acme.", "I quit my job at Acme.")
    assert "Acme" in [b.value for b in memory.beliefs("assertions", state="history")]
    ending = event_rows(memory.db.reader(), source_item_id="new")[0]["event_id"]
    memory.forget(event_ids=[ending])
    memory.process_pending()
    assert "Acme" in [b.value for b in memory.beliefs("assertions", state="current")]


@pytest.mark.slow
def test_the_users_words_an_answering_fact_came_from_answer_too(tmp_path, minilm):
    from magi_desktop.core import Memory

    memory = Memory.open(tmp_path / "mem", embedder=minilm)     # the vectors find the move; no word matches
    told(memory, "I live in Shanghai.", "I moved to Hangzhou last week.")
    pack = memory.query("Where do I live now?", now=ASKED_AT)
    moved = [f for f in pack.findings if f.layer == "L1" and cites(f, "new")]
    assert moved and all(f.answers for f in moved)            # "moved" is not "live", but the fact came from it
    assert all(not f.answers for f in pack.findings if f.layer == "L1" and cites(f, "old"))


def test_forgetting_the_facts_own_message_forgets_it_though_an_ending_names_it(memory):
    told(memory, "I work at Acme.", "I quit my job.")
    memory.forget(source_item_ids=["old"])
    memory.process_pending()
    assert not [b for b in memory.beliefs("assertions") if b.value == "Acme"]
    assert not [f for f in memory.query("Where did I work before?", now=ASKED_AT).findings if "Acme" in f.text]


def test_forgetting_an_ending_after_a_newer_value_leaves_one_current_value(memory):
    told(memory, "I work at Acme.", "I quit my job at Acme.")
    memory.ingest(chat("I got a new job at Google.", at=T0 + 35 * DAY, session="s3", item="google"))
    memory.process_pending()
    memory.forget(source_item_ids=["new"])
    memory.process_pending()
    current = [b.value for b in memory.beliefs("assertions", state="current") if b.relation == "works_at"]
    assert current == ["Google"]
    assert "Acme" in [b.value for b in memory.beliefs("assertions", state="history")]


def test_a_restated_fact_does_not_cite_its_ending(memory):
    told(memory, "I work at Acme.", "I quit my job at Acme.")
    memory.ingest(chat("I work at Acme again.", at=T0 + 35 * DAY, session="s3", item="again"))
    memory.process_pending()
    pack = memory.query("Where do I work now?", now=ASKED_AT)
    assert not [f for f in pack.findings if f.answers and cites(f, "new")]


@pytest.mark.parametrize("question, value", [
    ("Did I live in Berlin?", "Berlin"),
    ("Where have I lived?", "Berlin"),
    ("Where did I live in October 2025?", "Berlin"),
    ("Which companies have I worked for?", "Acme"),
    ("我以前在哪工作？", "阿里巴巴"),
])
def test_a_question_about_the_past_is_answered_by_history(memory, question, value):
    told(memory, "I live in Berlin. I work at Acme. 我在阿里巴巴工作。",
         "I moved to Lisbon. I got a new job at Stripe. 我跳槽到了腾讯。")
    pack = memory.query(question, now=ASKED_AT)
    assert any(f.answers and value in f.text for f in pack.findings), [(f.text, f.answers) for f in pack.findings]


@pytest.mark.parametrize("question", ["Where do I live?", "Where do I work?", "我在哪工作？"])
def test_a_question_about_the_present_is_not_answered_by_history(memory, question):
    told(memory, "I live in Berlin. I work at Acme. 我在阿里巴巴工作。",
         "I moved to Lisbon. I got a new job at Stripe. 我跳槽到了腾讯。")
    pack = memory.query(question, now=ASKED_AT)
    assert pack.status == "ok"
    assert not [f for f in pack.findings if f.answers and f.status == "history"]
