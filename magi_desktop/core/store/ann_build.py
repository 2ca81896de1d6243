"""The approximate chunk index's writer (store/ann.py holds what it is and how readers search it): building the
partition files from vec0, folding the pending vectors into new ones, and the build claim that lets one process
(or thread) at a time do either.

The embedding worker calls :func:`maintain` after each round; forget's scrub calls it with ``erase``. A build or
fold writes each changed partition under a new name (a temporary file fsynced and renamed), records the
generation in one transaction with the pending vectors it now holds, then removes the older files.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from filelock import lock_descriptor, unlock_descriptor

from .ann import (
    DTYPE,
    EXPANSION_SEARCH,
    _index_class,
    _open,
    _snapshot,
    _vectors,
    _view,
    answered_short,
    index_path,
    partitions,
    pending_vectors,
    release,
)
from .connection import Connection, read_snapshot
from .vectors import INDEX_NAME, PENDING_TABLE, VEC_TABLE, ann_recorded, current_model, scope_codes

if TYPE_CHECKING:
    from usearch.index import Index

    from . import Database

MIN_VECTORS = 30_000     # below this many chunks the exact scan costs a few ms: no index is built
FOLD_AT = 2_000          # pending vectors that make the worker write a new file (readers scan them exactly)
# Writing a file costs the whole index (a million vectors: seconds), so while vectors keep coming (a back-fill,
# a million-event import) the file is written again only once the pending ones are a share of it — a geometric
# schedule, a few dozen files for a million — or once no vector was added for IDLE_FOLD_SECONDS.
BURST_SHARE = 16         # pending vectors up to 1/16 of the file wait while more keep coming
IDLE_FOLD_SECONDS = 30.0
CONNECTIVITY = 16
EXPANSION_ADD = 64           # 128 built 1.7-2x slower for the same recall (docs/performance.md, "Build cost")
READ_BATCH = 20_000      # vectors read from vec0 at a time while building
# A fold that would remove more than this share of a partition's vectors builds every file from vec0 instead:
# usearch's HNSW does not mend a graph that loses most of its nodes. At 1M events, the first tiering run took 62% of
# the fact file's vectors out (~400k) and left it answering some questions with one hit: those fell back to the
# exact scan (590 ms). The share counts every removal since the file was built (usearch keeps removed nodes), so
# many small folds add up to it as well. A small partition is no exception: 17 of 23 vectors removed left a graph
# that answered short (tests/test_tiers.py); its rebuild builds every file, cheap when the memory is small.
# Forget's scrub builds anyway.
REBUILD_SHARE = 0.1
# usearch's threads while adding vectors (0: one per core). With several, the graph depends on the order the
# threads happen to insert in, so two builds from the same vectors differ (and miss different neighbours);
# tests build with one, which gives the same file every time.
BUILD_THREADS = 0
CLAIM_SUFFIX = ".chunks.lock"    # the lock file beside the database that is the build claim (_claim)

_pending_seen: dict[str, tuple[int, float]] = {}     # database path -> (pending vectors, when that count was new)


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
    vector's bytes in the file: after a forget :func:`maintain` builds from vec0 instead, and so does a fold that would
    remove more than :data:`REBUILD_SHARE` of a partition."""
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
    chunk ids of every scope), with ``added``; None when its file cannot be read or would have lost more than
    :data:`REBUILD_SHARE` of its nodes since it was built (the caller builds from vec0)."""
    if recorded is None:
        index = _new_index(dimension)
    else:
        path = index_path(db_path, recorded[0])
        view = _open(path, view=True)
        if view is None:
            return None
        keys = np.asarray(view.keys, dtype=np.uint64)
        slots = view.stats.nodes        # a removed vector keeps its node: what earlier folds took out counts too
        del view            # its pages read for the keys would stay resident beside the loaded copy
        dead = np.union1d(np.setdiff1d(keys, live, assume_unique=True),
                          np.intersect1d(keys, rewritten))      # ids reused: their vectors change
        if not dead.size and not added:
            return recorded
        if dead.size + slots - len(keys) > REBUILD_SHARE * slots:
            return None
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
    """Whether every file of the recorded generation can be read, holds the vectors recorded for it (``held`` in
    all) and answered no search in this process short (store/ann.py)."""
    with _snapshot(conn):
        recorded = partitions(conn)
    files = [file for file, _ in recorded.values()]
    if sum(count for _, count in recorded.values()) != held or answered_short(db_path, files):
        return False
    # The cached views: opening a view reads every node's offset (12 ms for 68k vectors, linear), and this runs
    # after every embedding batch.
    # A cached view outlives its file's deletion (the mapping holds the pages): the file is looked for too.
    for code, (file, count) in recorded.items():
        index = _view(db_path, code, file) if index_path(db_path, file).exists() else None
        if index is None or len(index) != count:
            return False
    return True


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
