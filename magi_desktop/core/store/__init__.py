"""SQLite storage: one writer connection behind a lock, one reader connection per thread."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

from .connection import Connection, connect, prepare_data_dir, sqlite_version, write_transaction
from .migrations import SchemaTooNew, migrate

__all__ = ["Database", "Connection", "SchemaTooNew", "connect", "prepare_data_dir", "sqlite_version"]


class Database:
    """The memory's database file.

    SQLite allows one writer at a time; inside this process every write goes
    through :meth:`transaction`, which serialises writers on a lock (other
    processes wait on the busy timeout). Readers get their own connection per
    thread and, in WAL mode, never block the writer.
    """

    def __init__(self, path: Path | str):
        self.path = Path(path) if str(path) != ":memory:" else path
        if isinstance(self.path, Path):
            prepare_data_dir(self.path.parent)
        self._lock = threading.RLock()
        self._writer = connect(self.path)
        # A reader lives in its thread's local storage: when the thread ends its
        # connection is freed (and closed); the weak set only lets close() reach
        # the ones still alive.
        self._local = threading.local()
        self._readers: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._readers_lock = threading.Lock()
        self.applied_migrations = migrate(self._writer)
        self._closed = False

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """The writer connection inside BEGIN IMMEDIATE … COMMIT (rolled back on error)."""
        with self._lock:
            self._check_open()
            with write_transaction(self._writer) as conn:
                yield conn

    @contextlib.contextmanager
    def writer(self) -> Iterator[Connection]:
        """The writer connection, locked, for callers that manage transactions themselves."""
        with self._lock:
            self._check_open()
            yield self._writer

    def reader(self) -> Connection:
        """This thread's read connection."""
        self._check_open()
        if self.path == ":memory:":
            return self._writer
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
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
            with self._readers_lock:
                for conn in list(self._readers):
                    conn.close()
                self._readers.clear()
            try:
                self._writer.execute("PRAGMA optimize")
            finally:
                self._writer.close()
