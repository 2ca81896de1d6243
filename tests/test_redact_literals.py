"""Redaction's trigger scan: hyperscan's literal matcher finds exactly the triggers the regex trie finds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from magi_desktop.core import ingest
from magi_desktop.core.contracts import validate_payload
from magi_desktop.core.redact import CURRENT
from magi_desktop.core.redact_gate import TriggerIndex
from magi_desktop.core.redact_literals import LiteralScan

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
