"""``periodic_jobs``: how far each scheduled job (an L3 granularity, the rule insights) has run, so a restart
resumes there."""

from __future__ import annotations

from .connection import Connection


def done_until(conn: Connection, job: str) -> float | None:
    """The time a job has covered up to, or None when it never ran."""
    row = conn.execute("SELECT done_until FROM periodic_jobs WHERE job = ?", (job,)).fetchone()
    return row[0] if row else None


def record_run(conn: Connection, job: str, until: float, now: float) -> None:
    """A job ran at ``now`` and covered up to ``until``."""
    conn.execute("INSERT INTO periodic_jobs (job, done_until, last_run_at) VALUES (?, ?, ?) "
                 "ON CONFLICT (job) DO UPDATE SET done_until = excluded.done_until, "
                 "last_run_at = excluded.last_run_at", (job, until, now))


def record_run_unless_moved_back(conn: Connection, job: str, until: float, now: float,
                                 read_until: float | None) -> None:
    """As :func:`record_run`, but when the job's ``done_until`` went below ``read_until`` (what the run read at its
    start) meanwhile — a forget asking for its windows again — it stays there; it never moves back otherwise."""
    conn.execute("INSERT INTO periodic_jobs (job, done_until, last_run_at) VALUES (?, ?, ?) "
                 "ON CONFLICT (job) DO UPDATE SET done_until = CASE WHEN ? IS NOT NULL AND done_until < ? "
                 "THEN done_until ELSE max(done_until, excluded.done_until) END, "
                 "last_run_at = excluded.last_run_at", (job, until, now, read_until, read_until))


L3_SEEN_KEY = "l3_seen_rowid"      # memory_meta: the newest event rowid whose windows a complete L3 run covered


def l3_seen_rowid(conn: Connection) -> int:
    """The newest event rowid whose windows L3 has looked at (0 before its first complete run)."""
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (L3_SEEN_KEY,)).fetchone()
    return int(row[0]) if row else 0


def set_l3_seen_rowid(conn: Connection, rowid: int) -> None:
    conn.execute("INSERT OR REPLACE INTO memory_meta (key, value) VALUES (?, ?)", (L3_SEEN_KEY, str(rowid)))
