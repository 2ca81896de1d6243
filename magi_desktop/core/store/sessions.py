"""chat_sessions: a conversation's generations (a session id reused after its end starts the next one)."""

from __future__ import annotations

from .connection import Connection


def next_generation(conn: Connection, session_id: str) -> None:
    """The session ended: its later messages belong to its next generation."""
    conn.execute("UPDATE chat_sessions SET generation = generation + 1 WHERE session_id = ?", (session_id,))
