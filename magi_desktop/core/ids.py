"""ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, monotonic per process."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Two base32 digits per lookup: 13 lookups encode the 130-bit (26-digit) id.
_PAIRS = tuple(a + b for a in _ALPHABET for b in _ALPHABET)
_SHIFTS = tuple(range(120, -1, -10))
_RANDOM_BITS = 80
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def new_ulid(now: float | None = None) -> str:
    """A new ULID. Within one millisecond the random part increments, so ids sort by creation."""
    global _last_ms, _last_rand
    ms = int((time.time() if now is None else now) * 1000)
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand = (_last_rand + 1) & ((1 << _RANDOM_BITS) - 1)
        else:
            _last_ms = ms
            _last_rand = int.from_bytes(os.urandom(10), "big") >> 1  # room to increment
        value = (ms << _RANDOM_BITS) | _last_rand
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _SHIFTS])
