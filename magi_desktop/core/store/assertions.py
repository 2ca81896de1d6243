"""Theory-of-mind trait assertions (``tom_trait_assertions``) and snapshots (``tom_snapshots``): the reads recall
makes, then the L2 worker's writes and the reads they make (``core/l2``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .connection import Connection, placeholders

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
    subjects = placeholders(len(entity_ids))
    marks = placeholders(len(traits))
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


# --- the L2 worker's writes and the reads they make (core/l2) -------------------------------------------------

def supersede_assertions_of_edge(conn: Connection, triple_id: str, live: Sequence[str], now: float) -> None:
    """The live assertions an edge made become history with it, replaced by nothing."""
    conn.execute(f"UPDATE tom_trait_assertions SET status = 'superseded', superseded_by = NULL, "
                 f"retired_at = ? WHERE triple_id = ? AND status IN {tuple(live)}", (now, triple_id))


def revive_assertions_of_edge(conn: Connection, triple_id: str) -> None:
    """The assertions an edge's ending superseded (replaced by nothing) are live again."""
    conn.execute("UPDATE tom_trait_assertions SET status = CASE WHEN observations > 1 THEN 'corroborated' "
                 "ELSE 'tentative' END, retired_at = NULL WHERE triple_id = ? AND status = 'superseded' "
                 "AND superseded_by IS NULL", (triple_id,))


def assertion_with_value(conn: Connection, entity_id: int, trait: str, value_key: str,
                         live: Sequence[str]) -> int | None:
    """The id of an entity's assertion of this trait and value: a live one first, then the newest."""
    row = conn.execute(f"SELECT assertion_id FROM tom_trait_assertions WHERE entity_id = ? AND trait = ? AND "
                       f"value_key = ? ORDER BY status IN {tuple(live)} DESC, assertion_id DESC LIMIT 1",
                       (entity_id, trait, value_key)).fetchone()
    return row[0] if row else None


def live_assertion_keys(conn: Connection, entity_id: int, trait: str,
                        live: Sequence[str]) -> list[tuple[int, str, float]]:
    """(assertion_id, value_key, last_observed_at) of an entity's assertions of a trait whose status is one of
    ``live``."""
    return conn.execute(f"SELECT assertion_id, value_key, last_observed_at FROM tom_trait_assertions "
                        f"WHERE entity_id = ? AND trait = ? AND status IN {tuple(live)}", (entity_id, trait)).fetchall()


def live_assertion_of_value(conn: Connection, entity_id: int, trait: str, value_key: str,
                            live: Sequence[str]) -> tuple[int, float, float, float | None] | None:
    """(assertion_id, confidence, first_observed_at, expires_at) of the entity's assertion of this trait and value
    whose status is one of ``live``."""
    return conn.execute(
        f"SELECT assertion_id, confidence, first_observed_at, expires_at FROM tom_trait_assertions WHERE entity_id = ? "
        f"AND trait = ? AND value_key = ? AND status IN {tuple(live)}", (entity_id, trait, value_key)).fetchone()


def expire_at_its_time(conn: Connection, assertion_id: int) -> None:
    """A state that had lapsed becomes history, retired when it expired."""
    conn.execute("UPDATE tom_trait_assertions SET status = 'expired', retired_at = expires_at "
                 "WHERE assertion_id = ?", (assertion_id,))


def observe_assertion_again(conn: Connection, assertion_id: int, confidence: float, observed_at: float,
                            expires: float | None, status: str) -> None:
    """One more observation of an assertion: its new confidence and status (a stable one stays stable), its span
    and expiry stretched."""
    conn.execute(
        "UPDATE tom_trait_assertions SET observations = observations + 1, confidence = ?, "
        "last_observed_at = max(last_observed_at, ?), first_observed_at = min(first_observed_at, ?), "
        "expires_at = CASE WHEN ? IS NULL THEN expires_at ELSE max(coalesce(expires_at, 0), ?) END, "
        "status = CASE status WHEN 'stable' THEN 'stable' ELSE ? END WHERE assertion_id = ?",
        (confidence, observed_at, observed_at, expires, expires, status, assertion_id))


def assertion_stated_by(conn: Connection, entity_id: int, trait: str, value_key: str, event_rowid: int) -> int | None:
    """The id of an assertion of this entity, trait and value that this event is evidence for, whatever its
    status."""
    row = conn.execute(
        "SELECT a.assertion_id FROM tom_trait_assertions a JOIN l2_evidence v ON v.kind = 'assertion' "
        "AND v.row_key = CAST(a.assertion_id AS TEXT) WHERE a.entity_id = ? AND a.trait = ? AND a.value_key = ? "
        "AND v.event_rowid = ?", (entity_id, trait, value_key, event_rowid)).fetchone()
    return row[0] if row else None


def add_assertion(conn: Connection, entity_id: int, trait: str, value: str, value_key: str, term: str,
                  confidence: float, observed_at: float, expires: float | None, replaces: int | None,
                  triple_id: str | None) -> int:
    """A new tentative assertion; returns its id."""
    return conn.execute(
        "INSERT INTO tom_trait_assertions (entity_id, trait, value, value_key, term, status, confidence, "
        "first_observed_at, last_observed_at, expires_at, replaces, triple_id) "
        "VALUES (?, ?, ?, ?, ?, 'tentative', ?, ?, ?, ?, ?, ?)",
        (entity_id, trait, value, value_key, term, confidence, observed_at, observed_at, expires, replaces,
         triple_id)).lastrowid


def replace_assertion(conn: Connection, assertion_id: int, *, by: int, status: str, now: float,
                      live: Sequence[str]) -> None:
    """A live assertion is retired (``status``) in favour of ``by``."""
    conn.execute(f"UPDATE tom_trait_assertions SET status = ?, superseded_by = ?, retired_at = ? "
                 f"WHERE assertion_id = ? AND status IN {tuple(live)}", (status, by, now, assertion_id))


def expiring(conn: Connection, now: float, live: Sequence[str]) -> list[tuple[int, int]]:
    """(assertion_id, entity_id) of the live assertions whose time is up by ``now``."""
    return conn.execute(f"SELECT assertion_id, entity_id FROM tom_trait_assertions WHERE expires_at IS NOT NULL "
                        f"AND expires_at <= ? AND status IN {tuple(live)}", (now,)).fetchall()


def expire(conn: Connection, assertion_id: int, now: float) -> None:
    conn.execute("UPDATE tom_trait_assertions SET status = 'expired', retired_at = ? WHERE assertion_id = ?",
                 (now, assertion_id))


def live_assertion_values(conn: Connection, entity_id: int, live: Sequence[str]) -> list[tuple[int, str, str]]:
    """(assertion_id, trait, value_key) of an entity's assertions whose status is one of ``live``."""
    return conn.execute(
        f"SELECT assertion_id, trait, value_key FROM tom_trait_assertions WHERE entity_id = ? AND status IN "
        f"{tuple(live)}", (entity_id,)).fetchall()


def live_twin(conn: Connection, entity_id: int, trait: str, value_key: str, live: Sequence[str]) -> int | None:
    """The id of the entity's live assertion of this trait and value, if any."""
    row = conn.execute(f"SELECT assertion_id FROM tom_trait_assertions WHERE entity_id = ? AND trait = ? "
                       f"AND value_key = ? AND status IN {tuple(live)}", (entity_id, trait, value_key)).fetchone()
    return row[0] if row else None


def supersede_by(conn: Connection, assertion_id: int, by: int, now: float) -> None:
    conn.execute("UPDATE tom_trait_assertions SET status = 'superseded', superseded_by = ?, retired_at = ? "
                 "WHERE assertion_id = ?", (by, now, assertion_id))


def move_assertions(conn: Connection, keep: int, drop: int, live: Sequence[str]) -> None:
    """An entity's assertions, the live ones first, move to the entity that absorbed it."""
    conn.execute(f"UPDATE tom_trait_assertions SET entity_id = ? WHERE entity_id = ? AND status IN {tuple(live)}",
                 (keep, drop))
    conn.execute("UPDATE tom_trait_assertions SET entity_id = ? WHERE entity_id = ?", (keep, drop))


def repoint_edge(conn: Connection, old_tid: str, new_tid: str) -> None:
    """The assertions an edge made follow it to the triple it was rewritten to."""
    conn.execute("UPDATE tom_trait_assertions SET triple_id = ? WHERE triple_id = ?", (new_tid, old_tid))


def edge_of_assertion(conn: Connection, assertion_id: int) -> str | None:
    """The triple id of the edge that stated an assertion, if any."""
    row = conn.execute("SELECT triple_id FROM tom_trait_assertions WHERE assertion_id = ?",
                       (assertion_id,)).fetchone()
    return row[0] if row and row[0] else None


def newest_assertion_of_edge(conn: Connection, triple_id: str) -> list[int]:
    """The id of the newest assertion an edge stated that the user did not deny (none or one)."""
    return [r[0] for r in conn.execute(
        "SELECT assertion_id FROM tom_trait_assertions WHERE triple_id = ? AND status != 'user_denied'"
        " ORDER BY assertion_id DESC LIMIT 1", (triple_id,)).fetchall()]


def assertion_value_key(conn: Connection, assertion_id: int) -> tuple[int, str, str]:
    """(entity_id, trait, value_key) of an assertion."""
    return conn.execute("SELECT entity_id, trait, value_key FROM tom_trait_assertions WHERE assertion_id = ?",
                        (assertion_id,)).fetchone()


def entity_and_trait(conn: Connection, assertion_id: int) -> tuple[int, str]:
    """(entity_id, trait) of an assertion."""
    return conn.execute("SELECT entity_id, trait FROM tom_trait_assertions WHERE assertion_id = ?",
                        (assertion_id,)).fetchone()


def confirm_as_stated(conn: Connection, assertion_id: int, now: float, confidence: float) -> None:
    """The user's own statement: stable, confirmed now, at ``confidence``."""
    conn.execute("UPDATE tom_trait_assertions SET status = 'stable', user_confirmed_at = ?, confidence = ? "
                 "WHERE assertion_id = ?", (now, confidence, assertion_id))


def supersede_corrected(conn: Connection, assertion_id: int, by: int, now: float) -> None:
    """A corrected assertion is superseded by the correction, live or history already (then it keeps its
    retirement time)."""
    conn.execute("UPDATE tom_trait_assertions SET status = 'superseded', superseded_by = ?, "
                 "retired_at = coalesce(retired_at, ?) WHERE assertion_id = ? AND status != 'superseded'",
                 (by, now, assertion_id))


def live_assertions_of_edge(conn: Connection, triple_id: str, live: Sequence[str]) -> list[int]:
    """The ids of the assertions an edge made whose status is one of ``live``."""
    return [r[0] for r in conn.execute(
        "SELECT assertion_id FROM tom_trait_assertions WHERE triple_id = ? AND status IN "
        f"{tuple(live)}", (triple_id,))]
