"""``remember()`` with a verbatim quote gate, and fact evidence that never launders (architecture §9).

An agent may save a fact on the spot only with proof that the human said it in this turn: the
quote must occur verbatim (whitespace-normalised only) in ONE qualifying human message of the
current turn — typed by the human (``human_input``) or a delivered ``interjection``; never a task
result, a timer, a wake-up, a template or quarantined input, even when its role is "user". No
stitching across messages. The fact points at the matched message and is ``stated``.

Evidence types rank ``stated`` > ``accepted`` > ``unknown``; merging facts keeps the weakest
(:func:`weakest_evidence`): the text may get shorter, the evidence never stronger.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import InvalidInput
from .recalled import strip_recalled
from .redact import redact_with
from .storable import is_storable
from .store import facts as stored_facts
from .store.connection import Connection
from .store.l1 import stored_message_id
from .store.sessions import session_generation
from .text import has_cjk
from .utterance import HYPOTHETICAL, QUESTION, text_kind

QUALIFYING_PROVENANCE = ("human_input", "interjection")
EVIDENCE_RANK = {"stated": 2, "accepted": 1, "unknown": 0}
CATEGORIES = ("profile", "preference", "relation", "knowledge", "event", "state", "procedure", "directive")
# The Familiars seed's scope × category cells, where they apply here: facts about the user, and
# facts about a project the agent works on.
VALID_CELLS = {
    "user": ("profile", "preference", "relation", "knowledge", "event"),
    "project": ("knowledge", "event", "state", "procedure", "directive"),
}
MAX_CONTENT_CHARS = 2000
MIN_QUOTE_CHARS = 8
MIN_CJK_QUOTE_CHARS = 4


class RememberRejected(InvalidInput):
    """The fact was not saved; ``reason`` is a code an agent can act on, the message says how."""

    def __init__(self, reason: str, message: str):
        super().__init__(f"{reason}: {message}")
        self.reason = reason


def normalise(text: str) -> str:
    return " ".join(str(text).split())


def weakest_evidence(types: Iterable[str]) -> str:
    """The weakest of several evidence types (``unknown`` when there are none)."""
    types = list(types)
    return min(types, key=lambda t: EVIDENCE_RANK.get(t, 0)) if types else "unknown"


def qualifies(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "user" and message.get("provenance") in QUALIFYING_PROVENANCE


def _said(message: Mapping[str, Any]) -> str:
    """What a message says, without memory recalled into it (a copy, never new testimony)."""
    return normalise(strip_recalled(str(message.get("text", ""))))


def too_short(quote: str) -> bool:
    """A quote too short to prove anything ("I", "yes", "the cache"): at least two words and eight
    characters, or four characters of Chinese."""
    quote = normalise(quote)
    if has_cjk(quote):
        return len(quote) < MIN_CJK_QUOTE_CHARS
    return len(quote.split()) < 2 or len(quote) < MIN_QUOTE_CHARS


def quote_in(quote: str, text: str) -> bool:
    """``quote`` occurs verbatim in ``text`` (whitespace-normalised), and not inside a word: "I" is not in "Is"."""
    quote, text = normalise(quote), normalise(text)
    if has_cjk(quote):
        return quote in text
    return re.search(r"(?<!\w)" + re.escape(quote) + r"(?!\w)", text) is not None


def match_quote(quote: str, turn_messages: Sequence[Mapping[str, Any]], *,
                statement: bool = True) -> Mapping[str, Any]:
    """The qualifying human message of this turn that holds the quote; else RememberRejected. A fact needs a
    ``statement``; a request ("can you forget my old address?") may be a question (``statement=False``)."""
    wanted = normalise(quote)
    if not wanted:
        raise RememberRejected("empty_quote", "give the user's exact words that state this fact")
    if too_short(wanted):
        raise RememberRejected("quote_too_short", "quote the whole phrase that states the fact (two words or more)")
    for message in turn_messages:
        if qualifies(message) and quote_in(wanted, _said(message)):
            if statement and text_kind(_said(message)) in (QUESTION, HYPOTHETICAL):
                raise RememberRejected("quote_from_a_question", "the human asked or supposed this; a question or "
                                                                "a supposition states no fact")
            if not message.get("id"):
                raise RememberRejected("message_without_id", "give each turn message its id (the event id the "
                                                             "memory returned, or your own message id)")
            return message
    if any(quote_in(wanted, m.get("text", "")) for m in turn_messages):
        raise RememberRejected("quote_not_from_the_human", "the quote is in text the human did not type (a task "
                                                          "result, timer, template, recalled memory or the "
                                                          "agent's own)")
    joined = " ".join(_said(m) for m in turn_messages if qualifies(m))
    if quote_in(wanted, joined):
        raise RememberRejected("quote_spans_messages", "quote from a single message; do not join two")
    raise RememberRejected("quote_not_found", "the quote does not occur verbatim in the human's messages of "
                                              "this turn; quote them exactly (a paraphrase or an earlier turn "
                                              "does not count)")


def remember(conn: Connection, quote: str, content: str, turn_messages: Sequence[Mapping[str, Any]], *,
             category: str | None = None, replaces: int | None = None, project: str | None = None,
             session_id: str | None = None, now: float | None = None) -> int:
    """Check the gate and store the fact (in the caller's write transaction); returns its id.

    The content and the quote are stored redacted (architecture §14), also of the secrets the quoted message
    holds: "hunter22" quoted from "my password is hunter22" is not kept either."""
    now = time.time() if now is None else now
    _check_arguments(quote, content, turn_messages, category, replaces, project, session_id)
    content = normalise(content)
    if not content:
        raise RememberRejected("empty_content", "say what should be remembered")
    if len(content) > MAX_CONTENT_CHARS:
        raise RememberRejected("content_too_long", f"keep a fact under {MAX_CONTENT_CHARS} characters")
    scope = "project" if project else "user"
    category = category or "knowledge"
    if category not in VALID_CELLS[scope]:
        raise RememberRejected("invalid_category", f"a {scope} fact's category is one of "
                                                   f"{', '.join(VALID_CELLS[scope])}")
    message = match_quote(quote, turn_messages)
    if replaces is not None:
        if stored_facts.fact_status(conn, replaces) != "active":
            raise RememberRejected("nothing_to_replace", f"fact {replaces} does not exist or was already replaced")
    generation = session_generation(conn, session_id) if session_id else None
    pointer = stored_message(conn, str(message["id"]))
    said = str(message.get("text", ""))
    fact_id = stored_facts.add_stated_fact(conn, redact_with(content, said), redact_with(normalise(quote), said),
                                           scope, category, project, pointer, session_id, generation, now)
    if replaces is not None:
        stored_facts.supersede_fact(conn, replaces, fact_id, now)
    return fact_id


def _check_arguments(quote, content, turn_messages, category, replaces, project, session_id) -> None:
    """Arguments of the wrong type are refused with a reason, like a failed gate (agents send JSON)."""
    for name, value, optional in (("quote", quote, False), ("content", content, False), ("category", category, True),
                                  ("project", project, True), ("session_id", session_id, True)):
        if value is None and optional:
            continue
        if not isinstance(value, str):
            raise RememberRejected(f"invalid_{name}", f"{name} must be text, not {type(value).__name__}")
        if not is_storable(value):
            raise RememberRejected(f"invalid_{name}", f"{name} holds a NUL character or a lone surrogate")
    if replaces is not None and (isinstance(replaces, bool) or not isinstance(replaces, int)):
        raise RememberRejected("invalid_replaces", "replaces is the id (a whole number) of the fact this replaces")
    if not isinstance(turn_messages, (list, tuple)) or not all(
            isinstance(m, Mapping) and _plain(m.get("text", "")) and _plain(m.get("id", "")) for m in turn_messages):
        raise RememberRejected("invalid_turn_messages", "turn_messages is a list of {id, role, text, provenance} "
                                                        "objects (id and text strings)")


def _plain(value: Any) -> bool:
    """A message's id or text: text without NUL or lone surrogates (a number or null id is allowed)."""
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, str) and is_storable(value)


def stored_message(conn: Connection, message_id: str) -> str:
    """The event id of the stored chat message a runtime's message id names (its event id, or the
    ``source_item_id`` it was ingested with); the id as given when it was not stored (yet)."""
    stored = stored_message_id(conn, message_id)
    return message_id if stored is None else stored


def merge(conn: Connection, fact_ids: Sequence[int], content: str, now: float | None = None) -> int:
    """Consolidate facts into one: the new fact inherits the WEAKEST evidence and its pointers."""
    now = time.time() if now is None else now
    rows = stored_facts.active_facts_to_merge(conn, fact_ids)
    if len(rows) != len(set(fact_ids)) or len(rows) < 2:
        raise InvalidInput("merge needs two or more active facts")
    weakest = weakest_evidence(r[1] for r in rows)
    source = next(r for r in rows if r[1] == weakest)
    merged = stored_facts.add_merged_fact(
        conn, (normalise(content), source[5], source[6], source[7], weakest, source[2], source[3], source[4],
               source[8], source[9], source[10] if weakest == "stated" else None, now, now))
    stored_facts.mark_merged(conn, [r[0] for r in rows], merged, now)
    return merged
