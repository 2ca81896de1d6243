"""L2 episodes (``l2_episodes``): the reads recall makes. The L2 worker's writes are still in ``core/l2``
(issue 18, item 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection


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
