"""The user's reviews an import carried over, applied again once L2 is rebuilt (issue 16).

An import does not load L2; the L2 worker projects the imported events again. A review (confirm,
delete, correct, merge) is kept in ``review_replays`` by natural keys — an entity by its name key and
type, an edge by subject, predicate and object, an assertion by entity, trait and value — and applied
through the same functions the viewer calls (:mod:`.review`) when the rebuild has reached the moment
the user made it: every event recorded before it is projected, and none recorded after it is
(``hold_rowid``: the projection waits there, :func:`hold`). So a belief is confirmed or denied with
the evidence it had then, and what the user said later still overrides it as it did. A review whose
belief the rebuild did not make is marked ``unmatched`` with the reason, and the queue goes on.
"""

from __future__ import annotations

import json
from typing import Any

from ..store import Database
from ..store.connection import Connection
from ..store.entities import name_key
from . import graph, jobs, review

ACTIONS = ("confirm", "delete", "correct", "merge")
_WAITING = ("SELECT 1 FROM l2_projection_jobs WHERE state IN ('pending', 'running') AND event_rowid < ? LIMIT 1")


def hold(db: Database) -> int | None:
    """The first event rowid the projection must not reach yet (None: no review waits)."""
    row = db.reader().execute("SELECT hold_rowid FROM review_replays WHERE state = 'pending' "
                              "ORDER BY reviewed_at, replay_id LIMIT 1").fetchone()
    if row is None:
        return None
    return row[0] if row[0] is not None else jobs.NO_HOLD


def apply_due(db: Database) -> int:
    """Apply the waiting reviews whose moment the rebuild has reached; returns how many were decided."""
    decided = 0
    with db.transaction() as conn:
        for replay_id, action, target, detail, reviewed_at, hold_rowid in conn.execute(
                "SELECT replay_id, action, target_json, detail_json, reviewed_at, hold_rowid FROM review_replays "
                "WHERE state = 'pending' ORDER BY reviewed_at, replay_id").fetchall():
            if conn.execute(_WAITING, (jobs.NO_HOLD if hold_rowid is None else hold_rowid,)).fetchone():
                break                       # events recorded before this review are still to be projected
            _apply(conn, replay_id, action, json.loads(target), json.loads(detail), reviewed_at)
            decided += 1
    return decided


def _apply(conn: Connection, replay_id: int, action: str, target: dict[str, Any], detail: dict[str, Any],
           at: float) -> None:
    conn.execute("SAVEPOINT replay")
    try:
        key = belief_key(conn, target)
        if key is None:
            raise review.ReviewError("the rebuilt memory holds no such belief")
        if action == "confirm":
            review_id = review.confirm(conn, key, at)
        elif action == "delete":
            review_id = review.deny(conn, key, at)
        elif action == "correct":
            if not conn.execute("SELECT 1 FROM fact_events WHERE id = ?", (detail["event_rowid"],)).fetchone():
                raise review.ReviewError("the correction's own statement was forgotten")
            review_id = review.correct(conn, key, detail["value"], detail["event_rowid"], at)
        else:
            keep, drop = key
            review_id = review.merge_entities(conn, keep, drop, at)
    except review.ReviewError as exc:
        conn.execute("ROLLBACK TO replay")
        conn.execute("RELEASE replay")
        _decided(conn, replay_id, "unmatched", str(exc)[:200], None)
        return
    conn.execute("RELEASE replay")
    _decided(conn, replay_id, "applied", None, review_id)


def _decided(conn: Connection, replay_id: int, state: str, outcome: str | None, review_id: int | None) -> None:
    """Record the outcome; the natural key (names and values, which forget cannot find here) is not kept."""
    conn.execute("UPDATE review_replays SET state = ?, outcome = ?, review_id = ?, detail_json = '{}', "
                 "target_json = json_object('kind', json_extract(target_json, '$.kind')) WHERE replay_id = ?",
                 (state, outcome, review_id, replay_id))


def _entity(conn: Connection, natural: list[str]) -> int | None:
    """The active entity a (name key, type) pair names now, following merges."""
    row = conn.execute("SELECT entity_id, status, merged_into FROM entity_catalog WHERE name_key = ? AND "
                       "entity_type = ?", (natural[0], natural[1])).fetchone()
    for _ in range(32):                 # a chain of merges, never a cycle
        if row is None or row[1] == "active" or row[2] is None:
            break
        row = conn.execute("SELECT entity_id, status, merged_into FROM entity_catalog WHERE entity_id = ?",
                           (row[2],)).fetchone()
    return row[0] if row is not None and row[1] == "active" else None


def belief_key(conn: Connection, target: dict[str, Any]):
    """The local key of the belief a natural key names ("assertion:12", "edge:<triple>", or for an
    entity merge the (keep, drop) ids); None when the rebuilt memory has no such row."""
    kind = target["kind"]
    if kind == "entity":
        keep, drop = _entity(conn, target["keep"]), _entity(conn, target["drop"])
        return (keep, drop) if keep is not None and drop is not None else None
    if kind == "edge":
        subject, obj = _entity(conn, target["subject"]), _entity(conn, target["object"])
        if subject is None or obj is None:
            return None
        tid = graph.triple_id(subject, target["predicate"], obj)
        found = conn.execute("SELECT 1 FROM kg_edges WHERE triple_id = ?", (tid,)).fetchone()
        return f"edge:{tid}" if found else None
    entity = _entity(conn, target["entity"])
    if entity is None:
        return None
    row = conn.execute(f"SELECT assertion_id FROM tom_trait_assertions WHERE entity_id = ? AND trait = ? AND "
                       f"value_key = ? ORDER BY status IN {graph.LIVE} DESC, assertion_id DESC LIMIT 1",
                       (entity, target["trait"], name_key(target["value"]))).fetchone()
    return f"assertion:{row[0]}" if row else None


def counts(conn: Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT state, count(*) FROM review_replays GROUP BY state").fetchall())
