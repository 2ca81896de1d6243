"""The job-queue primitive every background queue shares: its retry policy and its SQL.

A queue is a table with a key (one or more columns) and the columns ``state``, ``attempts``,
``next_attempt_at`` and ``last_error``; :class:`JobQueue` names the table and how it differs:

- ``finished``: a finished job is deleted (``embedding_jobs``, ``extraction_retries``) or kept as
  ``state = 'done'`` with ``finished_at`` (``l2_projection_jobs``, which the stats count).
- ``sparse``: a row exists only once a job failed or waited (``extraction_retries``: a generation
  with no row is pending with no attempts); failing and postponing insert it, reviving deletes it.
- ``group``: a column whose jobs are claimed together (L2's micro-batches share a ``batch_key``).
- ``holds_queue``: a postponed job (the provider is down) makes the whole queue wait as long.

States: ``pending`` (due once ``next_attempt_at`` has passed) → ``running`` (claimed; then
``next_attempt_at`` is the lease's end) → finished; a failed attempt is pending again after
:func:`backoff_delay`, and ``dead`` (the dead letter) after ``MAX_ATTEMPTS``, until revived.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Literal, NamedTuple, TypeVar, cast

from . import Database
from .connection import Connection, placeholders

# The retry policy of every queue (architecture §6: pending → running (a lease) → done, or pending again
# with backoff, or dead after 5 attempts; §9 for extraction's retries).
MAX_ATTEMPTS = 5                  # a job failing this often is poison, not unlucky: it goes to the dead letter
BACKOFF_SECONDS = 30.0            # the first retry waits this long: a passing fault (a busy model) has cleared
MAX_BACKOFF_SECONDS = 3600.0      # doubling stops here, so a revived or late job is retried within the hour
LEASE_SECONDS = 600.0             # a claim outlives any batch, LLM retries included; then a crash's job is due again
PROVIDER_BACKOFF_SECONDS = 60.0   # the LLM endpoint is down: wait this long before knocking again, no attempt charged

K = TypeVar("K")   # a job's key: the column's value (an event rowid), or a tuple for a composite key


class Job(NamedTuple):
    """One job's retry columns."""

    state: str
    attempts: int
    next_attempt_at: float
    last_error: str | None


def backoff_delay(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failure: doubling from 30 s, at most an hour."""
    return min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS * 2 ** max(0, attempts - 1))


class ClaimIndexes(NamedTuple):
    """The indexes a claim reads through (``INDEXED BY``), each on ``state`` first: ``due`` by
    ``next_attempt_at`` (is anything due?), ``order`` by key (the oldest due job), ``group`` by the group column,
    then key (the oldest due jobs of one group). Named rather than left to the planner, whose choice follows the
    statistics ``PRAGMA optimize`` took: with none it sorted every due job to take one, with stale ones (taken
    when every job was pending) it walked every done job (migration 0028; issue 20)."""

    due: str
    order: str
    group: str


@dataclass(frozen=True)
class JobQueue(Generic[K]):
    """One queue table. The table and column names are the code's own constants, never user input."""

    table: str
    key: tuple[str, ...]
    finished: Literal["delete", "done"] = "delete"
    sparse: bool = False
    group: str | None = None
    holds_queue: bool = False
    error_chars: int = 2000           # what of an error message is kept in ``last_error``
    claim_indexes: ClaimIndexes | None = None

    # ------------------------------------------------------------------ reading

    def due(self, conn: Connection, now: float, limit: int) -> list[K]:
        """Pending jobs due at ``now``, oldest key first, without claiming them (a worker whose finish is
        idempotent needs no lease: the embedding queue)."""
        rows = conn.execute(f"SELECT {self._columns} FROM {self.table} WHERE state = 'pending' "
                            f"AND next_attempt_at <= ? ORDER BY {self._columns} LIMIT ?", (now, limit))
        return [self._key_of(row) for row in rows]

    def job(self, conn: Connection, key: K) -> Job | None:
        """One job's state, attempts, next attempt (or lease end) and last error; None when it is not queued."""
        row = conn.execute(f"SELECT state, attempts, next_attempt_at, last_error FROM {self.table} WHERE {self._one}",
                           self._values(key)).fetchone()
        return None if row is None else Job(*row)

    # readers the tests and layers share
    def jobs(self, conn: Connection) -> dict[K, Job]:
        """Every queued job by key, oldest key first."""
        rows = conn.execute(f"SELECT {self._columns}, state, attempts, next_attempt_at, last_error FROM {self.table} "
                            f"ORDER BY {self._columns}")
        width = len(self.key)
        return {self._key_of(row[:width]): Job(*row[width:]) for row in rows}

    def due_count(self, conn: Connection, now: float) -> int:
        """How many pending jobs are due at ``now``."""
        return conn.execute(f"SELECT count(*) FROM {self.table} WHERE state = 'pending' AND next_attempt_at <= ?",
                            (now,)).fetchone()[0]

    def counts(self, conn: Connection) -> dict[str, int]:
        """Jobs per state (only the states that have jobs)."""
        return {state: n for state, n in conn.execute(f"SELECT state, count(*) FROM {self.table} GROUP BY state")}

    def oldest_pending_age(self, conn: Connection, now: float) -> float | None:
        """Seconds the oldest pending job has waited since it was queued (``enqueued_at``); None when none is."""
        row = conn.execute(f"SELECT min(enqueued_at) FROM {self.table} WHERE state = 'pending'").fetchone()
        return None if row[0] is None else max(0.0, now - row[0])

    # ------------------------------------------------------------------ queueing

    def requeue(self, conn: Connection, select: str, params: Sequence[object], now: float) -> int:
        """Inside the caller's transaction: queue afresh the keys ``select`` returns (their text changed, the index
        was rebuilt) — a new job, or an existing one of any state pending again with no attempts, due at once.
        For a queue whose rows need only their key and ``enqueued_at`` (the embedding queue); returns how many."""
        # ``WHERE true`` tells SQLite's parser that ON CONFLICT belongs to the INSERT, not to a join in the SELECT.
        return conn.execute(f"INSERT INTO {self.table} ({self._columns}, enqueued_at) SELECT *, ? FROM ({select}) "
                            f"WHERE true ON CONFLICT ({self._columns}) DO UPDATE SET state = 'pending', attempts = 0, "
                            "next_attempt_at = 0, last_error = NULL", (now, *params)).rowcount

    # ------------------------------------------------------------------ claiming

    def claim(self, db: Database, now: float, limit: int, *, below: int | None = None) -> list[K]:
        """Mark the next due jobs running under a lease (``LEASE_SECONDS``) and return their keys, oldest first;
        [] when none is due. With a ``group``, the jobs share the oldest due job's group — unless that job failed
        before: then it is claimed alone, so one poisonous job cannot keep its group from going on. ``below``:
        only keys smaller than it (one-column integer keys)."""
        held = "" if below is None else f" AND {self.key[0]} < ?"
        bound: tuple[int, ...] = () if below is None else (below,)
        due = f"state = 'pending' AND next_attempt_at <= ?{held}"
        indexes = self.claim_indexes
        by_due, by_order, by_group = (f" INDEXED BY {name}" for name in indexes) if indexes else ("", "", "")
        # One transaction (BEGIN IMMEDIATE): another connection claims after this one committed, never the same job.
        with db.transaction() as conn:
            if indexes and conn.execute(f"SELECT 1 FROM {self.table}{by_due} WHERE state = 'pending' "
                                        "AND next_attempt_at <= ? LIMIT 1", (now,)).fetchone() is None:
                return []       # the whole queue waits (postponed): no walk through its jobs in key order
            if self.group is None:
                keys = [self._key_of(row) for row in conn.execute(
                    f"SELECT {self._columns} FROM {self.table}{by_order} WHERE {due} ORDER BY {self._columns} "
                    "LIMIT ?", (now, *bound, limit))]
            else:
                head = conn.execute(f"SELECT {self._columns}, {self.group}, attempts FROM {self.table}{by_order} "
                                    f"WHERE {due} ORDER BY {self._columns} LIMIT 1", (now, *bound)).fetchone()
                if head is None:
                    return []
                *values, group, attempts = head
                keys = [self._key_of(values)] if attempts else [self._key_of(row) for row in conn.execute(
                    f"SELECT {self._columns} FROM {self.table}{by_group} WHERE {due} AND {self.group} = ? "
                    f"AND attempts = 0 ORDER BY {self._columns} LIMIT ?", (now, *bound, group, limit))]
            if keys:
                where, params = self._match(keys)
                conn.execute(f"UPDATE {self.table} SET state = 'running', next_attempt_at = ? WHERE {where}",
                             [now + LEASE_SECONDS, *params])
            return keys

    def recover_expired(self, db: Database, now: float | None = None) -> int:
        """Running jobs whose lease ran out (their process crashed) are pending again; returns how many."""
        now = time.time() if now is None else now
        # Asked with a read first: opening the memory takes the write lock only when there is work.
        if db.reader().execute(f"SELECT 1 FROM {self.table} WHERE state = 'running' AND next_attempt_at <= ? "
                               "LIMIT 1", (now,)).fetchone() is None:
            return 0
        with db.transaction() as conn:
            return conn.execute(f"UPDATE {self.table} SET state = 'pending' WHERE state = 'running' "
                                "AND next_attempt_at <= ?", (now,)).rowcount

    def release(self, db: Database, keys: Sequence[K]) -> None:
        """Put claimed jobs back untouched, due at once (the worker is stopping, or the disk is full)."""
        where, params = self._match(keys)
        with db.transaction() as conn:
            conn.execute(f"UPDATE {self.table} SET state = 'pending' WHERE ({where}) AND state = 'running'", params)

    # ------------------------------------------------------------------ outcomes

    def finish(self, conn: Connection, keys: Sequence[K], now: float) -> int:
        """Inside the caller's transaction (with the job's own writes): the jobs are done; returns how many were
        still queued (0 for a job deleted meanwhile, e.g. its event was forgotten)."""
        where, params = self._match(keys)
        if self.finished == "delete":
            return conn.execute(f"DELETE FROM {self.table} WHERE {where}", params).rowcount
        return conn.execute(f"UPDATE {self.table} SET state = 'done', finished_at = ?, last_error = NULL "
                            f"WHERE {where}", [now, *params]).rowcount

    def fail(self, db: Database, keys: Sequence[K], error: str, now: float) -> int:
        """Charge each job a failed attempt: pending again after :func:`backoff_delay`, or dead after
        ``MAX_ATTEMPTS``. Returns how many went to the dead letter. A job no longer queued is skipped (its
        event was forgotten meanwhile) — except in a sparse queue, where no row means no attempt yet."""
        dead = 0
        with db.transaction() as conn:
            for key in keys:
                values = self._values(key)
                row = conn.execute(f"SELECT attempts FROM {self.table} WHERE {self._one}", values).fetchone()
                if row is None and not self.sparse:
                    continue
                attempts = (row[0] if row else 0) + 1
                state = "dead" if attempts >= MAX_ATTEMPTS else "pending"
                dead += state == "dead"
                self._write(conn, values, attempts, now + backoff_delay(attempts), state, error)
        return dead

    def postpone(self, db: Database, keys: Sequence[K], error: str, now: float) -> None:
        """The provider, not the job, failed: the jobs wait ``PROVIDER_BACKOFF_SECONDS`` and no attempt is
        charged. With ``holds_queue`` every pending job waits as long, so the next call does not try the
        endpoint again with another batch."""
        until = now + PROVIDER_BACKOFF_SECONDS
        with db.transaction() as conn:
            if self.sparse:
                for key in keys:
                    self._write(conn, self._values(key), 0, until, "pending", error, keep_attempts=True)
            else:
                where, params = self._match(keys)
                conn.execute(f"UPDATE {self.table} SET state = 'pending', next_attempt_at = ?, last_error = ? "
                             f"WHERE ({where}) AND state = 'running'", [until, error[:self.error_chars], *params])
            if self.holds_queue:
                conn.execute(f"UPDATE {self.table} SET next_attempt_at = ? WHERE state = 'pending' "
                             "AND next_attempt_at < ?", (until, until))

    def revive(self, db: Database) -> int:
        """Dead-lettered jobs get their attempts back and are due at once; returns how many."""
        with db.transaction() as conn:
            if self.sparse:     # no row is a fresh job
                return conn.execute(f"DELETE FROM {self.table} WHERE state = 'dead'").rowcount
            return conn.execute(f"UPDATE {self.table} SET state = 'pending', attempts = 0, next_attempt_at = 0 "
                                "WHERE state = 'dead'").rowcount

    # ------------------------------------------------------------------ SQL pieces

    @property
    def _columns(self) -> str:
        return ", ".join(self.key)

    @property
    def _one(self) -> str:
        """A WHERE clause matching one key."""
        return " AND ".join(f"{column} = ?" for column in self.key)

    def _values(self, key: K) -> tuple[int | str, ...]:
        values = cast(tuple[int | str, ...], key if isinstance(key, tuple) else (key,))
        if len(values) != len(self.key):
            raise ValueError(f"{self.table} keys have {len(self.key)} column(s), got {key!r}")
        return values

    def _key_of(self, row: Sequence[int | str]) -> K:
        return cast(K, row[0] if len(self.key) == 1 else tuple(row))

    def _match(self, keys: Sequence[K]) -> tuple[str, list[int | str]]:
        """A WHERE clause matching exactly ``keys`` (``col IN (…)`` for a one-column key), and its parameters."""
        if not keys:
            return "0", []
        if len(self.key) == 1:
            return f"{self.key[0]} IN ({placeholders(len(keys))})", [self._values(k)[0] for k in keys]
        return " OR ".join([f"({self._one})"] * len(keys)), [v for k in keys for v in self._values(k)]

    def _write(self, conn: Connection, values: tuple[int | str, ...], attempts: int, next_attempt_at: float,
               state: str, error: str, *, keep_attempts: bool = False) -> None:
        """Set one job's retry columns (a sparse queue inserts the row when it has none; ``keep_attempts`` leaves
        an existing row's attempts and state as they are)."""
        if self.sparse:
            kept = "" if keep_attempts else "attempts = excluded.attempts, state = excluded.state, "
            conn.execute(f"INSERT INTO {self.table} ({self._columns}, attempts, next_attempt_at, state, last_error) "
                         f"VALUES ({placeholders(len(values))}, ?, ?, ?, ?) ON CONFLICT ({self._columns}) DO UPDATE "
                         f"SET {kept}next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error",
                         (*values, attempts, next_attempt_at, state, error[:self.error_chars]))
            return
        conn.execute(f"UPDATE {self.table} SET attempts = ?, state = ?, next_attempt_at = ?, last_error = ? "
                     f"WHERE {self._one}", (attempts, state, next_attempt_at, error[:self.error_chars], *values))


# The queues of the schema (migrations 0001, 0004, 0012). The L3 ``periodic_jobs`` table is not one: it keeps a
# watermark per job (how far each window has run), with no attempts, lease or dead letter.
EMBEDDING_JOBS: JobQueue[int] = JobQueue("embedding_jobs", ("event_rowid",))
L2_PROJECTION_JOBS: JobQueue[int] = JobQueue(
    "l2_projection_jobs", ("event_rowid",), finished="done", group="batch_key", holds_queue=True,
    claim_indexes=ClaimIndexes("l2_projection_jobs_due", "l2_projection_jobs_order", "l2_projection_jobs_group"))
EXTRACTION_RETRIES: JobQueue[tuple[str, int]] = JobQueue("extraction_retries", ("session_id", "generation"),
                                                         sparse=True, error_chars=500)
