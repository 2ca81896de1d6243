"""What the memory keeps for each collector (``plugin_state``): its cursor, its last status and its guard — failures
in a row and quarantine (architecture §4)."""

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


def save_guard_json(conn: Connection, name: str, guard_json: str, now: float) -> None:
    _save(conn, name, "guard_json", guard_json, now)


def guard_json(conn: Connection, name: str) -> str | None:
    row = conn.execute("SELECT guard_json FROM plugin_state WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def guards_json(conn: Connection) -> list[tuple[str, str]]:
    """(name, guard_json) of every collector with a saved guard, by name."""
    return conn.execute("SELECT name, guard_json FROM plugin_state WHERE guard_json IS NOT NULL ORDER BY name"
                        ).fetchall()


def _save(conn: Connection, name: str, column: str, value: str, now: float) -> None:
    """One of a collector's saved columns (``cursor_json``, ``status_json``, ``guard_json``), the others kept."""
    conn.execute(f"INSERT INTO plugin_state (name, {column}, updated_at) VALUES (?, ?, ?) "
                 f"ON CONFLICT (name) DO UPDATE SET {column} = excluded.{column}, "
                 "updated_at = excluded.updated_at", (name, value, now))


def statuses_json(conn: Connection) -> list[tuple[str, str]]:
    """(name, status_json) of every collector with a saved status, by name."""
    return conn.execute("SELECT name, status_json FROM plugin_state WHERE status_json IS NOT NULL ORDER BY name"
                        ).fetchall()
