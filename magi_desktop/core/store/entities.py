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
from .connection import Connection, placeholders
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
        # Read once per batch, after its own new names: nothing else writes the catalog inside this transaction.
        pattern = self._refresh(conn)
        rows: dict[tuple[int, int], tuple[str, float]] = {}
        for rowid, event in events:
            for name, kind in declared[rowid]:
                rows[(rowid, ids[(name_key(name), kind)])] = (kind, HINT_CONFIDENCE)
            for entity_id, kind, _ in self._matches(pattern, event.content):
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
        return self._matches(self._refresh(conn), text)

    def _matches(self, pattern: re.Pattern | None, text: str) -> list[tuple[int, str, str]]:
        if pattern is None:
            return []
        found: list[tuple[int, str, str]] = []
        for key in {name_key(m.group(0)) for m in pattern.finditer(text)}:
            found.extend((entity_id, kind, key) for entity_id, kind in self._ids_by_key.get(key, ()))
        return found

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
    marks = placeholders(len(event_ids))
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
        f"WHERE l.event_rowid IN ({placeholders(len(event_rowids))}) AND c.status = 'active' "
        "AND c.name_key NOT LIKE '@%' GROUP BY c.entity_id", list(event_rowids)).fetchall()


def entities_of_event_rowids(conn: Connection, event_rowids: Sequence[int]) -> set[int]:
    """Ids of the entities these events mention."""
    marks = placeholders(len(event_rowids)) or "NULL"
    return {row[0] for row in conn.execute(
        f"SELECT DISTINCT entity_id FROM l1_event_entities WHERE event_rowid IN ({marks})", list(event_rowids))}


def events_sharing_entities(conn: Connection, entity_ids: Sequence[int], visible: EventFilter,
                            limit: int) -> list[int]:
    """Rowids of the visible events mentioning these entities: those sharing the most first, then the most
    confidently linked, then newest."""
    marks = placeholders(len(entity_ids))
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
    marks = placeholders(len(event_rowids))
    return [r[0] for r in conn.execute(
        f"SELECT DISTINCT entity_id FROM l1_event_entities WHERE event_rowid IN ({marks}) AND confidence >= ?",
        [*event_rowids, min_confidence])]


def events_of_entities(conn: Connection, entity_ids: Sequence[int], visible: EventFilter, limit: int) -> list[int]:
    """Rowids of the visible events mentioning any of these entities, the most confidently linked first, then
    newest."""
    marks = placeholders(len(entity_ids))
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


def entity_names(conn: Connection, entity_ids: Sequence[int]) -> dict[int, str]:
    """entity id → its catalogue name, for the ids that exist."""
    if not entity_ids:
        return {}
    return dict(conn.execute(
        f"SELECT entity_id, name FROM entity_catalog WHERE entity_id IN ({placeholders(len(entity_ids))})",
        list(entity_ids)).fetchall())


# --------------------------------------------------------------------- what the agents' desk reads (services/agents)

def active_person_id(conn: Connection, name_key: str) -> int | None:
    """The id of the active person with this name key (the user: ``SELF_KEY``), if any."""
    row = conn.execute("SELECT entity_id FROM entity_catalog WHERE name_key = ? AND entity_type = 'person' "
                       "AND status = 'active'", (name_key,)).fetchone()
    return row[0] if row else None


# --- the L2 worker: resolution, projection, maintenance and reviews (core/l2) ---------------------------------

def entity_card(conn: Connection, entity_id: int) -> tuple[str, str, str] | None:
    """(name, entity_type, aliases_json) of an entity, whatever its status."""
    return conn.execute("SELECT name, entity_type, aliases_json FROM entity_catalog WHERE entity_id = ?",
                        (entity_id,)).fetchone()


def person_by_key(conn: Connection, name_key: str) -> tuple[int, str, str] | None:
    """(entity_id, name, entity_type) of the person with this name key, whatever its status."""
    return conn.execute("SELECT entity_id, name, entity_type FROM entity_catalog WHERE name_key = ? "
                        "AND entity_type = 'person'", (name_key,)).fetchone()


def entity_merge_row(conn: Connection, entity_id: int) -> tuple[int, str, str, str, int | None] | None:
    """(entity_id, name, entity_type, status, merged_into) of an entity."""
    return conn.execute("SELECT entity_id, name, entity_type, status, merged_into FROM entity_catalog "
                        "WHERE entity_id = ?", (entity_id,)).fetchone()


def active_entities_named(conn: Connection, key: str, alias_pattern: str) -> list[tuple[int, str, str, str]]:
    """(entity_id, name, entity_type, aliases_json) of the active entities whose name key is ``key`` or whose
    aliases are LIKE ``alias_pattern``, oldest first."""
    return conn.execute(
        "SELECT entity_id, name, entity_type, aliases_json FROM entity_catalog WHERE status = 'active' AND "
        "(name_key = ? OR aliases_json LIKE ?) ORDER BY entity_id", (key, alias_pattern)).fetchall()


def active_entities_overlapping(conn: Connection, key: str, min_chars: int,
                                limit: int) -> list[tuple[int, str, str, str]]:
    """(entity_id, name, entity_type, aliases_json) of the active entities whose name key (of ``min_chars`` or
    more) contains ``key`` or is contained in it, newest first."""
    return conn.execute(
        "SELECT entity_id, name, entity_type, aliases_json FROM entity_catalog WHERE status = 'active' "
        "AND length(name_key) >= ? AND (instr(name_key, ?) > 0 OR instr(?, name_key) > 0) "
        "ORDER BY entity_id DESC LIMIT ?", (min_chars, key, key, limit)).fetchall()


def active_entities_among(conn: Connection, entity_ids: Sequence[int]) -> list[tuple[int, str, str, str]]:
    """(entity_id, name, entity_type, aliases_json) of those of these entities that are active."""
    return conn.execute(
        "SELECT entity_id, name, entity_type, aliases_json FROM entity_catalog WHERE status = 'active' "
        f"AND entity_id IN ({placeholders(len(entity_ids))})", entity_ids).fetchall()


def active_entities_by_mentions(conn: Connection, search: str | None,
                                limit: int) -> list[tuple[int, str, str, str, int]]:
    """(entity_id, name, entity_type, aliases_json, events mentioning it) of the active entities whose name or
    aliases contain ``search`` (None: all), most mentioned first."""
    where, args = "WHERE c.status = 'active'", []
    if search:
        where += " AND instr(lower(c.name || ' ' || c.aliases_json), lower(?)) > 0"
        args.append(search)
    return conn.execute(
        "SELECT c.entity_id, c.name, c.entity_type, c.aliases_json, "
        "(SELECT count(*) FROM l1_event_entities l WHERE l.entity_id = c.entity_id) AS mentions "
        f"FROM entity_catalog c {where} ORDER BY mentions DESC, c.name LIMIT ?", [*args, limit]).fetchall()


def entity_status_by_key(conn: Connection, key: str, entity_type: str) -> tuple[int, str, int | None] | None:
    """(entity_id, status, merged_into) of the entity of this name key and type."""
    return conn.execute("SELECT entity_id, status, merged_into FROM entity_catalog WHERE name_key = ? AND "
                        "entity_type = ?", (key, entity_type)).fetchone()


def entity_status(conn: Connection, entity_id: int) -> tuple[int, str, int | None] | None:
    """(entity_id, status, merged_into) of an entity."""
    return conn.execute("SELECT entity_id, status, merged_into FROM entity_catalog WHERE entity_id = ?",
                        (entity_id,)).fetchone()


def add_entity(conn: Connection, name: str, key: str, entity_type: str, now: float) -> int:
    """The id of the entity of this name key and type, created (named ``name``) when there is none."""
    conn.execute("INSERT OR IGNORE INTO entity_catalog (name, name_key, entity_type, created_at, updated_at) "
                 "VALUES (?, ?, ?, ?, ?)", (name, key, entity_type, now, now))
    return conn.execute("SELECT entity_id FROM entity_catalog WHERE name_key = ? AND entity_type = ?",
                        (key, entity_type)).fetchone()[0]


def entity_aliases_json(conn: Connection, entity_id: int) -> str:
    """An entity's aliases, as stored (a JSON list)."""
    return conn.execute("SELECT aliases_json FROM entity_catalog WHERE entity_id = ?", (entity_id,)).fetchone()[0]


def set_aliases(conn: Connection, entity_id: int, aliases_json: str, now: float) -> None:
    conn.execute("UPDATE entity_catalog SET aliases_json = ?, updated_at = ? WHERE entity_id = ?",
                 (aliases_json, now, entity_id))


def link_event_entity(conn: Connection, event_rowid: int, entity_id: int, entity_type: str, confidence: float) -> None:
    """An event mentions an entity (with the higher of the confidences when it already did)."""
    conn.execute(
        "INSERT INTO l1_event_entities (event_rowid, entity_id, entity_type, confidence) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (event_rowid, entity_id) DO UPDATE SET confidence = max(confidence, excluded.confidence)",
        (event_rowid, entity_id, entity_type, confidence))


def split_entity_pairs(conn: Connection) -> list[tuple[int, str, int, str]]:
    """(older id, its type, newer id, its type) of the pairs of active entities sharing a name key."""
    return conn.execute("SELECT a.entity_id, a.entity_type, b.entity_id, b.entity_type FROM entity_catalog a "
                        "JOIN entity_catalog b ON a.name_key = b.name_key AND a.entity_id < b.entity_id "
                        "WHERE a.status = 'active' AND b.status = 'active'").fetchall()


def name_and_aliases(conn: Connection, entity_id: int) -> tuple[str, str]:
    """(name, aliases_json) of an entity."""
    return conn.execute("SELECT name, aliases_json FROM entity_catalog WHERE entity_id = ?", (entity_id,)).fetchone()


def names_of(conn: Connection, first: int, second: int) -> dict[int, str]:
    """The names of two entities, by id (an id that is gone is missing)."""
    return dict(conn.execute("SELECT entity_id, name FROM entity_catalog WHERE entity_id IN (?, ?)",
                             (first, second)).fetchall())


def statuses_of(conn: Connection, first: int, second: int) -> dict[int, str]:
    """The statuses of two entities, by id (an id that is gone is missing)."""
    return dict(conn.execute("SELECT entity_id, status FROM entity_catalog WHERE entity_id IN (?, ?)",
                             (first, second)).fetchall())


def merge_entity_rows(conn: Connection, keep: int, drop: int, now: float) -> None:
    """``drop`` is merged into ``keep``: its events and mentions move there."""
    conn.execute("UPDATE entity_catalog SET status = 'merged', merged_into = ?, updated_at = ? WHERE entity_id = ?",
                 (keep, now, drop))
    conn.execute("INSERT OR IGNORE INTO l1_event_entities (event_rowid, entity_id, entity_type, confidence) "
                 "SELECT event_rowid, ?, entity_type, confidence FROM l1_event_entities WHERE entity_id = ?",
                 (keep, drop))
    conn.execute("DELETE FROM l1_event_entities WHERE entity_id = ?", (drop,))
    conn.execute("UPDATE entity_mentions SET entity_id = ? WHERE entity_id = ?", (keep, drop))


def drop_orphan_entities(conn: Connection, self_key: str, among: Sequence[int] | None) -> int:
    """Delete the active entities nothing refers to any more (no event, edge, assertion or merged entity), but
    the one of ``self_key``; ``among``: only these. Returns how many."""
    only, args = "", list[str | int]([self_key])
    if among is not None:
        only = f"AND entity_id IN ({placeholders(len(among))}) "
        args += list(among)
    return conn.execute(
        "DELETE FROM entity_catalog WHERE status = 'active' AND name_key != ? " + only +
        "AND NOT EXISTS (SELECT 1 FROM l1_event_entities l WHERE l.entity_id = entity_catalog.entity_id) "
        "AND NOT EXISTS (SELECT 1 FROM kg_edges k WHERE k.subject_id = entity_catalog.entity_id "
        "                OR k.object_id = entity_catalog.entity_id) "
        "AND NOT EXISTS (SELECT 1 FROM tom_trait_assertions a WHERE a.entity_id = entity_catalog.entity_id) "
        "AND NOT EXISTS (SELECT 1 FROM entity_catalog m WHERE m.merged_into = entity_catalog.entity_id)",
        args).rowcount


def entity_name(conn: Connection, entity_id: int) -> str:
    return conn.execute("SELECT name FROM entity_catalog WHERE entity_id = ?", (entity_id,)).fetchone()[0]


def active_entity_of_type(conn: Connection, key: str, entity_type: str) -> tuple[int, str] | None:
    """(entity_id, name) of the active entity of this name key and type."""
    return conn.execute("SELECT entity_id, name FROM entity_catalog WHERE name_key = ? AND entity_type = ? "
                        "AND status = 'active'", (key, entity_type)).fetchone()


def active_aliases_and_name(conn: Connection, entity_id: int) -> tuple[str, str] | None:
    """(aliases_json, name) of an active entity."""
    return conn.execute("SELECT aliases_json, name FROM entity_catalog WHERE entity_id = ? AND status = 'active'",
                        (entity_id,)).fetchone()


def add_unbound_mention(conn: Connection, event_rowid: int, text: str, key: str, entity_type: str | None,
                        confidence: float, now: float) -> None:
    """A mention kept without an entity (no usable type, or too unsure), to be bound later."""
    conn.execute(
        "INSERT OR IGNORE INTO entity_mentions (event_rowid, mention_text, name_key, entity_type, "
        "confidence, created_at) VALUES (?, ?, ?, ?, ?, ?)", (event_rowid, text, key, entity_type, confidence, now))


def names_and_keys(conn: Connection, entity_ids: Sequence[int]) -> list[tuple[str, str]]:
    """(name, name_key) of these entities."""
    return conn.execute(
        f"SELECT name, name_key FROM entity_catalog WHERE entity_id IN ({placeholders(len(entity_ids))})",
        list(entity_ids)).fetchall()
