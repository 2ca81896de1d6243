"""The user's word on a belief: confirm, correct, delete — each recorded in ``user_reviews``
with what the rows were before, so it can be undone (architecture §11).

* **confirm** — the belief becomes ``stable`` and carries ``user_confirmed_at``.
* **delete** — an assertion becomes ``user_denied``, an edge ``retired`` with reason
  ``user_denied``; a denial is kept in ``user_denials`` so that projecting the same
  evidence again never brings it back (:func:`is_denied`).
* **correct** — the user's new value is written as their own statement: an L1 event
  (made by ``Memory.correct``) that the new belief cites, superseding the old one.

An assertion and the edge that stated it are one belief to the user: an action on
one applies to the other too. Every function takes the open write transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import InvalidInput
from ..store import assertions, entities
from ..store import graph as store_graph
from ..store import reviews as store
from ..store.connection import Connection
from ..store.entities import link_event_entity, name_key
from ..store.l1 import ingested_at
from ..store.snapshots import queue_snapshot
from . import graph
from .beliefs import Belief, get_belief
from .resolve import SELF_NAME, Resolved
from .traits import TRAITS

USER_CONFIDENCE = graph.CONFIDENCE_CAP          # the user's own word: as sure as the memory ever gets


class ReviewError(InvalidInput):
    """The belief does not exist, or the action does not apply to it (already denied, undone…)."""


def _twins(conn: Connection, key: str) -> list[str]:
    """The belief and its other half: an assertion's edge, an edge's assertions."""
    kind, _, row_key = key.partition(":")
    if kind == "assertion":
        tid = assertions.edge_of_assertion(conn, int(row_key))
        return [key] + ([f"edge:{tid}"] if tid else [])
    return [key] + [f"assertion:{a}" for a in assertions.newest_assertion_of_edge(conn, row_key)]


def _snapshot(conn: Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for key in keys:
        kind, _, row_key = key.partition(":")
        fields = store.row_fields(conn, kind, row_key)
        if fields is not None:
            out[key] = fields
    return out


def _restore(conn: Connection, before: dict[str, dict[str, Any]]) -> None:
    for key, values in before.items():
        kind, _, row_key = key.partition(":")
        store.restore_fields(conn, kind, row_key, values)


def _record(conn: Connection, action: str, key: str, before: dict, detail: dict, now: float) -> int:
    kind, _, row_key = key.partition(":")
    return store.record_review(conn, action, kind, row_key, json.dumps(before), json.dumps(detail), now)


def _require(conn: Connection, key: str):
    belief = get_belief(conn, key)
    if belief is None:
        raise ReviewError(f"no belief {key!r}")
    return belief


def _change_twins(conn: Connection, key: str, refusal: str,
                  change: Callable[[str, str], None]) -> tuple[Belief, list[str], dict[str, dict[str, Any]]]:
    """Apply ``change`` (kind, row_key) to a belief that is not denied and its other half; returns the belief,
    the keys changed and what they were before (``refusal``: the error when the belief is denied)."""
    belief = _require(conn, key)
    if belief.state == "denied":
        raise ReviewError(refusal)
    keys = _twins(conn, key)
    before = _snapshot(conn, keys)
    for k in keys:
        kind, _, row_key = k.partition(":")
        change(kind, row_key)
    return belief, keys, before


def confirm(conn: Connection, key: str, now: float) -> int:
    belief, keys, before = _change_twins(
        conn, key, f"{key} was deleted; undo the deletion or correct it instead",
        lambda kind, row_key: store.confirm_row(conn, kind, row_key, now, USER_CONFIDENCE, graph.LIVE))
    queue_snapshot(conn, belief.subject_id, now)
    return _record(conn, "confirm", key, before, {"also": keys[1:]}, now)


def assertion_denial_key(entity_id: int, trait: str, value_key: str) -> str:
    """How a denied assertion is known, to the denial and to the projection that must not revive it."""
    return f"{entity_id}:{trait}:{value_key}"


def _denial_keys(conn: Connection, keys: list[str]) -> list[tuple[str, str]]:
    out = []
    for key in keys:
        kind, _, row_key = key.partition(":")
        if kind == "edge":
            out.append(("edge", row_key))
        else:
            out.append(("assertion", assertion_denial_key(*assertions.assertion_value_key(conn, int(row_key)))))
    return out


def deny(conn: Connection, key: str, now: float) -> int:
    belief, keys, before = _change_twins(conn, key, f"{key} is already deleted",
                                         lambda kind, row_key: store.deny_row(conn, kind, row_key, now))
    review_id = _record(conn, "delete", key, before, {"also": keys[1:]}, now)
    store.record_denials(conn, _denial_keys(conn, keys), review_id, now)
    queue_snapshot(conn, belief.subject_id, now)
    return review_id


def is_denied(conn: Connection, kind: str, denial_key: str, event_rowid: int) -> bool:
    """Whether the user denied this belief after the event was stored (so the event cannot revive it)."""
    denied = store.denied_at(conn, kind, denial_key)
    if denied is None:
        return False
    stored = ingested_at(conn, event_rowid)
    return stored is None or stored <= denied


def correction_text(belief, value: str) -> str:
    """How a correction reads as the user's own statement (it becomes an L1 event)."""
    who = "my" if belief.subject == SELF_NAME else f"{belief.subject}'s"
    relation = belief.relation.replace("_", " ").lower()
    return f"Correction in the memory viewer: {who} {relation} is {value}, not {belief.value}."


def correct(conn: Connection, key: str, value: str, event_rowid: int, now: float) -> int:
    """Write ``value`` as the user's own, citing the correction event, and supersede the old belief."""
    belief = _require(conn, key)
    value = " ".join(value.split())
    if not value:
        raise ReviewError("the corrected value is empty")
    if name_key(value) == name_key(belief.value):
        raise ReviewError("the corrected value is the same as the old one")
    keys = _twins(conn, key)
    before = _snapshot(conn, keys)
    new_keys: list[str] = []
    new_tid = None
    edge_key = next((k for k in keys if k.startswith("edge:")), None)
    if edge_key is not None:
        tid = edge_key.split(":", 1)[1]
        subject_id, predicate, object_type = store_graph.edge_ends(conn, tid)
        subject_name = entities.entity_name(conn, subject_id)
        existing = entities.active_entity_of_type(conn, name_key(value), object_type)
        target = Resolved(existing[0], existing[1], object_type) if existing else Resolved(None, value, object_type)
        object_id = graph.ensure_entity(conn, target, now)
        new_tid = graph.write_edge(conn, (subject_id, subject_name), predicate, (object_id, target.name),
                                   event_rowid=event_rowid, observed_at=now, confidence=USER_CONFIDENCE)
        before.update({k: v for k, v in _snapshot(conn, [f"edge:{new_tid}"]).items() if k not in before})
        store_graph.confirm_as_stated(conn, new_tid, now, USER_CONFIDENCE)
        store_graph.supersede_corrected(conn, tid, new_tid, now)
        link_event_entity(conn, event_rowid, object_id, object_type, 1.0)
        new_keys.append(f"edge:{new_tid}")
    assertion_key = next((k for k in keys if k.startswith("assertion:")), None)
    if assertion_key is not None:
        old_id = int(assertion_key.split(":", 1)[1])
        entity_id, trait = assertions.entity_and_trait(conn, old_id)
        replaces = [old_id]
        if TRAITS[trait].single_valued:
            replaces += [aid for aid, vkey, _ in graph.live_assertions(conn, entity_id, trait)
                         if aid != old_id and vkey != name_key(value)]
        new_id = graph.write_assertion(conn, entity_id, trait, value, event_rowid=event_rowid, observed_at=now,
                                       confidence=USER_CONFIDENCE, replaces=replaces, tid=new_tid)
        assertions.confirm_as_stated(conn, new_id, now, USER_CONFIDENCE)
        # write_assertion retires only live rows; the corrected one may have been history already.
        assertions.supersede_corrected(conn, old_id, new_id, now)
        new_keys.append(f"assertion:{new_id}")
    queue_snapshot(conn, belief.subject_id, now)
    return _record(conn, "correct", key, before, {"value": value, "old_value": belief.value, "new": new_keys,
                                                  "event_rowid": event_rowid, "also": keys[1:]}, now)


def review(conn: Connection, review_id: int) -> dict[str, Any] | None:
    row = store.review_row(conn, review_id)
    if row is None:
        return None
    return {"review_id": row[0], "action": row[1], "key": f"{row[2]}:{row[3]}", "before": json.loads(row[4]),
            "detail": json.loads(row[5]), "created_at": row[6], "undone_at": row[7]}


def undo(conn: Connection, review_id: int, now: float) -> dict[str, Any]:
    """Put the rows back as they were before the review; returns the review. A correction's own
    event is deleted by the caller first (``Memory.undo``), which takes the rows it made with it."""
    done = review(conn, review_id)
    if done is None:
        raise ReviewError(f"no review {review_id}")
    if done["undone_at"] is not None:
        raise ReviewError(f"review {review_id} was already undone")
    if done["action"] not in ("confirm", "delete", "correct"):
        raise ReviewError(f"a {done['action']} cannot be undone")
    later = store.later_review_of(conn, review_id, json.dumps(list(done["before"])))
    if later is not None:
        raise ReviewError(f"undo review {later} first: it changed the same belief later")
    _restore(conn, done["before"])
    store.mark_undone(conn, review_id, now)
    subject = store.subject_of(conn, done["key"])
    if subject is not None:
        queue_snapshot(conn, subject, now)
    return done


def merge_entities(conn: Connection, keep: int, drop: int, now: float) -> int:
    """The user says two entities are one: ``drop`` becomes an alias of ``keep`` (not undoable)."""
    from .maintenance import _absorb, repair_edges

    rows = entities.statuses_of(conn, keep, drop)
    if keep == drop or rows.get(keep) != "active" or rows.get(drop) != "active":
        raise ReviewError("merge needs two different active entities")
    names = entities.names_of(conn, keep, drop)
    _absorb(conn, keep, drop, now)
    repair_edges(conn, now)
    return _record(conn, "merge", f"entity:{keep}", {}, {"merged": drop, "merged_name": names[drop],
                                                         "into_name": names[keep]}, now)


def add_alias(conn: Connection, entity_id: int, alias: str, now: float) -> None:
    alias = " ".join(alias.split())
    row = entities.active_aliases_and_name(conn, entity_id)
    if row is None:
        raise ReviewError(f"no active entity {entity_id}")
    if not alias:
        raise ReviewError("the alias is empty")
    aliases = json.loads(row[0])
    if name_key(alias) in {name_key(a) for a in [row[1], *aliases]}:
        return
    entities.set_aliases(conn, entity_id, json.dumps([*aliases, alias], ensure_ascii=False), now)
