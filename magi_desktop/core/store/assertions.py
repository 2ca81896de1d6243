"""Theory-of-mind trait assertions (``tom_trait_assertions``) and snapshots (``tom_snapshots``): the reads recall
makes. The L2 worker's writes
are still in ``core/l2`` (issue 18, item 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .connection import Connection

# readers the tests and layers share

class NamedAssertion(NamedTuple):
    """A trait assertion with its entity's name, and the assertions it replaced and was replaced by."""

    entity: str
    trait: str
    value: str
    status: str
    confidence: float
    assertion_id: int
    replaces: int | None
    superseded_by: int | None


def named_assertions(conn: Connection, trait: str | None = None) -> list[NamedAssertion]:
    """Every assertion (or those of one ``trait``) with its entity's name, oldest first."""
    sql = ("SELECT e.name, a.trait, a.value, a.status, a.confidence, a.assertion_id, a.replaces, a.superseded_by "
           "FROM tom_trait_assertions a JOIN entity_catalog e ON e.entity_id = a.entity_id")
    rows = conn.execute(sql + (" WHERE a.trait = ?" if trait else "") + " ORDER BY a.assertion_id",
                        (trait,) if trait else ())
    return [NamedAssertion(*row) for row in rows]


def snapshot_texts(conn: Connection) -> list[str]:
    """The JSON text of every entity's theory-of-mind snapshot."""
    return [text for (text,) in conn.execute("SELECT snapshot_json FROM tom_snapshots")]


def assertion_ids(conn: Connection) -> list[int]:
    """The id of every assertion, whatever its status."""
    return [r[0] for r in conn.execute("SELECT assertion_id FROM tom_trait_assertions")]


def assertion_trait(conn: Connection, assertion_id: int) -> str | None:
    """The trait an assertion states, or None when it is gone."""
    row = conn.execute("SELECT trait FROM tom_trait_assertions WHERE assertion_id = ?", (assertion_id,)).fetchone()
    return row[0] if row else None


def live_values(conn: Connection, entity_id: int, trait: str, live: Sequence[str]) -> list[str]:
    """The values of an entity's assertions of a trait whose status is one of ``live``."""
    return [value for (value,) in conn.execute(
        f"SELECT value FROM tom_trait_assertions WHERE entity_id = ? AND trait = ? AND status IN {tuple(live)}",
        (entity_id, trait))]


def assertions_of(conn: Connection, entity_ids: Sequence[int], traits: Sequence[str], now: float,
                  limit: int) -> list[tuple[Any, ...]]:
    """(assertion_id, entity name, trait, value, status, confidence, first_observed_at, last_observed_at,
    expires_at, retired_at) of these entities' assertions of these traits known by ``now``, but for those the
    user denied; last observed first."""
    subjects = ", ".join("?" * len(entity_ids))
    marks = ", ".join("?" * len(traits))
    return conn.execute(
        "SELECT a.assertion_id, e.name, a.trait, a.value, a.status, a.confidence, a.first_observed_at, "
        "a.last_observed_at, a.expires_at, a.retired_at FROM tom_trait_assertions a "
        f"JOIN entity_catalog e ON e.entity_id = a.entity_id WHERE a.entity_id IN ({subjects}) "
        f"AND a.trait IN ({marks}) AND a.first_observed_at <= ? AND a.status != 'user_denied' "
        "ORDER BY a.last_observed_at DESC LIMIT ?",
        [*entity_ids, *traits, now, limit]).fetchall()


def evidence_recorded_after(conn: Connection, entity_id: int, now: float) -> bool:
    """Whether an event behind one of the entity's assertions was recorded after ``now``."""
    return conn.execute(
        "SELECT 1 FROM tom_trait_assertions a JOIN l2_evidence v ON v.kind = 'assertion' "
        "AND v.row_key = CAST(a.assertion_id AS TEXT) JOIN fact_events e ON e.id = v.event_rowid "
        "WHERE a.entity_id = ? AND e.recorded_at > ? LIMIT 1", (entity_id, now)).fetchone() is not None


def live_evidence(conn: Connection, entity_id: int, live: Sequence[str]) -> list[tuple[str, str | None]]:
    """(event_id, source_item_id) of the twenty newest events behind the entity's assertions whose status is one
    of ``live``."""
    return conn.execute(
        "SELECT DISTINCT e.event_id, e.source_item_id FROM tom_trait_assertions a JOIN l2_evidence v "
        "ON v.kind = 'assertion' AND v.row_key = CAST(a.assertion_id AS TEXT) JOIN fact_events e "
        f"ON e.id = v.event_rowid WHERE a.entity_id = ? AND a.status IN {tuple(live)} "
        "ORDER BY e.timestamp DESC LIMIT 20",
        (entity_id,)).fetchall()


def snapshot(conn: Connection, entity_id: int) -> tuple[str, float] | None:
    """(snapshot_json, refreshed_at) of an entity's theory-of-mind snapshot, if it has one."""
    return conn.execute("SELECT snapshot_json, refreshed_at FROM tom_snapshots WHERE entity_id = ?",
                        (entity_id,)).fetchone()
