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
    status: str | None = None     # "current" or "history" as of the question's now (L2; L1 by current_facts.py)
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
    # The asking session's L0 workbench (goal, focus, tools, running summary): context, never evidence.
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
