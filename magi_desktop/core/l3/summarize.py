"""What a window held, and the summary of it: extractive without an LLM, the summarizer tier with one.

The extractive summary says what the counts say and quotes what the user said: events per
source, the most frequent topics of each source (a site, a repository, an artist), the
entities mentioned most, what is new against the previous window and what continues, and
a few of the user's own statements verbatim. It invents nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..aggregation.rules import block_weight
from ..llm.base import LLMError, LLMProvider, Task
from ..store import activity_blocks, l1
from ..store import entities as store_entities
from ..store.connection import Connection
from .compress import compress

# What a summary of "what I did" is made of: the user's words and what sensors saw.
# An assistant's replies and hypotheticals are not what the user did.
INCLUDED_CLASSES = ("user_self_report", "user_question", "user_directive", "external_observation", "tool_result")
TOPIC_FIELDS = ("domain", "repo", "artist_name", "artist", "app", "summary", "shell", "track_name", "title")
TOP_TOPICS = 3
TOP_ENTITIES = 8
QUOTES = 3
QUOTE_CHARS = 160


@dataclass
class WindowEvent:
    rowid: int
    timestamp: float
    source: str
    author: str
    evidence_class: str
    content: str
    topic: str
    weight: int = 1          # the events it stands for: an activity block counts its members once (core/aggregation)


@dataclass
class Draft:
    title: str
    content: str
    data: dict[str, Any]
    links: list[int]                       # event rowids it cites
    children: list[int] = field(default_factory=list)
    model: str = "extractive"


SUMMARIZE = Task(
    name="l3_window_summary",
    tier="summarizer",
    instructions=(
        "Summarise what the user did in this time window, from the events given (already sampled per "
        "source). Write 2-5 plain sentences in the language most events use: the main activities and "
        "topics, with counts where they matter, what is new and what continues from the previous "
        "summary. Use only what the events say; never guess intentions or feelings. Also list up to "
        "five short topic phrases."),
    schema={
        "type": "object",
        "required": ["summary", "topics"],
        "additionalProperties": False,
        "properties": {
            "summary": {"type": "string", "minLength": 1, "maxLength": 2000},
            "topics": {"type": "array", "maxItems": 5, "items": {"type": "string", "minLength": 1, "maxLength": 80}},
        },
    },
)


def _timeline(metadata: str | None) -> dict:
    try:
        timeline = json.loads(metadata or "{}").get("timeline", {})
    except (json.JSONDecodeError, AttributeError):
        timeline = {}
    return timeline if isinstance(timeline, dict) else {}


def _topic(timeline: dict) -> str:
    provenance = timeline.get("provenance", {})
    for name in TOPIC_FIELDS:
        value = provenance.get(name) if isinstance(provenance, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()[:80]
    return ""


def window_events(conn: Connection, start: float, end: float) -> list[WindowEvent]:
    """The window's events, an activity block in place of its members, weighing as many (core/aggregation)."""
    rows = l1.events_of_classes_between(conn, INCLUDED_CLASSES, start, end)
    folded = activity_blocks.folded_members_between(conn, start, end)
    events = []
    for r in rows:
        if r[0] not in folded:
            timeline = _timeline(r[6])
            events.append(WindowEvent(r[0], r[1], r[2], r[3], r[4], r[5], _topic(timeline), block_weight(timeline)))
    return events


def fingerprint(events: list[WindowEvent]) -> str:
    return f"{len(events)}:{max((e.rowid for e in events), default=0)}"



def _entities(conn: Connection, rowids: list[int]) -> list[tuple[str, int]]:
    if not rowids:
        return []
    counts: Counter = Counter()
    for chunk in range(0, len(rowids), 500):
        part = rowids[chunk:chunk + 500]
        for name, n in store_entities.active_entity_mentions(conn, part):
            counts[name] += n
    return counts.most_common(TOP_ENTITIES)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS - 1].rstrip() + "…"


def extractive(conn: Connection, label: str, events: list[WindowEvent], previous: dict | None) -> Draft:
    """The summary of one hour or day from its events (``previous``: the data of the window before)."""
    sources: Counter = Counter()
    for e in events:
        sources[e.source] += e.weight
    topics: dict[str, list[tuple[str, int]]] = {}
    for source in sources:
        counted: Counter = Counter()
        for e in events:
            if e.source == source and e.topic:
                counted[e.topic] += e.weight
        if counted:
            topics[source] = counted.most_common(TOP_TOPICS)
    entities = _entities(conn, [e.rowid for e in events])
    sample = compress(events, source=lambda e: e.source, key=lambda e: e.topic or e.content)
    said = [e for e in sample if e.evidence_class == "user_self_report"][-QUOTES:]
    names = [name for name, _ in entities]
    before = set((previous or {}).get("entities", []))
    new = [n for n in names if n not in before] if previous is not None else []
    continuing = [n for n in names if n in before]

    parts = [f"{label}: {sum(sources.values())} events — "
             + ", ".join(f"{s} {n}" for s, n in sources.most_common()) + "."]
    for source, top in topics.items():
        parts.append(f"{source}: " + ", ".join(f"{t} ({n})" if n > 1 else t for t, n in top) + ".")
    if names:
        parts.append("Mentioned: " + ", ".join(names) + ".")
    if new and previous is not None:
        parts.append("New: " + ", ".join(new) + ".")
    if continuing:
        parts.append("Continuing: " + ", ".join(continuing) + ".")
    for event in said:
        text = event.content.split(": ", 1)[-1] if event.source == "chat" else event.content
        parts.append(f"You said: “{_quote(text)}”")
    data = {"sources": dict(sources), "topics": {s: [t for t, _ in top] for s, top in topics.items()},
            "entities": names, "new": new, "continuing": continuing, "sampled": len(sample)}
    main = ", ".join(t for s in list(topics)[:2] for t, _ in topics[s][:1]) or ", ".join(names[:2])
    title = f"{label}" + (f" — {main}" if main else "")
    return Draft(title=title, content=" ".join(parts), data=data, links=[e.rowid for e in sample])


def from_children(label: str, children: list[tuple[int, dict, list[int]]], peers: list[dict]) -> Draft:
    """A week or month from the day summaries inside it (id, data, linked rowids) and recent peers' data."""
    sources: Counter = Counter()
    topic_counts: dict[str, Counter] = {}
    entity_counts: Counter = Counter()
    links: list[int] = []
    for _, data, rowids in children:
        sources.update(data.get("sources", {}))
        for source, topics in data.get("topics", {}).items():
            topic_counts.setdefault(source, Counter()).update(topics)
        entity_counts.update(data.get("entities", []))
        links += rowids
    names = [n for n, _ in entity_counts.most_common(TOP_ENTITIES)]
    before = {n for peer in peers for n in peer.get("entities", [])}
    new = [n for n in names if n not in before] if peers else []
    continuing = [n for n in names if n in before]
    total = sum(sources.values())
    active = len(children)
    parts = [f"{label}: {total} events on {active} active day(s) — "
             + ", ".join(f"{s} {n}" for s, n in sources.most_common()) + "."]
    topics = {s: [t for t, _ in c.most_common(TOP_TOPICS)] for s, c in topic_counts.items()}
    for source, top in topics.items():
        parts.append(f"{source}: " + ", ".join(top) + ".")
    if names:
        parts.append("Mentioned most: " + ", ".join(names) + ".")
    if new:
        parts.append("New: " + ", ".join(new) + ".")
    if continuing:
        parts.append("Continuing: " + ", ".join(continuing) + ".")
    data = {"sources": dict(sources), "topics": topics, "entities": names, "new": new, "continuing": continuing,
            "active_days": active}
    main = ", ".join(t[0] for t in list(topics.values())[:2] if t) or ", ".join(names[:2])
    return Draft(title=label + (f" — {main}" if main else ""), content=" ".join(parts), data=data,
                 links=list(dict.fromkeys(links)), children=[cid for cid, _, _ in children])


def with_llm(llm: LLMProvider, draft: Draft, label: str, events: list[WindowEvent] | None,
             previous_text: str | None) -> Draft:
    """The summarizer tier rewrites the extractive draft's prose from the sampled events; the links,
    counts and data stay the extractive ones. A failing model leaves the extractive draft."""
    if llm.name == "rules":
        return draft
    sampled = set(draft.links)
    inputs = {
        "window": label,
        "counts": draft.data.get("sources", {}),
        "events": [{"at": e.timestamp, "source": e.source, "author": e.author, "text": e.content[:400]}
                   for e in (events or []) if e.rowid in sampled][:120],
        "extractive_summary": draft.content,
        "previous_summary": previous_text,
    }
    try:
        answer = llm.run(SUMMARIZE, inputs)
    except LLMError:
        return draft
    data = dict(draft.data, llm_topics=answer.get("topics", []))
    return Draft(title=draft.title, content=answer["summary"].strip(), data=data, links=draft.links,
                 children=draft.children, model=llm.model_for("summarizer"))
