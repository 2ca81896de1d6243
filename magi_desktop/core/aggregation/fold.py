"""Folding new events into activity blocks, inside the transaction that stores them (architecture §16).

A block is an L1 event of its own: an activity payload of the members' source whose action is the rule's
block action (``browse_site``, ``run_commands``, ``listen_artist``) and whose object is ``activity_block``,
written by the ordinary write path (validated, redacted, rendered by its template, classified — a sensor's
observation, never the user's word). Its natural key is its rule, hour and topic, so each batch that adds
members stores a new version and the stored one is superseded (store/supersede.py): the current hour's
block grows as the hour goes on. Its members stay stored and searchable; window lists and summaries count
the block instead of them (store/activity_blocks.py ``unfolded``).

A block is not cognition-eligible: its members already carry the behaviour to L2, and the block would count
each visit a second time there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..contracts import MemoryEvent
from ..errors import InvalidInput
from ..governance import Scope
from ..ingest import L1_ONLY
from ..store import activity_blocks as store
from ..store.connection import Connection
from ..store.l1 import insert_events
from .rules import (
    BLOCK_OBJECT,
    MIN_MEMBERS,
    RULES,
    Member,
    Rule,
    block_key,
    block_provenance,
    citation,
    hour_of,
    rule_for_action,
    rule_named,
    version_id,
)

Normalize = Callable[[Mapping[str, Any], float], tuple[MemoryEvent, str]]
Stored = list[tuple[int, MemoryEvent]]      # (rowid, event) of the block versions stored


def enabled_rules(conn: Connection) -> set[str]:
    """The rules that fold: each rule's default unless the user chose otherwise."""
    chosen = store.stored_settings(conn)
    return {rule.name for rule in RULES if chosen.get(rule.name, rule.default)}


def settings(conn: Connection) -> dict[str, bool]:
    """Every rule and whether it folds."""
    enabled = enabled_rules(conn)
    return {rule.name: rule.name in enabled for rule in RULES}


def set_enabled(conn: Connection, rule: str, enabled: bool, now: float | None = None) -> None:
    """Turn a rule on or off (the events stored so far keep their blocks; what comes next is folded or not)."""
    if rule_named(rule) is None:
        raise InvalidInput(f"no aggregation rule {rule!r}; the rules are {', '.join(r.name for r in RULES)}")
    store.save_setting(conn, rule, enabled, now)


def _activity(event: MemoryEvent) -> dict[str, Any]:
    return (event.metadata.get("timeline") or {}).get("activity") or {}


def is_block(event: MemoryEvent) -> bool:
    return _activity(event).get("object_code") == BLOCK_OBJECT


def foldable(event: MemoryEvent) -> bool:
    """Whether a rule may fold this event (if the rule is on): an observation of a rule's action, not a block."""
    return (rule_for_action(_activity(event).get("action_code")) is not None and not is_block(event)
            and event.l1_retrieval_scope == Scope.FACT_AUTHORITATIVE.value)


def fold(conn: Connection, inserted: Sequence[tuple[int, MemoryEvent]], normalize: Normalize, now: float) -> Stored:
    """File the newly inserted events the enabled rules fold under their blocks, and store a new version of
    every block that gained one. Called with each ingest batch's new L1 rows; cheap when none is foldable."""
    candidates = []
    for rowid, event in inserted:
        if foldable(event):
            timeline = event.metadata.get("timeline") or {}
            activity = timeline.get("activity") or {}
            rule = rule_for_action(activity.get("action_code"))
            assert rule is not None
            candidates.append((rule, rowid, event, activity, timeline.get("provenance") or {}))
    if not candidates:
        return []
    enabled = enabled_rules(conn)
    descriptors: dict[tuple[str, str], tuple[str, str, str, str, str, float]] = {}
    filed: list[tuple[tuple[str, str], int]] = []
    for rule, rowid, event, activity, provenance in candidates:
        topic, label = rule.topic(provenance), rule.label(provenance)
        if rule.name not in enabled or topic is None or label is None:
            continue
        hour = hour_of(event.timestamp)
        key = (event.source, block_key(rule, hour, topic))
        descriptors.setdefault(key, (*key, rule.name, str(activity.get("source_code") or event.source), topic, hour))
        filed.append((key, rowid))
    if not filed:
        return []
    ids = store.block_ids(conn, descriptors.values())
    store.add_members(conn, [(ids[key], member) for key, member in filed])
    return render(conn, sorted(set(ids.values())), normalize, now)


def render(conn: Connection, block_ids: Sequence[int], normalize: Normalize, now: float) -> Stored:
    """Store the current version of each block from its members (a block left with none is dropped; one with
    fewer than ``MIN_MEMBERS`` is not stored). An unchanged block is a duplicate and stays as it is."""
    events: list[MemoryEvent] = []
    empty: list[int] = []
    members_of = store.members_of(conn, block_ids)
    for block in store.blocks_by_id(conn, block_ids):
        rule = rule_named(block.rule)
        stored = members_of.get(block.id, [])
        if not stored:
            empty.append(block.id)
        if rule is None or len(stored) < MIN_MEMBERS:
            continue
        members = [_member(rule, m) for m in stored]
        payload: dict[str, Any] = {
            "source_type": block.source,
            "source_item_id": version_id(block.natural_key, members),
            "occurred_at": members[0].occurred_at,
            "activity": {"source_code": block.source_code, "action_code": rule.block_action,
                         "object_code": BLOCK_OBJECT},
            "provenance": block_provenance(rule, block.topic, block.hour, members),
            "natural_key": block.natural_key,
            "tags": [BLOCK_OBJECT],
        }
        if rule.topic_entity_type is not None:
            payload["entities"] = [{"mention_text": block.topic, "entity_type": rule.topic_entity_type}]
        event, _ = normalize(payload, now)
        # Known once its last member was: "as of" a moment inside the hour, the members so far are listed
        # one by one (the block is not visible yet), never a block holding later ones.
        # The members are cited in the metadata, beside what the payload said: they are the memory's own ids,
        # not something observed, so they are neither redacted nor part of what a search reads.
        events.append(event._replace(ingest_target=L1_ONLY, cognition_eligible=False,
                                     recorded_at=max(m.recorded_at for m in members),
                                     metadata={**event.metadata, BLOCK_OBJECT: citation(members)}))
    store.drop_blocks(conn, empty)
    store.mark_fresh(conn, block_ids)
    if not events:
        return []
    outcomes = insert_events(conn, events)
    return [(outcome.rowid, event) for event, outcome in zip(events, outcomes, strict=True)
            if outcome.rowid is not None]


def _member(rule: Rule, stored: store.StoredMember) -> Member:
    """What the block counts of a member, read from the member as it is stored now (re-redacted, maybe)."""
    try:
        provenance = json.loads(stored.provenance_json or "{}")
    except ValueError:
        provenance = {}
    if not isinstance(provenance, dict):
        provenance = {}
    return Member(stored.event_id, stored.occurred_at, stored.recorded_at, rule.label(provenance) or "",
                  rule.seconds(provenance))


def refold(conn: Connection, normalize: Normalize, now: float) -> Stored:
    """After a forget removed blocks with their members (a block quotes its members' titles): render again
    the blocks whose members are left, drop those with none."""
    return render(conn, store.stale_blocks(conn), normalize, now)
