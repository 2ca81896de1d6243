"""L4 procedural skills (``procedural_skills``) and the executions they were learnt from
(``l4_execution_traces`` joined to ``runtime_traces``): the counters every tool run updates, the traces
distillation samples, the strategy it writes, and the reads recall makes. Full-text search over skills is in
:mod:`.search`; the breaker's state machine and the distillation itself are in ``core/l4``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .connection import Connection

# readers the tests and layers share

def oldest_trace_at(conn: Connection) -> float | None:
    """When the oldest execution trace any skill keeps happened; None when there is none."""
    return conn.execute("SELECT min(occurred_at) FROM l4_execution_traces").fetchone()[0]


def skill_summary(conn: Connection, skill_id: int) -> tuple[Any, ...] | None:
    """(tool, category, runs, successes, breaker_state, optimized_prompt, last_run_at) of a skill."""
    return conn.execute(
        "SELECT tool, category, runs, successes, breaker_state, optimized_prompt, last_run_at "
        "FROM procedural_skills WHERE skill_id = ?", (skill_id,)).fetchone()


def recent_executions(conn: Connection, skill_id: int, now: float, limit: int) -> list[tuple[Any, ...]]:
    """(trace_id, source_item_id, session_id) of a skill's executions up to ``now``, newest first."""
    return conn.execute(
        "SELECT r.trace_id, r.source_item_id, r.session_id FROM l4_execution_traces t JOIN runtime_traces r "
        "ON r.id = t.runtime_id WHERE t.skill_id = ? AND t.occurred_at <= ? ORDER BY t.occurred_at DESC "
        "LIMIT ?", (skill_id, now, limit)).fetchall()


def skills_mentioning(conn: Connection, tokens: Sequence[str], limit: int) -> list[int]:
    """Ids of the skills whose tool, category or strategy contains any of ``tokens``, most recently run first."""
    likes = " OR ".join("lower(tool || ' ' || category || ' ' || coalesce(optimized_prompt, '')) LIKE ?"
                        for _ in tokens)
    return [r[0] for r in conn.execute(
        f"SELECT skill_id FROM procedural_skills WHERE {likes} ORDER BY last_run_at DESC LIMIT ?",
        [*(f"%{t.lower()}%" for t in tokens), limit])]


# ------------------------------------------------------------------ what a tool run updates (core/l4/skills.py)

class SkillCounters(NamedTuple):
    """A skill's running counters, read before one more execution is counted."""

    skill_id: int
    runs: int
    mean_duration_ms: float | None
    consecutive_failures: int
    breaker_state: str
    breaker_opened_at: float | None
    half_open_successes: int
    pending_trace_count: int
    distill_due: int


def skill_counters(conn: Connection, tool: str, category: str) -> SkillCounters:
    """The counters of the skill for (tool, category), created with its defaults when it does not exist yet."""
    conn.execute("INSERT OR IGNORE INTO procedural_skills (tool, category) VALUES (?, ?)", (tool, category))
    return SkillCounters(*conn.execute(
        "SELECT skill_id, runs, mean_duration_ms, consecutive_failures, breaker_state, breaker_opened_at, "
        "half_open_successes, pending_trace_count, distill_due FROM procedural_skills WHERE tool = ? AND category = ?",
        (tool, category)).fetchone())


def count_run(conn: Connection, after: SkillCounters, ok: bool, occurred_at: float) -> None:
    """Count one execution: runs and its outcome go up by one; the other counters become those of ``after``."""
    conn.execute(
        "UPDATE procedural_skills SET runs = runs + 1, successes = successes + ?, failures = failures + ?, "
        "mean_duration_ms = ?, consecutive_failures = ?, breaker_state = ?, breaker_opened_at = ?, "
        "half_open_successes = ?, pending_trace_count = ?, distill_due = ?, "
        "last_run_at = max(coalesce(last_run_at, 0), ?) WHERE skill_id = ?",
        (int(ok), int(not ok), after.mean_duration_ms, after.consecutive_failures, after.breaker_state,
         after.breaker_opened_at, after.half_open_successes, after.pending_trace_count, after.distill_due,
         occurred_at, after.skill_id))


def add_trace(conn: Connection, skill_id: int, runtime_id: int | None, occurred_at: float, ok: bool,
              duration_ms: float | None, input_text: str | None, output_text: str | None, error: str | None,
              kept: int) -> None:
    """Store one execution's trace and drop the skill's older ones beyond the ``kept`` newest."""
    conn.execute(
        "INSERT INTO l4_execution_traces (skill_id, runtime_id, occurred_at, ok, duration_ms, input_text, output_text, "
        "error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (skill_id, runtime_id, occurred_at, int(ok), duration_ms, input_text, output_text, error))
    conn.execute("DELETE FROM l4_execution_traces WHERE skill_id = ? AND trace_row NOT IN (SELECT trace_row FROM "
                 "l4_execution_traces WHERE skill_id = ? ORDER BY occurred_at DESC, trace_row DESC LIMIT ?)",
                 (skill_id, skill_id, kept))


def breaker(conn: Connection, tool: str, category: str) -> tuple[Any, ...] | None:
    """(breaker_state, breaker_opened_at, consecutive_failures) of the skill for (tool, category), if any."""
    return conn.execute("SELECT breaker_state, breaker_opened_at, consecutive_failures FROM procedural_skills "
                        "WHERE tool = ? AND category = ?", (tool, category)).fetchone()


# -------------------------------------------------------------- what distillation reads and writes (core/l4/distill.py)

_OUTCOME = {None: "", True: "AND ok = 1", False: "AND ok = 0"}


def latest_traces(conn: Connection, skill_id: int, ok: bool | None, limit: int) -> list[tuple[Any, ...]]:
    """(trace_row, occurred_at, ok, duration_ms, input_text, output_text, error) of a skill's newest traces, only
    the successes or the failures when ``ok`` is given."""
    return conn.execute(
        "SELECT trace_row, occurred_at, ok, duration_ms, input_text, output_text, error FROM l4_execution_traces "
        f"WHERE skill_id = ? {_OUTCOME[ok]} ORDER BY occurred_at DESC, trace_row DESC LIMIT ?",
        (skill_id, limit)).fetchall()


def skills_due(conn: Connection, limit: int) -> list[tuple[Any, ...]]:
    """(skill_id, tool, category, runs, successes, failures, mean_duration_ms, breaker_state) of the skills marked
    for distillation, least recently run first."""
    return conn.execute(
        "SELECT skill_id, tool, category, runs, successes, failures, mean_duration_ms, breaker_state "
        "FROM procedural_skills WHERE distill_due = 1 ORDER BY last_run_at LIMIT ?", (limit,)).fetchall()


def save_strategy(conn: Connection, skill_id: int, strategy_json: str, prompt: str, now: float, by: str) -> None:
    """Record a distilled strategy and its prompt; the skill is no longer due and its new traces start from 0."""
    conn.execute(
        "UPDATE procedural_skills SET strategy_json = ?, optimized_prompt = ?, distilled_at = ?, "
        "distilled_by = ?, pending_trace_count = 0, distill_due = 0 WHERE skill_id = ?",
        (strategy_json, prompt, now, by, skill_id))


_SKILL_COLUMNS = ("tool", "category", "runs", "successes", "failures", "mean_duration_ms", "breaker_state",
                  "breaker_opened_at", "optimized_prompt", "distilled_at")


def skill_rows(conn: Connection) -> list[dict[str, Any]]:
    """Every tool's experience, the most recently run first (``Memory.skills``)."""
    rows = conn.execute(f"SELECT {', '.join(_SKILL_COLUMNS)} FROM procedural_skills ORDER BY last_run_at DESC")
    return [dict(zip(_SKILL_COLUMNS, row, strict=True)) for row in rows.fetchall()]


# --------------------------------------------------------------------- what the queue counts read (services/processing)

def skills_due_count(conn: Connection) -> int:
    """How many skills are marked for distillation."""
    return conn.execute("SELECT count(*) FROM procedural_skills WHERE distill_due = 1").fetchone()[0]
