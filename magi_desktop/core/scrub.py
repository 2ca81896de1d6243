"""The scrub after a forget (issue 16): until no file the memory owns holds what was deleted.

Inside the live pages deletion already overwrites (secure_delete, :mod:`.store.erasure`). What is left
is elsewhere, and each step here is idempotent, so a scrub that could not finish is simply run again
(by the background work, ``run_due`` and the next open):

1. **Backups** made before the deletion finished are replaced by a fresh one (scrubbed and vacuumed
   like every backup) — deleted even when none can be made.
2. **Kept-aside files**: ``<db>.replaced-*`` (what ``magi restore`` moved aside, with its -wal and
   -shm) and a crashed restore's ``<db>.restoring`` are deleted: they are whole copies of the memory.
3. **Collector temp copies** (``paths.temp_dir``) and unfinished backup copies are deleted.
4. The full-text indexes are merged (a deleted row's terms stay in their segments until then), and a
   database from before this version is rewritten once (``VACUUM``: its old free space).
5. The **write-ahead log** is checkpointed and truncated. While another connection reads an older
   snapshot this cannot complete — the old pages must stay for it — and the scrub stays pending.
6. The **approximate chunk index** beside the database (:mod:`.store.ann`) is written again without the
   deleted chunks' vectors (the old file is deleted).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MemoryUnavailable
from .paths import temp_dir
from .store import Database, ann, ann_build, backup, erasure

log = logging.getLogger(__name__)


@dataclass
class ScrubReport:
    done: bool = True
    backups_replaced: int = 0
    files_removed: list[str] = field(default_factory=list)
    waiting_for: str | None = None          # why it is not done yet


def scrub(db: Database, deleted_at: float) -> ScrubReport:
    """One pass over every file of the memory for deletions finished by ``deleted_at``."""
    report = ScrubReport()
    if isinstance(db.path, Path):
        report.backups_replaced = replace_backups(db.path, deleted_at)
        report.files_removed += remove_kept_aside(db.path)
        removed, stuck = clear_scratch(db.path, deleted_at)
        report.files_removed += removed
        if stuck:
            report.done, report.waiting_for = False, f"could not delete {stuck[0]}"
    try:
        if ann_build.maintain(db, erase=True) == "" and ann.has_index(db):
            # another process recorded a file meanwhile (it may descend from one holding the forgotten vectors)
            report.done = False
            report.waiting_for = report.waiting_for or "the approximate vector index is being written elsewhere"
        with db.writer() as conn:
            if not erasure.vacuum_legacy_free_space(conn):     # (which merges the indexes too)
                erasure.merge_fts(conn, deleted_at)
            if not erasure.truncate_wal(conn):
                report.done = False
                report.waiting_for = report.waiting_for or "another connection is reading an older snapshot"
    except MemoryUnavailable as exc:        # busy for long, a full disk: tried again later
        report.done, report.waiting_for = False, str(exc)
    return report


def replace_backups(db_path: Path, deleted_at: float) -> int:
    """Backups made before ``deleted_at`` may hold what was forgotten: a fresh backup replaces them (they
    are deleted even when it cannot be made). Returns how many went."""
    older = [b for b in backup.list_backups(db_path) if b.created_at <= deleted_at]
    if not older:
        return 0
    try:
        backup.make_backup(db_path, "forget")
    except (MemoryUnavailable, OSError) as exc:
        log.error("no backup could be made after forgetting (%s); the older ones are deleted anyway", exc)
    dropped = 0
    for old in older:
        try:
            old.path.unlink(missing_ok=True)
            dropped += 1
        except OSError:
            log.exception("could not delete the backup %s", old.path)
    return dropped


def remove_kept_aside(db_path: Path) -> list[str]:
    """Delete what ``magi restore`` kept aside (``<db>.replaced-<time>`` and its -wal / -shm) and a crashed
    restore's ``<db>.restoring``."""
    removed = []
    for path in sorted(db_path.parent.glob(db_path.name + ".replaced-*")) + [
            db_path.with_name(db_path.name + ".restoring")]:
        if path.is_file():
            try:
                path.unlink()
                removed.append(str(path))
                log.warning("deleted %s: it held what was forgotten", path)
            except OSError:
                log.exception("could not delete %s", path)
    return removed


def clear_scratch(db_path: Path, deleted_at: float) -> tuple[list[str], list[str]]:
    """Empty the collectors' temp folder, and delete unfinished backup copies older than the deletion (a
    newer one belongs to a backup running now, which discards its copy itself when a forget overtook it).
    Returns (removed, could not be removed)."""
    removed, stuck = [], []
    scratch = temp_dir(db_path.parent)
    if scratch.is_dir():
        for entry in sorted(scratch.iterdir()):
            try:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed.append(str(entry))
            except OSError:
                stuck.append(str(entry))
    for partial in backup.backup_folder(db_path).glob("*.partial"):
        with contextlib.suppress(OSError):
            if partial.stat().st_mtime <= deleted_at:
                partial.unlink()
                removed.append(str(partial))
    return removed, stuck
