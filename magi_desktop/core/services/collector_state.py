"""What the memory keeps for the collectors (architecture §4): each one's cursor (where its next run starts), its
last status as the supervisor saw it (runs, counters, health), which ``stats`` shows, and its guard — failures in
a row and quarantine — which every process reads and updates in one write transaction, so a collector
quarantined by ``magi collect`` stays quarantined in the app until the user releases it (or its version
changes)."""

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
        """The last saved status of every collector that has run, by name, with its guard's word on failures and
        quarantine (newer than the status when another process changed them since)."""
        conn = self.db.reader()
        statuses = {name: json.loads(text) for name, text in stored.statuses_json(conn)}
        for name, text in stored.guards_json(conn):
            guard = json.loads(text)
            status = statuses.setdefault(name, {"name": name})
            status.update(failures=guard["failures"], quarantined=guard["quarantined"],
                          quarantined_at=guard.get("quarantined_at"), version=guard.get("version"))
            if guard["quarantined"]:
                status["last_error"] = guard.get("reason") or status.get("last_error")
        return statuses

    # ------------------------------------------------------------------ guard

    def collector_guards(self) -> dict[str, dict[str, Any]]:
        """Every saved guard: {"failures", "quarantined", "quarantined_at", "reason", "version", "released_at"}."""
        return {name: json.loads(text) for name, text in stored.guards_json(self.db.reader())}

    def record_failure(self, name: str, error: str, *, quarantine_after: int, hung: bool = False,
                       version: str | None = None) -> dict[str, Any]:
        """One more failure in a row; quarantined at ``quarantine_after`` of them, or at once for a hang. Returns
        the guard as stored (another process's failures count too)."""
        now = time.time()
        with self.db.transaction() as conn:
            guard = _guard(stored.guard_json(conn, name))
            guard["failures"] += 1
            if not guard["quarantined"] and (hung or guard["failures"] >= quarantine_after):
                guard.update(quarantined=True, quarantined_at=now, reason=error, version=version)
                if version is not None:    # every version seen to fail: a process still running one stays held
                    guard["versions"] = sorted({*guard.get("versions", ()), version})
            stored.save_guard_json(conn, name, json.dumps(guard), now)
        return guard

    def record_success(self, name: str) -> dict[str, Any]:
        """A run ended well: the failures in a row start again from none (a quarantine holds)."""
        with self.db.transaction() as conn:
            guard = _guard(stored.guard_json(conn, name))
            if guard["failures"]:
                guard["failures"] = 0
                stored.save_guard_json(conn, name, json.dumps(guard), time.time())
        return guard

    def release(self, name: str, *, upgraded_to: str | None = None) -> bool:
        """Lift a collector's quarantine and forget its failures; True if it was quarantined. The user's release
        forgets which versions failed too; one because the plugin was ``upgraded_to`` a new version keeps them, so
        another process still running a version that hung is not released by it (nor releases it in turn)."""
        now = time.time()
        with self.db.transaction() as conn:
            guard = _guard(stored.guard_json(conn, name))
            was = bool(guard["quarantined"])
            if upgraded_to is None:
                guard.pop("versions", None)
            guard.update(failures=0, quarantined=False, quarantined_at=None, reason=None, released_at=now)
            stored.save_guard_json(conn, name, json.dumps(guard), now)
        return was


def _guard(text: str | None) -> dict[str, Any]:
    guard: dict[str, Any] = {"failures": 0, "quarantined": False}
    if text:
        guard.update(json.loads(text))
    return guard
