"""The evidence pack: what a query returns — findings an agent can answer from, never raw rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any

from .modes import QueryMode

DEFAULT_TOKEN_BUDGET = 2000
FINDING_TEXT_CHARS = 800      # a finding's text is cut here (the event id leads to the rest)


def approx_tokens(text: str) -> int:
    """A cheap token estimate: ~4 characters per token for Latin text, 1 per CJK character."""
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
    return cjk + (len(text) - cjk + 3) // 4


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class Layer(StrEnum):
    """The memory's layers (architecture §2). A member is its string (``Layer.L2 == "L2"``; JSON writes ``"L2"``)."""

    L0 = "L0"       #: working memory of a session: rides along as ``EvidencePack.working_memory``, never a finding
    L1 = "L1"       #: a stored event: a chat turn, an observation, a tool run
    L2 = "L2"       #: derived belief: a graph edge, an assertion, a snapshot, an episode, a saved fact
    L3 = "L3"       #: a summary of a time window, or an insight
    L4 = "L4"       #: a tool's experience: its runs, breaker and distilled strategy


class PackStatus(StrEnum):
    """Whether an evidence pack answers its question (``EvidencePack.status``; JSON writes the string)."""

    OK = "ok"                       #: at least one finding answers
    INSUFFICIENT = "insufficient"   #: none does (related findings may still be there, ``answers`` false)


@dataclass
class Finding:
    """One piece of evidence in a pack: an event, or something the memory derived from events, with what it rests on.

    - ``layer``: a :class:`Layer` — ``L1`` a stored event, ``L2`` a belief or a saved fact, ``L3`` a summary or an
      insight, ``L4`` a tool's experience.
    - ``text``: what it says; an event's is cut at 800 characters (``Memory.get_event(event_id)`` has it all).
    - ``occurred_at``: UNIX seconds it is about (``occurred_at_iso()``, and ``to_dict()["occurred_at_iso"]``, in UTC).
    - ``source``: where it came from — the event's source (``chat``, ``git``, ``netease_music``…), or ``l2``,
      ``memory_facts``, ``l3``, ``l4`` for derived findings; ``source_item_id``: the source's own id of the event.
    - ``session_id``: the conversation it belongs to, if any.
    - ``author``: who said or did it — ``user``, ``assistant``, ``tool``, ``external``, ``system``, or ``memory`` for
      what the memory derived; ``speaker``: a named speaker of a chat turn ("Caroline"), when known.
    - ``evidence_class``: what it may prove (an :class:`~magi_desktop.core.governance.EvidenceClass` value such as
      ``user_self_report``; ``derived`` or ``fact_stated`` / ``fact_accepted`` for derived findings).
    - ``score``: how well it ranked where it was found, higher is better; compare it only within one pack and
      layer (the order of ``EvidencePack.findings`` is the pack's own ranking).
    - ``event_id``: the event's id, or the derived row's key (``fact:12``, ``summary:3``, ``skill:2``…).
    - ``supporting_event_ids`` / ``supporting_source_item_ids``: the events it rests on (an event: itself).
    - ``paths``: the recall paths that found it (``bm25``, ``vector``, ``entity``…).
    - ``indirect``: it shares no word of the question — at most indirect evidence.
    - ``status``: ``current``, ``history`` (replaced as of the question's ``now``) or ``planned`` (a scheduled
      event after ``now``); None when no such label applies.
    - ``kind``: ``request`` for the user's own request to the agent (a directive, not a fact); else None.
    - ``answers``: whether it answers the question, not only relates to it (``retrieval/sufficiency.py``).
    """

    layer: Layer
    text: str
    occurred_at: float
    source: str
    source_item_id: str | None
    session_id: str | None
    author: str
    evidence_class: str
    score: float
    event_id: str
    speaker: str | None = None
    supporting_event_ids: list[str] = field(default_factory=list)
    supporting_source_item_ids: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    indirect: bool = False
    status: str | None = None     # current / history as of the question's now (L2; L1 by current_facts.py), planned
    kind: str | None = None       # "request": the user's request to the agent, not a fact (requests.py)
    answers: bool = False         # does it answer the question, or is it only related (retrieval/sufficiency.py)

    def __post_init__(self) -> None:
        self.layer = Layer(self.layer)          # "L1" given as a plain string is the member

    def occurred_at_iso(self) -> str:
        return iso(self.occurred_at)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["layer"] = self.layer.value          # JSON-ready: plain strings, as before the enum
        data["occurred_at_iso"] = iso(self.occurred_at)
        data["score"] = round(self.score, 4)
        return data


@dataclass
class EvidencePack:
    """What ``Memory.query`` returns: the findings an agent can answer from, and what to make of them.

    - ``status``: a :class:`PackStatus` — ``ok`` when at least one finding answers, ``insufficient`` when none does
      (``insufficient_evidence`` says the same as a bool).
    - ``query``: the question as asked; ``query_mode``: the :class:`QueryMode` it was answered in (the caller's, or
      the one the rules chose — ``trace["mode_source"]`` says which).
    - ``summary``: one line saying how many findings there are and the best one.
    - ``findings``: the :class:`Finding` list, best first, cut to the token budget.
    - ``answering_hints``: how to read them ("Prefer the most recent finding…", a window that held nothing…).
    - ``entity_refs``: the entities the findings mention (``entity_id``, ``name``, ``entity_type``, ``findings``).
    - ``asset_refs``: always empty in this version (kept in the JSON shape).
    - ``timeline``: the findings in time order (``occurred_at``, ``occurred_at_iso``, ``event_id``, ``text``), when
      there are several; ``bundles``: them grouped by conversation or by source and day (``key``, ``start``,
      ``end``, ``event_ids``).
    - ``trace``: how it was found — the recall paths with their hits and timings, the grounding, each finding's
      sufficiency checks, ``total_ms``; for reading and debugging, its keys may change.
    - ``working_memory``: the asking session's L0 workbench (goal, focus, tools, running summary) when
      ``session_id`` was given — context, never evidence.

    ``to_dict()`` gives all of it as JSON-ready data (enum members as their plain strings).
    """

    status: PackStatus
    query: str
    query_mode: QueryMode
    summary: str
    findings: list[Finding]
    insufficient_evidence: bool
    answering_hints: list[str]
    entity_refs: list[dict[str, Any]] = field(default_factory=list)
    asset_refs: list[dict[str, Any]] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    bundles: list[dict[str, Any]] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)
    working_memory: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.status, self.query_mode = PackStatus(self.status), QueryMode(self.query_mode)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "query": self.query,
            "query_mode": self.query_mode.value,
            "summary": self.summary,
            "findings": [f.to_dict() for f in self.findings],
            "entity_refs": self.entity_refs,
            "asset_refs": self.asset_refs,
            "insufficient_evidence": self.insufficient_evidence,
            "answering_hints": self.answering_hints,
            "timeline": self.timeline,
            "bundles": self.bundles,
            "trace": self.trace,
            "working_memory": self.working_memory,
        }


def fit_budget(findings: list[Finding], budget: int) -> tuple[list[Finding], int]:
    """Keep findings (best first) while their text fits the token budget; always keep one."""
    kept: list[Finding] = []
    used = 0
    for finding in findings:
        cost = approx_tokens(finding.text) + 12  # ids, time and author around the text
        if kept and used + cost > budget:
            break
        kept.append(finding)
        used += cost
    return kept, used


def timeline_of(findings: list[Finding]) -> list[dict[str, Any]]:
    """The findings in time order, for answers that span several events."""
    return [{"occurred_at": f.occurred_at, "occurred_at_iso": iso(f.occurred_at), "event_id": f.event_id,
             "text": f.text[:160]} for f in sorted(findings, key=lambda f: f.occurred_at)]


def bundles_of(findings: list[Finding]) -> list[dict[str, Any]]:
    """Findings grouped by conversation (or by source and day), groups in time order."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        key = finding.session_id or f"{finding.source}:{iso(finding.occurred_at)[:10]}"
        groups.setdefault(key, []).append(finding)
    bundles: list[dict[str, Any]] = []
    for key, members in groups.items():
        members.sort(key=lambda f: f.occurred_at)
        bundles.append({"key": key, "start": iso(members[0].occurred_at), "end": iso(members[-1].occurred_at),
                        "event_ids": [f.event_id for f in members]})
    bundles.sort(key=lambda b: b["start"])
    return bundles
