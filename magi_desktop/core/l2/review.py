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
from typing import Any

from ..errors import InvalidInput
from ..store.connection import Connection
from ..store.entities import link_event_entity, name_key
from ..store.snapshots import queue_snapshot
from . import graph
from .beliefs import get_belief
from .resolve import SELF_NAME, Resolved
from .traits import TRAITS

USER_CONFIDENCE = graph.CONFIDENCE_CAP          # the user's own word: as sure as the memory ever gets
_ASSERTION_FIELDS: tuple[str, ...] = ("status", "confidence", "superseded_by", "retired_at", "user_confirmed_at")
_EDGE_FIELDS = ("status", "confidence", "superseded_by", "retired_at", "retired_reason", "user_confirmed_at")


class ReviewError(InvalidInput):
    """The belief does not exist, or the action does not apply to it (already denied, undone…)."""


def _twins(conn: Connection, key: str) -> list[str]:
    """The belief and its other half: an assertion's edge, an edge's assertions."""
    kind, _, row_key = key.partition(":")
    if kind == "assertion":
        row = conn.execute("SELECT triple_id FROM tom_trait_assertions WHERE assertion_id = ?",
                           (int(row_key),)).fetchone()
        return [key] + ([f"edge:{row[0]}"] if row and row[0] else [])
    ids = conn.execute("SELECT assertion_id FROM tom_trait_assertions WHERE triple_id = ? AND status != 'user_denied'"
                       " ORDER BY assertion_id DESC LIMIT 1", (row_key,)).fetchall()
    return [key] + [f"assertion:{r[0]}" for r in ids]


def _snapshot(conn: Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for key in keys:
        kind, _, row_key = key.partition(":")
        if kind == "assertion":
            row = conn.execute(f"SELECT {', '.join(_ASSERTION_FIELDS)} FROM tom_trait_assertions "
                               "WHERE assertion_id = ?", (int(row_key),)).fetchone()
            fields = _ASSERTION_FIELDS
        else:
            row = conn.execute(f"SELECT {', '.join(_EDGE_FIELDS)} FROM kg_edges WHERE triple_id = ?",
                               (row_key,)).fetchone()
            fields = _EDGE_FIELDS
        if row is not None:
            out[key] = dict(zip(fields, row, strict=True))
    return out


def _restore(conn: Connection, before: dict[str, dict[str, Any]]) -> None:
    for key, values in before.items():
        kind, _, row_key = key.partition(":")
        table, pk, ident = (("tom_trait_assertions", "assertion_id", int(row_key)) if kind == "assertion"
                            else ("kg_edges", "triple_id", row_key))
        sets = ", ".join(f"{name} = ?" for name in values)
        conn.execute(f"UPDATE {table} SET {sets} WHERE {pk} = ?", [*values.values(), ident])


def _record(conn: Connection, action: str, key: str, before: dict, detail: dict, now: float) -> int:
    kind, _, row_key = key.partition(":")
    return conn.execute(
        "INSERT INTO user_reviews (action, kind, row_key, before_json, detail_json, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)", (action, kind, row_key, json.dumps(before), json.dumps(detail), now)).lastrowid


def _require(conn: Connection, key: str):
    belief = get_belief(conn, key)
    if belief is None:
        raise ReviewError(f"no belief {key!r}")
    return belief


def confirm(conn: Connection, key: str, now: float) -> int:
    belief = _require(conn, key)
    if belief.state == "denied":
        raise ReviewError(f"{key} was deleted; undo the deletion or correct it instead")
    keys = _twins(conn, key)
    before = _snapshot(conn, keys)
    for k in keys:
        kind, _, row_key = k.partition(":")
        if kind == "assertion":
            conn.execute("UPDATE tom_trait_assertions SET user_confirmed_at = ?, confidence = max(confidence, ?), "
                         f"status = CASE WHEN status IN {graph.LIVE} THEN 'stable' ELSE status END "
                         "WHERE assertion_id = ?", (now, USER_CONFIDENCE, int(row_key)))
        else:
            conn.execute("UPDATE kg_edges SET user_confirmed_at = ?, confidence = max(confidence, ?) "
                         "WHERE triple_id = ?", (now, USER_CONFIDENCE, row_key))
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
            row = conn.execute("SELECT entity_id, trait, value_key FROM tom_trait_assertions WHERE assertion_id = ?",
                               (int(row_key),)).fetchone()
            out.append(("assertion", assertion_denial_key(*row)))
    return out


def deny(conn: Connection, key: str, now: float) -> int:
    belief = _require(conn, key)
    if belief.state == "denied":
        raise ReviewError(f"{key} is already deleted")
    keys = _twins(conn, key)
    before = _snapshot(conn, keys)
    for k in keys:
        kind, _, row_key = k.partition(":")
        if kind == "assertion":
            conn.execute("UPDATE tom_trait_assertions SET status = 'user_denied', retired_at = ? "
                         "WHERE assertion_id = ?", (now, int(row_key)))
        else:
            conn.execute("UPDATE kg_edges SET status = 'retired', retired_reason = 'user_denied', retired_at = ? "
                         "WHERE triple_id = ?", (now, row_key))
    review_id = _record(conn, "delete", key, before, {"also": keys[1:]}, now)
    conn.executemany("INSERT OR REPLACE INTO user_denials (kind, denial_key, review_id, denied_at) VALUES (?, ?, ?, ?)",
                     [(kind, dkey, review_id, now) for kind, dkey in _denial_keys(conn, keys)])
    queue_snapshot(conn, belief.subject_id, now)
    return review_id


def is_denied(conn: Connection, kind: str, denial_key: str, event_rowid: int) -> bool:
    """Whether the user denied this belief after the event was stored (so the event cannot revive it)."""
    row = conn.execute("SELECT denied_at FROM user_denials WHERE kind = ? AND denial_key = ?",
                       (kind, denial_key)).fetchone()
    if row is None:
        return False
    stored = conn.execute("SELECT ingested_at FROM fact_events WHERE id = ?", (event_rowid,)).fetchone()
    return stored is None or stored[0] <= row[0]


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
        subject_id, predicate, object_type = conn.execute(
            "SELECT k.subject_id, k.predicate, o.entity_type FROM kg_edges k JOIN entity_catalog o "
            "ON o.entity_id = k.object_id WHERE k.triple_id = ?", (tid,)).fetchone()
        subject_name = conn.execute("SELECT name FROM entity_catalog WHERE entity_id = ?", (subject_id,)).fetchone()[0]
        existing = conn.execute("SELECT entity_id, name FROM entity_catalog WHERE name_key = ? AND entity_type = ? "
                                "AND status = 'active'", (name_key(value), object_type)).fetchone()
        target = Resolved(existing[0], existing[1], object_type) if existing else Resolved(None, value, object_type)
        object_id = graph.ensure_entity(conn, target, now)
        new_tid = graph.write_edge(conn, (subject_id, subject_name), predicate, (object_id, target.name),
                                   event_rowid=event_rowid, observed_at=now, confidence=USER_CONFIDENCE)
        before.update({k: v for k, v in _snapshot(conn, [f"edge:{new_tid}"]).items() if k not in before})
        conn.execute("UPDATE kg_edges SET user_confirmed_at = ?, confidence = ? WHERE triple_id = ?",
                     (now, USER_CONFIDENCE, new_tid))
        conn.execute("UPDATE kg_edges SET status = 'superseded', superseded_by = ?, retired_at = ?, "
                     "retired_reason = 'user_corrected' WHERE triple_id = ?", (new_tid, now, tid))
        link_event_entity(conn, event_rowid, object_id, object_type, 1.0)
        new_keys.append(f"edge:{new_tid}")
    assertion_key = next((k for k in keys if k.startswith("assertion:")), None)
    if assertion_key is not None:
        old_id = int(assertion_key.split(":", 1)[1])
        entity_id, trait = conn.execute("SELECT entity_id, trait FROM tom_trait_assertions WHERE assertion_id = ?",
                                        (old_id,)).fetchone()
        replaces = [old_id]
        if TRAITS[trait].single_valued:
            replaces += [aid for aid, vkey, _ in graph.live_assertions(conn, entity_id, trait)
                         if aid != old_id and vkey != name_key(value)]
        new_id = graph.write_assertion(conn, entity_id, trait, value, event_rowid=event_rowid, observed_at=now,
                                       confidence=USER_CONFIDENCE, replaces=replaces, tid=new_tid)
        conn.execute("UPDATE tom_trait_assertions SET status = 'stable', user_confirmed_at = ?, confidence = ? "
                     "WHERE assertion_id = ?", (now, USER_CONFIDENCE, new_id))
        # write_assertion retires only live rows; the corrected one may have been history already.
        conn.execute("UPDATE tom_trait_assertions SET status = 'superseded', superseded_by = ?, "
                     "retired_at = coalesce(retired_at, ?) WHERE assertion_id = ? AND status != 'superseded'",
                     (new_id, now, old_id))
        new_keys.append(f"assertion:{new_id}")
    queue_snapshot(conn, belief.subject_id, now)
    return _record(conn, "correct", key, before, {"value": value, "old_value": belief.value, "new": new_keys,
                                                  "event_rowid": event_rowid, "also": keys[1:]}, now)


def review(conn: Connection, review_id: int) -> dict[str, Any] | None:
    row = conn.execute("SELECT review_id, action, kind, row_key, before_json, detail_json, created_at, undone_at "
                       "FROM user_reviews WHERE review_id = ?", (review_id,)).fetchone()
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
    later = conn.execute("SELECT review_id FROM user_reviews WHERE review_id > ? AND undone_at IS NULL AND "
                         "((kind || ':' || row_key) IN (SELECT value FROM json_each(?)))",
                         (review_id, json.dumps(list(done["before"])))).fetchone()
    if later is not None:
        raise ReviewError(f"undo review {later[0]} first: it changed the same belief later")
    _restore(conn, done["before"])
    conn.execute("DELETE FROM user_denials WHERE review_id = ?", (review_id,))
    conn.execute("UPDATE user_reviews SET undone_at = ? WHERE review_id = ?", (now, review_id))
    subject = conn.execute(
        "SELECT entity_id FROM tom_trait_assertions WHERE ? LIKE 'assertion:%' AND assertion_id = "
        "CAST(substr(?, 11) AS INTEGER) UNION SELECT subject_id FROM kg_edges WHERE ? LIKE 'edge:%' "
        "AND triple_id = substr(?, 6)", (done["key"],) * 4).fetchone()
    if subject is not None:
        queue_snapshot(conn, subject[0], now)
    return done


def merge_entities(conn: Connection, keep: int, drop: int, now: float) -> int:
    """The user says two entities are one: ``drop`` becomes an alias of ``keep`` (not undoable)."""
    from .maintenance import _absorb, repair_edges

    rows = dict(conn.execute("SELECT entity_id, status FROM entity_catalog WHERE entity_id IN (?, ?)",
                             (keep, drop)).fetchall())
    if keep == drop or rows.get(keep) != "active" or rows.get(drop) != "active":
        raise ReviewError("merge needs two different active entities")
    names = dict(conn.execute("SELECT entity_id, name FROM entity_catalog WHERE entity_id IN (?, ?)", (keep, drop)))
    _absorb(conn, keep, drop, now)
    repair_edges(conn, now)
    return _record(conn, "merge", f"entity:{keep}", {}, {"merged": drop, "merged_name": names[drop],
                                                         "into_name": names[keep]}, now)


def add_alias(conn: Connection, entity_id: int, alias: str, now: float) -> None:
    alias = " ".join(alias.split())
    row = conn.execute("SELECT aliases_json, name FROM entity_catalog WHERE entity_id = ? AND status = 'active'",
                       (entity_id,)).fetchone()
    if row is None:
        raise ReviewError(f"no active entity {entity_id}")
    if not alias:
        raise ReviewError("the alias is empty")
    aliases = json.loads(row[0])
    if name_key(alias) in {name_key(a) for a in [row[1], *aliases]}:
        return
    conn.execute("UPDATE entity_catalog SET aliases_json = ?, updated_at = ? WHERE entity_id = ?",
                 (json.dumps([*aliases, alias], ensure_ascii=False), now, entity_id))
