"""Importing the small state beside the events (issue 16), each value checked and every reference resolved
against what was imported: the dedupe secret, session generations, which messages an extraction already
consumed (and the extractions' records), and the forget receipts. A reference that names no imported row
is nulled or its row dropped, and reported.

Why the "extracted" marks are imported rather than rebuilt: extracting a conversation again would bring
back facts the user deleted or replaced (their text is gone, so nothing could tell them apart), which the
memory promises never to do. A mark can only keep a message from being read again; it raises nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .extraction.task import EPISODE_MAX_CHARS
from .import_checks import integer, json_of, number, text
from .import_report import ImportReport
from .store import imports, periodic_jobs, tiers
from .store.connection import Connection

_SECRET = re.compile(r"^[0-9a-f]{64}$")
MAX_GENERATION = 10**9
# Kept by this memory itself: the redaction rules version is the current one (every imported event is
# redacted again by the write path as it is re-derived); the scrub's bookkeeping is about this file; every
# imported event starts hot and the tiering runs again from the start.
REBUILT_META = frozenset({"redaction_rules", "fts_merged_at", "free_space_unscrubbed", "events_deleted",
                          tiers.SCANNED_TO_KEY, tiers.LAST_RUN_KEY, periodic_jobs.L3_SEEN_KEY})


def _days(value: Any) -> float | None:
    try:
        days = float(value)
    except (TypeError, ValueError):
        return None
    return days if 0 <= days < 100_000 else None


class StateLoader:
    def __init__(self, conn: Connection, report: ImportReport):
        self.conn, self.report = conn, report

    def meta(self, row: Mapping[str, Any]) -> None:
        if row.get("key") in REBUILT_META:
            return
        if row.get("key") == tiers.COLD_AFTER_KEY:       # the user's setting
            days = _days(row.get("value"))
            if days is None:
                return self.report.drop("memory_meta", "invalid_value", tiers.COLD_AFTER_KEY)
            tiers.set_cold_after_days(self.conn, days)
            return self.report.took("memory_meta")
        if row.get("key") != "idempotency_secret":
            return self.report.drop("memory_meta", "not a key this memory keeps", text(row.get("key"), 64))
        if not isinstance(row.get("value"), str) or not _SECRET.match(row["value"]):
            return self.report.drop("memory_meta", "invalid_value", "idempotency_secret")
        # The exporting memory's secret, so the dedupe keys hashed with it still match a replay.
        imports.keep_idempotency_secret(self.conn, row["value"])
        self.report.took("memory_meta")

    def session(self, row: Mapping[str, Any]) -> None:
        """A session's generation (how often it was ended); the rest of the row the events make again."""
        session_id, generation = text(row.get("session_id")), integer(row.get("generation"), 0, MAX_GENERATION)
        if session_id is None or generation is None:
            return self.report.drop("chat_sessions", "invalid_generation", session_id)
        if not imports.set_session_generation(self.conn, session_id, generation):
            return self.report.drop("chat_sessions", "names no imported chat message", session_id)
        self.report.took("chat_sessions")

    def extraction(self, row: Mapping[str, Any]) -> None:
        ident = integer(row.get("extraction_id"), 1)
        example = f"extraction:{ident}" if ident else None
        values = [ident, text(row.get("session_id")), integer(row.get("generation"), 0, MAX_GENERATION),
                  text(row.get("extractor"), 64), integer(row.get("segments")), integer(row.get("message_count")),
                  number(row.get("first_at")), number(row.get("last_at")), text(row.get("episode"), 10**6, empty=True),
                  number(row.get("created_at"))]
        if any(v is None for v in values):
            return self.report.drop("fact_extractions", "invalid_extraction", example)
        if not imports.session_exists(self.conn, values[1]):
            return self.report.drop("fact_extractions", "names no imported session", example)
        episode = values[8]
        if isinstance(episode, str) and len(episode) > EPISODE_MAX_CHARS:   # a str: text() checked it
            values[8] = episode[:EPISODE_MAX_CHARS]
            self.report.change("fact_extractions", "episode", "longer than an extraction writes", example)
        report = row.get("report_json")
        if json_of(report, dict) is None:
            report = "{}"
            self.report.change("fact_extractions", "report_json", "not a JSON object", example)
        imports.add_extraction(self.conn, [*values, report])
        self.report.took("fact_extractions")

    def message_mark(self, row: Mapping[str, Any]) -> None:
        """A chat message's generation and whether an extraction consumed it (never a claim: a lease of a
        process of the exporting memory)."""
        rowid = integer(row.get("event_rowid"), 1)
        found = imports.message_session(self.conn, rowid)
        if found is None:
            return self.report.drop("chat_extraction", "names no imported chat message", rowid)
        session_id, latest = found
        generation = integer(row.get("generation"), 0, MAX_GENERATION)
        if generation is None or generation > latest:
            self.report.change("chat_extraction", "generation", "not a generation its session had", rowid)
            generation = latest
        extraction = row.get("extraction_id")
        if extraction is not None and not imports.extraction_of_session_exists(self.conn, integer(extraction, 1),
                                                                              session_id):
            self.report.change("chat_extraction", "extraction_id", "names no imported extraction of its session",
                               rowid)
            extraction = None
        imports.mark_message(self.conn, rowid, generation, extraction)
        self.report.took("chat_extraction")

    def receipt(self, row: Mapping[str, Any]) -> None:
        """What the user had forgotten: ids and counts, no content (the events are gone by design)."""
        ident = integer(row.get("receipt_id"), 1)
        events = json_of(row.get("event_ids_json"), list)
        if ident is None or number(row.get("created_at")) is None or json_of(row.get("criteria_json"), dict) is None \
                or json_of(row.get("counts_json"), dict) is None or events is None \
                or not all(isinstance(e, str) for e in events):
            return self.report.drop("forget_receipts", "invalid_receipt", f"receipt:{ident}" if ident else None)
        state = row.get("state", "done")
        if state == "deleting":         # its rows are in the export: the user must ask again, here
            return self.report.drop("forget_receipts", "forget_unfinished_when_exported", f"receipt:{ident}")
        # A receipt from before keyed criteria names what it forgot: this memory keys it (rekey_legacy).
        # A keyed one stays keyed with the exporting memory's secret, which is never exported.
        keyed = 1 if row.get("criteria_keyed") in (1, True) else 0
        imports.add_forget_receipt(self.conn, (ident, row["created_at"], row["criteria_json"], row["event_ids_json"],
                                               row["counts_json"], number(row.get("deleted_at")),
                                               number(row.get("scrubbed_at")), number(row.get("data_since")), keyed))
        self.report.took("forget_receipts")
