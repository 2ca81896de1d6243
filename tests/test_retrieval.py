"""Memory.query end to end with the real MiniLM model: the behaviours architecture §5 promises."""

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory

pytestmark = pytest.mark.slow

DAY = 86400
T0 = 1_760_000_000.0


@pytest.fixture
def semantic(tmp_path, minilm):
    mem = Memory.open(tmp_path / "q", embedder=minilm)
    yield mem
    mem.close()


def load(memory, turns):
    memory.ingest_many([chat(text, role=role, session=session, at=T0 + offset)
                        for offset, session, role, text in turns])
    memory.process_pending()


KITCHEN_EN = [
    (0, "d1", "user", "I want to make soup with my new pressure cooker. Are there recipes designed for "
                      "pressure cookers?"),
    (60, "d1", "assistant", "Sure! Pressure cookers are great kitchen appliances for soups. Try a lentil soup."),
    (DAY, "d2", "user", "I just bought an air fryer and I think it works really well. Any recipes you recommend?"),
    (DAY + 60, "d2", "assistant", "Air fryers are great! Try crispy chicken wings or roasted vegetables."),
    (2 * DAY, "d3", "user", "I bought a rice cooker. Any recipes you recommend?"),
    (2 * DAY + 60, "d3", "assistant", "A rice cooker is a great kitchen appliance you bought! Try clay pot rice."),
]
KITCHEN_ZH = [
    (0, "d1", "user", "我想用新的高压锅煲汤，有什么专为高压锅设计的食谱吗？"),
    (60, "d1", "assistant", "当然！高压锅是很好的厨房家电，可以试试排骨汤。"),
    (DAY, "d2", "user", "我新买了一个空气炸锅，我觉得它很好用，你有什么推荐的食谱吗？"),
    (DAY + 60, "d2", "assistant", "空气炸锅可以做鸡翅和薯条。"),
    (2 * DAY, "d3", "user", "我买了一个电饭煲，有什么推荐的食谱吗？"),
    (2 * DAY + 60, "d3", "assistant", "你买的电饭煲是很棒的厨房家电，可以做煲仔饭。"),
]


@pytest.mark.parametrize("turns, question, expected", [
    (KITCHEN_EN, "What kitchen appliance did I buy before the air fryer?", "pressure cooker"),
    (KITCHEN_ZH, "我在买空气炸锅前买了什么厨房家电？", "高压锅"),
    (KITCHEN_ZH, "买空气炸锅之前我买了什么厨房家电？", "高压锅"),
])
def test_worked_example(semantic, turns, question, expected):
    load(semantic, turns)
    pack = semantic.query(question, now=T0 + 3 * DAY)
    data = pack.to_dict()
    assert data["query_mode"] == "temporal_compare"
    assert pack.findings, data
    assert expected in pack.findings[0].text
    texts = " | ".join(f.text for f in pack.findings)
    assert "rice cooker" not in texts and "电饭煲" not in texts            # after the anchor
    assert all(f.author == "user" for f in pack.findings)                 # assistant turns are not facts
    assert all("air fryer" not in f.text and "空气炸锅" not in f.text for f in pack.findings)  # the anchor itself
    assert pack.findings[0].indirect
    assert any("indirect" in hint for hint in pack.answering_hints)
    assert data["trace"]["anchor"]["direction"] == "before"


def l1(pack):
    """The pack's L1 findings (the events themselves); L2 adds derived facts beside them."""
    return [f for f in pack.findings if f.layer == "L1"]


def test_echo_pollution_is_kept_out_of_fact_answers(semantic):
    load(semantic, [
        (0, "s1", "user", "My favourite colour is green."),
        (DAY, "s2", "user", "What is my favourite colour?"),
        (DAY + 30, "s2", "assistant", "Your favourite colour is blue, as you told me before."),
    ])
    pack = semantic.query("What is my favourite colour?", now=T0 + 2 * DAY)
    assert pack.query_mode == "exact_fact"
    assert [f.text for f in l1(pack)] == ["My favourite colour is green."]
    statement = l1(pack)[0].event_id
    assert all(f.supporting_event_ids == [statement] for f in pack.findings if f.layer == "L2")
    assert "blue" not in " ".join(f.text for f in pack.findings)


def test_knowledge_update_and_now_in_the_past(semantic):
    load(semantic, [
        (0, "a", "user", "I live in Shanghai, near the Bund."),
        (20 * DAY, "b", "user", "I moved to Jiaxing last week, so now I live in Jiaxing."),
    ])
    now_pack = semantic.query("Where do I live now?", now=T0 + 30 * DAY)
    assert now_pack.query_mode == "current_state"
    assert "Jiaxing" in now_pack.findings[0].text
    assert any("Shanghai" in f.text for f in now_pack.findings)  # history is still there, ranked lower
    before = semantic.query("Where did I live before I moved to Jiaxing?", now=T0 + 30 * DAY)
    assert [f.text for f in l1(before)] == ["I live in Shanghai, near the Bund."]
    past = semantic.query("Where do I live?", now=T0 + 10 * DAY)
    assert past.findings and all("Jiaxing" not in f.text for f in past.findings)


def test_questions_about_what_the_assistant_said_reach_assistant_turns(semantic):
    load(semantic, KITCHEN_EN)
    pack = semantic.query("What did you recommend for my air fryer?", now=T0 + 3 * DAY)
    assert pack.query_mode == "episode_recall"
    assert any(f.author == "assistant" and "chicken wings" in f.text for f in pack.findings)
    assert any("not a fact about the user" in hint for hint in pack.answering_hints)
    facts = semantic.query("What did you recommend for my air fryer?", mode="exact_fact", now=T0 + 3 * DAY)
    assert all(f.author != "assistant" for f in facts.findings)


def test_the_askers_own_question_in_this_session_is_not_evidence(semantic):
    load(semantic, [(0, "old", "user", "I keep my passport in the top drawer, I think."),
                    (DAY, "now", "user", "I think I keep my passport in the top drawer?")])
    asked = semantic.query("I think I keep my passport in the top drawer?", now=T0 + 2 * DAY, session_id="now")
    assert [f.session_id for f in asked.findings] == ["old"]


def test_names_first_heard_after_now_are_unknown(semantic):
    semantic.ingest_many([chat("Hello, I am new here", at=T0 + 10 * DAY, speaker="Zorblax"),
                          chat("The conference was in Lisbon", at=T0, speaker="Ana")])
    semantic.process_pending()
    assert "zorblax" in semantic.query("What did Zorblax say?", now=T0 + 11 * DAY).trace["entities"]
    assert "zorblax" not in semantic.query("What did Zorblax say?", now=T0 + DAY).trace["entities"]


def test_anchor_is_the_first_mention_of_the_event(semantic):
    load(semantic, KITCHEN_EN + [(5 * DAY, "d5", "user", "My air fryer stopped working today, so annoying.")])
    pack = semantic.query("What kitchen appliance did I buy before the air fryer?", now=T0 + 6 * DAY)
    texts = " | ".join(f.text for f in pack.findings)
    assert "pressure cooker" in texts and "rice cooker" not in texts


def test_query_arguments_are_checked(semantic):
    for bad in (0, -1, 1000, True):
        with pytest.raises(ValueError, match="limit"):
            semantic.query("hello", limit=bad)
    with pytest.raises(Exception, match="now"):
        semantic.query("hello", now=float("nan"))


def test_unsupported_question_is_insufficient(semantic):
    load(semantic, [(0, "s", "user", "I have a cat named Miso."),
                    (60, "s", "user", "I drink green tea every morning.")])
    pack = semantic.query("What is my passport number?", now=T0 + DAY)
    assert pack.insufficient_evidence and pack.status == "insufficient" and pack.findings == []
    assert any("Do not guess" in hint for hint in pack.answering_hints)


def test_sensor_events_answer_activity_questions_in_their_window(semantic):
    semantic.ingest_many([
        sensor("visit_page", {"url": "https://coffee.example/brew", "title": "Pour-over coffee guide"}, source="chrome",
               item="v1", at=T0 + 2 * DAY),
        sensor("visit_page", {"url": "https://coffee.example/beans", "title": "Best coffee beans"}, source="chrome",
               item="v2", at=T0 + 9 * DAY),
    ])
    semantic.process_pending()
    pack = semantic.query("Which coffee pages did I visit in the last 3 days?", now=T0 + 9 * DAY + 3600)
    assert [f.source_item_id for f in l1(pack)] == ["v2"]
    assert pack.trace["temporal"]["window"]["label"] == "the past 3 days"
    # The VISITED edge gathers both visits; in this window it cites only the one inside it.
    assert [f.supporting_source_item_ids for f in pack.findings if f.layer == "L2"] == [["v2"]]
    pack = semantic.query("Which coffee pages did I visit yesterday?", now=T0 + 10 * DAY)
    assert [f.source_item_id for f in l1(pack)] == ["v2"]
    pack = semantic.query("Which coffee pages did I visit?", now=T0 + 5 * DAY)
    assert [f.source_item_id for f in l1(pack)] == ["v1"]  # v2 is in the future of that "now"
    assert all(f.supporting_source_item_ids == ["v1"] for f in pack.findings if f.layer == "L2")


def test_the_same_text_twice_is_one_finding_with_two_supports(semantic):
    load(semantic, [(0, "a", "user", "I have a cat named Miso."), (DAY, "b", "user", "I have a cat named Miso.")])
    pack = semantic.query("What is my cat called?", now=T0 + 2 * DAY)
    assert len(l1(pack)) == 1 and len(l1(pack)[0].supporting_event_ids) == 2


def test_pack_serialises_and_carries_provenance(semantic):
    load(semantic, KITCHEN_EN)
    data = semantic.query("air fryer recipes", mode="episode_recall", now=T0 + 3 * DAY).to_dict()
    import json

    json.dumps(data)
    finding = data["findings"][0]
    for key in ("layer", "text", "occurred_at", "source", "source_item_id", "session_id", "author", "evidence_class",
                "score", "supporting_event_ids", "event_id"):
        assert key in finding
    assert finding["layer"] == "L1" and finding["supporting_event_ids"] == [finding["event_id"]]
    assert set(data["trace"]["paths"]) >= {"bm25", "vector", "keyword", "entity", "graph", "neighbors"}
    assert data["bundles"] and data["timeline"]


def test_query_validates_its_arguments(semantic):
    with pytest.raises(ValueError, match="empty"):
        semantic.query("   ")
    with pytest.raises(ValueError, match="unknown query mode"):
        semantic.query("hello", mode="vibes")
