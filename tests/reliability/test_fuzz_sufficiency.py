"""Properties of sufficiency and window listing (architecture §16; issue 17, items 1 and 2).

* A question that names only a time lists its window: never empty when the window holds events, every
  finding answers and lies in the window, every source present gets a slot (up to ``limit``), the
  sources come grouped, the user's words first and the browser last — whatever the events say.
* "Whose": a turn that only addresses a person ("Thanks, Anna!") is never evidence about that person;
  a turn that speaks of them is, whatever the name and the words around it.
"""

from datetime import timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.retrieval.pack import Finding
from magi_desktop.core.retrieval.sufficiency import (
    INFERENCE_SIMILARITY,
    Asked,
    source_kind,
    speaks_of,
    verdict,
    whose_ok,
)
from magi_desktop.core.retrieval.temporal import TemporalIntent
from magi_desktop.core.store.l1 import event_rows

from .fuzzing import count, nasty_text

pytestmark = pytest.mark.fuzz

NOW = 1_764_000_000.0            # 2025-11-24 16:00 UTC
DAY_START = NOW - 16 * 3600      # its midnight
SOURCES = ("chat", "chrome", "firefox", "git", "terminal", "calendar", "music", "x.y-z_1")
WINDOW_QUESTIONS = ("What did I do today?", "What happened today?", "今天", "我今天做了什么",
                    "What did I do this morning?")

_event = st.tuples(st.sampled_from(SOURCES), st.floats(DAY_START - 3 * 86400, NOW), nasty_text)


def _payload(index: int, source: str, at: float, text: str) -> dict:
    if source == "chat":
        return chat(text or "x", at=at, session="s")
    return sensor("visit_page" if source in ("chrome", "firefox") else "run_command",
                  {"url": f"https://example.com/{index}", "title": text} if source in ("chrome", "firefox")
                  else {"command": text or "x"}, source=source, at=at, item=f"{source}-{index}")


@given(st.lists(_event, min_size=1, max_size=25), st.sampled_from(WINDOW_QUESTIONS), st.integers(1, 12))
def test_a_window_only_question_lists_its_window(tmp_path_factory, events, question, limit):
    count("window listing")
    memory = Memory.open(tmp_path_factory.mktemp("window"), embedder="hashing")
    try:
        memory.ingest_many([_payload(i, *event) for i, event in enumerate(events)], on_error="report")
        present = {r["source"] for r in event_rows(memory.db.reader())
                   if DAY_START <= r["timestamp"] <= NOW and r["l1_retrieval_scope"] == "fact_authoritative"}
        pack = memory.query(question, now=NOW, limit=limit, tz=timezone.utc)
        assert (pack.status == "ok") == bool(present)
        listed = [f for f in pack.findings if f.layer == "L1"]
        assert all(f.answers for f in pack.findings)
        assert all(DAY_START <= f.occurred_at <= NOW for f in listed)
        sources = [f.source for f in listed]
        assert len(set(sources)) == min(len(present), limit)
        order = list(dict.fromkeys(sources))
        changes = sum(1 for i in range(1, len(sources)) if sources[i] != sources[i - 1])
        assert changes == max(len(order) - 1, 0)            # each source's findings together
        if "chat" in order:
            assert order[0] == "chat"
        browsers = [i for i, s in enumerate(order) if source_kind(s) == "browser"]
        assert browsers == list(range(len(order) - len(browsers), len(order)))   # page visits come last
    finally:
        memory.close()


_name = st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True)
_greeting = st.sampled_from(["Thanks, ", "Thank you, ", "Hey ", "Hi ", "Wow, ", "", "Oh ", "Congrats, "])
_close = st.sampled_from(["!", ",", ".", "?", "!!"])
_rest = st.text(st.characters(whitelist_categories=("Ll", "Zs")), max_size=40)


def _turn(speaker: str | None, text: str) -> Finding:
    return Finding(layer="L1", text=text, occurred_at=NOW, source="chat", source_item_id=None, session_id="s",
                   author="user", evidence_class="user_self_report", score=1.0, event_id="e", speaker=speaker)


@given(_name, _name, _greeting, _close, _rest, st.booleans())
def test_addressing_a_person_is_not_evidence_about_them(subject, other, greeting, close, rest, labelled):
    count("sufficiency whose")
    if subject.casefold() == other.casefold():
        return
    said = f"{greeting}{subject}{close} {rest}"
    asked = Asked.of(f"What did {subject} do?", [(1, "person", subject.casefold())], TemporalIntent())
    assert not speaks_of(said, subject)
    finding = _turn(None, f"{other}: {said}") if labelled else _turn(other, said)
    assert not whose_ok(finding, asked)
    assert whose_ok(_turn(subject, said), asked)                      # said by them: about them
    assert whose_ok(_turn(None, f"{subject}: {rest}"), asked)         # the "Name:" label names the speaker
    for mention in (f"I met {subject} at the park{close} {rest}", f"{subject}'s dog is cute {rest}",
                    f"{greeting}{subject} went hiking {rest}"):
        assert speaks_of(mention, subject)
        assert whose_ok(_turn(other, mention), asked)


_word = st.from_regex(r"[a-z]{4,9}", fullmatch=True)


@given(_name, st.lists(_word, min_size=1, max_size=4), st.sampled_from(["?", "??", "?!", "? :)"]),
       st.floats(0.0, 1.0), st.booleans())
def test_a_turn_that_only_asks_never_answers(subject, words, mark, similarity, labelled):
    """Whatever it asks, in the question's own words and however close its meaning: a turn made only of
    questions tells nothing of its speaker (nor sets the bar for what does)."""
    count("sufficiency asking")
    phrase = " ".join(words)
    asked = Asked.of(f"What about {subject}'s {phrase}?", [(1, "person", subject.casefold())], TemporalIntent())
    said = f"Did you see the {phrase}{mark} What about {phrase} then{mark}"
    finding = _turn(None, f"{subject}: {said}") if labelled else _turn(subject, said)
    checks = verdict(finding, asked, similarity)
    assert checks["coverage"] == 0.0 or not asked.attribute
    assert not checks["answers"] or not asked.attribute or similarity >= INFERENCE_SIMILARITY and asked.inference
