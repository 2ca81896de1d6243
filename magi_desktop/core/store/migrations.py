"""Schema migrations: ordered SQL files ``migrations/NNNN_name.sql``.

Each migration runs in one transaction together with the row that records it
in ``schema_migrations``, so a crash leaves the database either before or after
a migration, never half-way.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from importlib import resources

from .connection import Connection

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class SchemaTooNew(RuntimeError):
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


def applied_versions(conn: Connection) -> set[int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def migrate(conn: Connection, migrations: list[Migration] | None = None) -> list[int]:
    """Apply every pending migration in order; return the versions applied."""
    migrations = available_migrations() if migrations is None else migrations
    done = applied_versions(conn)
    newest_known = max((m.version for m in migrations), default=0)
    if done and max(done) > newest_known:
        raise SchemaTooNew(
            f"database schema version {max(done)} is newer than this program knows "
            f"({newest_known}); upgrade Magi Desktop"
        )
    applied = []
    for migration in migrations:
        if migration.version in done:
            continue
        record = (
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES "
            f"({migration.version}, '{migration.name}', {time.time()!r});"
        )
        try:
            # executescript runs the statements as written; the explicit
            # BEGIN/COMMIT make the migration and its record one transaction.
            conn.executescript(f"BEGIN IMMEDIATE;\n{migration.sql}\n;{record}\nCOMMIT;")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        applied.append(migration.version)
    return applied
