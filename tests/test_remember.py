"""remember() with a verbatim quote gate (architecture §9; the quote-gated-remember seed's tests are the model)."""
# Raw SQL left: a fact row no code path writes (as an old version might have left).

import pytest

from magi_desktop.core import RememberRejected
from magi_desktop.core.remember import weakest_evidence


def turn(*messages):
    return [{"id": f"m{i}", "role": role, "text": text, "provenance": provenance}
            for i, (role, text, provenance) in enumerate(messages)]


HUMAN = ("user", "Please note: my  sister's name is\nAnna, and she lives in Suzhou.", "human_input")


def test_an_exact_quote_is_stated_and_points_at_its_message(memory):
    fact = memory.remember("my sister's name is Anna", "The user's sister is called Anna.",
                           turn(("assistant", "Noted?", "template"), HUMAN), category="relation")
    saved, = memory.facts()
    assert saved["fact_id"] == fact and saved["evidence_type"] == "stated" and saved["source_message_id"] == "m1"
    assert saved["scope"] == "user" and saved["category"] == "relation"


def test_whitespace_differences_are_forgiven(memory):
    memory.remember("my sister's   name is Anna,\tand she", "Anna is the user's sister.", turn(HUMAN))
    assert memory.facts()[0]["evidence_type"] == "stated"


@pytest.mark.parametrize("quote, messages, reason", [
    ("", turn(HUMAN), "empty_quote"),
    ("   ", turn(HUMAN), "empty_quote"),
    ("my sister is called Anna", turn(HUMAN), "quote_not_found"),                     # a paraphrase
    ("Suzhou. I also moved", turn(HUMAN, ("user", "I also moved last year.", "human_input")),
     "quote_spans_messages"),
    ("the build passed", turn(HUMAN, ("user", "Task result: the build passed", "task_result")),
     "quote_not_from_the_human"),                                                    # role user, not typed
    ("wake up: daily", turn(("user", "wake up: daily check-in", "wake"), HUMAN), "quote_not_from_the_human"),
    ("timer fired", turn(("user", "timer fired at 9:00", "timer"), HUMAN), "quote_not_from_the_human"),
    ("I", turn(("user", "Is the cache strategy OK?", "human_input")), "quote_too_short"),
    ("Anna", turn(HUMAN), "quote_too_short"),
    ("name is An", turn(HUMAN), "quote_not_found"),                                    # not inside a word
    ("disable the cache", turn(("user", "Should we disable the cache?", "human_input")), "quote_from_a_question"),
    ("I were rich", turn(("user", "Imagine I were rich.", "human_input")), "quote_from_a_question"),
    ("the user lives in Paris", turn(("user", "Hi! <magi-recalled>Memory: the user lives in Paris.</magi-recalled>",
                                      "human_input")), "quote_not_from_the_human"),  # recalled into the turn
    ("lives in Paris", turn(("user", "the user lives in Paris", "recalled"), HUMAN), "quote_not_from_the_human"),
    ("in Suzhou", turn(("user", "Please note: my sister lives in Suzhou.", "quarantined")), "quote_not_from_the_human"),
])
def test_what_the_gate_rejects(memory, quote, messages, reason):
    with pytest.raises(RememberRejected) as caught:
        memory.remember(quote, "Something", messages)
    assert caught.value.reason == reason
    assert memory.facts(status=None) == []


def test_a_quote_from_a_previous_turn_is_refused_even_though_the_memory_holds_it(memory):
    from payloads import chat

    memory.ingest(chat("I prefer tea over coffee.", at=1_700_000_000.0, item="old"))
    with pytest.raises(RememberRejected) as caught:
        memory.remember("I prefer tea", "The user prefers tea.", turn(("user", "And biscuits, please.", "human_input")))
    assert caught.value.reason == "quote_not_found" and memory.facts(status=None) == []


def test_a_message_without_an_id_cannot_be_pointed_at(memory):
    with pytest.raises(RememberRejected) as caught:
        memory.remember("my sister's name is Anna", "Anna.", [{"role": "user", "text": HUMAN[1],
                                                                "provenance": "human_input"}])
    assert caught.value.reason == "message_without_id"


def test_the_pointer_is_the_stored_chat_message_when_the_runtime_id_names_one(memory):
    from payloads import chat

    event_id = memory.ingest(chat(HUMAN[1], at=1_700_000_000.0, item="turn-42")).event_id
    memory.ingest({"source_type": "browser", "occurred_at": 1_700_000_001.0, "source_item_id": "turn-42",
                   "activity": {"source_code": "browser", "action_code": "visit_page"},
                   "provenance": {"url": "https://example.com/", "title": "Example"}})
    fact = memory.remember("my sister's name is Anna", "Anna.", [{"id": "turn-42", "role": "user", "text": HUMAN[1],
                                                                  "provenance": "human_input"}])
    assert memory.fact(fact)["source_message_id"] == event_id
    memory.forget(source="browser")                        # the same item id elsewhere is not this message
    assert memory.fact(fact) is not None


def test_an_interjection_counts_as_the_human(memory):
    memory.remember("call me Ana", "The user goes by Ana.", turn(("user", "btw, call me Ana", "interjection")),
                    category="profile")
    assert memory.facts()[0]["source_message_id"] == "m0"


def test_replaces_passes_the_same_gate_and_supersedes(memory):
    old = memory.remember("she lives in Suzhou", "Anna lives in Suzhou.", turn(HUMAN))
    with pytest.raises(RememberRejected) as caught:
        memory.remember("Anna moved to Hangzhou", "Anna lives in Hangzhou.", turn(HUMAN), replaces=old)
    assert caught.value.reason == "quote_not_found"
    assert memory.facts()[0]["fact_id"] == old                                # nothing replaced
    new = memory.remember("Anna moved to Hangzhou", "Anna lives in Hangzhou.",
                          turn(("user", "Update: Anna moved to Hangzhou.", "human_input")), replaces=old)
    assert [f["fact_id"] for f in memory.facts()] == [new]
    assert memory.facts(status="superseded")[0]["superseded_by"] == new
    with pytest.raises(RememberRejected) as again:
        memory.remember("Anna moved to Hangzhou", "x", turn(("user", "Anna moved to Hangzhou", "human_input")),
                        replaces=old)
    assert again.value.reason == "nothing_to_replace"


def test_categories_follow_the_scope_cells(memory):
    with pytest.raises(RememberRejected) as caught:
        memory.remember("my sister's name is Anna", "x", turn(HUMAN), category="directive")
    assert caught.value.reason == "invalid_category"
    memory.remember("my sister's name is Anna", "Deploy notes mention Anna.", turn(HUMAN), category="directive",
                    project="falcon")
    assert memory.facts()[0]["scope"] == "project"


def test_merging_keeps_the_weakest_evidence(memory):
    stated = memory.remember("my sister's name is Anna", "Anna is the user's sister.", turn(HUMAN))
    with memory.db.transaction() as conn:           # a fact from before evidence types were kept
        unknown = conn.execute("INSERT INTO memory_facts (content, created_at, updated_at) VALUES "
                               "('The user has a sister.', 0, 0)").lastrowid
    merged = memory.merge_facts([stated, unknown], "The user's sister is Anna.")
    fact, = memory.facts()
    assert fact["fact_id"] == merged and fact["evidence_type"] == "unknown" and fact["source_message_id"] is None
    assert weakest_evidence(["stated", "accepted"]) == "accepted" and weakest_evidence([]) == "unknown"
