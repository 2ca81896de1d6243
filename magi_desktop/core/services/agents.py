"""The agents' side of the memory (architecture §2, §11): what an agent reads besides ``query`` — the user's
current snapshot and the recent L3 summaries — and the record of which agents use the memory (calls
per client and tool, refusals), which Settings → Agents shows.

The usage record holds no content — the client's name, the tool, counts, times and
the last refusal's reason code or bad field — so forgetting never has to look at it.
"""

from __future__ import annotations

import time
from typing import Any

from ..l2 import snapshots
from ..l2.constants import SELF_KEY
from ..store import Database, agents_usage
from ..store.entities import active_person_id
from ..store.summaries import latest_summaries
from .fact_book import FactBook

MAX_CLIENT_CHARS = 100
MAX_REJECTION_CHARS = 200
UNKNOWN_CLIENT = "unknown client"
# How the usage of each tool is shown: calls of memory_query are "queries", and so on.
# What changed the user's memory is "changes" (a dry run of one of them changed nothing: it is a read).
USAGE_GROUPS = {"memory_query": "queries", "remember": "remembers", "log_turn": "turns",
                "log_tool_run": "tool_runs", "forget": "changes", "delete_fact": "changes", "review": "changes"}
SUMMARY_KEYS = ("summary_id", "summary_type", "summary_category", "granularity", "window_start", "window_end",
                "title", "content", "event_count")


class AgentDesk:
    def __init__(self, db: Database, fact_book: FactBook) -> None:
        self.db = db
        self.fact_book = fact_book     # the facts agents saved are part of the user's snapshot

    def record_agent_call(self, client: str | None, tool: str, *, rejected: str | None = None,
                          now: float | None = None) -> None:
        """Count one call of ``tool`` by the agent ``client`` (an MCP client's name); ``rejected`` is the
        reason code or bad field when the memory refused it (counted as a rejection, never its text)."""
        now = time.time() if now is None else now
        client = " ".join(str(client or "").split())[:MAX_CLIENT_CHARS] or UNKNOWN_CLIENT
        refused = rejected is not None
        with self.db.transaction() as conn:
            agents_usage.count_call(conn, client, tool, str(rejected)[:MAX_REJECTION_CHARS] if refused else None,
                                    now if refused else None, now)

    def agent_usage(self) -> list[dict[str, Any]]:
        """Per agent (client), most recently active first: ``queries``, ``remembers`` (facts saved),
        ``turns`` and ``tool_runs`` (logged), ``changes`` (forgets, deleted facts and reviews an agent made for
        the user), ``reads`` (everything else: listings, the snapshot, dry runs…), ``calls``
        (all), ``rejections`` (calls the memory refused, e.g. a remember whose quote failed the gate), the
        last refusal's reason, and when the agent was first and last seen. ``by_tool`` has the raw rows."""
        clients: dict[str, dict[str, Any]] = {}
        rows = agents_usage.usage_rows(self.db.reader())
        for client, tool, calls, rejections, last_rejection, last_rejected_at, first, last in rows:
            entry = clients.setdefault(client, {
                "client": client, "queries": 0, "remembers": 0, "turns": 0, "tool_runs": 0, "changes": 0, "reads": 0,
                "calls": 0,
                "rejections": 0, "last_rejection": None, "last_rejected_at": None, "first_used_at": first,
                "last_used_at": last, "by_tool": {}})
            entry[USAGE_GROUPS.get(tool, "reads")] += calls - rejections       # what the memory accepted
            entry["calls"] += calls
            entry["rejections"] += rejections
            entry["first_used_at"] = min(entry["first_used_at"], first)
            entry["last_used_at"] = max(entry["last_used_at"], last)
            if last_rejected_at is not None and (entry["last_rejected_at"] or 0) <= last_rejected_at:
                entry["last_rejection"], entry["last_rejected_at"] = f"{tool}: {last_rejection}", last_rejected_at
            entry["by_tool"][tool] = {"calls": calls, "rejections": rejections}
        return sorted(clients.values(), key=lambda e: e["last_used_at"], reverse=True)

    def user_snapshot(self, now: float | None = None) -> dict[str, Any]:
        """What the memory currently believes about the user: L2 traits, live states and relationships
        (from their own statements and observations), and the active facts agents saved with remember()."""
        now = time.time() if now is None else now
        conn = self.db.reader()
        self_id = active_person_id(conn, SELF_KEY)
        built = snapshots.build(conn, self_id, now) if self_id is not None else None
        facts = [{key: fact[key] for key in ("fact_id", "content", "category", "evidence_type", "created_at")}
                 for fact in self.fact_book.facts() if fact["scope"] == "user"]
        return {"traits": built["traits"] if built else {}, "states": built["states"] if built else {},
                "relations": built["relations"] if built else [], "facts": facts, "as_of": now}

    def recent_summaries(self, limit: int = 5, summary_type: str | None = None) -> list[dict[str, Any]]:
        """The latest L3 summaries (temporal | thematic | insight; None: all), newest window first."""
        rows = latest_summaries(self.db.reader(), SUMMARY_KEYS, limit, summary_type)
        return [dict(zip(SUMMARY_KEYS, r, strict=True)) for r in rows]
