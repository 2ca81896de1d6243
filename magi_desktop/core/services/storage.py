"""The memory's storage health: automatic backups, restore, whether it can write (architecture §14), and how old
an event must be to go to the cold tier."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, MemoryUnavailable
from ..paths import database_path
from ..store import Database, backup, tiers

log = logging.getLogger(__name__)


class Storage:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._backup_error: str | None = None      # the last automatic backup's failure, for storage_status

    def backups(self) -> list[dict[str, Any]]:
        """The automatic backups of this memory, newest first: path, created_at, reason, size_bytes, label."""
        if not isinstance(self.db.path, Path):
            return []
        return [b.to_dict() for b in backup.list_backups(self.db.path)]

    def set_cold_after_days(self, days: float) -> None:
        """Events older than ``days`` that L3 has summarised (and nothing current rests on) move to the cold
        tier, which default recall does not search; 0 keeps everything hot. Turning it off or raising it brings what
        is cold back (the tiering runs then move what is old enough again)."""
        if isinstance(days, bool) or not isinstance(days, int | float) or not 0 <= days < 100_000:
            raise InvalidInput(f"cold_after_days must be a number of days from 0 (never) to 99999, not {days!r}")
        with self.db.transaction() as conn:
            before = tiers.cold_after_days(conn)
            tiers.set_cold_after_days(conn, days)
        # Off, or later than before: what is cold now may be younger than the new age, and a question about its
        # window would not look in the cold tier. Everything comes back; the next tiering runs send the old back.
        if days == 0 or days > before:
            tiers.warm_all(self.db)

    def backup_now(self, reason: str = "manual") -> dict[str, Any]:
        """Copy the memory into ``backups/`` now (verified, rotated); returns the new backup."""
        if not isinstance(self.db.path, Path):
            raise MemoryUnavailable("an in-memory database has no backups")
        made = backup.make_backup(self.db.path, reason)
        self._backup_error = None
        return made.to_dict()

    def backup_if_due(self, interval: float = backup.INTERVAL_SECONDS) -> dict[str, Any]:
        """The periodic job: a backup when the newest is ``interval`` old (real time, not a replay's).
        A failure is logged and reported, never raised: the other periodic jobs carry on."""
        if not isinstance(self.db.path, Path) or not backup.backup_due(self.db.path, interval=interval):
            return {"made": None}
        try:
            made = self.backup_now("daily")
        except (MemoryUnavailable, OSError) as exc:
            self._backup_error = f"{type(exc).__name__}: {exc}"
            log.error("the daily backup failed: %s", exc)
            return {"made": None, "error": self._backup_error}
        return {"made": made["path"]}

    def storage_status(self) -> dict[str, Any]:
        """Whether the memory can write: ``writable``; when the disk is full, ``full_since`` and ``error``;
        the last backup and the last backup failure."""
        full = self.db.full
        newest = backup.list_backups(self.db.path) if isinstance(self.db.path, Path) else []
        return {"writable": full is None, "full_since": self.db.full_since, "error": str(full) if full else None,
                "last_backup": newest[0].to_dict() if newest else None, "backup_error": self._backup_error}


def list_backups(path: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """The backups of the memory at ``path`` (a data folder or a .db file) — usable when it cannot open."""
    return [b.to_dict() for b in backup.list_backups(database_path(path))]


def restore_backup(path: str | os.PathLike | None = None, backup_file: str | os.PathLike | None = None
                   ) -> dict[str, Any]:
    """Replace the memory at ``path`` with ``backup_file`` (default: the newest sound backup). The memory
    must be closed everywhere. The replaced file is moved aside (a forget deletes it later); returns what was done."""
    started = time.time()
    done = backup.restore(database_path(path), backup_file)
    return {"restored_from": done.backup.to_dict(), "database": str(done.database),
            "kept_aside": [str(p) for p in done.kept_aside], "seconds": round(time.time() - started, 3)}
