"""An approximate nearest-neighbour index (usearch's HNSW) over the chunk vectors, for memories whose exact vec0 scan
stops being cheap (it is linear in the chunks: about 50 ms at 100k, half a second at 1M).

vec0 stays the source of truth; the index is one file per retrieval scope beside the database
(``memory.db.chunks-<token>.usearch``) that any process can rebuild from it, so a question about some scopes
searches only theirs (a fact-only question does not dig its hits out from under the conversation's).
``vector_index`` records a generation's name and how many vectors it holds, ``ann_partitions`` its files (per scope
code, the file's name and count), in one transaction. Readers open each file as a memory-mapped view (its pages
belong to the page cache, not to the process). Vectors written after the files were saved are also kept in
``chunk_vectors_pending`` (store/vectors.py): readers search those exactly, so a reader in another process sees
every vector at once without reloading anything. The embedding worker (``maintain``, store/ann_build.py, the
writer's side) folds the pending vectors into new files — each into its chunk's scope's — and drops the keys of
chunks deleted meanwhile (forget, re-embedding), writing each partition that changed under a new name (the others
keep their files) and recording the generation in one transaction, then removes the old files; a reader still
holding the old ones keeps a consistent pair (old files, the pending rows of its snapshot) until its next query. One
process (or thread) at a time builds or folds: it holds the memory's build claim (ann_build ``_claim``, a lock on
``memory.db.chunks.lock``), and the others meanwhile neither build nor touch the files; their readers answer from
the recorded files and the pending rows.

Every hit is checked again against ``event_chunks`` and ``fact_events`` (the chunk still exists, its event's scope
and recorded time pass the filter), so a forgotten event never comes back from a file not yet folded. A filter that
lets too few hits through (a narrow scope, an early ``now``) makes :func:`nearest_chunks` answer None: the caller
runs vec0's exact scan.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .connection import Connection, placeholders, read_snapshot
from .vectors import PENDING_TABLE, ann_recorded, scope_codes

if TYPE_CHECKING:
    from usearch.index import Index

    from . import Database

log = logging.getLogger(__name__)

OVERFETCH = 4            # hits asked of the index per result wanted, for the filters to remove some
MIN_FETCH = 64
MAX_FETCH = 4_096        # past this the filter is too selective for the index: the exact scan answers
DTYPE = "f16"            # half the file of f32; cosine distances within ~1e-3 of vec0's
EXPANSION_SEARCH = 128


@dataclass
class _View:
    name: str
    index: Index


_views: dict[tuple[str, int], _View] = {}       # (database path, scope code) -> the view of its partition
_views_lock = threading.Lock()
# Files that answered a search with fewer hits than asked though they hold more: an HNSW graph with nodes no search
# reaches any more. Readers fall back to the exact scan for them; the next ``maintain`` in this process builds the
# files again (ann_build.py). By database path, the files' names.
_short: dict[str, set[str]] = {}


def index_path(db_path: Path, name: str) -> Path:
    return db_path.parent / name


def _database_path(conn: Connection) -> Path | None:
    for _seq, schema, file in conn.execute("PRAGMA database_list"):
        if schema == "main":
            return Path(file) if file else None
    return None


def _index_class() -> type[Index]:
    """usearch's Index, with onnxruntime (if installed) loaded first: importing onnxruntime after usearch
    crashes the process (a segmentation fault in onnxruntime's module init with usearch's numkong loaded;
    usearch 2.x, onnxruntime 1.32 on Linux), and the embedder may import it at any later moment."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        pass
    from usearch.index import Index

    return Index


def _open(path: Path, *, view: bool) -> Index | None:
    """The index in ``path``, or None when it is missing or damaged (it is rebuilt from vec0)."""
    Index = _index_class()

    try:
        # A file shorter than its header says would fault when its mapped pages are read.
        metadata = Index.metadata(str(path))
        if metadata is None or path.stat().st_size < 64:
            return None
        index = Index.restore(str(path), view=view)
    except (OSError, RuntimeError, ValueError) as exc:
        log.warning("the approximate chunk index %s cannot be read (%s); it will be rebuilt", path, exc)
        return None
    if index is None:
        return None
    index.expansion_search = EXPANSION_SEARCH   # type: ignore[misc]  # (a setter usearch declares unusually)
    return index


def _view(db_path: Path, code: int, name: str) -> Index | None:
    """This process's memory-mapped view of a scope's recorded file, opened again when another one is recorded."""
    key = (str(db_path.resolve()), code)
    with _views_lock:
        held = _views.get(key)
        if held is not None and held.name == name:
            return held.index
        index = _open(index_path(db_path, name), view=True)
        if index is None:
            _views.pop(key, None)
            return None
        _views[key] = _View(name, index)
        return index


def _note_short(db_path: Path, name: str) -> None:
    path = str(db_path.resolve())
    with _views_lock:
        if name not in _short.setdefault(path, set()):
            log.warning("the approximate chunk index %s answered short: its graph has nodes no search reaches; it will "
                        "be rebuilt", name)
        _short[path].add(name)


def answered_short(db_path: Path, names: Collection[str]) -> bool:
    """Whether one of these files of the memory answered a search short in this process (it is to be rebuilt)."""
    with _views_lock:
        return bool(_short.get(str(db_path.resolve()), set()) & set(names))


def release(db_path: Path | str) -> None:
    """Drop this process's views of a memory's index files (the memory is closing)."""
    path = str(Path(db_path).resolve())
    with _views_lock:
        for key in [key for key in _views if key[0] == path]:
            del _views[key]


def partitions(conn: Connection) -> dict[int, tuple[str, int]]:
    """The recorded generation's files: scope code -> (file name, vectors it holds)."""
    return {code: (file, held) for code, file, held in
            conn.execute("SELECT scope_code, file, vectors FROM ann_partitions")}


def _scope_views(db_path: Path, recorded: Mapping[int, tuple[str, int]], codes: Sequence[int]) -> list[Index] | None:
    """The views of these scopes' partitions (a scope that had no vectors has none), or None when one cannot be
    read."""
    views = []
    for code in dict.fromkeys(codes):
        if code in recorded:
            index = _view(db_path, code, recorded[code][0])
            if index is None:
                return None
            views.append(index)
    return views


@contextlib.contextmanager
def _snapshot(conn: Connection) -> Iterator[None]:
    if conn.in_transaction:
        yield
        return
    with read_snapshot(conn):
        yield


def _cosine_distances(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query))
    return 1.0 - (vectors @ query) / np.where(norms == 0, 1.0, norms)


def _vectors(rows: Sequence[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    keys = np.fromiter((row[0] for row in rows), dtype=np.uint64, count=len(rows))
    return keys, np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)


def _pending(conn: Connection, query: np.ndarray) -> dict[int, float]:
    rows = conn.execute(f"SELECT chunk_id, embedding FROM {PENDING_TABLE}").fetchall()
    if not rows:
        return {}
    keys, vectors = _vectors(rows)
    return dict(zip(keys.tolist(), _cosine_distances(vectors, query).tolist(), strict=True))


def _visible(conn: Connection, chunk_ids: Sequence[int], scopes: Sequence[str], now: float) -> dict[int, int]:
    """chunk id -> event rowid of those of ``chunk_ids`` that still exist and pass the filter."""
    return dict(conn.execute(
        "SELECT c.chunk_id, c.event_rowid FROM event_chunks c JOIN fact_events e ON e.id = c.event_rowid "
        f"WHERE c.chunk_id IN (SELECT value FROM json_each(?)) AND e.l1_retrieval_scope IN "
        f"({placeholders(len(scopes))}) AND e.recorded_at <= ? AND e.tier <> 1",     # a cold chunk until the fold
        [json.dumps(list(chunk_ids)), *scopes, now]))


def nearest_chunks(conn: Connection, vector: bytes, k: int, scopes: Sequence[str],
                   now: float) -> list[tuple[int, float | None]] | None:
    """(event rowid, cosine distance) of the ``k`` chunks nearest ``vector`` among the events of these scopes
    recorded by ``now``, nearest first — or None when this memory has no usable index or the filter is too
    selective for it (the caller scans vec0 exactly). Only these scopes' partitions are searched."""
    db_path = _database_path(conn)
    if db_path is None or k <= 0:
        return None
    query = np.frombuffer(vector, dtype=np.float32)
    codes = scope_codes(scopes)
    with _snapshot(conn):
        name, _held = ann_recorded(conn)
        if not name:
            return None
        recorded = partitions(conn)
        indexes = _scope_views(db_path, recorded, codes)
        if indexes is None or any(index.ndim != query.shape[0] for index in indexes):
            return None
        names = [recorded[code][0] for code in dict.fromkeys(codes) if code in recorded]     # _scope_views' order
        pending = _pending(conn, query)
        searched = _search(conn, indexes, query, k, scopes, now, pending, lambda i: _note_short(db_path, names[i]))
        if searched is None:
            return None
        found, visible = searched
    found.update(pending)   # a pending vector is the chunk's current one (its id may be an old key reused)
    ranked = sorted((found[chunk], event) for chunk, event in visible.items())
    return [(event, distance) for distance, event in ranked[:k]]


def _search(conn: Connection, indexes: Sequence[Index], query: np.ndarray, k: int, scopes: Sequence[str], now: float,
            pending: Mapping[int, float], short: Callable[[int], None] = lambda i: None,
            ) -> tuple[dict[int, float], dict[int, int]] | None:
    """The partitions' hits merged (chunk id -> distance) and those that pass the filter (chunk id -> event rowid).
    The partitions share the first round's hits; one is asked for more while its farthest hit is nearer than the
    ``k``-th nearest that passes (it may hold nearer ones) and it has more, so the ``k`` nearest of all are among
    them. None when one would be asked for more than :data:`MAX_FETCH`, or when one answers with fewer than half the
    hits asked of it though it holds them (``short`` is told which: its graph is damaged)."""
    fetch = [min(max(k * OVERFETCH // len(indexes), MIN_FETCH), len(index)) for index in indexes]
    hits: list[dict[int, float]] = [{} for _ in indexes]
    asking = list(range(len(indexes)))
    while True:
        for i in asking:
            matches = indexes[i].search(query, fetch[i], threads=1)
            hits[i] = dict(zip(matches.keys.tolist(), matches.distances.tolist(), strict=True))
            if len(hits[i]) < fetch[i] // 2:      # fetch never exceeds the file's vectors: nodes are unreachable
                short(i)
                return None
        found = {key: distance for part in hits for key, distance in part.items()}
        visible = _visible(conn, [*found, *pending], scopes, now)
        passing = sorted(distance for key, distance in found.items() if key in visible and key not in pending)
        kth = passing[k - 1] if len(passing) >= k else math.inf
        asking = [i for i, part in enumerate(hits)
                  if fetch[i] < len(indexes[i]) and max(part.values(), default=math.inf) < kth]
        if not asking:
            return found, visible
        if any(fetch[i] >= MAX_FETCH for i in asking):
            return None
        for i in asking:
            fetch[i] = min(fetch[i] * OVERFETCH, MAX_FETCH, len(indexes[i]))


def pending_vectors(conn: Connection) -> int:
    """How many vectors wait for the next file (readers search them exactly)."""
    return conn.execute(f"SELECT count(*) FROM {PENDING_TABLE}").fetchone()[0]


def has_index(db: Database) -> bool:
    """Whether the memory has (or is building) an approximate index file."""
    return ann_recorded(db.reader())[0] is not None
