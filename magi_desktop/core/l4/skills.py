"""Per-tool experience, updated synchronously with every tool execution (architecture §8).

For each (tool, category): runs, successes, failures, mean duration, consecutive failures;
the last ``TRACES_KEPT`` traces; and a circuit breaker an agent runtime asks before it uses
the tool (:func:`decision`):

    closed ──3 failures in a row──▶ open ──600 s──▶ half_open ──2 successes──▶ closed
                                      ▲                  │
                                      └────a failure─────┘

A skill is marked for distillation when ``pending_trace_count`` reaches its threshold (5,
rising with the runs it has) or when its breaker opens; the distillation itself runs later,
off the ingest path (``distill.run``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from ..contracts import ToolRun
from ..store import skills
from ..store.connection import Connection
from .constants import DISTILL_AFTER, FAILURES_TO_OPEN, OPEN_SECONDS, SUCCESSES_TO_CLOSE, TRACES_KEPT

TRACE_TEXT_CHARS = 2000


def distill_threshold(runs: int) -> int:
    """New traces needed before distilling again: 5, then more as experience grows (5, 6, … 20)."""
    return min(20, DISTILL_AFTER + runs // 25)


@dataclass(frozen=True)
class Decision:
    """``Memory.tool_decision``: whether to call a tool now. ``allowed`` is False while its circuit breaker is open;
    ``state`` is the breaker's (closed, open, half_open, or unknown for a tool never run); ``retry_after`` the
    seconds until it half-opens, when open; ``reason`` says why, for a person or a model."""

    allowed: bool
    state: str                    # closed | open | half_open | unknown
    retry_after: float | None     # seconds until half_open, when open
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text[:TRACE_TEXT_CHARS]


def _state_at(state: str, opened_at: float | None, now: float) -> str:
    if state == "open" and opened_at is not None and now - opened_at >= OPEN_SECONDS:
        return "half_open"
    return state


def record(conn: Connection, run: ToolRun, occurred_at: float, runtime_id: int | None) -> dict[str, Any]:
    """Count one execution; returns the skill's state after it. Runs inside the ingest transaction."""
    category = run.category or "general"
    (skill_id, runs, mean, consecutive, state, opened_at, half_ok, pending, due) = skills.skill_counters(
        conn, run.tool, category)
    state = _state_at(state, opened_at, occurred_at)
    if run.duration_ms is not None:
        mean = run.duration_ms if mean is None else mean + (run.duration_ms - mean) / (runs + 1)
    if run.ok:
        consecutive = 0
        if state == "half_open":
            half_ok += 1
            if half_ok >= SUCCESSES_TO_CLOSE:
                state, opened_at, half_ok = "closed", None, 0
    else:
        consecutive += 1
        if state == "half_open" or (state == "closed" and consecutive >= FAILURES_TO_OPEN):
            state, opened_at, half_ok = "open", occurred_at, 0
            due = 1                                   # a breaker that opens asks for a new strategy
    pending += 1
    if pending >= distill_threshold(runs + 1):
        due = 1
    skills.count_run(conn, skills.SkillCounters(skill_id, runs, mean, consecutive, state, opened_at, half_ok,
                                                pending, due), run.ok, occurred_at)
    skills.add_trace(conn, skill_id, runtime_id, occurred_at, run.ok, run.duration_ms, _text(run.input),
                     _text(run.output), _text(run.error), TRACES_KEPT)
    return {"skill_id": skill_id, "breaker_state": state, "distill_due": bool(due)}


def decision(conn: Connection, tool: str, category: str | None, now: float) -> Decision:
    """May an agent use this tool now? Refused while its breaker is open."""
    row = skills.breaker(conn, tool, category or "general")
    if row is None:
        return Decision(True, "unknown", None, "no experience with this tool yet")
    state = _state_at(row[0], row[1], now)
    if state == "open":
        wait = OPEN_SECONDS - (now - row[1])
        return Decision(False, "open", round(wait, 1),
                        f"{row[2]} failures in a row; try again in {wait:.0f} s or use another tool")
    if state == "half_open":
        return Decision(True, "half_open", None, "on probation: the next runs decide whether it is healthy again")
    return Decision(True, "closed", None, "healthy")
