"""The user's word on a belief (``core/l2/review.py``): the reviews (``user_reviews``, each with what the rows
were before, so it can be undone), the denials that keep a deleted belief from coming back
(``user_denials``), and the row updates each review makes on ``tom_trait_assertions`` and ``kg_edges``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection


def reviews_of(conn: Connection, kind: str, row_key: str) -> list[tuple[int, str, str, float, float | None]]:
    """(review_id, action, detail_json, created_at, undone_at) of one belief's reviews, in order."""
    return conn.execute("SELECT review_id, action, detail_json, created_at, undone_at FROM user_reviews "
                        "WHERE kind = ? AND row_key = ? ORDER BY review_id", (kind, row_key)).fetchall()


# What a review keeps of each row it changes, to put it back on undo.
ASSERTION_FIELDS: tuple[str, ...] = ("status", "confidence", "superseded_by", "retired_at", "user_confirmed_at")
EDGE_FIELDS: tuple[str, ...] = ("status", "confidence", "superseded_by", "retired_at", "retired_reason",
                                "user_confirmed_at")
# kind -> (table, primary key, the fields a review keeps)
_ROWS = {"assertion": ("tom_trait_assertions", "assertion_id", ASSERTION_FIELDS),
         "edge": ("kg_edges", "triple_id", EDGE_FIELDS)}


def _ident(kind: str, row_key: str) -> int | str:
    return int(row_key) if kind == "assertion" else row_key


def row_fields(conn: Connection, kind: str, row_key: str) -> dict[str, Any] | None:
    """The fields a review keeps of one assertion or edge ('assertion' or anything else: an edge), or None when
    the row is gone."""
    table, pk, fields = _ROWS["assertion" if kind == "assertion" else "edge"]
    row = conn.execute(f"SELECT {', '.join(fields)} FROM {table} WHERE {pk} = ?",
                       (_ident(kind, row_key),)).fetchone()
    return dict(zip(fields, row, strict=True)) if row is not None else None


def restore_fields(conn: Connection, kind: str, row_key: str, values: dict[str, Any]) -> None:
    """Put back the fields a review kept (as :func:`row_fields` read them)."""
    table, pk, _ = _ROWS["assertion" if kind == "assertion" else "edge"]
    sets = ", ".join(f"{name} = ?" for name in values)
    conn.execute(f"UPDATE {table} SET {sets} WHERE {pk} = ?", [*values.values(), _ident(kind, row_key)])


def record_review(conn: Connection, action: str, kind: str, row_key: str, before_json: str, detail_json: str,
                  now: float) -> int:
    """A review made; returns its id."""
    return conn.execute(
        "INSERT INTO user_reviews (action, kind, row_key, before_json, detail_json, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)", (action, kind, row_key, before_json, detail_json, now)).lastrowid


def confirm_row(conn: Connection, kind: str, row_key: str, now: float, confidence: float,
                live: Sequence[str]) -> None:
    """The user confirmed an assertion (a live one becomes stable) or an edge: at least ``confidence``."""
    if kind == "assertion":
        conn.execute("UPDATE tom_trait_assertions SET user_confirmed_at = ?, confidence = max(confidence, ?), "
                     f"status = CASE WHEN status IN {tuple(live)} THEN 'stable' ELSE status END "
                     "WHERE assertion_id = ?", (now, confidence, int(row_key)))
    else:
        conn.execute("UPDATE kg_edges SET user_confirmed_at = ?, confidence = max(confidence, ?) "
                     "WHERE triple_id = ?", (now, confidence, row_key))


def deny_row(conn: Connection, kind: str, row_key: str, now: float) -> None:
    """The user deleted an assertion (``user_denied``) or an edge (retired for ``user_denied``)."""
    if kind == "assertion":
        conn.execute("UPDATE tom_trait_assertions SET status = 'user_denied', retired_at = ? "
                     "WHERE assertion_id = ?", (now, int(row_key)))
    else:
        conn.execute("UPDATE kg_edges SET status = 'retired', retired_reason = 'user_denied', retired_at = ? "
                     "WHERE triple_id = ?", (now, row_key))


def record_denials(conn: Connection, denials: Sequence[tuple[str, str]], review_id: int, now: float) -> None:
    """Keep (kind, denial key) pairs denied by a review, so the same evidence never brings them back."""
    conn.executemany("INSERT OR REPLACE INTO user_denials (kind, denial_key, review_id, denied_at) VALUES (?, ?, ?, ?)",
                     [(kind, dkey, review_id, now) for kind, dkey in denials])


def denied_at(conn: Connection, kind: str, denial_key: str) -> float | None:
    """When the user denied this belief, or None."""
    row = conn.execute("SELECT denied_at FROM user_denials WHERE kind = ? AND denial_key = ?",
                       (kind, denial_key)).fetchone()
    return None if row is None else row[0]


def review_row(conn: Connection, review_id: int) -> tuple[Any, ...] | None:
    """(review_id, action, kind, row_key, before_json, detail_json, created_at, undone_at) of a review."""
    return conn.execute("SELECT review_id, action, kind, row_key, before_json, detail_json, created_at, undone_at "
                        "FROM user_reviews WHERE review_id = ?", (review_id,)).fetchone()


def later_review_of(conn: Connection, review_id: int, keys_json: str) -> int | None:
    """The id of a review after ``review_id``, not undone, of one of these belief keys (a JSON list), if any."""
    row = conn.execute("SELECT review_id FROM user_reviews WHERE review_id > ? AND undone_at IS NULL AND "
                       "((kind || ':' || row_key) IN (SELECT value FROM json_each(?)))",
                       (review_id, keys_json)).fetchone()
    return None if row is None else row[0]


def mark_undone(conn: Connection, review_id: int, now: float) -> None:
    """A review is undone: its denials go."""
    conn.execute("DELETE FROM user_denials WHERE review_id = ?", (review_id,))
    conn.execute("UPDATE user_reviews SET undone_at = ? WHERE review_id = ?", (now, review_id))


def subject_of(conn: Connection, key: str) -> int | None:
    """The entity a belief key ('assertion:<id>' or 'edge:<triple id>') is about, if the row is there."""
    row = conn.execute(
        "SELECT entity_id FROM tom_trait_assertions WHERE ? LIKE 'assertion:%' AND assertion_id = "
        "CAST(substr(?, 11) AS INTEGER) UNION SELECT subject_id FROM kg_edges WHERE ? LIKE 'edge:%' "
        "AND triple_id = substr(?, 6)", (key,) * 4).fetchone()
    return None if row is None else row[0]


def latest_review_ids(conn: Connection, limit: int) -> list[int]:
    """Ids of the latest reviews, newest first (the viewer's list, services/belief_review)."""
    return [r[0] for r in conn.execute("SELECT review_id FROM user_reviews ORDER BY review_id DESC LIMIT ?",
                                       (limit,))]
