"""L2 episodes (``l2_episodes``): the reads recall makes, then the L2 worker's writes and upkeep
(``core/l2/episodes.py``)."""

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


# --- the L2 worker's writes and the reads they make (core/l2/episodes.py) -------------------------------------

def batch_key_of(conn: Connection, event_rowid: int) -> str | None:
    """The batch key of an event's L2 projection job, if it has one."""
    row = conn.execute("SELECT batch_key FROM l2_projection_jobs WHERE event_rowid = ?", (event_rowid,)).fetchone()
    return row[0] if row else None


def open_episode(conn: Connection, batch_key: str, start: float, end: float) -> tuple[int, float, float, str] | None:
    """(episode_id, start_at, end_at, entity_ids_json) of the latest candidate or promoted episode of a batch key
    that reaches into [start, end]."""
    return conn.execute(
        "SELECT episode_id, start_at, end_at, entity_ids_json FROM l2_episodes WHERE batch_key = ? "
        "AND status IN ('candidate', 'promoted') AND end_at >= ? AND start_at <= ? ORDER BY end_at DESC LIMIT 1",
        (batch_key, start, end)).fetchone()


def add_episode(conn: Connection, batch_key: str, title: str, start: float, end: float, now: float) -> int:
    """A new candidate episode without events yet; returns its id."""
    episode_id = conn.execute(
        "INSERT INTO l2_episodes (batch_key, title, start_at, end_at, event_count, entity_ids_json, updated_at) "
        "VALUES (?, ?, ?, ?, 0, '[]', ?)", (batch_key, title, start, end, now)).lastrowid
    return episode_id


def extend_episode(conn: Connection, episode_id: int, start: float, end: float, added: int, entity_ids_json: str,
                   now: float) -> None:
    """Stretch an episode over [start, end], counting ``added`` more events, with these entities."""
    conn.execute(
        "UPDATE l2_episodes SET start_at = min(start_at, ?), end_at = max(end_at, ?), event_count = event_count + ?, "
        "entity_ids_json = ?, updated_at = ? WHERE episode_id = ?",
        (start, end, added, entity_ids_json, now, episode_id))


def candidate_episodes(conn: Connection) -> list[tuple[int, float, float, int, str]]:
    """(episode_id, start_at, end_at, event_count, entity_ids_json) of the candidates, earliest first."""
    return conn.execute(
        "SELECT episode_id, start_at, end_at, event_count, entity_ids_json FROM l2_episodes "
        "WHERE status = 'candidate' ORDER BY start_at").fetchall()


def merge_episode(conn: Connection, episode_id: int, into: int, start: float, end: float, now: float) -> None:
    """An episode becomes part of ``into``: its evidence moves there, which stretches over it and is recounted."""
    conn.execute("UPDATE l2_episodes SET status = 'merged', merged_into = ?, updated_at = ? "
                 "WHERE episode_id = ?", (into, now, episode_id))
    conn.execute("INSERT OR IGNORE INTO l2_evidence (kind, row_key, event_rowid) SELECT 'episode', ?, "
                 "event_rowid FROM l2_evidence WHERE kind = 'episode' AND row_key = ?",
                 (str(into), str(episode_id)))
    conn.execute("UPDATE l2_episodes SET start_at = min(start_at, ?), end_at = max(end_at, ?), "
                 "event_count = (SELECT count(*) FROM l2_evidence WHERE kind = 'episode' AND row_key = ?), "
                 "updated_at = ? WHERE episode_id = ?", (start, end, str(into), now, into))


def promote_episode(conn: Connection, episode_id: int, now: float) -> None:
    conn.execute("UPDATE l2_episodes SET status = 'promoted', updated_at = ? WHERE episode_id = ?",
                 (now, episode_id))


def discard_episode(conn: Connection, episode_id: int, now: float) -> None:
    conn.execute("UPDATE l2_episodes SET status = 'discarded', updated_at = ? WHERE episode_id = ?",
                 (now, episode_id))


def promoted_episodes_around(conn: Connection, other_than: int, start: float, end: float) -> list[tuple[int, str]]:
    """(episode_id, entity_ids_json) of the promoted episodes but ``other_than`` that begin by ``end`` and end
    from ``start``."""
    return conn.execute(
        "SELECT episode_id, entity_ids_json FROM l2_episodes WHERE status = 'promoted' AND episode_id != ? "
        "AND start_at <= ? AND end_at >= ?", (other_than, end, start)).fetchall()


def episodes_to_upkeep(conn: Connection) -> list[int]:
    """The episodes that lost evidence (queued by the l2_evidence trigger)."""
    return [r[0] for r in conn.execute("SELECT episode_id FROM l2_episode_upkeep")]


def recount_and_retitle(conn: Connection, episode_id: int) -> None:
    """Count an episode's events again and title it after its first user turn (else its first event)."""
    key = str(episode_id)
    conn.execute(
        "UPDATE l2_episodes SET event_count = (SELECT count(*) FROM l2_evidence WHERE kind = 'episode' "
        "AND row_key = ?), title = coalesce((SELECT substr(e.content, 1, 80) FROM l2_evidence v JOIN fact_events e "
        "ON e.id = v.event_rowid WHERE v.kind = 'episode' AND v.row_key = ? "
        "ORDER BY e.author_type != 'user', e.timestamp LIMIT 1), title) WHERE episode_id = ?",
        (key, key, episode_id))


def clear_upkeep(conn: Connection) -> None:
    conn.execute("DELETE FROM l2_episode_upkeep")
