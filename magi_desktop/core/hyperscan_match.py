r"""Questions the write path asks of every text, answered by hyperscan where it is installed.

:class:`LiteralScan`: which of many literal words occur in a text (for :mod:`.redact_gate`).
Redaction's first look at every text asks which of some 300 trigger words occur in it. The regex trie of
:mod:`.redact_gate` answers in one pass of Python's ``re``; hyperscan's literal matcher answers the same
question 3-4 times faster (40 -> 12 µs a text on the benchmark workload, two to three texts an event:
about 5% of ingest, benchmarks/ingest.py). The answer is a set of words, so the two cannot disagree on
what is redacted: the rules that then run, and the spans they replace, are ``re``'s as before. Where
hyperscan has no wheel (Linux on ARM) or refuses the words, :meth:`LiteralScan.occurring` says so and the
trie is used.

:class:`AsciiGate`: whether a regex can match an ASCII text at all, so that the ``re`` scan (the source of
truth for what matches) runs only on the texts that hold a match (for :mod:`.mentioned_times`, whose phrase
scan cost ~47 µs a chat turn and finds nothing in nearly all of them). Only ASCII texts are asked: there
Python's ``\b``, ``\d`` and case folding are hyperscan's, and ``\s`` is widened to Python's (which holds
``\x1c``-``\x1f``); a text with any other character goes to ``re`` as before.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

try:
    import hyperscan
except ImportError:          # no wheel for this platform
    hyperscan = None  # type: ignore[assignment]


def _collect(word_id: int, start: int, end: int, flags: int, found: list[int]) -> None:
    found.append(word_id)


class _Compiled:
    """A hyperscan database compiled on first use (importing the rules stays cheap) by :meth:`_compile`, with a
    scratch space per thread (hyperscan's scratch serves one scan at a time). ``_failed``: hyperscan cannot
    answer (not installed, nothing to compile, or it refused the expressions)."""

    def __init__(self, failed: bool):
        self._database: Any = None
        self._failed = failed
        self._lock = threading.Lock()
        self._local = threading.local()

    def _compile(self, database: Any) -> None:
        raise NotImplementedError

    def _scratch(self) -> Any:
        """This thread's scratch space, or None when hyperscan cannot answer."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is not None or self._failed:
            return scratch
        with self._lock:
            if self._database is None and not self._failed:
                try:
                    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                    self._compile(database)
                    self._database = database
                except hyperscan.error:
                    self._failed = True
            if self._failed:
                return None
        scratch = hyperscan.Scratch(self._database)
        self._local.scratch = scratch
        return scratch


class LiteralScan(_Compiled):
    """A hyperscan database of ``words`` (see :class:`_Compiled`)."""

    def __init__(self, words: Sequence[str]):
        self.words = tuple(words)
        super().__init__(hyperscan is None or not self.words)

    def _compile(self, database: Any) -> None:
        database.compile(expressions=[w.encode("utf-8") for w in self.words], ids=list(range(len(self.words))),
                         elements=len(self.words), flags=hyperscan.HS_FLAG_SINGLEMATCH, literal=True)

    def occurring(self, text: str) -> set[str] | None:
        """The words that occur in ``text`` (anywhere, overlapping ones too); None when hyperscan cannot say."""
        if (scratch := self._scratch()) is None:
            return None
        found: list[int] = []
        # UTF-8 is self-synchronising: a word's bytes occur in the text's bytes exactly where the word occurs.
        self._database.scan(text.encode("utf-8", "surrogatepass"),
                            match_event_handler=_collect, context=found, scratch=scratch)
        words = self.words
        return {words[i] for i in found}


class AsciiGate(_Compiled):
    """Whether ``pattern`` (a Python regex that hyperscan can compile: no lookaround, no back-reference, no
    ``\\s`` inside a character class) can match an ASCII text (see :class:`_Compiled`)."""

    def __init__(self, pattern: str, *, ignore_case: bool = False):
        self._expression = pattern.replace(r"\s", r"[\s\x1c-\x1f]")   # Python's \s holds these ASCII ones too
        self._flags = (hyperscan.HS_FLAG_CASELESS if ignore_case else 0) if hyperscan is not None else 0
        # Widened inside a character class it would no longer be one: such a pattern is left to re.
        super().__init__(hyperscan is None or re.search(r"\[[^\]]*\\s", pattern) is not None)

    def _compile(self, database: Any) -> None:
        database.compile(expressions=[self._expression.encode("ascii")], ids=[0], elements=1,
                         flags=self._flags | hyperscan.HS_FLAG_SINGLEMATCH)

    def may_match(self, text: str) -> bool:
        """False only when ``text`` is ASCII and the pattern matches nowhere in it."""
        if not text.isascii() or (scratch := self._scratch()) is None:
            return True
        found: list[int] = []
        # One expression, reported once (HS_FLAG_SINGLEMATCH): the first match ends the work.
        self._database.scan(text.encode("ascii"), match_event_handler=_collect, context=found, scratch=scratch)
        return bool(found)
