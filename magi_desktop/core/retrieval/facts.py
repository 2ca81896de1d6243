"""Fact recall (architecture §9): the facts agents saved or extraction committed, found by their words.

A fact is recalled with its evidence in plain sight: "stated" facts are the user's own words
(the quote is shown), "accepted" ones the agent's conclusion the user accepted, "unknown" ones
carry no proof — the pack never presents an accepted or unknown fact as something the user said.
Facts are structured knowledge: their findings are layer "L2" (status "current": only active
facts are recalled), told apart by ``evidence_class`` "fact_stated" / "fact_accepted" /
"fact_unknown" and an ``event_id`` "fact:<id>". A fact is offered only when it covers at least
half of the question's content words: BM25 over a handful of short rows would otherwise match on
any shared word.
"""

from __future__ import annotations

import re

from ..instructions import is_standing_instruction
from ..store import l1, search
from ..store.connection import Connection
from ..text import fts_or_query, has_cjk
from .pack import Finding, Layer
from .paths import QueryContext

FETCH_K = 20
MIN_COVERAGE = 0.5
MAX_SUFFIX = 3                  # "prefer" -> "preferred", not "preference"-like drift of longer words
_WORD = re.compile(r"\w+")
LABELS = {"stated": "the user said it", "accepted": "the user accepted the agent's conclusion",
          "unknown": "no proof kept"}
AUTHORS = {"stated": "user", "accepted": "memory", "unknown": "memory"}


class FactRecall:
    def __init__(self, conn: Connection):
        self.conn = conn

    def findings(self, ctx: QueryContext, limit: int = 2) -> list[Finding]:
        if not ctx.terms:
            return []
        rows = search.active_facts_matching(self.conn, fts_or_query(ctx.terms), FETCH_K)
        out = []
        for fact_id, content, quote, evidence, *pointers, session_id, created_at, rank in rows:
            if _coverage(ctx.terms, f"{content} {quote or ''}") < MIN_COVERAGE:
                continue
            if is_standing_instruction(quote or content):
                continue                                  # a request, not a fact about the user (requests.py)
            events = self._events(pointers)
            said_at = max(e[1] for e in events) if events else created_at   # true once accepted
            if said_at > ctx.now:
                continue                                  # learnt after the question's time
            text = f"[fact · {evidence}: {LABELS.get(evidence, evidence)}] {content}"
            if evidence == "stated" and quote:
                text += f" (the user: “{quote}”)"
            out.append(Finding(layer=Layer.L2, text=text, occurred_at=said_at, source="memory_facts",
                               source_item_id=None, session_id=session_id, author=AUTHORS.get(evidence, "memory"),
                               evidence_class=f"fact_{evidence}", score=-rank, event_id=f"fact:{fact_id}",
                               supporting_event_ids=[e[0] for e in events],
                               supporting_source_item_ids=[e[2] for e in events if e[2]], paths=["facts_bm25"],
                               status="current"))
            if len(out) == limit:
                break
        return out

    def _events(self, pointers: list[str | None]) -> list[tuple[str, float, str | None]]:
        """The stored messages a fact points at (source, proposal, acceptance), by event or item id."""
        found = []
        for pointer in pointers:
            if pointer:
                row = l1.event_by_id_or_chat_item(self.conn, pointer)
                if row:
                    found.append(row)
        return found


def _coverage(terms: list[str], text: str) -> float:
    """The share of the terms the text says: a word that is the term or the term with a short ending
    ("backup" covers "backups", "cat" does not cover "category"); Chinese terms by substring."""
    words = _WORD.findall(text.lower())
    text = text.lower()

    def says(term: str) -> bool:
        term = term.lower()
        if has_cjk(term):
            return term in text
        return any(word.startswith(term) and len(word) - len(term) <= MAX_SUFFIX for word in words)

    return sum(1 for term in terms if says(term)) / len(terms)
