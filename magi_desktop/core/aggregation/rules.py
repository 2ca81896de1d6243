"""Which events are folded into activity blocks, by what topic, and what a block says (architecture §16).

One rule per member action, for any source (as templates are, render.py): every browser's ``visit_page``,
every shell's ``run_command``, every player's ``listen_music``, from a first-party collector or any other
plugin. A rule names the topic an event is counted under within its clock hour (the site, the program,
the artist) and the label it is counted as (the page title, the command, the track); the block's
provenance is made from those counts alone, so a block is a pure function of its members.

App usage is not here: its collector already merges samples into one hour block per app (``use_app`` with a
natural key, plugins/magi_plugins/app_usage.py), so no raw member reaches the memory to fold.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..render import hostname

HOUR = 3600.0
MIN_MEMBERS = 2          # one visit stays itself: a block of one would only hide it behind a longer sentence
TOP_LABELS = 5           # the most telling titles / commands / tracks a block names
LABEL_CHARS = 120
CITED_MEMBERS = 1000     # event ids a block's metadata lists (the table of members holds them all)
BLOCK_OBJECT = "activity_block"     # the block's activity.object_code: how any reader tells a block apart


class Member(NamedTuple):
    """What a block keeps of one member (store/activity_blocks.py)."""

    event_id: str
    occurred_at: float
    recorded_at: float
    label: str
    seconds: float | None


@dataclass(frozen=True)
class Rule:
    name: str                  # the setting's name, the collector it serves
    action: str                # the members' action_code
    block_action: str          # the block's action_code (its template in render.py)
    count_field: str           # the provenance field of the member count ("visits")
    topic: Callable[[Mapping[str, Any]], str | None]       # the member's topic within its hour, from provenance
    label: Callable[[Mapping[str, Any]], str | None]       # what it is counted as
    seconds: Callable[[Mapping[str, Any]], float | None] = lambda _: None
    topic_field: str = "topic"     # the provenance field the topic is stored under (L3 reads it: "domain")
    topic_entity_type: str | None = None     # the topic is an entity of this type (an artist): the block names it
    default: bool = True


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return " ".join(value.split())[:LABEL_CHARS]
    return None


def _site(provenance: Mapping[str, Any]) -> str | None:
    domain = _text(provenance.get("domain"))
    if domain is None and isinstance(provenance.get("url"), str):
        domain = _text(hostname(provenance["url"]))
    return domain.lower().removeprefix("www.") if domain else None


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset(("sudo", "time", "nohup", "exec", "env", "command", "builtin"))


def _program(provenance: Mapping[str, Any]) -> str | None:
    """The program a command runs: its first word past variable assignments and wrappers (``sudo``), without
    its folder, so ``git status`` and ``git push`` are one topic."""
    command = provenance.get("command")
    if not isinstance(command, str):
        return None
    for word in command.split():
        if not (_ASSIGNMENT.match(word) or word in _WRAPPERS):
            return _text(word.rsplit("/", 1)[-1])
    return None


def _artist(provenance: Mapping[str, Any]) -> str | None:
    return _text(provenance.get("artist_name")) or _text(provenance.get("artist")) or _text(
        provenance.get("track_name"))


def _play_seconds(provenance: Mapping[str, Any]) -> float | None:
    value = provenance.get("play_duration_sec")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


RULES: tuple[Rule, ...] = (
    Rule("browser", "visit_page", "browse_site", "visits", _site,
         lambda p: _text(p.get("title")) or _text(p.get("url")), topic_field="domain"),
    Rule("terminal", "run_command", "run_commands", "commands", _program, lambda p: _text(p.get("command")),
         topic_field="program"),
    Rule("music", "listen_music", "listen_artist", "plays", _artist,
         lambda p: _text(p.get("track_name")) or _text(p.get("title")), _play_seconds,
         topic_field="artist_name", topic_entity_type="creator"),
)
RULE_NAMES = tuple(rule.name for rule in RULES)
_BY_ACTION = {rule.action: rule for rule in RULES}
_BY_NAME = {rule.name: rule for rule in RULES}


def rule_for_action(action: str | None) -> Rule | None:
    return _BY_ACTION.get(action or "")


def rule_named(name: str) -> Rule | None:
    return _BY_NAME.get(name)


_BY_BLOCK_ACTION = {rule.block_action: rule for rule in RULES}


def block_weight(timeline: Mapping[str, Any]) -> int:
    """How many events a stored event stands for: an activity block its members (from its ``timeline``
    metadata), any other event itself."""
    activity, provenance = timeline.get("activity") or {}, timeline.get("provenance") or {}
    rule = (_BY_BLOCK_ACTION.get(str(activity.get("action_code"))) if activity.get("object_code") == BLOCK_OBJECT
            else None)
    count = provenance.get(rule.count_field) if rule is not None else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


def hour_of(timestamp: float) -> float:
    return float(int(timestamp // HOUR) * HOUR)


def block_key(rule: Rule, hour: float, topic: str) -> str:
    """The natural key of a block: one per rule, clock hour and topic (within a source)."""
    return f"{BLOCK_OBJECT}:{rule.name}:{int(hour)}:{topic}"


def citation(members: Sequence[Member]) -> dict[str, Any]:
    """The members a block cites (its metadata ``activity_block``), soonest first, and how many there are."""
    ordered = sorted(members, key=lambda m: (m.occurred_at, m.event_id))
    return {"members": [m.event_id for m in ordered[:CITED_MEMBERS]], "member_count": len(ordered)}


def version_id(natural_key: str, members: Sequence[Member]) -> str:
    """The item id of one version of a block: its key and which members it counts, so the same members make
    the same version (a duplicate) and any other set a new one."""
    digest = hashlib.sha1("\0".join(sorted(m.event_id for m in members)).encode()).hexdigest()[:16]
    return f"{natural_key}#{digest}"


def block_provenance(rule: Rule, topic: str, hour: float, members: Sequence[Member]) -> dict[str, Any]:
    """What a block says of its members: how many, over what span, the most frequent labels first (ties: the
    first seen), the total seconds where members have them."""
    ordered = sorted(members, key=lambda m: (m.occurred_at, m.event_id))
    counts = Counter(m.label for m in ordered)
    top = [label for label, _ in counts.most_common(TOP_LABELS)]
    first, last = ordered[0].occurred_at, ordered[-1].occurred_at
    provenance: dict[str, Any] = {
        rule.topic_field: topic,
        rule.count_field: len(ordered),
        "distinct": len(counts),
        "first_at": first,
        "last_at": last,
        "span_sec": round(last - first),
        "hour": hour,
        "top": top,
        "top_counts": [counts[label] for label in top],
    }
    seconds = [m.seconds for m in ordered if m.seconds is not None]
    if seconds:
        provenance["total_sec"] = round(sum(seconds))
    return provenance
