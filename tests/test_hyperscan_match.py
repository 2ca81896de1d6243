"""hyperscan's answers are re's: its literal matcher finds exactly the triggers the regex trie finds, and
the phrase gate never turns away a text re would match."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from magi_desktop.core import ingest
from magi_desktop.core.contracts import validate_payload
from magi_desktop.core.hyperscan_match import AsciiGate, LiteralScan
from magi_desktop.core.redact import CURRENT
from magi_desktop.core.redact_gate import TriggerIndex

pytest.importorskip("hyperscan")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from workload import payloads

INDEXES = {"rules": CURRENT._index, "tokens": CURRENT._token_index, "weak": CURRENT._weak_index,
           "families": CURRENT._family_index}


def texts() -> list[str]:
    found = ["\n".join(ingest._collect_strings(validate_payload(p), [])).lower() for p in payloads(600, seed=3)]
    words = sorted({w for index in INDEXES.values() for w in index._holds})
    found += [f"x{word}y and {word}" for word in words]                         # each alone, inside a word
    found += ["".join(words), " ".join(reversed(words))]                        # overlapping, adjacent
    found += ["", "密码 password 是 секрет passwd", "emoji 😀token😀", "lone \ud800 surrogate api_key=x"]
    return found


@pytest.mark.parametrize("name", sorted(INDEXES))
def test_hyperscan_finds_what_the_trie_finds(name):
    index = INDEXES[name]
    assert index._literals.occurring("warm up") is not None     # hyperscan is what answers here
    checked = texts()
    assert sum(bool(index.present(t)) for t in checked) > 50
    for text in checked:
        assert index.present(text) == index.trie_present(text), text


def test_without_words_nothing_occurs_and_the_trie_answers():
    assert LiteralScan([]).occurring("password") is None
    assert TriggerIndex([(), ()]).present("password") == set()


def test_a_scan_per_thread_each_with_its_own_scratch():
    from concurrent.futures import ThreadPoolExecutor

    index = TriggerIndex([("password", "pass"), ("token",)])
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(index.present, ["my password", "a token", "nothing"] * 200))
    assert results[:3] == [{"password", "pass"}, {"token"}, set()]
    assert results == results[:3] * 200


def phrase_texts() -> list[str]:
    from magi_desktop.core import mentioned_times

    phrases = ["yesterday", "last night", "the week before last", "last Friday", "this past sunday", "3 days ago",
               "a couple of weeks ago", "in March", "during may 2023", "since Sept", "March 2023", "May 7, 2023",
               "jan. 12th 2024", "in 2022", "the day before yesterday"]
    spaces = [" ", "\t", "\x0b", "\x0c", "\x1c", "\x1f", "\n", "  "]
    found = [p["chat"]["text"] for p in payloads(800, seed=5) if "chat" in p]
    for phrase in phrases:
        for space in spaces:
            written = phrase.replace(" ", space)
            found += [written, written.upper(), f"so {written}, then", f"x{written}y", f"{written}s"]
    found += ["lastweek", "2 dayago", "mayday 2023x", "", "nothing about time", "de 2023 à", "昨天", "3天前 ok"]
    assert mentioned_times._EN_PHRASE.pattern      # the gate asks of the very pattern re uses
    return found


def test_the_phrase_gate_never_turns_away_a_text_re_would_match():
    from magi_desktop.core import mentioned_times

    gate = AsciiGate(mentioned_times._EN_PHRASE.pattern, ignore_case=True)
    checked = phrase_texts()
    turned_away = [t for t in checked if not gate.may_match(t)]
    assert len(turned_away) > 300                   # it does turn texts away (else it saves nothing)
    for text in turned_away:
        assert mentioned_times._EN_PHRASE.search(text) is None, text
        assert mentioned_times._ZH_PHRASE.search(text) is None, text
    matched = [t for t in checked if mentioned_times._EN_PHRASE.search(t)]
    assert matched and all(gate.may_match(t) for t in matched)


def test_a_text_with_non_ascii_characters_is_always_left_to_re():
    gate = AsciiGate(r"\bneedle\b")
    assert gate.may_match("no match here but café") and not gate.may_match("no match here")
    assert gate.may_match("a needle here")


def test_a_space_class_inside_brackets_is_left_to_re():
    gate = AsciiGate(r"a[\s,]b")
    assert gate.may_match("a\x1cb") and gate.may_match("nothing")        # re decides every text
