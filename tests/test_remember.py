"""remember() with a verbatim quote gate (DESIGN §9; the quote-gated-remember seed's tests are the model)."""

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
    ("wake up", turn(("user", "wake up: daily check-in", "wake"), HUMAN), "quote_not_from_the_human"),
    ("I prefer tea", turn(HUMAN), "quote_not_found"),                                  # said in an earlier turn
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
