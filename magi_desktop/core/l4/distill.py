"""Distilling a skill's traces into a strategy (architecture §8), lazily: only skills marked due
(enough new traces, or a breaker that opened), off the ingest path.

Up to ``SAMPLE`` traces are sampled — the most recent, then successes, then failures — and
turned into a strategy JSON and an ``optimized_prompt``: the context an agent gets the next
time it uses the tool. With an LLM the compact tier writes it; without one, rules state
what the numbers and the error messages say.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ..llm.base import LLMError, LLMProvider, Task
from ..store import Database, skills
from ..store.connection import Connection

SAMPLE = 20
RECENT, SUCCESSES, FAILURES = 8, 6, 6
BATCH = 16

DISTILL = Task(
    name="l4_distill",
    tier="compact",
    instructions=(
        "From these executions of one tool, write what an agent should know before using it again: when it "
        "works, its typical failure modes, and concrete parameter or usage tips. Use only what the traces "
        "show; do not invent capabilities."),
    schema={
        "type": "object",
        "required": ["summary", "failure_modes", "tips"],
        "additionalProperties": False,
        "properties": {
            "summary": {"type": "string", "minLength": 1, "maxLength": 600},
            "when_to_use": {"type": "string", "maxLength": 400},
            "failure_modes": {"type": "array", "maxItems": 6, "items": {"type": "string", "maxLength": 200}},
            "tips": {"type": "array", "maxItems": 6, "items": {"type": "string", "maxLength": 200}},
        },
    },
)


def _sample(conn: Connection, skill_id: int) -> list[dict[str, Any]]:
    chosen: dict[int, tuple] = {}
    for ok, n in ((None, RECENT), (True, SUCCESSES), (False, FAILURES)):
        for row in skills.latest_traces(conn, skill_id, ok, n):
            chosen.setdefault(row[0], row)
    ordered = sorted(chosen.values(), key=lambda r: r[1])[-SAMPLE:]
    return [{"at": r[1], "ok": bool(r[2]), "duration_ms": r[3], "input": r[4], "output": (r[5] or "")[:300],
             "error": r[6]} for r in ordered]


def _rules(tool: str, category: str, stats: dict, traces: list[dict]) -> dict[str, Any]:
    errors = Counter((t["error"] or "").split("\n")[0][:120] for t in traces if not t["ok"] and t["error"])
    runs, ok = stats["runs"], stats["successes"]
    rate = ok / runs if runs else 0.0
    mean = stats["mean_duration_ms"]
    summary = f"{tool} ({category}): {runs} runs, {ok} succeeded ({rate:.0%})" + (
        f", mean {mean / 1000:.1f} s" if mean else "") + f"; breaker {stats['breaker_state']}."
    tips = []
    if errors:
        common, count = errors.most_common(1)[0]
        tips.append(f"Most failures were “{common}” ({count} of {sum(errors.values())} sampled failures).")
    worked = [t["input"] for t in traces if t["ok"] and t["input"]][-2:]
    if worked:
        tips.append("Inputs that worked recently: " + "; ".join(w[:120] for w in worked) + ".")
    if stats["breaker_state"] != "closed":
        tips.append("Its breaker is not closed: prefer another tool until it recovers.")
    return {"summary": summary, "failure_modes": [f"{e} (×{n})" for e, n in errors.most_common(3)], "tips": tips}


def _prompt(strategy: dict[str, Any]) -> str:
    parts = [strategy["summary"]]
    if strategy.get("when_to_use"):
        parts.append(f"Use it when: {strategy['when_to_use']}")
    if strategy.get("failure_modes"):
        parts.append("Known failure modes: " + "; ".join(strategy["failure_modes"]) + ".")
    parts += strategy.get("tips", [])
    return " ".join(parts)


def run(db: Database, llm: LLMProvider, now: float, limit: int = BATCH) -> int:
    conn = db.reader()
    due = skills.skills_due(conn, limit)
    done = 0
    for skill_id, tool, category, runs, successes, failures, mean, state in due:
        stats = {"runs": runs, "successes": successes, "failures": failures, "mean_duration_ms": mean,
                 "breaker_state": state}
        traces = _sample(conn, skill_id)
        strategy, by = _rules(tool, category, stats, traces), "rules"
        if llm.name != "rules":
            try:
                answer = llm.run(DISTILL, {"tool": tool, "category": category, "stats": stats, "traces": traces})
                strategy = dict(answer, summary=f"{strategy['summary']} {answer['summary']}".strip())
                by = llm.name
            except LLMError:
                pass            # the endpoint failed: the rules' strategy for now, the model next time it is due
        with db.transaction() as wconn:
            skills.save_strategy(wconn, skill_id, json.dumps(strategy, ensure_ascii=False), _prompt(strategy), now, by)
        done += 1
    return done
