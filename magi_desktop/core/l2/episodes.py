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

from ..store import episodes as store
from ..store.connection import Connection
from ..store.entities import entities_of_event_rowids
from ..store.evidence import link_evidence

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
    batch_key = store.batch_key_of(conn, events[0].rowid)
    if batch_key is None:
        batch_key = f"event:{events[0].rowid}"
    first, last = events[0].timestamp, events[-1].timestamp
    entity_ids = entities_of_event_rowids(conn, [e.rowid for e in events])
    row = store.open_episode(conn, batch_key, first - EPISODE_GAP_SECONDS, last + EPISODE_GAP_SECONDS)
    if row is None:
        title = next((e.content for e in events if e.author == "user"), events[0].content)
        episode_id = store.add_episode(conn, batch_key, title[:TITLE_CHARS], first, last, now)
        known: set[int] = set()
    else:
        episode_id, known = row[0], set(json.loads(row[3]))
    added = sum(link_evidence(conn, "episode", episode_id, e.rowid) for e in events)
    store.extend_episode(conn, episode_id, first, last, added, json.dumps(sorted(known | entity_ids)), now)
    return episode_id


def maintain(conn: Connection, now: float) -> dict[str, int]:
    """Promote, discard and merge candidates; returns counts."""
    done = {"promoted": 0, "discarded": 0, "merged": 0}
    for episode_id, start, end, count, entities in store.candidate_episodes(conn):
        rival = _overlapping(conn, episode_id, start, end, set(json.loads(entities)))
        if rival is not None:
            store.merge_episode(conn, episode_id, rival, start, end, now)
            done["merged"] += 1
        elif count >= PROMOTE_MIN_EVENTS and end - start >= PROMOTE_MIN_SECONDS:
            store.promote_episode(conn, episode_id, now)
            done["promoted"] += 1
        elif now - end >= DISCARD_AFTER_SECONDS:
            store.discard_episode(conn, episode_id, now)
            done["discarded"] += 1
    return done


def _overlapping(conn: Connection, episode_id: int, start: float, end: float, entities: set[int]) -> int | None:
    if not entities:
        return None
    for other, other_entities in store.promoted_episodes_around(conn, episode_id, start - MERGE_GAP_SECONDS,
                                                                 end + MERGE_GAP_SECONDS):
        theirs = set(json.loads(other_entities))
        if theirs and len(entities & theirs) / len(entities | theirs) >= MERGE_MIN_OVERLAP:
            return other
    return None


def upkeep(conn: Connection) -> int:
    """Recount and retitle, once each, the episodes that lost evidence (queued by the l2_evidence trigger);
    call it in the transaction that deleted the events. Returns how many were brought up to date."""
    queued = store.episodes_to_upkeep(conn)
    for episode_id in queued:
        store.recount_and_retitle(conn, episode_id)
    store.clear_upkeep(conn)
    return len(queued)
