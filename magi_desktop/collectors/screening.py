"""Checks of what a collector yields before it is stored: exclusions, and payloads a sensor may not send."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple


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


class Refusal(NamedTuple):
    """Why the host refuses what a collector yielded: the bad ``field``, the ``code`` it is counted under and the
    ``reason`` in words."""

    field: str
    code: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


def refusal(payload: Any, source_types: Iterable[str] | None = None, collector: str | None = None) -> Refusal | None:
    """Why the host refuses ``payload`` from a collector before the core validates it, or None. ``source_types``
    are the ones the collector writes (None: any); ``collector`` names it in the reason."""
    if speaks(payload):
        # A sensor observes; it never speaks for the user or the agent (architecture §14): a chat turn or a tool
        # run from a collector would pass for testimony or experience.
        return Refusal(next((k for k in ("chat", "action") if k in payload), "source_type"), "speaks",
                       "a collector submits sensor payloads only; chat turns and tool executions come from agents")
    if source_types is not None and isinstance(payload, Mapping):
        allowed = tuple(source_types)
        if payload.get("source_type") not in (None, *allowed):
            # A collector writes its own source only: with another's source_type and natural_key it could
            # replace or retire that source's events (a "calendar" meeting, say).
            who = f"collector {collector!r}" if collector else "this collector"
            return Refusal("source_type", "foreign_source_type", f"{who} writes only {', '.join(map(repr, allowed))}")
    return None


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

