"""SQLite storage: one writer connection behind a lock, one reader connection per thread."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

from ..errors import DatabaseCorrupt, DiskFull, MemoryBusy
from . import backup
from .connection import (
    BUSY_TIMEOUT_MS,
    Connection,
    DatabaseError,
    LockWait,
    connect,
    is_busy,
    is_corrupt,
    is_disk_full,
    prepare_data_dir,
    sqlite_version,
    write_transaction,
)
from .migrations import SchemaTooNew, applied_versions, available_migrations, migrate

log = logging.getLogger(__name__)

LOW_SPACE_BYTES = 1 << 20   # less free space than this on the database's disk counts as full

__all__ = ["Database", "Connection", "SchemaTooNew", "connect", "prepare_data_dir", "sqlite_version"]


class Database:
    """The memory's database file.

    SQLite allows one writer at a time; inside this process every write goes
    through :meth:`transaction`, which serialises writers on a lock (other
    processes wait on the busy timeout). Readers get their own connection per
    thread and, in WAL mode, never block the writer.

    Opening checks the file (``quick_check``; :class:`DatabaseCorrupt` names it and the backups
    that can replace it) and backs it up before any migration. A write that finds the disk full
    raises :class:`DiskFull` and leaves the database read-only (:attr:`full`) until a later write
    succeeds.
    """

    def __init__(self, path: Path | str, *, check: bool = True, lock_wait: LockWait | None = None,
                 lock_patience: float | None = None):
        self.path = Path(path) if str(path) != ":memory:" else path
        if isinstance(self.path, Path):
            prepare_data_dir(self.path.parent)
        self._lock = threading.RLock()
        #: The write that found the disk full, until a write succeeds again (None: writable).
        self.full: DiskFull | None = None
        self.full_since: float | None = None
        if check and isinstance(self.path, Path):
            backup.check_not_emptied(self.path)
        try:
            self._writer = connect(self.path)
        except DatabaseError as exc:
            raise self._translated(exc) from exc
        # Waiting for another program's write lock (migrations included): reported, then MemoryBusy.
        self._writer.lock_wait, self._writer.lock_patience = lock_wait, lock_patience
        # A reader lives in its thread's local storage: when the thread ends its
        # connection is freed (and closed); the weak set only lets close() reach
        # the ones still alive.
        self._local = threading.local()
        self._readers: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._readers_lock = threading.Lock()
        try:
            if check and isinstance(self.path, Path):
                backup.check_database(self._writer, self.path)
            self._backup_before_migrating()
            self.applied_migrations = migrate(self._writer)
        except BaseException as exc:
            self._writer.close()
            if isinstance(exc, DatabaseError):
                raise self._translated(exc) from exc
            raise
        self._closed = False
        if isinstance(self.path, Path):
            backup.opened(self.path)

    def _backup_before_migrating(self) -> None:
        """An existing memory about to be upgraded is copied first (a failed upgrade rolls back anyway;
        this is for the one that succeeds and turns out wrong)."""
        if not isinstance(self.path, Path):
            return
        done = applied_versions(self._writer)
        if done and any(m.version not in done for m in available_migrations()):
            made = backup.make_backup(self.path, f"pre-migration-v{max(done)}", source=self._writer)
            log.info("backed up the memory before upgrading its schema: %s", made.path)

    def _out_of_space(self) -> bool:
        """Whether the database cannot grow: at ``max_page_count``, or its disk nearly full. Asked after an
        error SQLite did not call SQLITE_FULL (sqlite-vec reports a full disk as "could not insert a
        new vector chunk")."""
        writer = getattr(self, "_writer", None)     # None: connecting failed
        with contextlib.suppress(DatabaseError):    # (a closed connection raises ProgrammingError)
            if writer is not None and writer.execute("PRAGMA page_count").fetchone()[0] >= \
                    writer.execute("PRAGMA max_page_count").fetchone()[0]:
                return True
        if isinstance(self.path, Path) and hasattr(os, "statvfs"):
            with contextlib.suppress(OSError):
                disk = os.statvfs(self.path.parent)
                return disk.f_bavail * disk.f_frsize < LOW_SPACE_BYTES
        return False

    def _translated(self, exc: DatabaseError) -> BaseException:
        """A full disk, a damaged file or a lock held too long as the memory's own errors; any other error
        as it is."""
        if is_busy(exc):      # a statement outside begin_immediate's wait (a pragma, a checkpoint)
            return MemoryBusy(self.path, BUSY_TIMEOUT_MS / 1000)
        if is_disk_full(exc) or (not is_corrupt(exc) and self._out_of_space()):
            error = DiskFull(self.path, str(exc))
            if self.full is None:
                log.warning("%s", error)
                self.full_since = time.time()
            self.full = error
            return error
        if is_corrupt(exc) and isinstance(self.path, Path):
            return DatabaseCorrupt(self.path, str(exc), backup.list_backups(self.path))
        return exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """The writer connection inside BEGIN IMMEDIATE … COMMIT (rolled back on error)."""
        with self._lock:
            self._check_open()
            try:
                with write_transaction(self._writer) as conn:
                    yield conn
            except DatabaseError as exc:
                translated = self._translated(exc)
                if translated is exc:
                    raise
                raise translated from exc
            if self.full is not None:
                log.warning("the memory is writable again (space was freed)")
                self.full = self.full_since = None

    @contextlib.contextmanager
    def writer(self) -> Iterator[Connection]:
        """The writer connection, locked, for callers that manage transactions themselves."""
        with self._lock:
            self._check_open()
            try:
                yield self._writer
            except DatabaseError as exc:
                translated = self._translated(exc)
                if translated is exc:
                    raise
                raise translated from exc

    @contextlib.contextmanager
    def patience(self, seconds: float) -> Iterator[None]:
        """Writes give up after ``seconds`` of waiting for another program's lock inside this block (opening
        the memory does not wait long for work it can leave to later)."""
        previous = self._writer.lock_patience
        self._writer.lock_patience = seconds
        try:
            yield
        finally:
            self._writer.lock_patience = previous

    def reader(self) -> Connection:
        """This thread's read connection."""
        self._check_open()
        if self.path == ":memory:":
            return self._writer
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, mmap=True)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.add(conn)
        return conn

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the memory database is closed")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if isinstance(self.path, Path):
                backup.closed(self.path)
                from . import ann  # (ann imports the store's tables, which import this module)

                ann.release(self.path)
            with self._readers_lock:
                for conn in list(self._readers):
                    conn.close()
                self._readers.clear()
            try:
                # optimize may want the write lock (to ANALYZE): closing does not wait for it.
                self._writer.execute("PRAGMA busy_timeout = 100")
                self._writer.execute("PRAGMA optimize")
            except DatabaseError as exc:   # a full disk, another writer: closing must still close
                if is_busy(exc):
                    log.debug("PRAGMA optimize at close skipped: another program is writing")
                else:
                    log.warning("PRAGMA optimize at close failed: %s", exc)
            finally:
                self._writer.close()
