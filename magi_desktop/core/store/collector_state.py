"""What the memory keeps for each collector (``plugin_state``): its cursor and its last status (architecture §4)."""

from __future__ import annotations

from .connection import Connection


def cursor_json(conn: Connection, name: str) -> str | None:
    """A collector's stored cursor as JSON, or None before its first stored run."""
    row = conn.execute("SELECT cursor_json FROM plugin_state WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def save_cursor_json(conn: Connection, name: str, cursor_json: str, now: float) -> None:
    _save(conn, name, "cursor_json", cursor_json, now)


def save_status_json(conn: Connection, name: str, status_json: str, now: float) -> None:
    _save(conn, name, "status_json", status_json, now)


def _save(conn: Connection, name: str, column: str, value: str, now: float) -> None:
    """One of a collector's two saved columns (``cursor_json``, ``status_json``), the other kept."""
    conn.execute(f"INSERT INTO plugin_state (name, {column}, updated_at) VALUES (?, ?, ?) "
                 f"ON CONFLICT (name) DO UPDATE SET {column} = excluded.{column}, "
                 "updated_at = excluded.updated_at", (name, value, now))


def statuses_json(conn: Connection) -> list[tuple[str, str]]:
    """(name, status_json) of every collector with a saved status, by name."""
    return conn.execute("SELECT name, status_json FROM plugin_state WHERE status_json IS NOT NULL ORDER BY name"
                        ).fetchall()
