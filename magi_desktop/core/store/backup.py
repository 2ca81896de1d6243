"""Automatic backups of the database, checking it for damage, and restoring it (architecture §14).

A backup is a consistent copy made with SQLite's online backup API from a read transaction (in
WAL mode writers carry on meanwhile), switched to a single self-contained file (rollback journal),
scrubbed — full-text indexes merged, then ``VACUUM`` — so nothing forgotten survives in it as
leftover bytes, checked with ``PRAGMA integrity_check`` and only then renamed into place. A copy that
fails the check is thrown away, the damage is reported, and no older backup is rotated out for it.

Backups live in ``backups/`` next to the database (0700; files 0600), named
``<db>-<UTC time>-<reason>.db``; the newest ``KEEP`` are kept. A restore does not delete the file it
replaces: it is moved aside (``<db>.replaced-<time>``, with its -wal and -shm) and the backup is
copied into place. It stays there until the next forget, whose scrub deletes it (it holds everything,
the forgotten rows included: :mod:`..scrub`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import sqlean as sqlite3

from ..errors import DatabaseCorrupt, DiskFull, MemoryUnavailable
from .connection import Connection, DatabaseError, connect, is_corrupt, is_disk_full

log = logging.getLogger(__name__)

FOLDER = "backups"
KEEP = 4                           # newest backups kept (all verified): today's and three before it
INTERVAL_SECONDS = 86400.0         # the periodic job makes one a day
QUICK_CHECK_MAX_BYTES = 4 << 30    # opening checks the file with quick_check up to this size (~0.3 s / 100 MB)
_NAME = re.compile(r"^(?P<stem>.+)-(?P<stamp>\d{8}T\d{9}Z)-(?P<reason>[a-z0-9_]+)\.db$")
_STAMP = "%Y%m%dT%H%M%S"
_open_here: Counter[str] = Counter()    # databases this process has open (see in_use)
_open_lock = threading.Lock()


@dataclass(frozen=True)
class Backup:
    path: Path
    created_at: float
    reason: str              # daily | pre-migration | forget | manual | before-restore
    size_bytes: int

    @property
    def label(self) -> str:
        """How a person sees it: its local time and why it was made."""
        return f"{datetime.fromtimestamp(self.created_at):%Y-%m-%d %H:%M}, {self.reason.replace('_', '-')}"

    def to_dict(self) -> dict:
        return {"path": str(self.path), "created_at": self.created_at, "reason": self.reason,
                "size_bytes": self.size_bytes, "label": self.label}


@dataclass(frozen=True)
class Restored:
    backup: Backup
    database: Path
    kept_aside: list[Path]   # the replaced database and its -wal / -shm, moved (deleted by the next forget)


def backup_folder(db_path: Path) -> Path:
    return Path(db_path).parent / FOLDER


def list_backups(db_path: Path) -> list[Backup]:
    """The backups of ``db_path``, newest first (unfinished copies are not listed)."""
    folder = backup_folder(db_path)
    found = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            match = _NAME.match(entry.name)
            if not match or match["stem"] != Path(db_path).stem or not entry.is_file():
                continue
            stamp = match["stamp"]
            at = datetime.strptime(stamp[:15], _STAMP).replace(tzinfo=timezone.utc).timestamp()
            at += int(stamp[15:18]) / 1000
            found.append(Backup(entry, at, match["reason"].replace("_", "-"), entry.stat().st_size))
    found.sort(key=lambda b: (b.created_at, b.path.name), reverse=True)
    return found


def backup_due(db_path: Path, now: float | None = None, interval: float = INTERVAL_SECONDS) -> bool:
    newest = list_backups(db_path)
    return not newest or (time.time() if now is None else now) - newest[0].created_at >= interval


def verify(path: Path) -> str | None:
    """None when ``path`` is a sound database (``integrity_check``), else what is wrong with it."""
    try:
        conn = connect(path, readonly=True)
    except DatabaseError as exc:
        return str(exc)
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check(5)")]
    except DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()
    return None if rows == ["ok"] else "; ".join(rows)


def check_database(conn: Connection, db_path: Path) -> None:
    """Raise :class:`DatabaseCorrupt` if the open database fails ``quick_check`` (or cannot be read)."""
    db_path = Path(db_path)
    with contextlib.suppress(OSError):
        if db_path.stat().st_size > QUICK_CHECK_MAX_BYTES:
            log.info("%s is over %d bytes: the check at open is skipped", db_path, QUICK_CHECK_MAX_BYTES)
            return
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
    except DatabaseError as exc:
        if is_corrupt(exc):
            raise DatabaseCorrupt(db_path, str(exc), list_backups(db_path)) from exc
        raise
    if rows != ["ok"]:
        raise DatabaseCorrupt(db_path, "; ".join(rows)[:500], list_backups(db_path))


def check_not_emptied(db_path: Path) -> None:
    """Before SQLite opens it: an empty database file (and no write-ahead log) with backups beside it
    was truncated — SQLite would take it for a new database and start an empty memory over it."""
    db_path = Path(db_path)
    wal = Path(str(db_path) + "-wal")
    try:
        emptied = db_path.stat().st_size == 0 and (not wal.exists() or wal.stat().st_size == 0)
    except OSError:
        return
    if emptied and list_backups(db_path):
        raise DatabaseCorrupt(db_path, "the file is empty", list_backups(db_path))


def make_backup(db_path: Path, reason: str = "daily", *, source: Connection | None = None,
                keep: int = KEEP) -> Backup:
    """Copy the database into ``backups/``, verify the copy, then drop the oldest beyond ``keep``.

    ``source`` is a connection to read from (default: a new one, closed after). Raises
    :class:`DatabaseCorrupt` when the copy fails its check (the live file is damaged; no older backup
    is touched), :class:`DiskFull` when there is no room for it (nothing is left behind).
    """
    db_path = Path(db_path)
    folder = backup_folder(db_path)
    if not folder.exists():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.name == "posix":
            os.chmod(folder, stat.S_IRWXU)
    now = time.time()
    partial = folder / f"{db_path.stem}-{reason.replace('-', '_')}-{os.getpid()}-{threading.get_ident()}.db.partial"
    own_source = source is None
    src = source if source is not None else connect(db_path)
    try:
        for _attempt in range(3):
            _create_private(partial)
            dst = sqlite3.connect(str(partial), isolation_level=None)
            try:
                # The merge and the VACUUM move rows between pages: without secure_delete the space they
                # leave keeps copies of them, which a forget after a restore of this copy would not zero.
                dst.execute("PRAGMA secure_delete = ON")
                src.backup(dst)
                dst.execute("PRAGMA journal_mode = DELETE")   # one file, no -wal beside it
                _scrub(dst)
            finally:
                dst.close()
            # A forget that finished while the copy was made: the copy may hold what it removed, and the
            # scrub that replaces older backups may have run already — copy again.
            if not _forgotten_since(src, now):
                break
            log.info("a forget finished during the backup of %s: copying again", db_path)
            now = time.time()
        else:
            raise MemoryUnavailable(f"forgetting kept running during the backup of {db_path}; it is made later")
        problem = verify(partial)
        if problem is not None:
            raise DatabaseCorrupt(db_path, f"its backup copy fails the integrity check: {problem}",
                                  list_backups(db_path))
        _fsync(partial)
        stamp = datetime.fromtimestamp(now, timezone.utc).strftime(_STAMP) + f"{int(now * 1000) % 1000:03d}Z"
        final = folder / f"{db_path.stem}-{stamp}-{reason.replace('-', '_')}.db"   # named by when the copy began
        os.replace(partial, final)
        _fsync(folder)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            partial.unlink()
        if isinstance(exc, DatabaseError) and is_disk_full(exc) or isinstance(exc, OSError) and \
                getattr(exc, "errno", None) == 28:
            raise DiskFull(db_path, "no room for a backup") from exc
        if isinstance(exc, DatabaseError) and is_corrupt(exc):
            raise DatabaseCorrupt(db_path, str(exc), list_backups(db_path)) from exc
        raise
    finally:
        if own_source:
            src.close()
    made = Backup(final, now, reason, final.stat().st_size)
    for old in list_backups(db_path)[max(1, keep):]:
        with contextlib.suppress(OSError):
            old.path.unlink()
    for leftover in folder.glob("*.partial"):
        if leftover != partial and now - leftover.stat().st_mtime > 3600:   # a crash mid-copy
            with contextlib.suppress(OSError):
                leftover.unlink()
    log.info("backed up %s to %s", db_path, final)
    return made


def _forgotten_since(conn: Connection, started: float) -> bool:
    """Whether a forget finished its deletion at or after ``started`` (a fresh read of the live database;
    False for a schema from before forget jobs, as in the backup made before migrating)."""
    try:
        row = conn.execute("SELECT max(deleted_at) FROM forget_receipts").fetchone()
    except DatabaseError:
        return False
    return bool(row and row[0] is not None and row[0] >= started)


def _scrub(conn) -> None:
    """Leave nothing deleted in the copy: full-text indexes merged (FTS5 keeps a deleted row's terms in
    its older segments until a merge), then ``VACUUM`` (no free pages, no stale bytes in used ones)."""
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                 "sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'").fetchall():
        conn.execute(f'INSERT INTO "{table}" ("{table}") VALUES (\'optimize\')')
    conn.execute("VACUUM")


def drop_backups_before(db_path: Path, backup: Backup) -> int:
    """Delete every backup older than ``backup`` (after a forget: they still hold what was forgotten)."""
    dropped = 0
    for old in list_backups(db_path):
        if old.path != backup.path and old.created_at <= backup.created_at:
            with contextlib.suppress(OSError):
                old.path.unlink()
                dropped += 1
    return dropped


def opened(db_path: Path) -> None:
    """A :class:`~magi_desktop.core.store.Database` of this process opened ``db_path``."""
    with _open_lock:
        _open_here[str(Path(db_path).resolve())] += 1


def closed(db_path: Path) -> None:
    with _open_lock:
        key = str(Path(db_path).resolve())
        _open_here[key] -= 1
        if _open_here[key] <= 0:
            del _open_here[key]


def in_use(db_path: Path) -> bool:
    """True while a connection (this process or another) has the database open.

    This process's own ``Database`` objects are known without touching the file. For other
    processes: every WAL-mode connection holds a shared lock on the "DMS" byte of the -shm file for
    as long as it is open (SQLite's unix VFS, offset 128); if an exclusive lock on it cannot be had,
    the database is in use. (Probing from a process that has the file open itself would drop that
    process's SQLite locks when the probe's descriptor closes — hence the registry.) Not knowable
    this way off POSIX: False there.
    """
    with _open_lock:
        if _open_here.get(str(Path(db_path).resolve())):
            return True
    shm = Path(str(db_path) + "-shm")
    if os.name != "posix" or not shm.exists():
        return False
    import fcntl

    fd = os.open(shm, os.O_RDWR)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 128)
        except OSError:
            return True
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, 128)
        return False
    finally:
        os.close(fd)


def restore(db_path: Path, backup: str | os.PathLike | None = None) -> Restored:
    """Put a backup in place of the database: ``backup`` (a path, or a name in ``backups/``), or the
    newest one that passes the integrity check. The replaced database is moved aside (until the next forget).
    The memory must not be open anywhere (quit the app first)."""
    db_path = Path(db_path)
    chosen = _choose(db_path, backup)
    if in_use(db_path):
        raise MemoryUnavailable(f"{db_path} is open in another program (the Magi app, `magi mcp`…): quit it, "
                                "then restore")
    stamp = datetime.now(timezone.utc).strftime(_STAMP) + "Z"
    kept: list[Path] = []
    incoming = db_path.with_name(db_path.name + ".restoring")
    try:
        _create_private(incoming)
        shutil.copyfile(chosen.path, incoming)
        _fsync(incoming)
    except BaseException:
        with contextlib.suppress(OSError):
            incoming.unlink()
        raise
    for suffix in ("", "-wal", "-shm"):
        current = Path(str(db_path) + suffix)
        if current.exists():
            aside = db_path.with_name(f"{db_path.name}.replaced-{stamp}{suffix}")
            os.replace(current, aside)
            kept.append(aside)
    _mark_unscrubbed(incoming)
    os.replace(incoming, db_path)
    _fsync(db_path.parent)
    log.warning("restored %s from %s; the replaced file is kept as %s", db_path, chosen.path,
                kept[0] if kept else "(there was none)")
    return Restored(chosen, db_path, kept)


def _mark_unscrubbed(path: Path) -> None:
    """A backup made before its copy was scrubbed with secure_delete may keep copies of rows in the unused
    space of its pages: the next forget's scrub rebuilds the restored file (memory_meta's legacy flag)."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_meta'").fetchone():
            conn.execute("INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('free_space_unscrubbed', '1')")
    finally:
        conn.close()


def _choose(db_path: Path, backup: str | os.PathLike | None) -> Backup:
    backups = list_backups(db_path)
    if backup is not None:
        wanted = Path(backup)
        if not wanted.is_absolute() and not wanted.exists():
            wanted = backup_folder(db_path) / wanted
        if not wanted.is_file():
            raise MemoryUnavailable(f"no backup {backup} (see `magi restore --list`)")
        found = next((b for b in backups if b.path.resolve() == wanted.resolve()), None)
        found = found or Backup(wanted, wanted.stat().st_mtime, "file", wanted.stat().st_size)
        problem = verify(found.path)
        if problem is not None:
            raise MemoryUnavailable(f"the backup {found.path} is damaged too ({problem}); pick another "
                                    "(`magi restore --list`)")
        return found
    for candidate in backups:
        problem = verify(candidate.path)
        if problem is None:
            return candidate
        log.warning("skipping damaged backup %s: %s", candidate.path, problem)
    raise MemoryUnavailable(f"no sound automatic backup of {db_path} in {backup_folder(db_path)}")


def _create_private(path: Path) -> None:
    """An empty file readable by the user only (replacing a stale one)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _fsync(path: Path) -> None:
    """Flush a file (or a folder's entry list) to disk; folders cannot be opened on Windows."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
