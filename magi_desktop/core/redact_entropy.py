"""Is a value a long, high-entropy token — a key whose format no vendor rule knows?

Shannon entropy over the token's own characters, in bits per character. A random string cannot have
more than log2 of its length (each character at most once) or of its alphabet (16 for hex, ~64 for
base64), so one threshold for every length would either miss short keys or take long words. The
threshold is a fraction of that ceiling: a random 16-hex-digit key reaches ~3.5 bits against a ceiling
of 4, an English word of the same length ~3.2 at most but with one letter class, which the class rule
refuses. detect-secrets makes the same hex/base64 split (3.0 and 4.5 bits over whole strings); keyed
values are rarer than arbitrary strings, so the cut can be lower here.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from .redact_harmless import wordlike

MIN_CHARS = 16          # shorter tokens are left to the names that say they are secrets
MAX_CHARS = 4096
CEILING_FRACTION = 0.8  # of log2(min(length, alphabet size))
HEX_ALPHABET, TOKEN_ALPHABET = 16, 64
ENTROPY_PARAMETERS = (MIN_CHARS, MAX_CHARS, CEILING_FRACTION)

_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-.~%:!@#$^&*?|]+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_ALPHABET_RUN = re.compile("|".join(alphabet[i:i + 10] for alphabet in ("abcdefghijklmnopqrstuvwxyz",
                                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789") for i in range(len(alphabet) - 9)))


def shannon(text: str) -> float:
    """Bits per character of ``text`` over its own characters."""
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def high_entropy(value: str) -> bool:
    """``value`` looks like a random key: one token of 16+ characters, mixed character classes, and an
    entropy near the most its length and alphabet allow. Paths, URLs, numbers and words are not."""
    value = value.strip()
    if not MIN_CHARS <= len(value) <= MAX_CHARS or not _TOKEN.fullmatch(value):
        return False
    if value.startswith(("/", "./", "../", "~/")) or "://" in value or value.isdigit():
        return False
    parts = re.split(r"[-_.:]", value)
    if len(parts) > 1 and sum(len(p) for p in parts if len(p) >= 3 and (p.isalpha() or p.isdigit())) * 2 > len(value):
        return False                                # "bert-base-uncased-v2", "rc0.15.0_20231217_1420-SNAPSHOT"
    compact = value.replace("-", "")
    if _HEX.fullmatch(compact):                     # hex (a UUID without its dashes too)
        if len(compact) < MIN_CHARS or compact.isdigit() or compact.isalpha():
            return False
        return shannon(compact) >= CEILING_FRACTION * math.log2(min(len(compact), HEX_ALPHABET))
    if _ALPHABET_RUN.search(value):                 # "ABCDEFGHIJ…0123456789": an alphabet constant
        return False
    if wordlike(value, capitals=False):             # APIOrganizationExist, id-Gost28147-89-None-KeyMeshing
        return False
    classes = sum(1 for test in (str.islower, str.isupper, str.isdigit) if any(test(c) for c in value))
    if classes < 2 or not any(c.isdigit() for c in value) and classes < 2:
        return False
    return shannon(value) >= CEILING_FRACTION * math.log2(min(len(value), TOKEN_ALPHABET))
