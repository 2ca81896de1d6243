"""Browsing what the memory holds, page by page: its stored events newest first (``Memory.list_events``) and
what happened in the last hours (``Memory.recent_activity``) — for the agents that manage a user's memory
(list before forgetting) and for "what did I do today?" asked as a listing rather than a question."""

from __future__ import annotations

import time
from typing import Any

from ..errors import InvalidInput
from ..store import Database
from ..store.activity_blocks import unfolded
from ..store.l1_reads import EventFilter, event_position, events_page, events_per_source

#: A page holds at most this many events.
PAGE_MAX = 200
#: recent_activity counts a source's events up to this many ("more than 1,000" past it), as the window listing.
COUNT_CAP = 1000
TEXT_CHARS = 600


def _number(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{name} must be UNIX seconds (a number)")
    return float(value)


def _event(row: tuple[Any, ...]) -> dict[str, Any]:
    (_, event_id, timestamp, content, source, source_item_id, session_id, author_type, evidence_class, who,
     tier) = row
    text = " ".join(str(content).split())
    event = {"id": event_id, "at": timestamp, "source": source, "author": who or author_type,
             "evidence_class": evidence_class, "text": text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 1] + "…",
             "source_item_id": source_item_id, "session_id": session_id, "cold": bool(tier == 1) or None}
    return {key: value for key, value in event.items() if value is not None}


class Browsing:
    def __init__(self, db: Database) -> None:
        self.db = db

    def list_events(self, *, source: str | None = None, start: float | None = None, end: float | None = None,
                    session_id: str | None = None, limit: int = 50, before: str | None = None,
                    members: bool = False) -> dict[str, Any]:
        """A page of the stored events (L1), newest first: of one ``source``, in [``start``, ``end``) (UNIX
        seconds), of one chat ``session_id``; ``before`` is the ``next_before`` of the previous page. Page
        visits, commands and plays folded into an hourly activity block are listed as their block, unless
        ``members``. Returns ``{"events": [{id, at, source, author, evidence_class, text, …}], "next_before"}``
        — ``next_before`` is None on the last page. Cold events are listed too (``cold: true``)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= PAGE_MAX:
            raise InvalidInput(f"limit must be a whole number from 1 to {PAGE_MAX}")
        start, end = _number(start, "start"), _number(end, "end")
        clauses: list[str] = ["1 = 1"]
        args: list[Any] = []
        for column, value in (("source", source), ("session_id", session_id)):
            if value is not None:
                if not isinstance(value, str) or not value:
                    raise InvalidInput(f"{column} must be a non-empty string")
                clauses.append(f"{column} = ?")
                args.append(value)
        if start is not None:
            clauses.append("timestamp >= ?")
            args.append(start)
        if end is not None:
            clauses.append("timestamp < ?")
            args.append(end)
        where = EventFilter(" AND ".join(clauses), args)
        if not members:
            where = unfolded(where, time.time())
        conn = self.db.reader()
        position = None
        if before is not None:
            position = event_position(conn, before) if isinstance(before, str) else None
            if position is None:
                raise InvalidInput(f"before: no stored event {before!r} (give the next_before of the last page)")
        rows = events_page(conn, where, limit + 1, position)
        events = [_event(row) for row in rows[:limit]]
        return {"events": events, "next_before": events[-1]["id"] if len(rows) > limit else None}

    def recent_activity(self, hours: float = 24, now: float | None = None, limit: int = 20) -> dict[str, Any]:
        """What the memory recorded in the ``hours`` before ``now``: events per source (counted up to
        :data:`COUNT_CAP`; a source with more says ``COUNT_CAP + 1``) and the latest ``limit`` events, activity
        blocks standing for their members. ``{"start", "end", "per_source", "events", "next_before"}``."""
        if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 < hours <= 24 * 366:
            raise InvalidInput("hours must be a number of hours from 0 to 8784 (a year)")
        end = time.time() if now is None else now
        start = end - hours * 3600
        where = unfolded(EventFilter("timestamp >= ? AND timestamp < ?", [start, end]), end)
        per_source = events_per_source(self.db.reader(), where, cap=COUNT_CAP)
        page = self.list_events(start=start, end=end, limit=limit)
        return {"start": start, "end": end, "per_source": dict(sorted(per_source.items(), key=lambda kv: -kv[1])),
                **page}
