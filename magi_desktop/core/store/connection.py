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
from collections.abc import Callable, Iterator
from pathlib import Path

import sqlean as sqlite3
import sqlite_vec

from ..text import fts_document, index_text


def _index_document(content: str | None, speaker: str | None) -> str:
    return fts_document(index_text(content or "", speaker))



class Connection(sqlite3.Connection):
    """A plain sqlean connection that can be weakly referenced (the base class cannot)."""


DatabaseError = sqlite3.DatabaseError
OperationalError = sqlite3.OperationalError
IntegrityError = sqlite3.IntegrityError

# Primary result codes (an extended code's low byte): a full disk, a damaged file.
_FULL_CODES = {sqlite3.SQLITE_FULL}
_CORRUPT_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}

BUSY_TIMEOUT_MS = 10_000

# Functions every connection registers, because triggers call them
# (fact_events_fts is filled by a trigger that segments Chinese with jieba).
_SQL_FUNCTIONS: dict[str, tuple[int, Callable]] = {
    "magi_fts_text": (1, lambda text: fts_document(text or "")),
    "magi_fts_index": (2, _index_document),
}


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


def connect(path: Path | str, *, readonly: bool = False) -> Connection:
    """Open a configured connection: WAL, foreign keys, busy timeout, sqlite-vec loaded."""
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
        if not in_memory and not readonly:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise OperationalError(f"could not switch {target} to WAL (got {mode})")
        # NORMAL in WAL mode: a process crash (kill -9) never loses a committed
        # transaction; only an OS crash or power loss can drop the last ones.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -16000")  # 16 MB page cache per connection
    except Exception:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def write_transaction(conn: Connection) -> Iterator[Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; roll back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
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
