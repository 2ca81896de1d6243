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
from ..store import review_replays as store
from ..store.assertions import assertion_with_value
from ..store.connection import Connection, savepoint
from ..store.entities import entity_status, entity_status_by_key, name_key
from ..store.graph import edge_predicate
from ..store.l1 import event_exists
from . import graph, jobs, review

ACTIONS = ("confirm", "delete", "correct", "merge")


def hold(db: Database) -> int | None:
    """The first event rowid the projection must not reach yet (None: no review waits)."""
    row = store.first_pending_hold(db.reader())
    if row is None:
        return None
    return row[0] if row[0] is not None else jobs.NO_HOLD


def apply_due(db: Database) -> int:
    """Apply the waiting reviews whose moment the rebuild has reached; returns how many were decided."""
    decided = 0
    with db.transaction() as conn:
        for replay_id, action, target, detail, reviewed_at, hold_rowid in store.pending_replays(conn):
            if store.projection_waiting_before(conn, jobs.NO_HOLD if hold_rowid is None else hold_rowid):
                break                       # events recorded before this review are still to be projected
            _apply(conn, replay_id, action, json.loads(target), json.loads(detail), reviewed_at)
            decided += 1
    return decided


def _apply(conn: Connection, replay_id: int, action: str, target: dict[str, Any], detail: dict[str, Any],
           at: float) -> None:
    try:
        with savepoint(conn, "replay"):
            key = belief_key(conn, target)
            if key is None:
                raise review.ReviewError("the rebuilt memory holds no such belief")
            if action == "confirm":
                review_id = review.confirm(conn, key, at)
            elif action == "delete":
                review_id = review.deny(conn, key, at)
            elif action == "correct":
                if not event_exists(conn, detail["event_rowid"]):
                    raise review.ReviewError("the correction's own statement was forgotten")
                review_id = review.correct(conn, key, detail["value"], detail["event_rowid"], at)
            else:
                keep, drop = key
                review_id = review.merge_entities(conn, keep, drop, at)
    except review.ReviewError as exc:
        store.decide(conn, replay_id, "unmatched", str(exc)[:200], None)
        return
    store.decide(conn, replay_id, "applied", None, review_id)


def _entity(conn: Connection, natural: list[str]) -> int | None:
    """The active entity a (name key, type) pair names now, following merges."""
    row = entity_status_by_key(conn, natural[0], natural[1])
    for _ in range(32):                 # a chain of merges, never a cycle
        if row is None or row[1] == "active" or row[2] is None:
            break
        row = entity_status(conn, row[2])
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
        return f"edge:{tid}" if edge_predicate(conn, tid) is not None else None
    entity = _entity(conn, target["entity"])
    if entity is None:
        return None
    assertion_id = assertion_with_value(conn, entity, target["trait"], name_key(target["value"]), graph.LIVE)
    return f"assertion:{assertion_id}" if assertion_id is not None else None


def counts(conn: Connection) -> dict[str, int]:
    return store.replay_counts(conn)
