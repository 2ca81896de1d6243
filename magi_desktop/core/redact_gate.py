"""Which redaction rules could match a text, found with one scan (for :mod:`magi_desktop.core.redact`).

Every rule names the lower-cased words one of which must occur for it to match (its triggers). Testing
each of some 300 triggers with ``in`` cost ~10 µs a string and ran on nearly every event, since words such
as ``session`` or ``api`` are everywhere; a single regex over all of them, built as a trie so it never
backtracks over alternatives, finds the triggers present in ~1–4 µs, and an index from trigger to rules
gives the few rules worth running.

The scan is a lookahead, so it reports a trigger at every position where one starts (the longest there);
each trigger found stands for every trigger it contains (``password`` holds ``pass``), which is exact: a
trigger that starts where a longer one does is a prefix of it. Where hyperscan is installed, its literal
matcher finds the same set of triggers faster (:mod:`.hyperscan_match`); the trie is the fallback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .hyperscan_match import LiteralScan


def trie_pattern(words: Iterable[str]) -> str:
    """A regex that matches any of ``words``, longest first at each position, as a trie of groups."""
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict) -> str:
        branches = [re.escape(char) + build(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


class TriggerIndex:
    """The triggers of each rule (by position), scanned for at once. A rule whose triggers hold the empty
    word is a candidate for every text; one with no triggers, for none."""

    def __init__(self, triggers: list[tuple[str, ...]]):
        words = sorted({t for ts in triggers for t in ts if t})
        self._scan = re.compile("(?=(" + trie_pattern(words) + "))") if words else None
        self._literals = LiteralScan(words)
        self._holds = {w: tuple(o for o in words if o in w) for w in words}
        self._rules_of: dict[str, list[int]] = {w: [] for w in words}
        for index, rule_triggers in enumerate(triggers):
            for trigger in rule_triggers:
                if trigger:
                    self._rules_of[trigger].append(index)
        # A rule with the empty trigger is always a candidate; one with no triggers never is.
        self._always = [i for i, ts in enumerate(triggers) if "" in ts]

    def present(self, lowered: str) -> set[str]:
        """The triggers that occur in ``lowered`` (lower-cased text)."""
        if self._scan is None:
            return set()
        occurring = self._literals.occurring(lowered)
        return self.trie_present(lowered) if occurring is None else occurring

    def trie_present(self, lowered: str) -> set[str]:
        """:meth:`present` found by the regex trie alone (the fallback without hyperscan)."""
        if self._scan is None:
            return set()
        found = {m.group(1) for m in self._scan.finditer(lowered)}
        return {held for word in found for held in self._holds[word]}

    def candidates(self, lowered: str) -> list[int]:
        """The positions, in order, of the rules a trigger of which occurs in ``lowered``."""
        selected = set(self._always)
        for trigger in self.present(lowered):
            selected.update(self._rules_of[trigger])
        return sorted(selected)
