"""Deterministic checks of an extractor's final candidate set, before anything is written.

Whatever the extractor (rules or a model) claims, a fact is committed only when its pointers hold:
the source is a qualifying human message of the same session generation; a stated fact's quote
occurs verbatim in it; an accepted fact's acceptance is a later qualifying human message of that
generation — not the agent, not a framework event, not a pure question, not a missing message —
with an agent message between the two for it to accept. Pointers being valid does not prove the
human meant *this* conclusion; that reading stays the extractor's (the seed says so plainly).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..remember import MAX_CONTENT_CHARS, VALID_CELLS, normalise, quote_in, too_short


@dataclass(frozen=True)
class Message:
    """A chat message of one session generation, as the extractor and the checks see it."""

    rowid: int
    event_id: str
    at: float
    role: str
    provenance: str | None
    kind: str            # content_type: statement | question | directive | hypothetical | answer | …
    text: str
    extracted: bool      # consumed by an earlier extraction: context, never re-extracted

    @property
    def position(self) -> tuple[float, int]:
        return self.at, self.rowid

    @property
    def human(self) -> bool:
        return self.role == "user" and self.provenance in ("human_input", "interjection")

    def to_input(self, max_chars: int) -> dict[str, Any]:
        return {"id": self.event_id, "role": self.role, "provenance": self.provenance, "kind": self.kind,
                "text": self.text if len(self.text) <= max_chars else self.text[:max_chars - 1] + "…"}


def check(candidate: Mapping[str, Any], messages: Mapping[str, Message]) -> str | None:
    """Why ``candidate`` may not be committed (a reason code), or None when it may."""
    if candidate["evidence"] not in ("stated", "accepted"):
        return "not_accepted"
    content = normalise(candidate["content"])
    if not content:
        return "empty_content"
    if len(content) > MAX_CONTENT_CHARS:
        return "content_too_long"
    scope = "project" if candidate.get("project") else "user"
    if (candidate.get("category") or "knowledge") not in VALID_CELLS[scope]:
        return "invalid_category"
    source = messages.get(candidate["source_message_id"])
    if source is None:
        return "source_missing"          # unknown, or in another session or generation
    if not source.human:
        return "source_not_human"
    if candidate["evidence"] == "stated":
        quote = normalise(candidate.get("quote") or "")
        if not quote:
            return "stated_without_quote"
        if too_short(quote):
            return "quote_too_short"
        if not quote_in(quote, source.text):
            return "quote_not_in_source"
        return "stated_in_a_question" if source.kind in ("question", "hypothetical") else None
    accepting = messages.get(candidate.get("accepting_message_id") or "")
    if accepting is None:
        return "acceptance_missing"
    if not accepting.human:
        return "acceptance_not_human"
    if accepting.kind == "question":
        return "acceptance_is_a_question"
    if accepting.kind == "hypothetical":
        return "acceptance_is_conditional"      # "if the benchmark holds, yes" accepts nothing yet
    if accepting.position <= source.position:
        return "acceptance_before_source"
    between = [m for m in messages.values()
               if m.role == "assistant" and source.position < m.position < accepting.position]
    if not between:
        return "nothing_to_accept"
    proposal_id = candidate.get("proposal_message_id")
    if not proposal_id:
        return "proposal_missing"               # the fact holds the agent's words: say which message
    return None if proposal_id in {m.event_id for m in between} else "proposal_not_between"


def final_set(candidates: Sequence[Mapping[str, Any]], messages: Mapping[str, Message]
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split the final candidates into (to commit, rejected with ``reason``); duplicates keep the first."""
    kept, rejected, seen = [], [], set()
    for candidate in candidates:
        reason = check(candidate, messages)
        key = (normalise(candidate["content"]).lower(), candidate.get("project") or None)
        if reason is None and key in seen:
            reason = "duplicate"
        if reason is None:
            seen.add(key)
            kept.append(dict(candidate))
        else:
            rejected.append(dict(candidate, reason=reason))
    return kept, rejected
