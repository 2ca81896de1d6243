"""Forget (architecture §14): remove evidence everywhere, and what was derived from it.

Deleting an L1 event takes, through the schema's cascades and triggers, its full-text row, its
chunks and vectors, its queue jobs, its entity links and its L2 evidence; an L2 row left with no
evidence goes too (and what it had replaced is current again). Here, on top: every L3 summary
that cited a forgotten event, or whose window held one, is deleted (its text may quote it or name
it among the window's topics) and its windows are summarised again on the next run from what
remains; every fact whose message pointers (source, proposal,
acceptance) name a forgotten message is deleted, and an extraction's episode goes with the last of
its messages; the snapshots that listed what went are rebuilt and the entities left with nothing
are dropped, in the same transaction. Runtime traces (tool executions, audit records) matching the
same criteria go too, with the L4 executions learnt from them: the tool's counts drop by what they
had added and its strategy, which may quote them, is distilled again from what remains. An entity
forgotten by name goes with its aliases, edges, assertions and snapshot.

Each function here works on one chunk inside the caller's write transaction and leaves the memory
consistent — nothing derived cites a row that is gone — so a job (:mod:`.forget_job`) can run them
in short transactions and stop anywhere. Each returns what every table lost.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from .errors import InvalidInput
from .l2 import endings, episodes, snapshots
from .l2.maintenance import drop_orphans
from .store import activity_blocks
from .store import forgetting as forget_rows
from .store.connection import Connection
from .store.entities import name_key
from .store.generations import note_events_deleted
from .store.summaries import redraw_citing
from .text import fts_phrase

COUNTED = ("fact_events", "event_chunks", "embedding_jobs", "l2_projection_jobs", "l1_event_entities",
           "entity_mentions", "l2_evidence", "kg_edges", "tom_trait_assertions", "l2_episodes",
           "l3_summaries", "summary_event_links", "memory_facts", "chat_extraction", "fact_extractions",
           "runtime_traces", "l4_execution_traces", "procedural_skills", "entity_catalog", "tom_snapshots")


@dataclass
class Targets:
    """The rows a forget request names, found when it is made (rowids: the job stores them, not names)."""

    events: list[int] = field(default_factory=list)
    traces: list[int] = field(default_factory=list)
    entities: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events or self.traces or self.entities)


def find_targets(conn: Connection, *, event_ids=None, source_item_ids=None, entity: str | None = None,
                 source: str | None = None, start: float | None = None, end: float | None = None) -> Targets:
    """What the criteria (combined with AND) name now. ``ValueError`` when they name nothing at all."""
    others = bool(event_ids or source_item_ids or source or start is not None or end is not None)
    entities: list[int] = []
    if entity:
        entities = forget_rows.entities_named(conn, name_key(entity))
    elif not others:
        raise InvalidInput("say what to forget: event ids, item ids, an entity, a source or a time range")
    events = forget_rows.event_rowids_matching(conn, event_ids=event_ids, source_item_ids=source_item_ids,
                                               source=source, start=start, end=end,
                                               entity_key=name_key(entity) if entity else None, entity_ids=entities,
                                               phrase=fts_phrase(entity) if entity else None)
    if event_ids or source_item_ids:
        # An activity block named by id stands for its members: forgetting it forgets the visits it counts.
        events = sorted(set(events) | set(activity_blocks.member_rowids_of_blocks(
            conn, activity_blocks.blocks_touching(conn, events, members=False))))
    traces: list[int] = []
    if not entity:      # an entity names no trace: those are kept
        traces = forget_rows.trace_rowids_matching(conn, event_ids=event_ids, source_item_ids=source_item_ids,
                                                   source=source, start=start, end=end)
    # Forgetting by entity AND something else narrows the events; the entity itself goes only when asked alone.
    alone = entity and not others
    return Targets(events, traces, entities if alone else [])


PREVIEW_SAMPLE = 10


def preview(conn: Connection, criteria: dict, sample: int = PREVIEW_SAMPLE) -> dict:
    """What forgetting by ``criteria`` would remove now, without removing anything: the events per source, the
    newest ``sample`` of them, the runtime traces, the entities forgotten by name, and the saved facts that cite
    one of the events (they go too). ``InvalidInput`` when the criteria say nothing."""
    targets = find_targets(conn, **criteria)
    newest = forget_rows.newest_of_rowids(conn, targets.events, sample)
    pointers = forget_rows.chat_pointers_of_rowids(conn, targets.events)
    return {"events": len(targets.events), "by_source": forget_rows.sources_of_rowids(conn, targets.events),
            "traces": len(targets.traces), "entities": forget_rows.entity_names_of(conn, targets.entities),
            "facts": sorted(forget_rows.facts_citing(conn, pointers)),
            "newest": [{"id": event_id, "at": at, "source": source, "text": text, "source_item_id": item_id,
                        "session_id": session_id} for event_id, at, source, text, item_id, session_id in newest]}


def _counts(conn: Connection) -> dict[str, int]:
    counts = forget_rows.row_counts(conn, COUNTED)
    # chunk_vectors holds one row per event_chunks row (a trigger deletes it with its chunk); counting the
    # vec0 table itself reads all of its chunks.
    counts["chunk_vectors"] = counts["event_chunks"]
    return counts


def _removed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {table: before[table] - after[table] for table in before if before[table] > after[table]}


@dataclass
class Removed:
    """What one chunk removed: rows per table, and the chat sessions whose working memory must end."""

    counts: dict[str, int] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)


def forget_events(conn: Connection, rowids: Sequence[int], now: float | None = None) -> Removed:
    """Inside the caller's write transaction: remove these L1 events and what depends on them."""
    now = time.time() if now is None else now
    # A block quotes its members' titles: it goes with any of them (core/aggregation/fold.py ``refold`` renders
    # it again from the members left, once the forget is done).
    blocks = activity_blocks.blocks_touching(conn, list(rowids))
    activity_blocks.mark_stale(conn, blocks)
    rowids = sorted(set(rowids) | set(activity_blocks.live_rowids_of_blocks(conn, blocks)))
    before = _counts(conn)
    rows = forget_rows.events_of_rowids(conn, rowids)
    if not rows:
        return Removed()
    # A fact names its message by event id, or by the chat item id it was given before it was stored.
    _forget_facts(conn, {r[0] for r in rows} | {r[1] for r in rows if r[1] and r[3] == "chat"})
    # Every summary that cites a forgotten event or was drawn over a window holding one goes (its topics and
    # "Mentioned" come from all the window's events), and its window is summarised again from what remains.
    redraw_citing(conn, rowids)
    # An extraction's episode and report may quote any of its messages: it goes when one does, and
    # the messages left are read again (what they still support is found, no more).
    extractions = forget_rows.extractions_of_events(conn, rowids)
    touched = forget_rows.entities_touched_by(conn, rowids)
    ended = endings.ended_by(conn, rowids)
    forget_rows.delete_events(conn, rowids)
    endings.reinstate(conn, ended)   # "I quit Acme" forgotten: Acme is current again
    note_events_deleted(conn)   # a summary drawn from these events meanwhile is not written (l3/jobs.py)
    episodes.upkeep(conn)       # once per episode that lost events, not once per event (the trigger queues)
    forget_rows.delete_extractions(conn, extractions)
    # A session with no message left starts again at generation 0: no retry state may carry over.
    forget_rows.delete_retries_of_gone_sessions(conn)
    _settle_entities(conn, touched, now)
    return Removed(_removed(before, _counts(conn)), {r[2] for r in rows if r[2]})


def _settle_entities(conn: Connection, touched: list[int], now: float) -> None:
    """At once, not at the next maintenance: entities left with nothing go (their name was the forgotten
    words), and the snapshots that listed what went are rebuilt."""
    drop_orphans(conn, among=touched)
    while snapshots.refresh_queued(conn, now):
        pass


def forget_traces(conn: Connection, rowids: Sequence[int]) -> Removed:
    """Inside the caller's write transaction: remove these runtime traces and what L4 learnt from them."""
    rowids = list(rowids)
    if not rowids:
        return Removed()
    before = _counts(conn)
    _forget_traces(conn, rowids)
    return Removed(_removed(before, _counts(conn)))


def forget_entities(conn: Connection, entity_ids: Sequence[int], now: float | None = None) -> Removed:
    """Inside the caller's write transaction: remove these entities (forgotten by name) with their aliases,
    mentions, edges, assertions and snapshot; the snapshots of others that listed them are rebuilt."""
    now = time.time() if now is None else now
    ids = forget_rows.stored_entities(conn, entity_ids)
    if not ids:
        return Removed()
    before = _counts(conn)
    neighbours = forget_rows.edge_neighbours_of(conn, ids)
    forget_rows.delete_entities(conn, ids)
    survivors = sorted(set(neighbours) - set(ids))
    forget_rows.queue_snapshot_refresh(conn, survivors)
    _settle_entities(conn, survivors, now)
    return Removed(_removed(before, _counts(conn)))


def _forget_facts(conn: Connection, message_ids: set[str]) -> None:
    """Facts that point at a forgotten message hold its words or rest on them: they go, and so does
    every fact merged from one of them (its text holds theirs). What one of them had replaced or
    absorbed is current again — unless something later replaced that, or the user deleted it."""
    doomed = forget_rows.facts_citing(conn, sorted(message_ids))
    frontier = set(doomed)
    while frontier:
        frontier = forget_rows.facts_merged_from(conn, sorted(frontier)) - doomed
        doomed |= frontier
    if not doomed:
        return
    status = forget_rows.fact_statuses(conn, sorted(doomed))
    after = forget_rows.fact_successors(conn, sorted(doomed))
    retired = forget_rows.facts_retired_by(conn, sorted(doomed))
    for fact_id, replaced_by in retired:
        # Follow what replaced it past the forgotten facts: the first survivor replaces it now; when
        # the chain ends in a forgotten fact that was current, it is current again; when the user had
        # deleted that one, it stays retired.
        last = replaced_by
        while (following := after.get(last)) is not None and following in doomed:
            last = following
        survivor = after.get(last)
        if survivor is not None:
            forget_rows.replace_fact_by(conn, fact_id, survivor)
        elif status[last] == "active":
            forget_rows.reinstate_fact(conn, fact_id)
        else:
            forget_rows.clear_fact_successor(conn, fact_id)
    forget_rows.delete_facts(conn, sorted(doomed))


def _forget_traces(conn: Connection, traces: list[int]) -> None:
    """Runtime traces go with the L4 executions learnt from them; the tools' experience is re-derived."""
    learnt = forget_rows.executions_learnt_from(conn, traces)
    forget_rows.delete_traces(conn, traces)
    for skill_id, runs, successes, failures in learnt:
        forget_rows.unlearn(conn, skill_id, runs, successes, failures)
