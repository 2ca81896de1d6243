"""Importing the facts agents saved (issue 16): each one re-checked against the imported messages.

A fact keeps the evidence its pointers prove in the importing memory, never more:

* ``stated`` — only if its quote passes the quote gate (:func:`~.remember.match_quote`) against the
  imported message it points at: a stored chat message typed by the human (role user, provenance
  human_input or interjection, by its re-derived fields), holding the quote verbatim, not a question;
* ``accepted`` — only if its pointers pass the extraction validator (:func:`~.extraction.validate.check`)
  over the messages of the source message's session generation;
* otherwise ``unknown``, without a quote (a quote would pass for the user's words).

A pointer that names no imported event is nulled; a fact whose scope, category, project, content or
times are not ones this memory writes is dropped. Every change is reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .extraction.validate import Message, check
from .import_checks import integer, number, text
from .import_report import ImportReport
from .redact import redact_text, redact_with
from .remember import MAX_CONTENT_CHARS, VALID_CELLS, RememberRejected, match_quote, normalise
from .store import extractions, imports
from .store.connection import Connection

TABLE = "memory_facts"
STATUSES = ("active", "superseded", "merged", "deleted")
POINTERS = ("source_message_id", "proposal_message_id", "accepting_message_id")
_COLUMNS = ("fact_id", "content", "quote", "scope", "category", "project", "evidence_type", "source_message_id",
            "accepting_message_id", "session_id", "status", "superseded_by", "created_at", "updated_at",
            "extraction_id", "generation", "proposal_message_id")


def message_of(conn: Connection, pointer: Any) -> dict[str, Any] | None:
    """The imported chat message a pointer names (its event id, or the source item id it was sent with)."""
    if text(pointer) is None:
        return None
    row = imports.imported_message(conn, pointer)
    if row is None:
        return None
    timeline = json.loads(row[6]).get("timeline", {})
    return {"rowid": row[0], "event_id": row[1], "at": row[2], "session_id": row[3], "text": row[4], "kind": row[5],
            "role": timeline.get("role", ""), "provenance": timeline.get("provenance"), "generation": row[7],
            "extracted": row[8] is not None}


def generation_messages(conn: Connection, session_id: str, generation: int | None) -> dict[str, Message]:
    rows = extractions.generation_messages(conn, session_id, generation)
    out = {}
    for rowid, event_id, at, kind, content, metadata, extraction_id in rows:
        timeline = json.loads(metadata).get("timeline", {})
        out[event_id] = Message(rowid, event_id, at, timeline.get("role", ""), timeline.get("provenance"), kind,
                                content, extraction_id is not None)
    return out


class FactLoader:
    def __init__(self, conn: Connection, report: ImportReport):
        self.conn, self.report = conn, report

    def _invalid(self, row: Mapping[str, Any]) -> str | None:
        """Why the row is dropped (a reason code), or None."""
        if integer(row.get("fact_id"), 1) is None:
            return "invalid_fact_id"
        if row.get("status") not in STATUSES:
            return "invalid_status"
        scope = row.get("scope")
        if scope not in VALID_CELLS:
            return "invalid_scope"
        if row.get("category") not in VALID_CELLS[scope]:
            return "invalid_category"
        if scope == "project" and text(row.get("project"), 200) is None:
            return "invalid_project"
        content = text(row.get("content"), MAX_CONTENT_CHARS * 2)
        if content is None or not normalise(content) or len(normalise(content)) > MAX_CONTENT_CHARS:
            return "invalid_content"
        if number(row.get("created_at")) is None or number(row.get("updated_at")) is None:
            return "invalid_created_at"
        return None

    def add(self, row: Mapping[str, Any]) -> None:
        problem = self._invalid(row)
        fact_id = row.get("fact_id")
        if problem is not None:
            self.report.drop(TABLE, problem, f"fact:{fact_id}" if integer(fact_id, 1) else None)
            return
        fact: dict[str, Any] = {c: row.get(c) for c in _COLUMNS}   # the row's columns, checked by _invalid
        example = f"fact:{fact_id}"

        def change(column: str, value: Any, reason: str) -> None:
            if fact[column] != value:
                fact[column] = value
                self.report.change(TABLE, column, reason, example)

        if fact["scope"] == "user":
            change("project", None, "a user fact belongs to no project")
        messages = {}
        for pointer in POINTERS:
            messages[pointer] = message_of(self.conn, fact[pointer])
            if fact[pointer] is not None and messages[pointer] is None:
                change(pointer, None, "names no imported chat message")
        source = messages["source_message_id"]
        evidence, reason = self._evidence(fact, messages)
        if evidence != fact["evidence_type"]:
            change("evidence_type", evidence, reason)
        if evidence != "stated":
            change("quote", None, "only a stated fact keeps a quote (it would pass for the user's words)")
        said = source["text"] if source else ""
        change("content", redact_with(normalise(fact["content"]), said) if source else redact_text(fact["content"]),
               "redacted as remember() stores it")
        if fact["quote"] is not None:
            change("quote", redact_with(normalise(fact["quote"]), said), "redacted as remember() stores it")
        if fact["session_id"] is not None and not imports.session_exists(self.conn, fact["session_id"]):
            change("session_id", None, "names no imported session")
        if fact["generation"] is not None and integer(fact["generation"]) is None:
            change("generation", None, "not a generation")
        if fact["extraction_id"] is not None and not (integer(fact["extraction_id"], 1)
                                                      and imports.extraction_exists(self.conn, fact["extraction_id"])):
            change("extraction_id", None, "names no imported extraction")
        if fact["superseded_by"] is not None and integer(fact["superseded_by"], 1) is None:
            change("superseded_by", None, "names no imported fact")
        imports.add_fact(self.conn, _COLUMNS, [fact[c] for c in _COLUMNS])
        self.report.took(TABLE)

    def _evidence(self, fact: dict[str, Any], messages: dict[str, dict | None]) -> tuple[str, str]:
        """The evidence type the fact's pointers prove here, and why it is not the stored one."""
        claimed = fact["evidence_type"]
        if claimed not in ("stated", "accepted"):
            return "unknown", "not an evidence type (stated, accepted, unknown)"
        if fact["status"] == "deleted":
            return "unknown", "deleted by the user: no words left to check"
        source = messages["source_message_id"]
        if source is None:
            return "unknown", "source_missing"
        if claimed == "stated":
            turn = [{"id": source["event_id"], "role": source["role"], "text": source["text"],
                     "provenance": source["provenance"]}]
            try:
                match_quote(fact["quote"] if isinstance(fact["quote"], str) else "", turn)
            except RememberRejected as exc:
                return "unknown", exc.reason
            return "stated", ""
        candidate = {"evidence": "accepted", "content": fact["content"], "project": fact["project"],
                     "category": fact["category"], "source_message_id": source["event_id"],
                     **{p: (messages[p] or {}).get("event_id")
                        for p in ("accepting_message_id", "proposal_message_id")}}
        reason = check(candidate, generation_messages(self.conn, source["session_id"], source["generation"]))
        return ("accepted", "") if reason is None else ("unknown", reason)

    def finish(self) -> None:
        """A fact that names a successor the import did not take points at nothing."""
        for fact_id in imports.facts_with_missing_successor(self.conn):
            self.report.change(TABLE, "superseded_by", "names no imported fact", f"fact:{fact_id}")
        imports.clear_missing_successors(self.conn)
