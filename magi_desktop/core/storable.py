"""Whether a string can be stored: one check for every door text comes in by (an agent's remember(), an import,
the settings files)."""

from __future__ import annotations


def is_storable(value: str) -> bool:
    """Valid Unicode without NUL: JSON's "\\ud800" escape decodes to a lone surrogate that no UTF-8 database or
    file can hold, and NUL ends the text for C code that reads it."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
