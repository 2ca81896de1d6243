"""``review_replays``: the user's reviews an import carried over, waiting until the L2 rebuild reaches the
moment each was made (``core/l2/replay.py``)."""

from __future__ import annotations

from typing import Any

from .connection import Connection


def first_pending_hold(conn: Connection) -> tuple[int | None] | None:
    """(hold_rowid,) of the first pending replay, or None when none waits."""
    return conn.execute("SELECT hold_rowid FROM review_replays WHERE state = 'pending' "
                        "ORDER BY reviewed_at, replay_id LIMIT 1").fetchone()


def pending_replays(conn: Connection) -> list[tuple[int, str, str, str, float, int | None]]:
    """(replay_id, action, target_json, detail_json, reviewed_at, hold_rowid) of the pending replays, in the
    order the user made them."""
    return conn.execute(
        "SELECT replay_id, action, target_json, detail_json, reviewed_at, hold_rowid FROM review_replays "
        "WHERE state = 'pending' ORDER BY reviewed_at, replay_id").fetchall()


def projection_waiting_before(conn: Connection, rowid: int) -> bool:
    """Whether an event before ``rowid`` is still to be projected (its L2 job pending or running)."""
    return conn.execute("SELECT 1 FROM l2_projection_jobs WHERE state IN ('pending', 'running') "
                        "AND event_rowid < ? LIMIT 1", (rowid,)).fetchone() is not None


def decide(conn: Connection, replay_id: int, state: str, outcome: str | None, review_id: int | None) -> None:
    """Record a replay's outcome; its natural key (names and values, which forget cannot find here) is dropped
    but for its kind."""
    conn.execute("UPDATE review_replays SET state = ?, outcome = ?, review_id = ?, detail_json = '{}', "
                 "target_json = json_object('kind', json_extract(target_json, '$.kind')) WHERE replay_id = ?",
                 (state, outcome, review_id, replay_id))


def replay_counts(conn: Connection) -> dict[str, Any]:
    """How many replays are in each state."""
    return dict(conn.execute("SELECT state, count(*) FROM review_replays GROUP BY state").fetchall())
