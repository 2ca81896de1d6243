"""The entity catalog and the event -> entity inverted index (``l1_event_entities``).

At ingest an event is linked to the entities it names: the plugin's entity
hints and the chat speaker (confidence 1.0), and any name already in the
catalog that appears in its text (0.6). That is deliberately cheap — exact
names, no resolution; the L2 worker resolves, merges and adds more later.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ..contracts import MemoryEvent
from .connection import Connection
from .l1 import EventFilter

HINT_CONFIDENCE = 1.0
LOOKUP_CONFIDENCE = 0.6
MIN_LOOKUP_NAME_CHARS = 3     # "Al" or "AI" in a sentence is too often not the entity
MAX_LOOKUP_NAMES = 20_000     # beyond this the alternation regex costs more than it finds
_ASCII_NAME = re.compile(r"^[\x00-\x7f]+$")


# readers the tests and layers share

class Entity(NamedTuple):
    """One row of ``entity_catalog``."""

    entity_id: int
    name: str
    name_key: str
    entity_type: str
    status: str
    aliases_json: str


def catalog(conn: Connection, *, name: str | None = None, name_key: str | None = None,
            entity_id: int | None = None) -> list[Entity]:
    """The entities of the catalog, whatever their status, by id; only those with this name, name key or id when
    one is given."""
    where = [(column, value) for column, value in (("name", name), ("name_key", name_key), ("entity_id", entity_id))
             if value is not None]
    sql = "SELECT entity_id, name, name_key, entity_type, status, aliases_json FROM entity_catalog"
    if where:
        sql += " WHERE " + " AND ".join(f"{column} = ?" for column, _ in where)
    return [Entity(*row) for row in conn.execute(sql + " ORDER BY entity_id", [value for _, value in where])]


def entity_links(conn: Connection) -> list[tuple[str | None, str, float]]:
    """(source_item_id, entity name, confidence) of every event→entity link, by source item."""
    return conn.execute(
        "SELECT e.source_item_id, c.name, l.confidence FROM l1_event_entities l JOIN entity_catalog c "
        "ON c.entity_id = l.entity_id JOIN fact_events e ON e.id = l.event_rowid ORDER BY 1").fetchall()


def linked_events(conn: Connection, entity_id: int) -> dict[int, float]:
    """Event rowid → confidence of every event linked to one entity."""
    return dict(conn.execute("SELECT event_rowid, confidence FROM l1_event_entities WHERE entity_id = ?",
                             (entity_id,)).fetchall())


def mention_texts(conn: Connection) -> list[str]:
    """The text of every mention too uncertain to bind to an entity yet, in the order they were written."""
    return [r[0] for r in conn.execute("SELECT mention_text FROM entity_mentions ORDER BY mention_id")]


def name_key(name: str) -> str:
    return " ".join(name.casefold().split())


def event_hints(event: MemoryEvent) -> list[tuple[str, str]]:
    """(name, entity_type) the event itself declares: plugin hints and the chat speaker."""
    hints = [(h["mention_text"], h["entity_type"]) for h in event.metadata.get("structured_entity_hints", ())]
    speaker = event.metadata.get("timeline", {}).get("speaker")
    if speaker:
        hints.append((speaker, "person"))
    return [(name, kind) for name, kind in hints if name_key(name)]


class EntityLinker:
    """Links new events to entities; caches the name-lookup regex between batches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known_max_id = -1
        self._pattern: re.Pattern | None = None
        self._ids_by_key: dict[str, list[tuple[int, str]]] = {}
        self._id_cache: dict[tuple[str, str], int] = {}

    def link(self, conn: Connection, events: Sequence[tuple[int, MemoryEvent]], now: float | None = None) -> int:
        """Write l1_event_entities rows for (event rowid, event) pairs; return how many."""
        now = time.time() if now is None else now
        declared = {rowid: event_hints(event) for rowid, event in events}
        ids = self._ensure_entities(conn, {(name_key(n), t, n) for hints in declared.values() for n, t in hints}, now)
        rows: dict[tuple[int, int], tuple[str, float]] = {}
        for rowid, event in events:
            for name, kind in declared[rowid]:
                rows[(rowid, ids[(name_key(name), kind)])] = (kind, HINT_CONFIDENCE)
            for entity_id, kind in self._lookup(conn, event.content):
                rows.setdefault((rowid, entity_id), (kind, LOOKUP_CONFIDENCE))
        conn.executemany(
            "INSERT OR IGNORE INTO l1_event_entities (event_rowid, entity_id, entity_type, confidence) "
            "VALUES (?, ?, ?, ?)",
            [(rowid, entity_id, kind, confidence) for (rowid, entity_id), (kind, confidence) in rows.items()],
        )
        return len(rows)

    def reset(self) -> None:
        """Forget cached ids: after a rolled-back transaction (or a deletion) they may not exist."""
        with self._lock:
            self._id_cache.clear()
            self._known_max_id = -1

    def _ensure_entities(self, conn: Connection, wanted: Iterable[tuple[str, str, str]], now: float) -> dict:
        """Ids of (name key, type) pairs, creating missing entities. Cached: ids never change."""
        missing = [(key, kind, name) for key, kind, name in wanted if (key, kind) not in self._id_cache]
        if missing:
            conn.executemany(
                "INSERT OR IGNORE INTO entity_catalog (name, name_key, entity_type, created_at) VALUES (?, ?, ?, ?)",
                [(name, key, kind, now) for key, kind, name in missing],
            )
            for key, kind, _ in missing:
                row = conn.execute("SELECT entity_id, status, merged_into FROM entity_catalog WHERE name_key = ? "
                                   "AND entity_type = ?", (key, kind)).fetchone()
                # A name merged into another entity links to the one that absorbed it.
                self._id_cache[(key, kind)] = row[2] if row[1] == "merged" and row[2] is not None else row[0]
        return self._id_cache

    def find(self, conn: Connection, text: str) -> list[tuple[int, str, str]]:
        """(entity_id, entity_type, name key) of every catalog name that appears in ``text``."""
        pattern = self._refresh(conn)
        if pattern is None:
            return []
        found: list[tuple[int, str, str]] = []
        for key in {name_key(m.group(0)) for m in pattern.finditer(text)}:
            found.extend((entity_id, kind, key) for entity_id, kind in self._ids_by_key.get(key, ()))
        return found

    def _lookup(self, conn: Connection, text: str) -> list[tuple[int, str]]:
        return [(entity_id, kind) for entity_id, kind, _ in self.find(conn, text)]

    def _refresh(self, conn: Connection) -> re.Pattern | None:
        newest = conn.execute("SELECT coalesce(max(entity_id), 0) FROM entity_catalog").fetchone()[0]
        with self._lock:
            if newest != self._known_max_id:
                self._known_max_id = newest
                self._rebuild(conn)
            return self._pattern

    def _rebuild(self, conn: Connection) -> None:
        by_key: dict[str, list[tuple[int, str]]] = {}
        for entity_id, key, kind in conn.execute(
                "SELECT entity_id, name_key, entity_type FROM entity_catalog WHERE status = 'active' "
                "AND length(name_key) >= ? ORDER BY entity_id LIMIT ?", (MIN_LOOKUP_NAME_CHARS, MAX_LOOKUP_NAMES)):
            by_key.setdefault(key, []).append((entity_id, kind))
        self._ids_by_key = by_key
        if not by_key:
            self._pattern = None
            return
        names = sorted(by_key, key=len, reverse=True)
        ascii_names = [re.escape(n).replace(r"\ ", r"\s+") for n in names if _ASCII_NAME.match(n)]
        other_names = [re.escape(n) for n in names if not _ASCII_NAME.match(n)]
        parts = []
        if ascii_names:
            parts.append(r"(?<![\w])(?:" + "|".join(ascii_names) + r")(?![\w])")
        if other_names:
            parts.append("|".join(other_names))
        self._pattern = re.compile("|".join(parts), re.IGNORECASE)


def mentioned_by(conn: Connection, entity_id: int, now: float) -> bool:
    """Whether an event recorded by ``now`` mentions the entity (a name first heard later is unknown yet)."""
    return conn.execute(
        "SELECT 1 FROM l1_event_entities l JOIN fact_events e ON e.id = l.event_rowid "
        "WHERE l.entity_id = ? AND e.recorded_at <= ? LIMIT 1", (entity_id, now)).fetchone() is not None


def entities_of_events(conn: Connection, event_ids: Sequence[str]) -> list[tuple[int, str, str, int]]:
    """The ten entities these events mention most: (entity_id, name, entity_type, how many of the events)."""
    marks = ", ".join("?" * len(event_ids))
    return conn.execute(
        "SELECT c.entity_id, c.name, c.entity_type, count(*) FROM l1_event_entities l "
        "JOIN entity_catalog c ON c.entity_id = l.entity_id JOIN fact_events e ON e.id = l.event_rowid "
        f"WHERE e.event_id IN ({marks}) GROUP BY c.entity_id ORDER BY count(*) DESC LIMIT 10",
        list(event_ids)).fetchall()


def busiest_entities_between(conn: Connection, start: float, end: float, min_events: int,
                             limit: int) -> list[tuple[int, str, int]]:
    """(entity_id, name, events) of the active, named (not ``@handle``) entities mentioned by at least
    ``min_events`` events in [start, end), most mentioned first."""
    return conn.execute(
        "SELECT c.entity_id, c.name, count(*) AS n FROM l1_event_entities l JOIN entity_catalog c "
        "ON c.entity_id = l.entity_id JOIN fact_events e ON e.id = l.event_rowid WHERE e.timestamp >= ? "
        "AND e.timestamp < ? AND c.status = 'active' AND c.name_key NOT LIKE '@%' GROUP BY c.entity_id "
        "HAVING n >= ? ORDER BY n DESC LIMIT ?", (start, end, min_events, limit)).fetchall()


def events_mentioning_between(conn: Connection, entity_id: int, start: float,
                              end: float) -> list[tuple[int, float, str, str]]:
    """(id, timestamp, source, content) of the events in [start, end) that mention an entity, in time order."""
    return conn.execute(
        "SELECT e.id, e.timestamp, e.source, e.content FROM l1_event_entities l JOIN fact_events e "
        "ON e.id = l.event_rowid WHERE l.entity_id = ? AND e.timestamp >= ? AND e.timestamp < ? "
        "ORDER BY e.timestamp, e.id", (entity_id, start, end)).fetchall()


def active_entity_mentions(conn: Connection, event_rowids: Sequence[int]) -> list[tuple[str, int]]:
    """(name, how many of these events mention it) of the active, named (not ``@handle``) entities they mention;
    the caller keeps ``event_rowids`` within SQLite's parameter limit."""
    return conn.execute(
        "SELECT c.name, count(*) FROM l1_event_entities l JOIN entity_catalog c ON c.entity_id = l.entity_id "
        f"WHERE l.event_rowid IN ({', '.join('?' * len(event_rowids))}) AND c.status = 'active' "
        "AND c.name_key NOT LIKE '@%' GROUP BY c.entity_id", list(event_rowids)).fetchall()


def entities_of_event_rowids(conn: Connection, event_rowids: Sequence[int]) -> set[int]:
    """Ids of the entities these events mention."""
    marks = ", ".join("?" * len(event_rowids)) or "NULL"
    return {row[0] for row in conn.execute(
        f"SELECT DISTINCT entity_id FROM l1_event_entities WHERE event_rowid IN ({marks})", list(event_rowids))}


def events_sharing_entities(conn: Connection, entity_ids: Sequence[int], visible: EventFilter,
                            limit: int) -> list[int]:
    """Rowids of the visible events mentioning these entities: those sharing the most first, then the most
    confidently linked, then newest."""
    marks = ", ".join("?" * len(entity_ids))
    return [row[0] for row in conn.execute(
        f"SELECT l.event_rowid, count(*) AS shared, max(l.confidence) AS confidence FROM l1_event_entities l "
        f"JOIN fact_events e ON e.id = l.event_rowid WHERE l.entity_id IN ({marks}) AND {visible.clause} "
        "GROUP BY l.event_rowid ORDER BY shared DESC, confidence DESC, e.timestamp DESC LIMIT ?",
        [*entity_ids, *visible.args, limit])]


def events_mentioning_capped(conn: Connection, entity_id: int, now: float, cap: int) -> int:
    """How many events recorded by ``now`` mention an entity, counted up to ``cap``."""
    return conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM l1_event_entities l JOIN fact_events e ON e.id = l.event_rowid "
        "WHERE l.entity_id = ? AND e.recorded_at <= ? LIMIT ?)", (entity_id, now, cap)).fetchone()[0]


def confident_entities_of_event_rowids(conn: Connection, event_rowids: Sequence[int],
                                       min_confidence: float) -> list[int]:
    """Ids of the entities these events mention with at least ``min_confidence``."""
    marks = ", ".join("?" * len(event_rowids))
    return [r[0] for r in conn.execute(
        f"SELECT DISTINCT entity_id FROM l1_event_entities WHERE event_rowid IN ({marks}) AND confidence >= ?",
        [*event_rowids, min_confidence])]


def events_of_entities(conn: Connection, entity_ids: Sequence[int], visible: EventFilter, limit: int) -> list[int]:
    """Rowids of the visible events mentioning any of these entities, the most confidently linked first, then
    newest."""
    marks = ", ".join("?" * len(entity_ids))
    return [r[0] for r in conn.execute(
        f"SELECT l.event_rowid FROM l1_event_entities l JOIN fact_events e ON e.id = l.event_rowid "
        f"WHERE l.entity_id IN ({marks}) AND {visible.clause} GROUP BY l.event_rowid "
        "ORDER BY max(l.confidence) DESC, e.timestamp DESC LIMIT ?", [*entity_ids, *visible.args, limit]).fetchall()]


def active_entity(conn: Connection, name_key: str) -> tuple[int, str | None] | None:
    """(entity_id, aliases_json) of the active entity with this name key, if any."""
    return conn.execute("SELECT entity_id, aliases_json FROM entity_catalog WHERE name_key = ? AND status = 'active'",
                        (name_key,)).fetchone()


def active_entity_id(conn: Connection, name_key: str) -> int | None:
    """The id of the active entity with this name key, if any."""
    row = conn.execute("SELECT entity_id FROM entity_catalog WHERE name_key = ? AND status = 'active'",
                       (name_key,)).fetchone()
    return row[0] if row else None
