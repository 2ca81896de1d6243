"""The chunk vector index: a sqlite-vec ``vec0`` table whose dimension follows the model.

The table is created when the memory opens, not by a migration, because its
dimension depends on the embedder. ``vector_index`` records which model the
vectors came from; opening with another model drops the vectors (they live in
another space and cannot be compared with the new model's queries) and queues
every event to be embedded again.

The chunk table's scope column holds an integer code (:data:`SCOPE_CODES`): sqlite-vec keeps text metadata
inline only up to 12 bytes, and a longer scope ('fact_authoritative') made every filtered scan read a side
table. ``vector_index.layout`` says which form a memory has; an older one is rebuilt from itself when it opens
(no re-embedding).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .connection import Connection, placeholders, write_transaction
from .queue import EMBEDDING_JOBS
from .tiers import COLD, month_of

if TYPE_CHECKING:
    from ..embed.chunking import Chunk

VEC_TABLE = "chunk_vectors"
COLD_VEC_TABLE = "chunk_vectors_cold"     # the cold tier's chunks (store/tiers.py): not searched by default
EDGE_VEC_TABLE = "edge_vectors"
ENTITY_VEC_TABLE = "entity_vectors"
SUMMARY_VEC_TABLE = "summary_vectors"
INDEX_NAME = "chunks"
PENDING_TABLE = "chunk_vectors_pending"
# vector_index.layout: 2, integer scope codes (migration 0025); 3, the cold chunk table partitioned by month;
# 4, the summaries' table partitioned by the month their window ends in, with the window's bounds
LAYOUT = 4

SUMMARY_CHUNK = 128        # vectors per vec0 chunk of the summaries' table (_create_table says why)

# Never renumbered: the codes are stored in every chunk vector.
SCOPE_CODES = {"fact_authoritative": 1, "conversation_only": 2, "audit_only": 3, "ephemeral": 4}


def scope_codes(scopes: Sequence[str]) -> list[int]:
    """The chunk table's codes of these L1 scopes."""
    unknown = [s for s in scopes if s not in SCOPE_CODES]
    if unknown:
        raise ValueError(f"unknown retrieval scope(s) {', '.join(map(repr, unknown))}")
    return [SCOPE_CODES[s] for s in scopes]


@dataclass(frozen=True)
class IndexChange:
    """What :func:`ensure_vector_index` did."""

    created: bool = False
    stale_model: str | None = None  # the model whose vectors were dropped
    requeued: int = 0
    upgraded: int = 0               # vectors copied into the current layout


def index_table_exists(conn: Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (VEC_TABLE,)).fetchone() is not None


def _create_table(conn: Connection, dimension: int) -> None:
    # Metadata columns let a KNN query filter by scope and time inside vec0. The cold tier's chunks have a
    # table of the same shape (store/tiers.py), a chunk in one of the two, and a partition key: the month the
    # event happened in (tiers.month_of). A question about an old window scans only its months' chunks; sqlite-vec
    # keeps each partition in chunks of its own (a month of few cold vectors still takes one: 1024 vectors' room).
    for table, partition in ((VEC_TABLE, ""), (COLD_VEC_TABLE, "month integer partition key, ")):
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0({partition}"
            f"embedding float[{int(dimension)}] distance_metric=cosine, "
            "scope_code integer, occurred_at float, +event_rowid integer)"
        )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS event_chunks_vec_delete AFTER DELETE ON event_chunks BEGIN "
        f"DELETE FROM {VEC_TABLE} WHERE rowid = old.chunk_id; END"
    )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS event_chunks_cold_vec_delete AFTER DELETE ON event_chunks BEGIN "
        f"DELETE FROM {COLD_VEC_TABLE} WHERE rowid = old.chunk_id; END"
    )
    # L2 edge texts ("Caroline lives in Boston"), for the edge-semantic path; rowid = kg_edges.rowid.
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {EDGE_VEC_TABLE} USING vec0("
        f"embedding float[{int(dimension)}] distance_metric=cosine)"
    )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS kg_edges_vec_delete AFTER DELETE ON kg_edges BEGIN "
        f"DELETE FROM {EDGE_VEC_TABLE} WHERE rowid = old.rowid; END"
    )
    # Entity names, for the candidate pool of entity resolution; rowid = entity_id.
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {ENTITY_VEC_TABLE} USING vec0("
        f"embedding float[{int(dimension)}] distance_metric=cosine)"
    )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS entity_catalog_vec_delete AFTER DELETE ON entity_catalog BEGIN "
        f"DELETE FROM {ENTITY_VEC_TABLE} WHERE rowid = old.entity_id; END"
    )
    # L3 summaries' text, for the summaries' vector path; rowid = summary_id. A regenerated summary drops its
    # vector (its text or window changed) and is embedded again. Partitioned by the month its window ends in
    # (tiers.month_of), with the window's bounds, so a question reads the months since its window began, not
    # every summary ever written (a memory writes ~4% as many summaries as it holds events). In chunks of 128
    # vectors, not sqlite-vec's 1,024: each partition takes whole chunks, so a back-filled decade of quiet months
    # would hold ~1.5 MB of zeros a month, and a KNN reads them (a month of a heavy user's summaries: ~1,100).
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {SUMMARY_VEC_TABLE} USING vec0(month integer partition key, "
        f"embedding float[{int(dimension)}] distance_metric=cosine, window_start float, window_end float, "
        f"chunk_size={SUMMARY_CHUNK})"
    )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS l3_summaries_vec_delete AFTER DELETE ON l3_summaries BEGIN "
        f"DELETE FROM {SUMMARY_VEC_TABLE} WHERE rowid = old.summary_id; END"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS l3_summaries_vec_update AFTER UPDATE OF content, window_start, window_end "
        f"ON l3_summaries BEGIN DELETE FROM {SUMMARY_VEC_TABLE} WHERE rowid = old.summary_id; END"
    )


_VECTOR_SCHEMA = {("table", VEC_TABLE), ("table", COLD_VEC_TABLE), ("table", EDGE_VEC_TABLE),
                  ("table", ENTITY_VEC_TABLE),
                  ("table", SUMMARY_VEC_TABLE), ("trigger", "event_chunks_vec_delete"),
                  ("trigger", "event_chunks_cold_vec_delete"),
                  ("trigger", "kg_edges_vec_delete"), ("trigger", "entity_catalog_vec_delete"),
                  ("trigger", "l3_summaries_vec_delete"), ("trigger", "l3_summaries_vec_update")}


def _schema_complete(conn: Connection) -> bool:
    """Whether every table and trigger :func:`_create_table` makes is there."""
    found = set(conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'trigger')").fetchall())
    return _VECTOR_SCHEMA <= found


# readers the tests and layers share

def chunk_count(conn: Connection, event_rowid: int) -> int:
    """How many chunks an event was cut into."""
    return conn.execute("SELECT count(*) FROM event_chunks WHERE event_rowid = ?", (event_rowid,)).fetchone()[0]


def chunk_spans(conn: Connection) -> list[tuple[int, int, int]]:
    """(event rowid, char_start, char_end) of every chunk: the chunk is its event's content[char_start:char_end]."""
    return conn.execute("SELECT event_rowid, char_start, char_end FROM event_chunks ORDER BY chunk_id").fetchall()


def chunked_event_count(conn: Connection) -> int:
    """How many events have chunks."""
    return conn.execute("SELECT count(DISTINCT event_rowid) FROM event_chunks").fetchone()[0]


def chunk_models(conn: Connection) -> set[str]:
    """The models the stored chunks were embedded with."""
    return {model for (model,) in conn.execute("SELECT model FROM event_chunks")}


def chunk_vector_count(conn: Connection, event_rowid: int | None = None) -> int:
    """How many chunk vectors are stored (of one event, when ``event_rowid`` is given)."""
    if event_rowid is None:
        return sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in (VEC_TABLE, COLD_VEC_TABLE))
    return sum(conn.execute(f"SELECT count(*) FROM {t} WHERE event_rowid = ?", (event_rowid,)).fetchone()[0]
               for t in (VEC_TABLE, COLD_VEC_TABLE))


def current_model(conn: Connection) -> tuple[str, int] | None:
    row = conn.execute("SELECT model, dimension FROM vector_index WHERE name = ?", (INDEX_NAME,)).fetchone()
    return (row[0], row[1]) if row else None


def layout(conn: Connection) -> int | None:
    """The chunk table's layout (:data:`LAYOUT` is the current one); None before the index exists."""
    row = conn.execute("SELECT layout FROM vector_index WHERE name = ?", (INDEX_NAME,)).fetchone()
    return row[0] if row else None


def _upgrade_layout(conn: Connection, dimension: int) -> int:
    """Rebuild the chunk tables of an older layout from themselves (no re-embedding): a layout-1 table's text
    scopes become integer codes, a cold table before layout 3 is partitioned by month. Returns the vectors copied."""
    copied = _upgrade_scope_codes(conn, dimension) + _partition_cold(conn, dimension)
    copied += _partition_summaries(conn, dimension)
    conn.execute("UPDATE vector_index SET layout = ? WHERE name = ?", (LAYOUT, INDEX_NAME))
    return copied


def _rebuild(conn: Connection, dimension: int, table: str, triggers: Sequence[str], staged: str, columns: str,
             values: str) -> int:
    """Rebuild the vec0 ``table`` in the current shape from its own rows, returning how many were copied: sqlite-vec
    cannot alter or rename a vec0 table, so the rows wait in a plain table meanwhile — ``staged`` (a SELECT) fills it,
    ``values`` (over its columns, its first the rowid) the new table's ``columns``. Its ``triggers`` go with it and
    come back with the new table."""
    conn.execute("DROP TABLE IF EXISTS vectors_upgrade")
    conn.execute(f"CREATE TABLE vectors_upgrade AS {staged}")
    for trigger in triggers:
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute(f"DROP TABLE {table}")
    _create_table(conn, dimension)
    copied = conn.execute(f"INSERT INTO {table} ({columns}) SELECT {values} FROM vectors_upgrade ORDER BY 1").rowcount
    conn.execute("DROP TABLE vectors_upgrade")
    return copied


def _upgrade_scope_codes(conn: Connection, dimension: int) -> int:
    """Rebuild a layout-1 chunk table (text scopes) with integer scope codes, copying its vectors."""
    declared = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (VEC_TABLE,)).fetchone()[0]
    if "scope_code" in declared:     # already that layout
        return 0
    found = {scope for (scope,) in conn.execute(f"SELECT DISTINCT l1_scope FROM {VEC_TABLE}")}
    if found - SCOPE_CODES.keys():
        raise ValueError(f"chunk vectors carry unknown scope(s) {sorted(found - SCOPE_CODES.keys())}")
    codes = " ".join(f"WHEN '{scope}' THEN {code}" for scope, code in SCOPE_CODES.items())
    return _rebuild(conn, dimension, VEC_TABLE, ["event_chunks_vec_delete"],
                    f"SELECT rowid AS chunk_id, embedding, l1_scope, occurred_at, event_rowid FROM {VEC_TABLE}",
                    "rowid, embedding, scope_code, occurred_at, event_rowid",
                    f"chunk_id, embedding, CASE l1_scope {codes} END, occurred_at, event_rowid")


# A partition key in SQL, as tiers.month_of counts (UTC months since year 0): a table's upgrade copies its vectors
# without holding them in Python's heap.
_SQL_MONTH = ("CAST(strftime('%Y', {0}, 'unixepoch') AS INTEGER) * 12 "
              "+ CAST(strftime('%m', {0}, 'unixepoch') AS INTEGER) - 1")


def _partition_cold(conn: Connection, dimension: int) -> int:
    """Rebuild a cold chunk table made before layout 3 with its month partitions, copying its vectors."""
    declared = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (COLD_VEC_TABLE,)).fetchone()
    if declared is None or "partition key" in declared[0]:
        _create_table(conn, dimension)
        return 0
    return _rebuild(conn, dimension, COLD_VEC_TABLE, ["event_chunks_cold_vec_delete"],
                    f"SELECT v.rowid AS chunk_id, v.embedding, v.scope_code, v.occurred_at, v.event_rowid, e.timestamp "
                    f"FROM {COLD_VEC_TABLE} v JOIN fact_events e ON e.id = v.event_rowid",
                    "rowid, month, embedding, scope_code, occurred_at, event_rowid",
                    f"chunk_id, {_SQL_MONTH.format('timestamp')}, embedding, scope_code, occurred_at, event_rowid")


def _partition_summaries(conn: Connection, dimension: int) -> int:
    """Rebuild a summaries' vector table made before layout 4 with its month partitions and window bounds,
    copying its vectors (a vector whose summary is gone is dropped)."""
    declared = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (SUMMARY_VEC_TABLE,)).fetchone()
    if declared is not None and "partition key" in declared[0]:
        return 0
    conn.execute("DROP TRIGGER IF EXISTS l3_summaries_vec_update")     # an older one watched the text alone
    if declared is None:
        _create_table(conn, dimension)
        return 0
    return _rebuild(conn, dimension, SUMMARY_VEC_TABLE, ["l3_summaries_vec_delete"],
                    f"SELECT v.rowid AS summary_id, v.embedding, s.window_start, s.window_end FROM {SUMMARY_VEC_TABLE} "
                    "v JOIN l3_summaries s ON s.summary_id = v.rowid",
                    "rowid, month, embedding, window_start, window_end",
                    f"summary_id, {_SQL_MONTH.format('window_end')}, embedding, window_start, window_end")


def ensure_vector_index(conn: Connection, model: str, dimension: int, now: float | None = None) -> IndexChange:
    """Make the vector table match ``model``; on a model change, drop stale vectors and re-queue. Asked with
    a read first: when the index already matches, no write lock is taken (opening never waits for a writer)."""
    now = time.time() if now is None else now
    if current_model(conn) == (model, dimension) and layout(conn) == LAYOUT and _schema_complete(conn):
        return IndexChange()
    with write_transaction(conn):
        recorded = current_model(conn)
        if recorded == (model, dimension):
            if layout(conn) != LAYOUT and index_table_exists(conn):
                return IndexChange(upgraded=_upgrade_layout(conn, dimension))
            _create_table(conn, dimension)
            upgraded = _partition_summaries(conn, dimension)      # the chunk tables gone, an old summaries' one not
            conn.execute("UPDATE vector_index SET layout = ? WHERE name = ?", (LAYOUT, INDEX_NAME))
            return IndexChange(upgraded=upgraded)
        if recorded is None:
            _create_table(conn, dimension)
            conn.execute(
                "INSERT INTO vector_index (name, model, dimension, created_at, layout) VALUES (?, ?, ?, ?, ?)",
                (INDEX_NAME, model, dimension, now, LAYOUT),
            )
            return IndexChange(created=True)
        conn.execute("DROP TRIGGER IF EXISTS event_chunks_vec_delete")
        conn.execute("DROP TRIGGER IF EXISTS event_chunks_cold_vec_delete")
        conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
        conn.execute(f"DROP TABLE IF EXISTS {COLD_VEC_TABLE}")
        conn.execute("DELETE FROM event_chunks")
        conn.execute("DROP TRIGGER IF EXISTS kg_edges_vec_delete")
        conn.execute(f"DROP TABLE IF EXISTS {EDGE_VEC_TABLE}")
        conn.execute("UPDATE kg_edges SET embedded = 0")
        conn.execute("DROP TRIGGER IF EXISTS entity_catalog_vec_delete")
        conn.execute(f"DROP TABLE IF EXISTS {ENTITY_VEC_TABLE}")
        conn.execute("DROP TRIGGER IF EXISTS l3_summaries_vec_delete")
        conn.execute("DROP TRIGGER IF EXISTS l3_summaries_vec_update")
        conn.execute(f"DROP TABLE IF EXISTS {SUMMARY_VEC_TABLE}")
        _create_table(conn, dimension)
        requeued = EMBEDDING_JOBS.requeue(conn, "SELECT id FROM fact_events", (), now)
        conn.execute(f"DELETE FROM {PENDING_TABLE}")
        # The approximate index held the old model's vectors: none until store/ann_build.py builds one again.
        conn.execute(
            "UPDATE vector_index SET model = ?, dimension = ?, created_at = ?, rebuilt_from = ?, layout = ?, "
            "ann_file = NULL, ann_vectors = 0 WHERE name = ?",
            (model, dimension, now, recorded[0], LAYOUT, INDEX_NAME),
        )
        conn.execute("DELETE FROM ann_partitions")
        return IndexChange(stale_model=recorded[0], requeued=requeued)


def replace_event_chunks(
    conn: Connection,
    event_rowid: int,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    model: str,
    scope: str,
    occurred_at: float,
) -> None:
    """Write an event's chunks and their vectors, replacing any earlier ones (idempotent). While an approximate
    index exists (or is being built) the vectors are also kept as pending, for readers to search until the
    next index file holds them (store/ann.py)."""
    conn.execute("DELETE FROM event_chunks WHERE event_rowid = ?", (event_rowid,))
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    code = scope_codes([scope])[0]
    event = conn.execute("SELECT tier, timestamp FROM fact_events WHERE id = ?", (event_rowid,)).fetchone()
    cold = event is not None and event[0] == COLD          # re-embedded while cold: the cold table, not the index
    pending = not cold and ann_recorded(conn)[0] is not None
    for chunk, vector in zip(chunks, vectors, strict=True):
        cursor = conn.execute(
            "INSERT INTO event_chunks (event_rowid, chunk_index, char_start, char_end, model) VALUES (?, ?, ?, ?, ?)",
            (event_rowid, chunk.index, chunk.start, chunk.end, model),
        )
        if cold:
            conn.execute(
                f"INSERT INTO {COLD_VEC_TABLE} (rowid, month, embedding, scope_code, occurred_at, event_rowid) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (cursor.lastrowid, month_of(event[1]), vector.tobytes(), code, occurred_at, event_rowid))
        else:
            conn.execute(
                f"INSERT INTO {VEC_TABLE} (rowid, embedding, scope_code, occurred_at, event_rowid) "
                "VALUES (?, ?, ?, ?, ?)", (cursor.lastrowid, vector.tobytes(), code, occurred_at, event_rowid))
        if pending:
            conn.execute(f"INSERT OR REPLACE INTO {PENDING_TABLE} (chunk_id, embedding) VALUES (?, ?)",
                         (cursor.lastrowid, vector.tobytes()))


def ann_recorded(conn: Connection) -> tuple[str | None, int]:
    """The approximate index's file name (None: none; '': being built) and how many vectors it holds."""
    row = conn.execute("SELECT ann_file, ann_vectors FROM vector_index WHERE name = ?", (INDEX_NAME,)).fetchone()
    return (row[0], row[1]) if row else (None, 0)


def events_to_embed(conn: Connection, rowids: Sequence[int]) -> list[tuple[int, str, str, float, str | None]]:
    """The events behind embedding jobs, by rowid: (rowid, content, scope, recorded time, speaker). The vectors
    carry the recorded time, which the vector path filters on (architecture §16)."""
    if not rowids:
        return []
    return conn.execute(
        "SELECT id, content, l1_retrieval_scope, recorded_at, json_extract(metadata_json, '$.timeline.speaker') "
        f"FROM fact_events WHERE id IN ({placeholders(len(rowids))}) ORDER BY id", list(rowids)).fetchall()


# The rows that have no vector yet, in id order from ``after`` (so a call walks each table once, and a row whose
# embedding failed is not asked for again until the next call); and the writes of their vectors.

def summaries_without_vectors(conn: Connection, after: int, limit: int) -> list[tuple[int, str, str]]:
    """L3 summaries new or regenerated since they were embedded: (summary_id, title, content)."""
    return conn.execute(
        f"SELECT summary_id, title, content FROM l3_summaries WHERE summary_id > ? AND summary_id NOT IN "
        f"(SELECT rowid FROM {SUMMARY_VEC_TABLE}) ORDER BY summary_id LIMIT ?", (after, limit)).fetchall()


def edges_without_vectors(conn: Connection, after: int, limit: int) -> list[tuple[int, str]]:
    """Graph edges not embedded yet: (rowid, edge_text)."""
    return conn.execute("SELECT rowid, edge_text FROM kg_edges WHERE embedded = 0 AND rowid > ? ORDER BY rowid "
                        "LIMIT ?", (after, limit)).fetchall()


def entities_without_vectors(conn: Connection, after: int, limit: int) -> list[tuple[int, str]]:
    """Active entities (not the '@' speaker keys) whose name has no vector yet: (entity_id, name)."""
    return conn.execute(
        f"SELECT e.entity_id, e.name FROM entity_catalog e WHERE e.status = 'active' AND e.name_key NOT LIKE '@%' "
        f"AND e.entity_id > ? AND NOT EXISTS (SELECT 1 FROM {ENTITY_VEC_TABLE} v WHERE v.rowid = e.entity_id) "
        "ORDER BY e.entity_id LIMIT ?", (after, limit)).fetchall()


def _put_vector(conn: Connection, table: str, rowid: int, vector: np.ndarray) -> None:
    conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
    conn.execute(f"INSERT INTO {table} (rowid, embedding) VALUES (?, ?)",
                 (rowid, np.asarray(vector, dtype=np.float32).tobytes()))


def put_summary_vector(conn: Connection, summary_id: int, vector: np.ndarray) -> bool:
    """Store a summary's vector in the partition of the month its window ends in; False when the summary was
    deleted meanwhile."""
    window = conn.execute("SELECT window_start, window_end FROM l3_summaries WHERE summary_id = ?",
                          (summary_id,)).fetchone()
    if window is None:
        return False
    conn.execute(f"DELETE FROM {SUMMARY_VEC_TABLE} WHERE rowid = ?", (summary_id,))
    conn.execute(f"INSERT INTO {SUMMARY_VEC_TABLE} (rowid, month, embedding, window_start, window_end) "
                 "VALUES (?, ?, ?, ?, ?)",
                 (summary_id, month_of(window[1]), np.asarray(vector, dtype=np.float32).tobytes(), *window))
    return True


def summary_vector_months(conn: Connection) -> dict[int, int]:
    """By summary id, the partition (tiers.month_of of the window's end) its vector is stored in."""
    return dict(conn.execute(f"SELECT rowid, month FROM {SUMMARY_VEC_TABLE}").fetchall())


def put_edge_vector(conn: Connection, rowid: int, vector: np.ndarray) -> bool:
    """Store an edge's vector and mark it embedded; False when the edge was forgotten meanwhile."""
    if conn.execute("SELECT 1 FROM kg_edges WHERE rowid = ?", (rowid,)).fetchone() is None:
        return False
    _put_vector(conn, EDGE_VEC_TABLE, rowid, vector)
    conn.execute("UPDATE kg_edges SET embedded = 1 WHERE rowid = ?", (rowid,))
    return True


def put_entity_vector(conn: Connection, entity_id: int, vector: np.ndarray) -> bool:
    """Store an entity name's vector; False when the entity was dropped meanwhile."""
    if conn.execute("SELECT 1 FROM entity_catalog WHERE entity_id = ?", (entity_id,)).fetchone() is None:
        return False
    _put_vector(conn, ENTITY_VEC_TABLE, entity_id, vector)
    return True


def chunk_vectors_of_events(conn: Connection, rowids: Sequence[int]) -> list[tuple[int, bytes]]:
    """(event rowid, float32 embedding bytes) of every chunk of these events."""
    marks = placeholders(len(rowids))
    return [row for table in (VEC_TABLE, COLD_VEC_TABLE) for row in conn.execute(
        f"SELECT c.event_rowid, v.embedding FROM event_chunks c JOIN {table} v ON v.rowid = c.chunk_id "
        f"WHERE c.event_rowid IN ({marks})", list(rowids)).fetchall()]
