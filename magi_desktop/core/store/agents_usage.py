"""The record of which agents use the memory (``agent_usage``): calls per client and tool, refusals. It holds no
content, so forgetting never has to look at it (architecture §11)."""

from __future__ import annotations

from typing import Any

from .connection import Connection


def count_call(conn: Connection, client: str, tool: str, rejection: str | None, rejected_at: float | None,
               now: float) -> None:
    """Count one call of ``tool`` by ``client`` (a refused one too when ``rejection`` is given)."""
    conn.execute(
        "INSERT INTO agent_usage (client, tool, calls, rejections, last_rejection, last_rejected_at, "
        "first_used_at, last_used_at) VALUES (?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT (client, tool) DO UPDATE "
        "SET calls = calls + 1, rejections = rejections + excluded.rejections, "
        "last_rejection = coalesce(excluded.last_rejection, last_rejection), "
        "last_rejected_at = coalesce(excluded.last_rejected_at, last_rejected_at), "
        "last_used_at = max(last_used_at, excluded.last_used_at)",
        (client, tool, int(rejection is not None), rejection, rejected_at, now, now))


def usage_rows(conn: Connection) -> list[tuple[Any, ...]]:
    """(client, tool, calls, rejections, last_rejection, last_rejected_at, first_used_at, last_used_at) of every
    client and tool, by client then tool."""
    return conn.execute(
        "SELECT client, tool, calls, rejections, last_rejection, last_rejected_at, first_used_at, last_used_at "
        "FROM agent_usage ORDER BY client, tool").fetchall()
