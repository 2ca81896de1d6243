"""Text segmentation for the full-text index.

FTS5's ``unicode61`` tokenizer treats a run of Chinese characters as one token,
so "我新买了一个空气炸锅" would only match itself. Chinese runs are segmented
with jieba before indexing (search mode: long words *and* their sub-words) and
queries are segmented the same way (precise mode), so "空气炸锅" and "炸锅"
both find the event. Text without CJK characters passes through untouched.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from functools import lru_cache

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_HAS_CJK = re.compile(f"[{_CJK}]")
# What unicode61 calls a token: letters and digits (CJK runs handled separately).
_WORD = re.compile(rf"[^\W_]+|[{_CJK}]+", re.UNICODE)

_jieba_lock = threading.Lock()
_jieba = None            # a jieba.Tokenizer once loaded; its dictionary is ~50 MB resident
_last_used = 0.0
_release_timer: threading.Timer | None = None


def _segmenter():
    """jieba's tokenizer, loaded on first use and released after the idle period the embedding
    model uses (``MAGI_EMBEDDER_IDLE_SECONDS``, 300 s): an idle desktop app must not hold it."""
    global _jieba, _last_used
    with _jieba_lock:
        _last_used = time.monotonic()
        if _jieba is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            tokenizer = jieba.Tokenizer()
            tokenizer.initialize()
            _jieba = tokenizer
        _schedule_release()
        return _jieba


def _schedule_release() -> None:
    global _release_timer
    if _release_timer is not None:
        return                                   # one timer at a time; it re-arms itself if used since
    from .embed import idle_seconds

    idle = idle_seconds()
    if idle is None:
        return
    _release_timer = threading.Timer(max(0.0, _last_used + idle - time.monotonic()), _release_if_idle, (idle,))
    _release_timer.daemon = True
    _release_timer.start()


def _release_if_idle(idle: float) -> None:
    global _jieba, _release_timer
    with _jieba_lock:
        _release_timer = None
        if _jieba is None:
            return
        if time.monotonic() - _last_used < idle:
            _schedule_release()
            return
        _jieba = None
        _cut_precise.cache_clear()
    from .embed.minilm import return_freed_memory

    return_freed_memory()


def has_cjk(text: str) -> bool:
    return bool(_HAS_CJK.search(text))


def cjk_runs(text: str) -> list[str]:
    """The text's runs of CJK characters, unsegmented (no jieba)."""
    return _CJK_RUN.findall(text)


def without_cjk(text: str) -> str:
    """The text with its CJK runs blanked out (no jieba)."""
    return _CJK_RUN.sub(" ", text)


def fts_document(text: str) -> str:
    """The text as it goes into FTS5: CJK runs split into space-separated words."""
    if not has_cjk(text):
        return text
    jieba = _segmenter()
    return _CJK_RUN.sub(lambda m: " " + " ".join(jieba.cut_for_search(m.group())) + " ", text)


@lru_cache(maxsize=4096)
def _cut_precise(run: str) -> tuple[str, ...]:
    return tuple(w for w in _segmenter().cut(run) if w.strip())


def query_terms(text: str) -> list[str]:
    """Terms of a question as FTS5 will see them, CJK segmented; order kept, no repeats."""
    terms: list[str] = []
    seen: set[str] = set()
    for match in _WORD.finditer(text):
        token = match.group()
        pieces = _cut_precise(token) if has_cjk(token) else (token.lower(),)
        for piece in pieces:
            if piece not in seen:
                seen.add(piece)
                terms.append(piece)
    return terms


def fts_phrase(text: str) -> str | None:
    """An FTS5 phrase matching ``text``'s words in order as the index holds them (CJK segmented); None when it
    has no word."""
    tokens = [piece for match in _WORD.finditer(text)
              for piece in (_cut_precise(match.group()) if has_cjk(match.group()) else (match.group().lower(),))]
    return '"' + " ".join(t.replace('"', '""') for t in tokens) + '"' if tokens else None


def fts_or_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression that ORs quoted terms; quoting neutralises FTS syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def index_text(content: str, speaker: str | None) -> str:
    """What search sees of an event: a chat turn is indexed with its speaker ("Caroline: …"), once: a turn
    whose speaker was read from its own "Caroline:" prefix already starts with it."""
    if not speaker or content.startswith((f"{speaker}:", f"{speaker}：")):
        return content
    return f"{speaker}: {content}"
