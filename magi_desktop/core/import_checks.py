"""Small checks of imported column values: each returns the value when it is usable, else None."""

from __future__ import annotations

import json
import math
from typing import Any

from .storable import is_storable

MAX_TEXT = 200_000
MAX_ID = 512


def integer(value: Any, low: int = 0, high: int = 2**62) -> int | None:
    return value if type(value) is int and low <= value <= high else None


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if 0 <= value <= 4_102_444_800 else None


def text(value: Any, max_chars: int = MAX_ID, *, empty: bool = False) -> str | None:
    """A string without NUL, within the length, not blank unless ``empty``."""
    if not isinstance(value, str) or len(value) > max_chars or (not empty and not value.strip()):
        return None
    return value if is_storable(value) else None


def json_of(value: Any, kind: type) -> Any:
    """The parsed JSON text when it is a ``kind`` (dict or list), else None."""
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, kind) else None
