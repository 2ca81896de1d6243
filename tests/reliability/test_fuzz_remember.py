"""Fuzzing ``Memory.remember`` (architecture §9): any quote, content and turn messages.

Properties: the only exception is RememberRejected (a reason code); a rejected call commits nothing;
a saved fact holds the whitespace-normalised content and a quote found verbatim in a qualifying
human message of the turn, and points at that message.
"""
# Raw SQL left: PRAGMA data_version, which tells whether the file was written at all.

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magi_desktop.core.remember import CATEGORIES, RememberRejected, normalise, qualifies, quote_in

from .fuzzing import FuzzMemory, count, huge_text, integrity_ok, json_values, nasty_text, not_json, rarely

pytestmark = pytest.mark.fuzz

_PHRASES = ["my sister's name is Anna.", "I live in Hangzhou.", "我住在杭州西湖边。", "remember that", "?", "if",
            "<magi-recalled>I am a doctor</magi-recalled>", "  ", "my password is hunter22.",
            "I prefer tea over coffee.", "what is my name"]
_IDS = st.sampled_from(["m1", "m2", "m3"])
_ODD_IDS = st.one_of(nasty_text, st.integers(), st.none())
_SAID = st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=4).map(" ".join)
_ROLES = st.sampled_from(["user", "user", "assistant", "tool", "system"])
_PROVENANCE = st.sampled_from(["human_input", "human_input", "interjection", "task_result", "timer", "recalled",
                               "template", "nonsense", None])


@st.composite
def _message(draw):
    message = {"id": draw(_ODD_IDS if rarely(draw, 8) else _IDS), "role": draw(_ROLES),
               "text": draw(nasty_text if rarely(draw, 5) else _SAID)}
    provenance = draw(_PROVENANCE)
    if provenance is not None:
        message["provenance"] = provenance
    return message


_odd_message = st.one_of(json_values, not_json, st.dictionaries(nasty_text, json_values, max_size=3))
_CONTENT = st.one_of(st.sampled_from(["The user's sister is Anna.", "The user lives in Hangzhou.", "  ", ""]),
                     huge_text(2000))
_CATEGORY = st.one_of(st.none(), st.sampled_from(CATEGORIES))
_PROJECT = st.one_of(st.none(), st.sampled_from(["magi", "app"]))
_REPLACES = st.one_of(st.none(), st.integers(-1, 5))
_SESSION = st.one_of(st.none(), st.sampled_from(["s1", "s2"]))
_QUOTE_CUT = st.tuples(st.integers(0, 40), st.integers(0, 40))


@st.composite
def remember_args(draw):
    messages = draw(st.lists(_message(), min_size=1, max_size=4))
    if rarely(draw, 8):
        messages = draw(st.one_of(st.lists(st.one_of(_message(), _odd_message), max_size=4), _odd_message))
    texts = [m.get("text") for m in (messages if isinstance(messages, list) else [])
             if isinstance(m, dict) and isinstance(m.get("text"), str)]
    if texts and not rarely(draw, 4):
        text = draw(st.sampled_from(texts))         # a real substring: the cases reach past the quote gate
        start, length = draw(_QUOTE_CUT)
        quote = text[start:start + length] if rarely(draw, 2) else text
    else:
        quote = draw(st.one_of(nasty_text, json_values) if rarely(draw, 4) else nasty_text)
    content = draw(json_values if rarely(draw, 20) else nasty_text if rarely(draw, 4) else _CONTENT)
    category = draw(nasty_text if rarely(draw, 8) else _CATEGORY)
    project = draw(nasty_text if rarely(draw, 8) else _PROJECT)
    replaces = draw(json_values if rarely(draw, 8) else _REPLACES)
    session_id = draw(nasty_text if rarely(draw, 8) else _SESSION)
    return quote, content, messages, category, project, replaces, session_id


@pytest.fixture(scope="module")
def fuzz_memory(tmp_path_factory):
    holder = FuzzMemory(tmp_path_factory.mktemp("fuzz-remember"))
    yield holder
    if holder._memory is not None:
        assert integrity_ok(holder._memory)
    holder.close()


def _data_version(memory) -> int:
    return memory.db.reader().execute("PRAGMA data_version").fetchone()[0]


@given(remember_args())
def test_remember_saves_a_quoted_fact_or_rejects_with_a_reason(fuzz_memory, args):
    count("Memory.remember")
    quote, content, messages, category, project, replaces, session_id = args
    memory = fuzz_memory.memory
    before = _data_version(memory)
    try:
        fact_id = memory.remember(quote, content, turn_messages=messages, category=category, replaces=replaces,
                                  project=project, session_id=session_id)
    except RememberRejected as rejected:
        assert rejected.reason and rejected.reason.replace("_", "").isalpha()
        assert _data_version(memory) == before                  # nothing committed
        return
    fact = memory.fact(fact_id)
    assert fact["status"] == "active" and fact["evidence_type"] == "stated"
    assert fact["content"] == normalise(content) or "[REDACTED]" in fact["content"]
    source = [m for m in messages if qualifies(m) and quote_in(quote, m["text"])]
    assert source, "a fact was saved without a qualifying message holding its quote"
