"""SQLite connections: sqlean (a modern SQLite that can load extensions) with sqlite-vec.

The pyenv/system ``sqlite3`` module often cannot load extensions and ships an old
SQLite, so every connection in the project comes from here. Connections run in
autocommit mode (``isolation_level=None``); multi-statement writes go through
:func:`write_transaction`, which uses ``BEGIN IMMEDIATE`` so two writers never
deadlock upgrading a read lock.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import sqlean as sqlite3
import sqlite_vec

from ..errors import MemoryBusy
from ..text import fts_document, index_text


def _index_document(content: str | None, speaker: str | None) -> str:
    return fts_document(index_text(content or "", speaker))



#: Called as ``(seconds waited so far, acquired)`` while a writer waits for another's write lock
#: (``acquired`` is True once, when it got it). The process default: see :func:`on_lock_wait`.
LockWait = Callable[[float, bool], None]


class Connection(sqlite3.Connection):
    """A plain sqlean connection that can be weakly referenced (the base class cannot), with what its
    writes do while another connection holds the write lock."""

    lock_wait: LockWait | None = None       # None: the process default (on_lock_wait)
    lock_patience: float | None = None      # None: LOCK_PATIENCE_SECONDS


DatabaseError = sqlite3.DatabaseError
OperationalError = sqlite3.OperationalError
IntegrityError = sqlite3.IntegrityError

# Primary result codes (an extended code's low byte): a full disk, a damaged file.
_FULL_CODES = {sqlite3.SQLITE_FULL}
_CORRUPT_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}

BUSY_TIMEOUT_MS = 10_000
# A writer asks for the write lock in steps this long (SQLite's busy handler polls inside a step), reports
# the wait between steps and gives up with MemoryBusy after LOCK_PATIENCE_SECONDS. Every long write of
# the memory is chunked into transactions well under a second, so a wait is short unless another program
# is stuck or doing something long on purpose (an import, a restore, the one-off VACUUM of an old file).
LOCK_STEP_MS = 250
LOCK_PATIENCE_SECONDS = 300.0
# Deleted content is overwritten with zeros, always: a row rewritten by ingest, an embedding or L2 update
# leaves no stale copy in the page's free space or in a free page for forget to miss later (issue 16).
SECURE_DELETE = "ON"
_default_lock_wait: list[LockWait | None] = [None]
# Address space, not memory: the mapped pages are the OS page cache's, shared by every reader of the file and
# dropped under pressure. Past this size the rest of the file is read the ordinary way.
MMAP_SIZE = 1 << 34

# Functions every connection registers, because triggers call them
# (fact_events_fts is filled by a trigger that segments Chinese with jieba).
_SQL_FUNCTIONS: dict[str, tuple[int, Callable]] = {
    "magi_fts_text": (1, lambda text: fts_document(text or "")),
    "magi_fts_index": (2, _index_document),
}


def placeholders(n: int) -> str:
    """``?, ?, …`` for an ``IN (…)`` list of ``n`` values."""
    return ", ".join("?" * n)


def sqlite_version() -> str:
    return sqlite3.sqlite_version


def _primary_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_disk_full(exc: BaseException) -> bool:
    """SQLITE_FULL: the disk (or ``max_page_count``) is full."""
    return isinstance(exc, DatabaseError) and (_primary_code(exc) in _FULL_CODES
                                               or "database or disk is full" in str(exc))


def is_corrupt(exc: BaseException) -> bool:
    """SQLITE_CORRUPT / SQLITE_NOTADB: the file is damaged or not a database at all."""
    return isinstance(exc, DatabaseError) and (_primary_code(exc) in _CORRUPT_CODES
                                               or "malformed" in str(exc) or "not a database" in str(exc))


def is_busy(exc: BaseException) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock this statement needed."""
    return isinstance(exc, OperationalError) and (
        _primary_code(exc) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        or "database is locked" in str(exc) or "database table is locked" in str(exc))


def on_lock_wait(callback: LockWait | None) -> None:
    """Set what every connection of this process does while it waits for the write lock (the CLI prints
    progress; the app shows it); a connection's own ``lock_wait`` wins."""
    _default_lock_wait[0] = callback


def _secure_file(path: Path) -> None:
    """Create the database file readable by the user only before SQLite opens it.

    SQLite gives the -wal and -shm files the permissions of the database file.
    An existing file is never opened here: on POSIX, closing any descriptor of a
    file drops every lock this process holds on it, so another process could
    checkpoint and delete the write-ahead log under our open connections and
    corrupt the database (sqlite.org/howtocorrupt.html §2.2).
    """
    if not path.exists():
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)   # new: nobody has it open yet
            os.close(fd)
        except FileExistsError:
            pass
    if os.name == "posix" and stat.S_IMODE(path.stat().st_mode) != stat.S_IRUSR | stat.S_IWUSR:
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def prepare_data_dir(directory: Path) -> Path:
    """Create the data folder readable by the user only (0700 on POSIX).

    A folder that already exists is left as it is: the database may be put in
    a folder the user shares on purpose (``magi doctor`` reports a data folder
    others can read); the database file itself is always 0600.
    """
    if not directory.exists():
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.name == "posix":
            os.chmod(directory, stat.S_IRWXU)  # mkdir's mode is filtered by the umask
    return directory


def connect(path: Path | str, *, readonly: bool = False, mmap: bool = False) -> Connection:
    """Open a configured connection: WAL, foreign keys, busy timeout, sqlite-vec loaded; with ``mmap``, reads
    through a memory map of the file (:data:`MMAP_SIZE`) — for the readers, whose vec0 scans then copy no
    pages into the page cache."""
    target = str(path)
    in_memory = target == ":memory:" or target.startswith("file::memory:")
    if not in_memory and not readonly:
        _secure_file(Path(target))
    # as_uri() percent-encodes the path, so '#', '?' and '%' in folder names are safe.
    uri = Path(target).resolve().as_uri() + "?mode=ro" if readonly else target
    conn = sqlite3.connect(
        uri,
        isolation_level=None,
        check_same_thread=False,
        timeout=BUSY_TIMEOUT_MS / 1000,
        uri=readonly,
        factory=Connection,
    )
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        for name, (nargs, func) in _SQL_FUNCTIONS.items():
            conn.create_function(name, nargs, func, deterministic=True)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA secure_delete = {SECURE_DELETE}")
        if not in_memory and not readonly:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise OperationalError(f"could not switch {target} to WAL (got {mode})")
        # NORMAL in WAL mode: a process crash (kill -9) never loses a committed
        # transaction; only an OS crash or power loss can drop the last ones.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -16000")  # 16 MB page cache per connection
        if mmap and not in_memory:
            conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
    except Exception:
        conn.close()
        raise
    return conn


def begin_immediate(conn: Connection) -> None:
    """``BEGIN IMMEDIATE``, waiting for another writer in steps: the wait is reported to the connection's
    ``lock_wait`` (or the process default) and ends in :class:`MemoryBusy` after its patience — never in
    ``OperationalError: database is locked``."""
    started = time.monotonic()
    waited = 0.0
    patience = LOCK_PATIENCE_SECONDS if conn.lock_patience is None else conn.lock_patience
    report = conn.lock_wait or _default_lock_wait[0]
    while True:
        conn.execute(f"PRAGMA busy_timeout = {LOCK_STEP_MS}")
        try:
            conn.execute("BEGIN IMMEDIATE")
            break
        except OperationalError as exc:
            if not is_busy(exc):
                raise
            waited = time.monotonic() - started
            if waited >= patience:
                raise MemoryBusy(_database_name(conn), waited) from exc
            if report is not None:
                report(waited, False)
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if waited and report is not None:
        report(time.monotonic() - started, True)


def _database_name(conn: Connection) -> str:
    with contextlib.suppress(DatabaseError):
        row = conn.execute("PRAGMA database_list").fetchone()
        if row and row[2]:
            return row[2]
    return "the database"


@contextlib.contextmanager
def savepoint(conn: Connection, name: str) -> Iterator[None]:
    """A nested transaction inside the caller's: what it wrote is rolled back (and the exception raised on)
    when the block fails, the outer transaction going on."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        raise
    conn.execute(f"RELEASE {name}")


@contextlib.contextmanager
def write_transaction(conn: Connection) -> Iterator[Connection]:
    """``BEGIN IMMEDIATE`` (waiting for another writer: :func:`begin_immediate`) … ``COMMIT``; roll back on
    any exception."""
    begin_immediate(conn)
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    else:
        try:
            conn.execute("COMMIT")
        except BaseException:
            # A COMMIT that fails (SQLITE_FULL, an I/O error) may leave the transaction open: without
            # this rollback every later BEGIN on the connection would fail, so a full disk could never
            # recover without a restart.
            if conn.in_transaction:
                with contextlib.suppress(DatabaseError):
                    conn.execute("ROLLBACK")
            raise


@contextlib.contextmanager
def read_snapshot(conn: Connection) -> Iterator[Connection]:
    """``BEGIN`` … ``COMMIT``: the reads inside see one snapshot of the database (a deferred transaction takes
    no write lock)."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")
