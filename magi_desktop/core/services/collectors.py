"""What the memory keeps for the collectors (architecture §4): each one's cursor (where its next run starts) and
its last status as the supervisor saw it (runs, failures, counters), which ``stats`` shows."""

from __future__ import annotations

import json
import time
from typing import Any

from ..store import Database


class CollectorState:
    def __init__(self, db: Database) -> None:
        self.db = db

    def plugin_cursor(self, name: str) -> Any:
        """Where a collector's next run starts (None before its first stored run)."""
        row = self.db.reader().execute("SELECT cursor_json FROM plugin_state WHERE name = ?", (name,)).fetchone()
        return json.loads(row[0]) if row and row[0] is not None else None

    def save_plugin_cursor(self, name: str, cursor: Any) -> None:
        """Keep a collector's cursor (JSON-serialisable)."""
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO plugin_state (name, cursor_json, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (name) DO UPDATE SET cursor_json = excluded.cursor_json, "
                         "updated_at = excluded.updated_at", (name, json.dumps(cursor), time.time()))

    def save_collector_status(self, name: str, status: dict[str, Any]) -> None:
        """Keep what the supervisor knows of a collector (runs, failures, counters) for ``stats``."""
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO plugin_state (name, status_json, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (name) DO UPDATE SET status_json = excluded.status_json, "
                         "updated_at = excluded.updated_at", (name, json.dumps(status), time.time()))

    def collector_statuses(self) -> dict[str, dict[str, Any]]:
        """The last saved status of every collector that has run, by name."""
        rows = self.db.reader().execute(
            "SELECT name, status_json FROM plugin_state WHERE status_json IS NOT NULL ORDER BY name")
        return {name: json.loads(text) for name, text in rows}
