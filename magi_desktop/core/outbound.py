"""What leaves the memory for a reader — a person's terminal or window, an agent's context.

Stored text is kept as it arrived (a page title is evidence of what the page said), but what is
shown of it must not act on the reader: an escape sequence that rewrites a terminal, a bidi override
that reverses a line in a window, invisible tag characters that carry instructions to a model
("ASCII smuggling"), or a recalled-memory marker that ends a block early (recalled.py). So every
string on the way out goes through :func:`safe_text`: control characters are written out (``\\x1b``),
invisible and direction-changing characters are removed, markers are made inert.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, TypeVar

from .recalled import escape_markers

T = TypeVar("T")

# Written out: C0 controls but tab and newline, DEL, C1 controls (CSI U+009B included).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Removed: characters that do not show but change what is shown or read — bidi embeddings, overrides,
# isolates and marks; zero-width spaces and joiners that are not ZWJ/ZWNJ (which scripts and emoji
# need); invisible fillers; deprecated format controls; interlinear annotation; tag characters and
# the supplementary variation selectors (both used to hide text in plain sight).
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u200e\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
_LINE_BREAK = re.compile("\r\n?|[\u2028\u2029\x85]")


def _symbol(match: re.Match) -> str:
    # Written out as its escape (``\x1b``): readable in any font and any terminal, unlike the Unicode
    # control pictures, which many fonts lack.
    return f"\\x{ord(match.group()):02x}"


def neutralise(text: str) -> str:
    """``text`` with line breaks as ``\\n``, controls written out (``\\x07``), invisible characters removed."""
    if text.isascii() and text.isprintable():
        return text
    text = _LINE_BREAK.sub("\n", text)
    return _INVISIBLE.sub("", _CONTROL.sub(_symbol, text))


def safe_text(text: str) -> str:
    """A stored string as it may be shown: neutralised, and no recalled-memory marker inside."""
    return escape_markers(neutralise(text))


def safe(value: T) -> T:
    """``value`` with every string in it made safe (dicts, lists, tuples and dataclasses, recursively), and plain:
    an enum member (``Layer.L1``) leaves as its string, so what is sent as JSON is plain data."""
    if isinstance(value, str):
        return safe_text(str.__str__(value))  # type: ignore[return-value]
    if isinstance(value, dict):
        return {safe(key): safe(item) for key, item in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [safe(item) for item in value]  # type: ignore[return-value]
    if isinstance(value, tuple):
        items = [safe(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: safe(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    return value



# In JSON text these can only stand inside strings, where \uXXXX is the same character to a parser.
_UNSAFE_IN_JSON = re.compile(f"{_CONTROL.pattern}|{_INVISIBLE.pattern}|[\u2028\u2029]")


def _json_escape(match: re.Match) -> str:
    code = ord(match.group())
    if code > 0xFFFF:                       # a tag character: written as its surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_text(value: Any, indent: int | None = 2) -> str:
    """``value`` as JSON a terminal may show and a program may parse: readable text kept (Chinese too),
    markers made inert, control and invisible characters written as ``\\uXXXX`` escapes."""
    text = json.dumps(_markers_inert(value), indent=indent, ensure_ascii=False, default=str)
    return _UNSAFE_IN_JSON.sub(_json_escape, text)


def _markers_inert(value: Any) -> Any:
    if isinstance(value, str):
        return escape_markers(value)
    if isinstance(value, dict):
        return {_markers_inert(key): _markers_inert(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_markers_inert(item) for item in value]
    return value
