"""chat_sessions: a conversation's generations (a session id reused after its end starts the next one)."""

from __future__ import annotations

from .connection import Connection


def next_generation(conn: Connection, session_id: str) -> None:
    """The session ended: its later messages belong to its next generation."""
    conn.execute("UPDATE chat_sessions SET generation = generation + 1 WHERE session_id = ?", (session_id,))


def session_generation(conn: Connection, session_id: str) -> int | None:
    """A chat session's generation, or None when the session is not stored."""
    row = conn.execute("SELECT generation FROM chat_sessions WHERE session_id = ?", (session_id,)).fetchone()
    return row[0] if row else None
