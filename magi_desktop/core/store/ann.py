"""An approximate nearest-neighbour index (usearch's HNSW) over the chunk vectors, for memories whose exact
vec0 scan stops being cheap (it is linear in the chunks: about 50 ms at 100k, half a second at 1M).

vec0 stays the source of truth; the index is one file per retrieval scope beside the database
(``memory.db.chunks-<token>.usearch``) that any process can rebuild from it, so a question about some scopes
searches only theirs (a fact-only question does not dig its hits out from under the conversation's).
``vector_index`` records a generation's name and how many vectors it holds, ``ann_partitions`` its files (per
scope code, the file's name and count), in one transaction. Readers open each file as a memory-mapped view (its
pages belong to the page cache, not to the process). Vectors written after the files were saved are also kept in
``chunk_vectors_pending`` (store/vectors.py): readers search those exactly, so a reader in another process sees
every vector at once without reloading anything. The embedding worker (:func:`maintain`) folds the pending
vectors into new files — each into its chunk's scope's — and drops the keys of chunks deleted meanwhile (forget,
re-embedding), writing each partition that changed under a new name (the others keep their files) and recording
the generation in one transaction, then removes the old files; a reader still holding the old ones keeps a
consistent pair (old files, the pending rows of its snapshot) until its next query.
One process (or thread) at a time builds or folds: it holds the memory's build claim (:func:`_claim`, a lock on
``memory.db.chunks.lock``), and the others meanwhile neither build nor touch the files; their readers answer from
the recorded files and the pending rows.

Every hit is checked again against ``event_chunks`` and ``fact_events`` (the chunk still exists, its event's
scope and recorded time pass the filter), so a forgotten event never comes back from a file not yet folded.
A filter that lets too few hits through (a narrow scope, an early ``now``) makes :func:`nearest_chunks` answer
None: the caller runs vec0's exact scan.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import secrets
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from filelock import lock_descriptor, unlock_descriptor

from .connection import Connection, placeholders, read_snapshot
from .vectors import INDEX_NAME, PENDING_TABLE, VEC_TABLE, ann_recorded, current_model, scope_codes

if TYPE_CHECKING:
    from usearch.index import Index

    from . import Database

log = logging.getLogger(__name__)

MIN_VECTORS = 30_000     # below this many chunks the exact scan costs a few ms: no index is built
FOLD_AT = 2_000          # pending vectors that make the worker write a new file (readers scan them exactly)
# Writing a file costs the whole index (a million vectors: seconds), so while vectors keep coming (a back-fill,
# a million-event import) the file is written again only once the pending ones are a share of it — a geometric
# schedule, a few dozen files for a million — or once no vector was added for IDLE_FOLD_SECONDS.
BURST_SHARE = 16         # pending vectors up to 1/16 of the file wait while more keep coming
IDLE_FOLD_SECONDS = 30.0
OVERFETCH = 4            # hits asked of the index per result wanted, for the filters to remove some
MIN_FETCH = 64
MAX_FETCH = 4_096        # past this the filter is too selective for the index: the exact scan answers
DTYPE = "f16"            # half the file of f32; cosine distances within ~1e-3 of vec0's
CONNECTIVITY = 16
EXPANSION_ADD = 64           # 128 built 1.7-2x slower for the same recall (docs/performance.md, "Build cost")
EXPANSION_SEARCH = 128
READ_BATCH = 20_000      # vectors read from vec0 at a time while building
# usearch's threads while adding vectors (0: one per core). With several, the graph depends on the order the
# threads happen to insert in, so two builds from the same vectors differ (and miss different neighbours);
# tests build with one, which gives the same file every time.
BUILD_THREADS = 0
CLAIM_SUFFIX = ".chunks.lock"    # the lock file beside the database that is the build claim (_claim)


@dataclass
class _View:
    name: str
    index: Index


_views: dict[tuple[str, int], _View] = {}       # (database path, scope code) -> the view of its partition
_views_lock = threading.Lock()
_pending_seen: dict[str, tuple[int, float]] = {}     # database path -> (pending vectors, when that count was new)


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
        indexes = _scope_views(db_path, partitions(conn), codes)
        if indexes is None or any(index.ndim != query.shape[0] for index in indexes):
            return None
        pending = _pending(conn, query)
        searched = _search(conn, indexes, query, k, scopes, now, pending)
        if searched is None:
            return None
        found, visible = searched
    found.update(pending)   # a pending vector is the chunk's current one (its id may be an old key reused)
    ranked = sorted((found[chunk], event) for chunk, event in visible.items())
    return [(event, distance) for distance, event in ranked[:k]]


def _search(conn: Connection, indexes: Sequence[Index], query: np.ndarray, k: int, scopes: Sequence[str], now: float,
            pending: Mapping[int, float]) -> tuple[dict[int, float], dict[int, int]] | None:
    """The partitions' hits merged (chunk id -> distance) and those that pass the filter (chunk id -> event rowid).
    The partitions share the first round's hits; one is asked for more while its farthest hit is nearer than the
    ``k``-th nearest that passes (it may hold nearer ones) and it has more, so the ``k`` nearest of all are among
    them. None when one would be asked for more than :data:`MAX_FETCH`."""
    fetch = [min(max(k * OVERFETCH // len(indexes), MIN_FETCH), len(index)) for index in indexes]
    hits: list[dict[int, float]] = [{} for _ in indexes]
    asking = list(range(len(indexes)))
    while True:
        for i in asking:
            matches = indexes[i].search(query, fetch[i], threads=1)
            hits[i] = dict(zip(matches.keys.tolist(), matches.distances.tolist(), strict=True))
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


# ------------------------------------------------------------------------------------ the worker's side

def _new_index(dimension: int) -> Index:
    return _index_class()(ndim=dimension, metric="cos", dtype=DTYPE, connectivity=CONNECTIVITY,
                 expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)


def _save(index: Index, db_path: Path) -> str:
    """Write ``index`` under a new name beside the database (a temporary file renamed: a reader never sees
    half a file); returns the name."""
    name = f"{db_path.name}.chunks-{secrets.token_hex(6)}.usearch"
    final = index_path(db_path, name)
    temporary = final.with_name(final.name + ".tmp")
    index.save(str(temporary))
    with open(temporary, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, final)
    if os.name == "posix":
        os.chmod(final, 0o600)
    return name


@contextlib.contextmanager
def _claim(db_path: Path) -> Iterator[bool]:
    """Whether this caller holds the memory's build claim: an exclusive lock (flock; LockFileEx on Windows) on
    a file beside the database, for as long as it builds or folds. The system drops the lock of a process that
    ends, so a build cut short (a crash, a kill) leaves no claim behind to time out: the next worker takes over.
    The lock file stays (removing it would let a second process lock a new file while the first holds the old)."""
    fd = os.open(db_path.parent / f"{db_path.name}{CLAIM_SUFFIX}", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if not lock_descriptor(fd, blocking=False):
            yield False
            return
        try:
            yield True
        finally:
            unlock_descriptor(fd)
    finally:
        os.close(fd)


def _remove_files(db_path: Path, keep: Collection[str]) -> None:
    """Delete the index files of this memory other than those in ``keep`` (older generations, abandoned builds).
    Called with the claim held: no other process is writing a temporary file then."""
    for path in db_path.parent.glob(f"{db_path.name}.chunks-*.usearch*"):
        if path.name not in keep:
            with contextlib.suppress(OSError):
                path.unlink()


def _record(db: Database, db_path: Path, started_from: str | None, generation: Mapping[int, Index | tuple[str, int]],
            folded: Sequence[tuple[int, bytes]]) -> bool:
    """Record a generation — per scope code a new index (saved here) or the (file, count) of a partition that did
    not change — unless another process recorded one since ``started_from``, and drop the pending vectors it now
    holds; the older files go."""
    files = {code: part if isinstance(part, tuple) else (_save(part, db_path), len(part))
             for code, part in generation.items()}
    written = [files[code][0] for code, part in generation.items() if not isinstance(part, tuple)]
    with db.transaction() as conn:
        recorded = ann_recorded(conn)[0] == started_from
        if recorded:
            conn.execute("UPDATE vector_index SET ann_file = ?, ann_vectors = ? WHERE name = ?",
                         (secrets.token_hex(6), sum(n for _, n in files.values()), INDEX_NAME))
            conn.execute("DELETE FROM ann_partitions")
            conn.executemany("INSERT INTO ann_partitions (scope_code, file, vectors) VALUES (?, ?, ?)",
                             [(code, file, held) for code, (file, held) in files.items()])
            # Only the vectors these files hold: a chunk written again since (its id reused) stays pending.
            conn.executemany(f"DELETE FROM {PENDING_TABLE} WHERE chunk_id = ? AND embedding = ?", folded)
    if not recorded:
        for name in written:
            index_path(db_path, name).unlink(missing_ok=True)
        return False
    _remove_files(db_path, keep={file for file, _ in files.values()})
    return True


def _vectors(rows: Sequence[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    keys = np.fromiter((row[0] for row in rows), dtype=np.uint64, count=len(rows))
    return keys, np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)


def _by_scope(rows: Sequence[tuple[int, bytes, int]]) -> dict[int, list[tuple[int, bytes]]]:
    """(chunk id, embedding) of these rows by their scope code."""
    parts: dict[int, list[tuple[int, bytes]]] = {}
    for chunk, embedding, code in rows:
        parts.setdefault(code, []).append((chunk, embedding))
    return parts


def build(db: Database, started_from: str | None = None) -> bool:
    """Build the index from vec0 (a new memory crossing :data:`MIN_VECTORS`, a missing or damaged file), the
    claim held. From the moment it starts, embedding writes keep their vectors pending, so none is missed."""
    assert isinstance(db.path, Path)
    with db.transaction() as conn:
        if ann_recorded(conn)[0] != started_from or (model := current_model(conn)) is None:
            return False
        conn.execute("UPDATE vector_index SET ann_file = '', ann_vectors = 0 WHERE name = ?", (INDEX_NAME,))
        conn.execute("DELETE FROM ann_partitions")
    indexes: dict[int, Index] = {}
    reader = db.reader()
    with read_snapshot(reader):
        folded = reader.execute(f"SELECT chunk_id, embedding FROM {PENDING_TABLE}").fetchall()
        cursor = reader.execute(f"SELECT rowid, embedding, scope_code FROM {VEC_TABLE}")
        while rows := cursor.fetchmany(READ_BATCH):
            for code, part in _by_scope(rows).items():
                indexes.setdefault(code, _new_index(model[1])).add(*_vectors(part), threads=BUILD_THREADS)
    return _record(db, db.path, "", indexes, folded)


def fold(db: Database, name: str) -> bool:
    """Write a new generation (the claim held): each pending vector added to its chunk's scope's partition and
    deleted chunks' keys removed, a partition in which nothing changed keeping its file. usearch leaves a removed
    vector's bytes in the file: after a forget :func:`maintain` builds from vec0 instead."""
    assert isinstance(db.path, Path)
    reader = db.reader()
    with read_snapshot(reader):
        if ann_recorded(reader)[0] != name or (model := current_model(reader)) is None:
            return False
        recorded = partitions(reader)
        # The scope the chunk's event has now: a chunk id reused by another scope's event moves partition.
        pending = reader.execute(
            f"SELECT p.chunk_id, p.embedding, e.l1_retrieval_scope FROM {PENDING_TABLE} p "
            "JOIN event_chunks c ON c.chunk_id = p.chunk_id JOIN fact_events e ON e.id = c.event_rowid").fetchall()
        # Hot chunks only: a chunk gone cold (store/tiers.py) leaves the index as a deleted one does.
        live = np.fromiter((row[0] for row in reader.execute(
            "SELECT c.chunk_id FROM event_chunks c JOIN fact_events e ON e.id = c.event_rowid WHERE e.tier <> 1")),
            dtype=np.uint64)
    added = _by_scope([(chunk, embedding, scope_codes([scope])[0]) for chunk, embedding, scope in pending])
    rewritten = np.fromiter((row[0] for row in pending), dtype=np.uint64, count=len(pending))
    generation: dict[int, Index | tuple[str, int]] = {}
    for code in sorted(recorded.keys() | added.keys()):
        part = _fold_partition(db.path, recorded.get(code), model[1], added.get(code, []), live, rewritten)
        if part is None:
            return build(db, started_from=name)
        if isinstance(part, tuple) or len(part):
            generation[code] = part
    return _record(db, db.path, name, generation, [(chunk, embedding) for chunk, embedding, _ in pending])


def _fold_partition(db_path: Path, recorded: tuple[str, int] | None, dimension: int, added: list[tuple[int, bytes]],
                    live: np.ndarray, rewritten: np.ndarray) -> Index | tuple[str, int] | None:
    """One scope's partition after a fold: its recorded (file, count) when none of its keys died and nothing was
    added, else an index without the keys of deleted chunks and of those written again (``rewritten``: the pending
    chunk ids of every scope), with ``added``; None when its file cannot be read."""
    if recorded is None:
        index = _new_index(dimension)
    else:
        path = index_path(db_path, recorded[0])
        view = _open(path, view=True)
        if view is None:
            return None
        keys = np.asarray(view.keys, dtype=np.uint64)
        del view            # its pages read for the keys would stay resident beside the loaded copy
        dead = np.union1d(np.setdiff1d(keys, live, assume_unique=True),
                          np.intersect1d(keys, rewritten))      # ids reused: their vectors change
        if not dead.size and not added:
            return recorded
        loaded = _open(path, view=False)
        if loaded is None:
            return None
        index = loaded
        if dead.size:
            index.remove(dead, compact=True)
    if added:
        index.add(*_vectors(added), threads=BUILD_THREADS)
    return index


def _quiet(db_path: Path, pending: int) -> bool:
    """Whether the pending count has not changed for IDLE_FOLD_SECONDS (it is noted on each call)."""
    key, now = str(db_path), time.monotonic()
    seen = _pending_seen.get(key)
    if seen is None or seen[0] != pending:
        _pending_seen[key] = (pending, now)
        return False
    return now - seen[1] >= IDLE_FOLD_SECONDS


def _intact(db_path: Path, conn: Connection, held: int) -> bool:
    """Whether every file of the recorded generation can be read and holds the vectors recorded for it, ``held``
    in all."""
    with _snapshot(conn):
        recorded = partitions(conn)
    if sum(count for _, count in recorded.values()) != held:
        return False
    # The cached views: opening a view reads every node's offset (12 ms for 68k vectors, linear), and this runs
    # after every embedding batch.
    # A cached view outlives its file's deletion (the mapping holds the pages): the file is looked for too.
    for code, (file, count) in recorded.items():
        index = _view(db_path, code, file) if index_path(db_path, file).exists() else None
        if index is None or len(index) != count:
            return False
    return True


def pending_vectors(conn: Connection) -> int:
    """How many vectors wait for the next file (readers search them exactly)."""
    return conn.execute(f"SELECT count(*) FROM {PENDING_TABLE}").fetchone()[0]


def has_index(db: Database) -> bool:
    """Whether the memory has (or is building) an approximate index file."""
    return ann_recorded(db.reader())[0] is not None


def maintain(db: Database, *, min_vectors: int | None = None, fold_at: int | None = None, erase: bool = False) -> str:
    """Keep the index in step with vec0, cheaply when there is nothing to do: build it when the memory reaches
    ``min_vectors`` chunks or its file is missing or damaged; fold when ``fold_at`` vectors are pending or
    chunks it holds were deleted (defaults: :data:`MIN_VECTORS`, :data:`FOLD_AT` — and then, while vectors keep
    coming, only past 1/:data:`BURST_SHARE` of the file or after :data:`IDLE_FOLD_SECONDS` without one) — with
    ``erase`` (the scrub after a forget), leaving no deleted chunk's vector in the new file. Returns what it did:
    'built', 'folded' or '' (also when another process or thread holds the claim: it is building or folding)."""
    if not isinstance(db.path, Path):
        return ""
    with _claim(db.path) as claimed:
        if not claimed:
            return ""
        return _maintain(db, db.path, min_vectors, fold_at, erase)


def _maintain(db: Database, db_path: Path, min_vectors: int | None, fold_at: int | None, erase: bool) -> str:
    min_vectors = MIN_VECTORS if min_vectors is None else min_vectors
    scheduled = fold_at is None         # a caller naming fold_at wants the file now
    fold_at = FOLD_AT if fold_at is None else fold_at
    reader = db.reader()
    name, held = ann_recorded(reader)
    if name is None:
        _remove_files(db_path, keep=())       # the files of vectors dropped with their model
        if reader.execute("SELECT count(*) FROM event_chunks").fetchone()[0] < min_vectors:
            return ""
        return "built" if build(db) else ""
    if name == "":          # a build that did not finish: its process ended (a live one would hold the claim)
        return "built" if build(db, started_from="") else ""
    if erase:
        # A new file built from vec0 itself: usearch keeps a removed vector's bytes in the file, and a key removed
        # by an earlier fold (a chunk gone cold, deleted while a worker folded) is no longer in the index's keys
        # for this erase to find, so no file descended from the old one is safe.
        release(db_path)
        return "built" if build(db, started_from=name) else ""
    if not _intact(db_path, reader, held):
        release(db_path)
        return "built" if build(db, started_from=name) else ""
    pending = pending_vectors(reader)
    if scheduled and pending >= fold_at and pending < held // BURST_SHARE and not _quiet(db_path, pending):
        return ""          # vectors are still coming: the next file waits for more of them, or for a pause
    # Counted only when nothing else calls for a fold (a count of every chunk: ~8 ms at 760k).
    if pending < fold_at and held + pending <= reader.execute("SELECT count(*) FROM event_chunks").fetchone()[0]:
        return ""
    # A view cannot be added to, so the fold loads the file into memory; this process's view of it would keep its
    # resident pages beside that copy (peak RSS +1 file: benchmarks/ann_fold_rss.py), and the next query opens
    # the new file anyway.
    release(db_path)
    return "folded" if fold(db, name) else ""
