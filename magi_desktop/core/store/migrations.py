"""Schema migrations: ordered SQL files ``migrations/NNNN_name.sql``.

The pending migrations run in one transaction together with the rows that record
them in ``schema_migrations``, so a crash leaves the database either before or
after the upgrade, never half-way.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from importlib import resources

import sqlean as sqlite3

from ..errors import MemoryUnavailable
from .connection import Connection, write_transaction

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class SchemaTooNew(MemoryUnavailable):
    """The database was written by a newer version of Magi Desktop."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def available_migrations() -> list[Migration]:
    found = []
    for entry in resources.files(__package__).joinpath("migrations").iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions: {versions}")
    return found


_RECORD_TABLE = ("CREATE TABLE IF NOT EXISTS schema_migrations ("
                 " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)")


def applied_versions(conn: Connection) -> set[int]:
    """The versions applied (a read: a new database has none, and its record table is made by
    :func:`migrate` under the write lock — so opening never writes outside a write transaction)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").fetchone():
        return set()
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (triggers, strings and comments respected)."""
    statements, buffer = [], ""
    for piece in sql.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\n;"):
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip(" \t\n;"):
        raise ValueError(f"incomplete SQL statement at the end of a migration: {buffer.strip()[:80]!r}")
    return statements


def migrate(conn: Connection, migrations: list[Migration] | None = None) -> list[int]:
    """Apply every pending migration in order; return the versions applied.

    All of them run with their records in one ``BEGIN IMMEDIATE`` transaction,
    which re-checks under the write lock what another process applied first.
    """
    migrations = available_migrations() if migrations is None else migrations
    done = applied_versions(conn)
    newest_known = max((m.version for m in migrations), default=0)
    if done and max(done) > newest_known:
        raise SchemaTooNew(
            f"database schema version {max(done)} is newer than this program knows "
            f"({newest_known}); upgrade Magi Desktop"
        )
    applied: list[int] = []
    if all(m.version in done for m in migrations):
        return applied
    # Every pending migration under one write lock: two processes opening a new database at once
    # cannot take turns applying them, and a crash leaves the schema as it was before the upgrade.
    with write_transaction(conn):
        conn.execute(_RECORD_TABLE)
        done = applied_versions(conn)          # another process may have got there first
        for migration in migrations:
            if migration.version in done:
                continue
            for statement in split_statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time()),
            )
            applied.append(migration.version)
    return applied
