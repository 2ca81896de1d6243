"""List questions: the question shapes that ask for many things told at different times (issue 17, item 7).

"What activities does Melanie partake in?", "What books has Tim read?", "Which cities has Jon visited?",
"What are Joanna's hobbies?", "How many times has Nate …?", "What do Jon and Gina both …?", "Where has
Maria made friends?" — a plural noun after *what* / *which*, a present perfect ("has … done": the
experiences so far), a count, or *both*. Their answer is a list gathered from several conversations,
so the best few turns of one conversation (its neighbouring turns agree with each other and fill a
pack) are the wrong top: such questions get their places spread over more sessions (engine.py passes
:data:`LIST_SPREAD` to fusion.diversify).

Rules over general English question shapes only (no topic words). On the LoCoMo dev split they
pick 103 of the 142 multi-hop questions, 38 of the 418 single-hop ones and 7 of the 202 others.
"""

from __future__ import annotations

import re

LIST_SPREAD = 0.3          # the session spread (fusion.diversify) of a list question; other questions get modes.py's
# (LoCoMo dev, with address.py: 0 → 0.3 raised session_all@10 0.828 → 0.837, multi-hop 0.437 → 0.486, all@10 flat;
# 0.5 lost 0.4 points of all@10. Four reserved session places instead of three, or twice the candidates, did not help.)

_WORD = re.compile(r"[A-Za-z][A-Za-z'+\-/]*")
_AUXILIARIES = frozenset("has have had does do did is are was were can could would will should".split())
_PERFECT = frozenset({"has", "have"})
_LEADING = frozenset({"in", "on", "at", "for", "with", "from", "to", "about"})
_IRREGULAR_PLURALS = frozenset("people children men women kids feet teeth mice geese".split())
# Words ending in "s" that are not plural nouns.
_NOT_PLURAL = frozenset("this his its yes us as plus always perhaps less unless various news status bus gas "
                        "afterwards towards sometimes".split())
NOUN_WINDOW = 5            # words between the wh-word and the auxiliary that ends its noun phrase


def _plural(word: str) -> bool:
    word = word.strip("'")
    if word in _IRREGULAR_PLURALS:
        return True
    return (len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "'s"))
            and word not in _NOT_PLURAL)


def asks_for_many(question: str) -> bool:
    """Does the question ask for a list (or count) of things, likely told in several conversations?"""
    words = [w.casefold() for w in _WORD.findall(question)]
    if words[:2] == ["how", "many"] or "both" in words:
        return True
    start = 0
    while start < len(words) and words[start] in _LEADING:
        start += 1
    if start >= len(words) or words[start] not in ("what", "which", "where", "who"):
        return False
    rest = words[start + 1:]
    if not rest:
        return False
    if rest[0] in ("are", "were"):           # "What are Joanna's hobbies?", "What are the names of …"
        return any(_plural(w) for w in rest[1:4] if not w.endswith("'s"))
    if rest[0] in _PERFECT:                 # "What has Melanie painted?", "Where has Maria made friends?"
        return True
    if words[start] in ("where", "who"):
        return False
    plural = False
    for word in rest[:NOUN_WINDOW]:          # "What LGBTQ+ events has …", "Which cities has Jon visited?"
        if word in _AUXILIARIES:
            return plural or word in _PERFECT   # "What test has John taken …": the experiences so far
        plural = plural or any(_plural(part) for part in word.split("/"))
    return False

