"""L2 episodes (``l2_episodes``): the reads recall makes. The L2 worker's writes are still in ``core/l2``
(issue 18, item 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .connection import Connection

# readers the tests and layers share

class Episode(NamedTuple):
    """One row of ``l2_episodes``, but for its entity list."""

    episode_id: int
    batch_key: str
    status: str
    title: str
    start_at: float
    end_at: float
    event_count: int


def episodes(conn: Connection, batch_key: str | None = None) -> list[Episode]:
    """Every episode (or those of one batch key), by id."""
    sql = "SELECT episode_id, batch_key, status, title, start_at, end_at, event_count FROM l2_episodes"
    rows = conn.execute(sql + (" WHERE batch_key = ?" if batch_key else "") + " ORDER BY episode_id",
                        (batch_key,) if batch_key else ())
    return [Episode(*row) for row in rows]


def promoted_episodes(conn: Connection, now: float, window: tuple[float, float] | None,
                      title_words: Sequence[str], limit: int) -> list[tuple[Any, ...]]:
    """(episode_id, title, start_at, end_at, event_count) of the promoted episodes begun by ``now`` that overlap
    ``window`` or, without one, whose title contains one of ``title_words``; latest ending first. Nothing when
    there is neither."""
    params: list[Any] = [now]
    where = "status = 'promoted' AND start_at <= ?"
    if window is not None:
        where += " AND end_at >= ? AND start_at < ?"
        params += [window[0], window[1]]
    elif title_words:
        where += " AND (" + " OR ".join("title LIKE ?" for _ in title_words) + ")"
        params += [f"%{w}%" for w in title_words]
    else:
        return []
    return conn.execute(
        f"SELECT episode_id, title, start_at, end_at, event_count FROM l2_episodes WHERE {where} "
        f"ORDER BY end_at DESC LIMIT {int(limit)}", params).fetchall()
