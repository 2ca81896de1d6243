"""Episodes: stretches of related activity (architecture §6).

Each projected batch extends the candidate episode of its batch key when it
follows within ``EPISODE_GAP_SECONDS``, else starts a new candidate.
Maintenance then promotes a candidate that has enough events over enough time,
discards one that stayed too small once it is over, and merges a candidate
into an episode it overlaps in time and shares most entities with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..store.connection import Connection
from .graph import link_evidence

EPISODE_GAP_SECONDS = 2 * 3600
PROMOTE_MIN_EVENTS = 4
PROMOTE_MIN_SECONDS = 120
DISCARD_AFTER_SECONDS = 24 * 3600     # a candidate this long over and still too small is dropped
MERGE_GAP_SECONDS = 1800
MERGE_MIN_OVERLAP = 0.5
TITLE_CHARS = 80


def extend_candidate(conn: Connection, events: Sequence, now: float) -> int | None:
    """Add a projected batch's events to its episode; returns the episode id."""
    if not events:
        return None
    batch_key = conn.execute("SELECT batch_key FROM l2_projection_jobs WHERE event_rowid = ?",
                             (events[0].rowid,)).fetchone()
    batch_key = batch_key[0] if batch_key else f"event:{events[0].rowid}"
    first, last = events[0].timestamp, events[-1].timestamp
    entity_ids = {r[0] for r in conn.execute(
        f"SELECT entity_id FROM l1_event_entities WHERE event_rowid IN ({', '.join('?' * len(events))})",
        [e.rowid for e in events])}
    row = conn.execute(
        "SELECT episode_id, start_at, end_at, entity_ids_json FROM l2_episodes WHERE batch_key = ? "
        "AND status IN ('candidate', 'promoted') AND end_at >= ? AND start_at <= ? ORDER BY end_at DESC LIMIT 1",
        (batch_key, first - EPISODE_GAP_SECONDS, last + EPISODE_GAP_SECONDS)).fetchone()
    if row is None:
        title = next((e.content for e in events if e.author == "user"), events[0].content)
        episode_id = conn.execute(
            "INSERT INTO l2_episodes (batch_key, title, start_at, end_at, event_count, entity_ids_json, updated_at) "
            "VALUES (?, ?, ?, ?, 0, '[]', ?)", (batch_key, title[:TITLE_CHARS], first, last, now)).lastrowid
        known: set[int] = set()
    else:
        episode_id, known = row[0], set(json.loads(row[3]))
    added = sum(link_evidence(conn, "episode", episode_id, e.rowid) for e in events)
    conn.execute(
        "UPDATE l2_episodes SET start_at = min(start_at, ?), end_at = max(end_at, ?), event_count = event_count + ?, "
        "entity_ids_json = ?, updated_at = ? WHERE episode_id = ?",
        (first, last, added, json.dumps(sorted(known | entity_ids)), now, episode_id))
    return episode_id


def maintain(conn: Connection, now: float) -> dict[str, int]:
    """Promote, discard and merge candidates; returns counts."""
    done = {"promoted": 0, "discarded": 0, "merged": 0}
    candidates = conn.execute(
        "SELECT episode_id, start_at, end_at, event_count, entity_ids_json FROM l2_episodes "
        "WHERE status = 'candidate' ORDER BY start_at").fetchall()
    for episode_id, start, end, count, entities in candidates:
        rival = _overlapping(conn, episode_id, start, end, set(json.loads(entities)))
        if rival is not None:
            conn.execute("UPDATE l2_episodes SET status = 'merged', merged_into = ?, updated_at = ? "
                         "WHERE episode_id = ?", (rival, now, episode_id))
            conn.execute("INSERT OR IGNORE INTO l2_evidence (kind, row_key, event_rowid) SELECT 'episode', ?, "
                         "event_rowid FROM l2_evidence WHERE kind = 'episode' AND row_key = ?",
                         (str(rival), str(episode_id)))
            conn.execute("UPDATE l2_episodes SET start_at = min(start_at, ?), end_at = max(end_at, ?), "
                         "event_count = (SELECT count(*) FROM l2_evidence WHERE kind = 'episode' AND row_key = ?), "
                         "updated_at = ? WHERE episode_id = ?", (start, end, str(rival), now, rival))
            done["merged"] += 1
        elif count >= PROMOTE_MIN_EVENTS and end - start >= PROMOTE_MIN_SECONDS:
            conn.execute("UPDATE l2_episodes SET status = 'promoted', updated_at = ? WHERE episode_id = ?",
                         (now, episode_id))
            done["promoted"] += 1
        elif now - end >= DISCARD_AFTER_SECONDS:
            conn.execute("UPDATE l2_episodes SET status = 'discarded', updated_at = ? WHERE episode_id = ?",
                         (now, episode_id))
            done["discarded"] += 1
    return done


def _overlapping(conn: Connection, episode_id: int, start: float, end: float, entities: set[int]) -> int | None:
    if not entities:
        return None
    for other, other_entities in conn.execute(
            "SELECT episode_id, entity_ids_json FROM l2_episodes WHERE status = 'promoted' AND episode_id != ? "
            "AND start_at <= ? AND end_at >= ?", (episode_id, end + MERGE_GAP_SECONDS, start - MERGE_GAP_SECONDS)):
        theirs = set(json.loads(other_entities))
        if theirs and len(entities & theirs) / len(entities | theirs) >= MERGE_MIN_OVERLAP:
            return other
    return None


def upkeep(conn: Connection) -> int:
    """Recount and retitle, once each, the episodes that lost evidence (queued by the l2_evidence trigger);
    call it in the transaction that deleted the events. Returns how many were brought up to date."""
    queued = [r[0] for r in conn.execute("SELECT episode_id FROM l2_episode_upkeep")]
    for episode_id in queued:
        key = str(episode_id)
        conn.execute(
            "UPDATE l2_episodes SET event_count = (SELECT count(*) FROM l2_evidence WHERE kind = 'episode' "
            "AND row_key = ?), title = coalesce((SELECT substr(e.content, 1, 80) FROM l2_evidence v JOIN fact_events e "
            "ON e.id = v.event_rowid WHERE v.kind = 'episode' AND v.row_key = ? "
            "ORDER BY e.author_type != 'user', e.timestamp LIMIT 1), title) WHERE episode_id = ?",
            (key, key, episode_id))
    conn.execute("DELETE FROM l2_episode_upkeep")
    return len(queued)
