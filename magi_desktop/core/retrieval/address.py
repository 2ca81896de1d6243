"""A name used to address someone is not a mention of them (issue 17, items 6–7).

In a conversation the other person is named mostly in address: "Wow, Melanie!", "Hey Caroline, …",
"Thanks, Jon." Such a turn is spoken *to* them, not about them; counting it as about the person
gave every reply of the other speaker the reranker's named-entity bonus, and on the LoCoMo dev split
those replies filled the top of "What activities does Melanie partake in?".
"""

from __future__ import annotations

import functools
import re

_GREETINGS = (r"hey|hi|hello|hiya|yo|dear|thanks|thank\s+you|thx|congrats|congratulations|sorry|bye|goodbye|"
              r"wow|oh|aw+|yes|yeah|yep|yup|no|nope|ok|okay|sure|great|good\s+(?:morning|night|evening)|"
              r"morning|cheers|love\s+you|miss\s+you")


@functools.lru_cache(maxsize=512)
def _address(name: str) -> re.Pattern:
    """``name`` (casefolded) in address: after a greeting, a comma or a sentence start, before , ! ? . or the end."""
    return re.compile(rf"(?:^|[.!?,;:]\s*|\b(?:{_GREETINGS})\s*,?\s+)(?:{re.escape(name)})(?=\s*(?:[,!?.;]|$))")


def addressed_only(text: str, name: str) -> bool:
    """Is every mention of ``name`` in ``text`` (both casefolded) one that addresses the person?"""
    mentions = len(re.findall(rf"\b{re.escape(name)}\b", text))
    return mentions > 0 and len(_address(name).findall(text)) >= mentions
