"""Content terms of questions and events: stopwords out, Snowball stemming for overlap checks."""

from __future__ import annotations

import functools
import re
from collections.abc import Set

import Stemmer  # PyStemmer: the Snowball stemmers in C

from ..text import cjk_runs, has_cjk, query_terms, without_cjk

_TIME_WORDS = """
yesterday today tonight tomorrow week weeks month months year years day days ago last past recently lately
ago since before after earlier later morning afternoon evening night weekend monday tuesday wednesday thursday
friday saturday sunday january february march april june july august september october november december
"""
_EN_STOPWORDS = frozenset(_TIME_WORDS.split()) | frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below
between both but by can could did didn't do does doesn't doing don't down during each few for from further
had has have having he her here hers herself him himself his how i if in into is isn't it it's its itself
just let me more most my myself no nor not now of off on once only or other our ours ourselves out over own
same she should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with would you
your yours yourself yourselves s t d ll ve re m o y also ever really any anything something thing things get
got kind sort like tell know think say said does did doing go going went want wanted yes yeah ok okay
""".split())
_ZH_STOPWORDS = frozenset(
    "的 了 是 我 你 他 她 它 们 我们 你们 他们 吗 呢 吧 啊 呀 么 什么 怎么 哪 哪里 哪个 谁 为什么 多少 几 在 有 和 "
    "与 或 也 都 就 还 又 这 那 这个 那个 一个 一 个 之前 之后 以前 以后 前 后 时候 知道 请 帮 告诉 说 想 要 会 能 "
    "可以 昨天 今天 前天 明天 上周 本周 这周 上个月 这个月 去年 今年 最近 以前 之前 之后".split()
)
# Irregular past forms that questions and statements swap ("did I buy" / "I bought").
_IRREGULAR = {
    "bought": "buy", "went": "go", "gone": "go", "got": "get", "gotten": "get", "ate": "eat", "eaten": "eat",
    "saw": "see", "seen": "see", "made": "make", "took": "take", "taken": "take", "met": "meet", "ran": "run",
    "gave": "give", "given": "give", "paid": "pay", "sold": "sell", "told": "tell", "thought": "think",
    "brought": "bring", "found": "find", "left": "leave", "felt": "feel", "kept": "keep", "began": "begin",
    "begun": "begin", "came": "come", "did": "do", "done": "do", "had": "have", "has": "have", "was": "be",
    "were": "be", "been": "be", "wrote": "write", "written": "write", "read": "read", "drove": "drive",
    "driven": "drive", "flew": "fly", "flown": "fly", "won": "win", "lost": "lose", "spent": "spend",
    "sent": "send", "built": "build", "taught": "teach", "caught": "catch", "chose": "choose", "chosen": "choose",
    "drank": "drink", "drunk": "drink", "swam": "swim", "sang": "sing", "sung": "sing", "wore": "wear",
    "worn": "wear", "heard": "hear", "held": "hold",
}


_SNOWBALL = Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The English (Snowball) stem for overlap checks: fryers/fryer, noted/note, stopped/stop — and planes/plane
    apart from planning/plan; irregular past forms first (bought/buy). Other scripts pass unchanged."""
    word = _IRREGULAR.get(word, word)
    if not word.isascii() or len(word) <= 3:
        return word
    return _SNOWBALL.stemWord(word)


def content_terms(text: str) -> list[str]:
    """The question's search terms without stopwords (FTS-compatible, Chinese segmented)."""
    return [t for t in query_terms(text) if t not in _EN_STOPWORDS and t not in _ZH_STOPWORDS and len(t) > 0
            and not (t.isascii() and len(t) == 1)]


@functools.lru_cache(maxsize=8192)
def stems(text: str) -> frozenset[str]:
    """The stems of a text's content words. Cached: the same stored events are read by query after query."""
    return frozenset(stem(t) for t in content_terms(text))


@functools.lru_cache(maxsize=8192)
def stems_outside_cjk(text: str) -> frozenset[str]:
    """:func:`stems` of the text's non-CJK words only: no Chinese segmentation, so jieba's dictionary (81 MB)
    is not loaded for it."""
    return stems(without_cjk(text)) if has_cjk(text) else stems(text)


def shared_stems(asked: Set[str], text: str) -> frozenset[str]:
    """``asked & stems(text)``, segmenting the text's Chinese only when something asked is Chinese: a CJK stem
    can only equal a CJK stem, so an English question over Chinese candidates never loads jieba."""
    if any(has_cjk(word) for word in asked):
        return frozenset(asked) & stems(text)
    return frozenset(asked) & stems_outside_cjk(text)


def content_word_count(text: str, asked: Set[str]) -> int:
    """How many content words the text has, as ``len(stems(text))`` — except that for a question with no CJK
    word a CJK run counts one word per two characters instead of being segmented (jieba's precise cut of
    short Chinese averages about two characters a word): only a count is wanted there, not the words."""
    if not has_cjk(text) or any(has_cjk(word) for word in asked):
        return len(stems(text))
    return len(stems_outside_cjk(text)) + sum((len(run) + 1) // 2 for run in cjk_runs(text))


_QUOTED = re.compile(r"[\"“”「『]([^\"“”」』]{2,80})[\"“”」』]")


def quoted_phrases(text: str) -> list[str]:
    return [m.group(1).strip() for m in _QUOTED.finditer(text) if m.group(1).strip()]
