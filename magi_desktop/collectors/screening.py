"""Checks of what a collector yields before it is stored: exclusions, and payloads a sensor may not send."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def exclusion_forms(kind: str, values: list[str]) -> list[str]:
    """Casefolded exclusions; a domain also in its punycode form, as browsers store it."""
    forms = []
    for value in values:
        value = value.strip().casefold()
        if not value:
            continue
        forms.append(value)
        if kind == "domains" and not value.isascii():
            try:
                forms.append(value.encode("idna").decode("ascii"))
            except UnicodeError:
                pass
    return forms


def speaks(payload: Any) -> bool:
    """A chat turn or a tool execution, rather than a sensor observation."""
    return isinstance(payload, Mapping) and (payload.get("source_type") in ("chat", "runtime") or "chat" in payload
                                             or "action" in payload)


def mentions_any(payload: Any, needles: list[str], depth: int = 0) -> bool:
    if isinstance(payload, str):
        text = payload.casefold()
        return any(needle in text for needle in needles)
    if depth > 4:
        return False
    if isinstance(payload, Mapping):
        return any(mentions_any(v, needles, depth + 1) for v in payload.values())
    if isinstance(payload, (list, tuple)):
        return any(mentions_any(v, needles, depth + 1) for v in payload)
    return False

