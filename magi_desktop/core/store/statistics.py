"""The counts ``stats()`` shows (``magi status``, the status window): events per class, scope and source, rows
per layer, the embedding index, the sources' counters, the facts. The queues count themselves
(:mod:`.queue`, ``core/l2/jobs.py``, ``core/extraction``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import Connection, placeholders

# The columns of l1_event_counts the events are counted by.
EVENT_COUNT_COLUMNS = ("evidence_class", "l1_retrieval_scope", "source")


def _grouped(conn: Connection, sql: str) -> dict[str, int]:
    """(key, count) rows as a dict, keys with no rows left out."""
    return {key: count for key, count in conn.execute(sql) if count}


def events_by(conn: Connection, column: str) -> dict[str, int]:
    """Stored events per value of ``column`` (one of :data:`EVENT_COUNT_COLUMNS`), most first."""
    if column not in EVENT_COUNT_COLUMNS:
        raise ValueError(f"events are not counted by {column!r}")
    return _grouped(conn, f"SELECT {column}, sum(events) FROM l1_event_counts GROUP BY 1 ORDER BY 2 DESC")


def events_total(conn: Connection) -> int:
    return conn.execute("SELECT coalesce(sum(events), 0) FROM l1_event_counts").fetchone()[0]


def embedding_index(conn: Connection) -> tuple[str, int, str | None] | None:
    """(model, dimension, rebuilt_from) of the vector index, or None before an embedder first opened the memory."""
    return conn.execute("SELECT model, dimension, rebuilt_from FROM vector_index").fetchone()


def latest_migration(conn: Connection) -> int:
    """The newest migration applied (an open memory is migrated: there is one)."""
    return conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]


def runtime_traces(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM runtime_traces").fetchone()[0]


def chat_sessions(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM chat_sessions").fetchone()[0]


def event_chunks(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM event_chunks").fetchone()[0]


def source_counters(conn: Connection) -> list[tuple[Any, ...]]:
    """(source, accepted, duplicates, rejected, last_rejection) per source, by name."""
    return conn.execute("SELECT source, accepted, duplicates, rejected, last_rejection FROM source_counters "
                        "ORDER BY source").fetchall()


def active_entities(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM entity_catalog WHERE status = 'active'").fetchone()[0]


def active_edges(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM kg_edges WHERE status = 'active'").fetchone()[0]


def live_assertions(conn: Connection, live: Sequence[str]) -> int:
    """How many assertions hold one of the ``live`` statuses (l2/constants.LIVE)."""
    return conn.execute(f"SELECT count(*) FROM tom_trait_assertions WHERE status IN ({placeholders(len(live))})",
                        list(live)).fetchone()[0]


def promoted_episodes(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM l2_episodes WHERE status = 'promoted'").fetchone()[0]


def review_replays_by_state(conn: Connection) -> dict[str, int]:
    """The user's reviews an import carried over, per state (pending until L2 is rebuilt up to them)."""
    return _grouped(conn, "SELECT state, count(*) FROM review_replays GROUP BY 1")


def active_facts_by_evidence(conn: Connection) -> dict[str, int]:
    """Active facts per evidence type, most first."""
    return _grouped(conn, "SELECT evidence_type, count(*) FROM memory_facts WHERE status = 'active' "
                          "GROUP BY 1 ORDER BY 2 DESC")


def extractions(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM fact_extractions").fetchone()[0]
