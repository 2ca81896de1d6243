"""The facts agents saved (architecture §9): ``remember()`` behind the quote gate, facts and their evidence,
merges, deletions, and the extraction of facts from ended conversations. ``forget()`` is in
:mod:`.forgetting`."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .. import extraction
from ..llm import LLMProvider
from ..remember import merge as merge_facts
from ..remember import remember as remember_fact
from ..remember import stored_message
from ..store import Database
from ..store import facts as stored_facts
from ..store.extractions import latest_extractions
from ..store.l1 import event_row

FACT_KEYS = ("fact_id", "content", "quote", "scope", "category", "project", "evidence_type", "source_message_id",
             "proposal_message_id", "accepting_message_id", "session_id", "generation", "extraction_id", "status",
             "superseded_by", "created_at")


class FactBook:
    def __init__(self, db: Database, llm: LLMProvider) -> None:
        self.db = db
        self.llm = llm

    def remember(self, quote: str, content: str, turn_messages: Sequence[Mapping[str, Any]],
                 category: str | None = None, replaces: int | None = None, project: str | None = None,
                 session_id: str | None = None) -> int:
        """Save a fact an agent heard, with proof: ``quote`` must occur verbatim in one qualifying human
        message of ``turn_messages`` (the current turn: ``{"id", "role", "text", "provenance"}``).
        Returns the fact id; raises :class:`RememberRejected` with a reason code otherwise."""
        with self.db.transaction() as conn:
            return remember_fact(conn, quote, content, turn_messages, category=category, replaces=replaces,
                                 project=project, session_id=session_id)

    def merge_facts(self, fact_ids: Sequence[int], content: str) -> int:
        """Consolidate facts into one, which keeps the weakest evidence of them (never a stronger one)."""
        with self.db.transaction() as conn:
            return merge_facts(conn, fact_ids, content)

    def facts(self, status: str | None = "active", *, fact_id: int | None = None) -> list[dict[str, Any]]:
        """Facts with ``status`` (active | superseded | merged | deleted; None: all), oldest first."""
        return [dict(zip(FACT_KEYS, row, strict=True))
                for row in stored_facts.fact_rows(self.db.reader(), FACT_KEYS, status, fact_id)]

    def fact(self, fact_id: int) -> dict[str, Any] | None:
        """One fact with its evidence trail: the human message that states it (``source_message``) and,
        for an accepted fact, the agent's conclusion (``proposal_message``) and the human message that
        accepted it (``accepting_message``); None if unknown."""
        found = self.facts(status=None, fact_id=fact_id)
        if not found:
            return None
        fact = found[0]
        conn = self.db.reader()
        for key, pointer in (("source_message", "source_message_id"), ("proposal_message", "proposal_message_id"),
                             ("accepting_message", "accepting_message_id")):
            message_id = fact[pointer]
            fact[key] = event_row(conn, stored_message(conn, message_id)) if message_id else None
        return fact

    def delete_fact(self, fact_id: int) -> bool:
        """The user deletes a fact: its words are erased (from the index too); a row marked ``deleted``
        stays, so what it had replaced is not brought back by mistake."""
        with self.db.transaction() as conn:
            return stored_facts.delete_fact(conn, fact_id, time.time())

    def extract_facts(self, now: float | None = None, limit: int | None = None) -> dict[str, Any]:
        """Run fact extraction over the conversations that are due now (ended, or idle 30 minutes)."""
        return extraction.run(self.db, self.llm, now, limit=limit or extraction.BATCH).to_dict()

    def extractions(self, limit: int = 50) -> list[dict[str, Any]]:
        """The committed extractions, newest first: the episode, and what was kept or rejected and why."""
        keys = ("extraction_id", "session_id", "generation", "extractor", "segments", "message_count", "first_at",
                "last_at", "episode", "report", "created_at")
        rows = latest_extractions(self.db.reader(), limit)
        return [dict(zip(keys, (*row[:9], json.loads(row[9]), row[10]), strict=True)) for row in rows]
