"""L4 procedural skills (``procedural_skills``) and the executions they were learnt from
(``l4_execution_traces`` joined to ``runtime_traces``): the reads recall makes. Full-text search over skills is
in :mod:`.search`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection


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
