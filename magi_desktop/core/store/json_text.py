"""Compact JSON text for what the memory stores (an event's metadata): orjson, the standard library's
encoder where orjson refuses a value.

orjson writes the same text as ``json.dumps(value, ensure_ascii=False, separators=(",", ":"),
default=str)`` for the plain JSON data a validated payload holds, five to six times faster (about 25 µs an
event, 2-3% of ingest: benchmarks/ingest.py). Only the spelling of some floats differs (``1e16`` for
``1e+16``), which no reader of the stored text sees: it is parsed (``json.loads``, SQLite's JSON
functions), never hashed or compared as text. The dedupe keys hash their own canonical text
(core/ingest.py), which stays the standard library's, byte for byte as older memories hold them.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# Dates and dataclasses go to ``default`` (``str``) as json.dumps sends them, not to orjson's own forms.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def compact_json(value: Any) -> str:
    """``value`` as compact JSON text, non-ASCII characters as they are, anything else through ``str``."""
    try:
        return orjson.dumps(value, default=str, option=_OPTIONS).decode("utf-8")
    except (orjson.JSONEncodeError, TypeError):
        # An integer past 64 bits, a key that is not a string, a lone surrogate: the standard encoder's
        # answer (or its error) as before.
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
