"""The queries of activity blocks (migration 0026, :mod:`..aggregation`): block descriptors, their members,
the user's settings, and the clause that keeps a folded member out of window lists.

Plain functions over a connection; writes run inside the caller's write transaction.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from .connection import Connection, placeholders
from .l1 import EventFilter

_CHUNK = 500


class Block(NamedTuple):
    id: int
    source: str
    natural_key: str
    rule: str
    source_code: str
    topic: str
    hour: float


class StoredMember(NamedTuple):
    event_id: str
    occurred_at: float
    recorded_at: float
    provenance_json: str | None


_BLOCK_COLUMNS = "id, source, natural_key, rule, source_code, topic, hour"


def block_ids(conn: Connection, blocks: Iterable[tuple[str, str, str, str, str, float]]) -> dict[tuple[str, str], int]:
    """The id of each (source, natural_key, rule, source_code, topic, hour) block, made where missing."""
    blocks = list(blocks)
    conn.executemany("INSERT OR IGNORE INTO activity_blocks (source, natural_key, rule, source_code, topic, hour) "
                     "VALUES (?, ?, ?, ?, ?, ?)", blocks)
    ids: dict[tuple[str, str], int] = {}
    by_source: dict[str, list[str]] = {}
    for source, key, *_ in blocks:
        by_source.setdefault(source, []).append(key)
    for source, keys in by_source.items():
        for first in range(0, len(keys), _CHUNK):
            chunk = keys[first:first + _CHUNK]
            for block_id, key in conn.execute(
                    f"SELECT id, natural_key FROM activity_blocks WHERE source = ? AND natural_key IN "
                    f"({placeholders(len(chunk))})", [source, *chunk]):
                ids[(source, key)] = block_id
    return ids


def add_members(conn: Connection, members: Sequence[tuple[int, int]]) -> None:
    """File new members (block id, member rowid) under their blocks; a member already filed stays where it is."""
    conn.executemany("INSERT OR IGNORE INTO activity_block_members (member_rowid, block_id) VALUES (?, ?)",
                     [(rowid, block_id) for block_id, rowid in members])


def blocks_by_id(conn: Connection, ids: Sequence[int]) -> list[Block]:
    found: list[Block] = []
    for first in range(0, len(ids), _CHUNK):
        chunk = list(ids[first:first + _CHUNK])
        found += [Block(*row) for row in conn.execute(
            f"SELECT {_BLOCK_COLUMNS} FROM activity_blocks WHERE id IN ({placeholders(len(chunk))}) ORDER BY id",
            chunk)]
    return found


def members_of(conn: Connection, block_ids: Sequence[int]) -> dict[int, list[StoredMember]]:
    """The stored members of these blocks (by block id), soonest first, with their provenance as stored now; a
    block with none is absent."""
    found: dict[int, list[StoredMember]] = {}
    for first in range(0, len(block_ids), _CHUNK):
        chunk = list(block_ids[first:first + _CHUNK])
        for block_id, *member in conn.execute(
                "SELECT m.block_id, e.event_id, e.timestamp, coalesce(e.recorded_at, e.timestamp), "
                "json_extract(e.metadata_json, '$.timeline.provenance') FROM activity_block_members m "
                f"JOIN fact_events e ON e.id = m.member_rowid WHERE m.block_id IN ({placeholders(len(chunk))}) "
                "ORDER BY e.timestamp, e.event_id", chunk):
            found.setdefault(block_id, []).append(StoredMember(*member))
    return found


def drop_blocks(conn: Connection, ids: Sequence[int]) -> None:
    """Remove block descriptors (their member rows go by cascade; the members' events stay)."""
    conn.executemany("DELETE FROM activity_blocks WHERE id = ?", [(i,) for i in ids])


# ------------------------------------------------------------------ what forget reads

def blocks_touching(conn: Connection, rowids: Sequence[int], *, members: bool = True) -> list[int]:
    """The blocks whose live versions these events are, and (``members``) those they are members of, by id."""
    found: set[int] = set()
    for first in range(0, len(rowids), _CHUNK):
        chunk = list(rowids[first:first + _CHUNK])
        marks = placeholders(len(chunk))
        found.update(r[0] for r in conn.execute(
            "SELECT k.id FROM activity_blocks k JOIN fact_events e ON e.source = k.source AND "
            f"e.natural_key = k.natural_key WHERE e.id IN ({marks})", chunk))
        if members:
            found.update(r[0] for r in conn.execute(
                f"SELECT block_id FROM activity_block_members WHERE member_rowid IN ({marks})", chunk))
    return sorted(found)


def live_rowids_of_blocks(conn: Connection, block_ids: Sequence[int]) -> list[int]:
    """The fact_events rows of these blocks' live versions."""
    found: list[int] = []
    for first in range(0, len(block_ids), _CHUNK):
        chunk = list(block_ids[first:first + _CHUNK])
        found += [r[0] for r in conn.execute(
            "SELECT e.id FROM activity_blocks k JOIN fact_events e ON e.source = k.source AND "
            f"e.natural_key = k.natural_key WHERE k.id IN ({placeholders(len(chunk))})", chunk)]
    return found


def live_block_count(conn: Connection) -> int:
    """How many activity blocks have a live version in fact_events."""
    return conn.execute("SELECT count(*) FROM activity_blocks k JOIN fact_events e ON e.source = k.source AND "
                        "e.natural_key = k.natural_key").fetchone()[0]


def member_rowids_of_blocks(conn: Connection, block_ids: Sequence[int]) -> list[int]:
    found: list[int] = []
    for first in range(0, len(block_ids), _CHUNK):
        chunk = list(block_ids[first:first + _CHUNK])
        found += [r[0] for r in conn.execute(
            f"SELECT member_rowid FROM activity_block_members WHERE block_id IN ({placeholders(len(chunk))})",
            chunk)]
    return found


def mark_stale(conn: Connection, block_ids: Sequence[int]) -> None:
    """These blocks lose their live version to a forget: to be rendered again (:func:`stale_blocks`)."""
    conn.executemany("UPDATE activity_blocks SET stale = 1 WHERE id = ?", [(i,) for i in block_ids])


def stale_blocks(conn: Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM activity_blocks WHERE stale = 1 ORDER BY id")]


def mark_fresh(conn: Connection, block_ids: Sequence[int]) -> None:
    conn.executemany("UPDATE activity_blocks SET stale = 0 WHERE id = ? AND stale = 1", [(i,) for i in block_ids])


# ------------------------------------------------------------------ what window lists and summaries read

def unfolded(where: EventFilter, now: float) -> EventFilter:
    """``where`` without the events a block visible by ``now`` stands for (``fact_events`` unaliased), so a
    listing counts the block and not its members again. A member whose block is not stored (yet) is itself."""
    return EventFilter(
        where.clause + " AND NOT EXISTS (SELECT 1 FROM activity_block_members m JOIN activity_blocks k ON "
        "k.id = m.block_id JOIN fact_events b ON b.source = k.source AND b.natural_key = k.natural_key "
        "WHERE m.member_rowid = fact_events.id AND b.recorded_at <= ?)", [*where.args, now])


def folded_members_between(conn: Connection, start: float, end: float) -> set[int]:
    """Rowids of the members in [start, end) whose block is stored (L3 counts the block instead)."""
    return {r[0] for r in conn.execute(
        "SELECT m.member_rowid FROM activity_block_members m JOIN activity_blocks k ON k.id = m.block_id "
        "JOIN fact_events e ON e.id = m.member_rowid "
        "WHERE e.timestamp >= ? AND e.timestamp < ? AND EXISTS (SELECT 1 FROM fact_events b WHERE "
        "b.source = k.source AND b.natural_key = k.natural_key)", (start, end))}


def blocks_per_source_around(conn: Connection, split: float, start: float, end: float) -> dict[str, tuple[int, int]]:
    """(blocks in [split, end), blocks in [start, split)) of every source with a stored block in [start, end)."""
    return {source: (recent, earlier) for source, recent, earlier in conn.execute(
        "SELECT e.source, sum(e.timestamp >= ?), sum(e.timestamp < ?) FROM activity_blocks k JOIN fact_events e "
        "ON e.source = k.source AND e.natural_key = k.natural_key WHERE e.timestamp >= ? AND e.timestamp < ? "
        "GROUP BY e.source", (split, split, start, end))}


def folded_member_count(conn: Connection) -> int:
    """How many stored events a stored block stands for."""
    return conn.execute(
        "SELECT count(*) FROM activity_block_members m JOIN activity_blocks k ON k.id = m.block_id WHERE EXISTS "
        "(SELECT 1 FROM fact_events b WHERE b.source = k.source AND b.natural_key = k.natural_key)").fetchone()[0]


# ------------------------------------------------------------------ settings

def stored_settings(conn: Connection) -> dict[str, bool]:
    return {rule: bool(enabled) for rule, enabled in conn.execute("SELECT rule, enabled FROM aggregation_settings")}


def save_setting(conn: Connection, rule: str, enabled: bool, now: float | None = None) -> None:
    conn.execute("INSERT INTO aggregation_settings (rule, enabled, updated_at) VALUES (?, ?, ?) ON CONFLICT (rule) "
                 "DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at",
                 (rule, int(enabled), time.time() if now is None else now))
