"""What the memory keeps for each collector (``plugin_state``): its cursor and its last status (architecture §4)."""

from __future__ import annotations

from .connection import Connection


def cursor_json(conn: Connection, name: str) -> str | None:
    """A collector's stored cursor as JSON, or None before its first stored run."""
    row = conn.execute("SELECT cursor_json FROM plugin_state WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def save_cursor_json(conn: Connection, name: str, cursor_json: str, now: float) -> None:
    conn.execute("INSERT INTO plugin_state (name, cursor_json, updated_at) VALUES (?, ?, ?) "
                 "ON CONFLICT (name) DO UPDATE SET cursor_json = excluded.cursor_json, "
                 "updated_at = excluded.updated_at", (name, cursor_json, now))


def save_status_json(conn: Connection, name: str, status_json: str, now: float) -> None:
    conn.execute("INSERT INTO plugin_state (name, status_json, updated_at) VALUES (?, ?, ?) "
                 "ON CONFLICT (name) DO UPDATE SET status_json = excluded.status_json, "
                 "updated_at = excluded.updated_at", (name, status_json, now))


def statuses_json(conn: Connection) -> list[tuple[str, str]]:
    """(name, status_json) of every collector with a saved status, by name."""
    return conn.execute("SELECT name, status_json FROM plugin_state WHERE status_json IS NOT NULL ORDER BY name"
                        ).fetchall()
