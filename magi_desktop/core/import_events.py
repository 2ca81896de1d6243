"""Importing L1 events (issue 16): every stored row goes through the write path again.

The export's ``fact_events`` and ``runtime_traces`` rows are read for what identifies them (ids,
dedupe key, record time) and for the payload fields they carry (source, times, the chat turn's role and
provenance, the activity, the tool run — see :func:`~.ingest.stored_payload`). Everything derived —
evidence class, scope, content type, author type, route, retention, the content itself — is made again
by :func:`~.ingest.rederive`, the function ingest uses, and the stored value is only compared with it
for the report. A row whose fields no longer make a valid payload is dropped; one whose fields now
route it to the other table (an audit-only event in ``fact_events``, an L1 one among the traces) is
stored where ingest would store it. The events are written by the write path's own
:func:`~.store.l1.insert_events` / :func:`~.store.l1.insert_traces` (under their imported rowids, so
the rows that name them stay right), linked to entities as at ingest, and every tool run is counted
into L4 again (:func:`~.l4.record`), in the order it was recorded.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import l4
from .aggregation.fold import fold, foldable, is_block
from .contracts import MAX_TIMESTAMP, MemoryEvent, PayloadError, tool_run_of, validate_payload
from .import_report import ImportReport
from .ingest import RUNTIME_TRACE, normalize, rederive
from .mentioned_times import index_mentioned_times
from .render import TemplateRegistry
from .speakers import settle as settle_speakers
from .store import imports
from .store.connection import Connection
from .store.l1 import insert_events, insert_traces

CHUNK = 500
MAX_KEY_CHARS = 600
# The derived columns of each table, compared with what the write path makes of the same fields.
EVENT_DERIVED = ("event_type", "memory_domain", "ingest_target", "cognition_eligible", "retention_class",
                 "author_type", "content_type", "evidence_class", "l1_retrieval_scope", "content", "metadata")
TRACE_DERIVED = ("event_type", "author_type", "evidence_class", "content", "tool", "category", "ok",
                 "duration_ms", "error", "metadata")

Link = Callable[[Connection, Sequence[tuple[int, MemoryEvent]]], Any]


class Failed(ValueError):
    """The export is inconsistent at this line and field (the import stops; nothing is written)."""

    def __init__(self, line: int, field: str, reason: str):
        super().__init__(reason)
        self.line, self.field, self.reason = line, field, reason


def _identity(row: Mapping[str, Any], id_column: str) -> str | None:
    """Why the row's identifying fields cannot be used (a reason code), or None."""
    ident = row.get(id_column)
    if not isinstance(ident, str) or not ident.strip() or len(ident) > 64 or "\x00" in ident:
        return f"invalid_{id_column}"
    key = row.get("idempotency_key")
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS or "\x00" in key:
        return "invalid_idempotency_key"
    at = row.get("ingested_at")
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at) or not 0 < at <= MAX_TIMESTAMP:
        return "invalid_ingested_at"
    if not isinstance(row.get("user_id"), str):
        return "invalid_user_id"
    return None


def _stored_value(row: Mapping[str, Any], column: str, metadata: Any) -> Any:
    return metadata if column == "metadata" else row.get(column)


def _derived_value(event: MemoryEvent, column: str) -> Any:
    if column == "metadata":
        return dict(event.metadata)
    if column == "cognition_eligible":
        return int(event.cognition_eligible)
    if column in ("tool", "category", "ok", "duration_ms", "error"):
        run = tool_run_of(event)
        value = getattr(run, column) if run else None
        return int(value) if column == "ok" and value is not None else value
    return getattr(event, column)


class EventLoader:
    """Streams the exported events into the write path, chunk by chunk, inside the import's transaction."""

    def __init__(self, conn: Connection, report: ImportReport, templates: TemplateRegistry, link: Link, *,
                 key_secret: bytes, user_id: str):
        self.conn, self.report, self.templates, self.link = conn, report, templates, link
        self.key_secret, self.user_id = key_secret, user_id
        self._events: list[tuple[int, int | None, MemoryEvent]] = []   # (line, rowid, event) for fact_events
        self._traces: list[tuple[int, MemoryEvent]] = []
        self._to_l1: list[tuple[int, MemoryEvent]] = []          # traces whose fields make them L1 events
        self._blocks = 0                                         # exported activity blocks, made again here
        self._foldable: list[tuple[int, MemoryEvent]] = []       # stored events an aggregation rule may fold

    # ------------------------------------------------------------ reading

    def add(self, table: str, line: int, row: Mapping[str, Any]) -> None:
        """One exported row of ``fact_events`` or ``runtime_traces``."""
        id_column = "event_id" if table == "fact_events" else "trace_id"
        ident = row.get(id_column)
        problem = _identity(row, id_column)
        rowid = row.get("id")
        if problem is None and table == "fact_events" and (type(rowid) is not int or rowid <= 0):
            problem = "invalid_id"
        try:
            metadata = json.loads(row["metadata_json"]) if isinstance(row.get("metadata_json"), str) else None
        except (ValueError, RecursionError):
            metadata = None
        if problem is None and not isinstance(metadata, dict):
            problem = "invalid_metadata_json"
        if problem is not None:
            self.report.drop(table, problem, ident if isinstance(ident, str) else f"line {line}")
            return
        try:
            event, target = rederive(dict(row, event_id=ident, metadata=metadata), self.templates,
                                     key_secret=self.key_secret, user_id=self.user_id)
        except PayloadError as exc:
            # The field only: the message may quote a (redacted, shortened) bit of the bad value.
            self.report.drop(table, f"unclassifiable: {exc.field}", ident)
            return
        except (TypeError, ValueError, OverflowError):
            self.report.drop(table, "unclassifiable", ident)
            return
        stays = (target == RUNTIME_TRACE) == (table == "runtime_traces")
        derived = EVENT_DERIVED if (table == "fact_events") == stays else TRACE_DERIVED
        for column in derived if stays else ():
            if _stored_value(row, column, metadata) != _derived_value(event, column):
                self.report.change(table, column, "re-derived from the stored payload fields", ident)
        if table == "fact_events" and stays and is_block(event):
            self._blocks += 1      # derived from its members: folded again from them once all are stored (finish)
        elif table == "fact_events" and stays:
            self._events.append((line, rowid, event))
        elif table == "fact_events":
            self.report.change(table, "(table)", "audit only by its fields: stored as a runtime trace", ident)
            self._traces.append((line, event))
        elif stays:
            self._traces.append((line, event))
        else:
            self.report.change(table, "(table)", "an L1 event by its fields: stored in fact_events", ident)
            self._to_l1.append((line, event))
        if len(self._events) >= CHUNK:
            self._flush_events()
        if len(self._traces) >= CHUNK:
            self._flush_traces()

    # ------------------------------------------------------------ writing

    def _refuse_reused_ids(self, table: str, items: Sequence[tuple[int, int | None, MemoryEvent]]) -> None:
        """An id already taken (by an earlier row of the file) is an inconsistent export: named, fatal."""
        id_column = "event_id" if table == "fact_events" else "trace_id"
        rowids = [r for _, r, _ in items]
        for column, values, field in ((id_column, [e.event_id for _, _, e in items], f"row.{id_column}"),
                                      ("id" if None not in rowids else None, rowids, "row.id")):
            if column is None:
                continue
            taken = imports.taken_values(self.conn, table, column, values)
            seen: set = set()
            for (line, _, _), value in zip(items, values, strict=True):
                if value in taken or value in seen:
                    raise Failed(line, field, f"UNIQUE constraint failed: {table}.{column} (the {column} of an "
                                              "earlier row)")
                seen.add(value)

    def _flush_events(self, items: list[tuple[int, int | None, MemoryEvent]] | None = None) -> None:
        items = self._events if items is None else items
        if not items:
            return
        self._refuse_reused_ids("fact_events", items)
        rowids = [r for _, r, _ in items if r is not None]
        stored = insert_events(self.conn, [e for _, _, e in items], rowids if len(rowids) == len(items) else None)
        fresh: list[tuple[int, MemoryEvent]] = []
        for (_, _, event), outcome in zip(items, stored, strict=True):
            if outcome.duplicate:
                self.report.drop("fact_events", "duplicate: the same source item as an earlier event", event.event_id)
            else:
                assert outcome.rowid is not None, "insert_events gives each new event its rowid"
                fresh.append((outcome.rowid, event))
        settle_speakers(self.conn, fresh, self.link)   # as at ingest: "Name: text" turns whose name recurs
        index_mentioned_times(self.conn, fresh)         # and the times they mention
        self.link(self.conn, fresh)
        self._foldable += [(rowid, event) for rowid, event in fresh if foldable(event)]
        self.report.took("fact_events", len(fresh))
        items.clear()

    def _flush_traces(self) -> None:
        if not self._traces:
            return
        items = [(line, None, event) for line, event in self._traces]
        self._refuse_reused_ids("runtime_traces", items)
        stored = insert_traces(self.conn, [e for _, _, e in items])
        for (_, _, event), outcome in zip(items, stored, strict=True):
            if outcome.duplicate:
                self.report.drop("runtime_traces", "duplicate: the same source item as an earlier trace",
                                 event.event_id)
                continue
            self.report.took("runtime_traces")
            run = tool_run_of(event)
            if run is not None:          # L4 learns from it again, as it did when it was recorded
                l4.record(self.conn, run, event.timestamp, imports.trace_rowid(self.conn, event.event_id))
        self._traces.clear()

    def finish(self) -> None:
        """Write what is left; traces that are L1 events by their fields come last (new rowids)."""
        self._flush_events()
        self._flush_traces()
        self._flush_events([(line, None, event) for line, event in self._to_l1])
        # After every imported row has its id: a block takes the next free one.
        blocks = fold(self.conn, self._foldable, self._normalize, time.time())
        self.link(self.conn, blocks)
        if self._blocks or blocks:
            self.report.rebuilt["activity_blocks"] = (f"{self._blocks} exported, {len(blocks)} folded again from "
                                                      "the imported events")
        imports.count_sources(self.conn)

    def _normalize(self, raw: Mapping[str, Any], now: float) -> tuple[MemoryEvent, str]:
        return normalize(validate_payload(raw), self.templates, user_id=self.user_id, key_secret=self.key_secret,
                         now=now)
