"""What the memory keeps for the collectors (architecture §4): each one's cursor (where its next run starts) and
its last status as the supervisor saw it (runs, failures, counters), which ``stats`` shows."""

from __future__ import annotations

import json
import time
from typing import Any

from ..store import Database
from ..store import collector_state as stored


class CollectorState:
    def __init__(self, db: Database) -> None:
        self.db = db

    def plugin_cursor(self, name: str) -> Any:
        """Where a collector's next run starts (None before its first stored run)."""
        text = stored.cursor_json(self.db.reader(), name)
        return json.loads(text) if text is not None else None

    def save_plugin_cursor(self, name: str, cursor: Any) -> None:
        """Keep a collector's cursor (JSON-serialisable)."""
        with self.db.transaction() as conn:
            stored.save_cursor_json(conn, name, json.dumps(cursor), time.time())

    def save_collector_status(self, name: str, status: dict[str, Any]) -> None:
        """Keep what the supervisor knows of a collector (runs, failures, counters) for ``stats``."""
        with self.db.transaction() as conn:
            stored.save_status_json(conn, name, json.dumps(status), time.time())

    def collector_statuses(self) -> dict[str, dict[str, Any]]:
        """The last saved status of every collector that has run, by name."""
        return {name: json.loads(text) for name, text in stored.statuses_json(self.db.reader())}

    def release(self, name: str) -> bool:
        """Lift a collector's quarantine in its saved status; True if it was quarantined. (A stand-in until the
        memory keeps failures and quarantine apart from the status, for every process.)"""
        saved = self.collector_statuses().get(name)
        if not saved or not saved.get("quarantined"):
            return False
        self.save_collector_status(name, saved | {"quarantined": False, "failures": 0})
        return True
