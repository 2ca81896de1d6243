"""The chunk vectors' layout and their approximate index (store/ann.py): integer scope codes, an old table upgraded
in place, and an index that answers like the exact scan, kept in step through embedding and forget."""
# Raw SQL reads the vec0 tables as they are on disk (an old layout built by hand, the exact scan the index is
# compared with, the pending rows a reader sees): these are the bytes under test.

import multiprocessing

import numpy as np
import pytest
from payloads import chat

from magi_desktop.core import Memory
from magi_desktop.core.embed import HashingEmbedder, indexing
from magi_desktop.core.store import ann, ann_build, search, vectors

T0 = 1_760_000_000.0
SCOPES = ("conversation_only", "fact_authoritative")
TOPICS = ["air fryer recipes", "moving to Jiaxing", "running every morning", "the bank appointment", "jazz records",
          "a standing desk", "my sister's birthday", "the client demo", "guitar lessons", "the March invoice",
          "tomatoes in the garden", "a trip to Kyoto", "the broken dishwasher", "learning Rust", "a chess club"]


def sentence(i: int) -> str:
    return f"Note {i}: I talked about {TOPICS[i % len(TOPICS)]} and {TOPICS[(i * 7 + 3) % len(TOPICS)]} ({i})"


def fill(memory: Memory, start: int, n: int) -> list[str]:
    ids = [memory.ingest(chat(sentence(i), at=T0 + i, item=f"n{i}")).event_id for i in range(start, start + n)]
    indexing.embed(memory.db, memory.embedder, ("events",), now=T0 + 10_000)
    return ids


def query(text: str) -> bytes:
    return np.ascontiguousarray(HashingEmbedder().embed([text])[0], dtype=np.float32).tobytes()


def exact(conn, vector: bytes, k: int, scopes=SCOPES, now=T0 + 10_000):
    codes = vectors.scope_codes(scopes)
    return conn.execute(
        f"SELECT event_rowid, distance FROM {vectors.VEC_TABLE} WHERE embedding MATCH ? AND k = ? "
        f"AND scope_code IN ({', '.join('?' * len(codes))}) AND occurred_at <= ? ORDER BY distance",
        [vector, k, *codes, now]).fetchall()


def assert_same(got, want, tolerance=2e-3):
    """The same hits at the same distances (within the index's f16 rounding); among equal distances in any order."""
    assert len(got) == len(want)
    assert np.allclose([d for _, d in got], [d for _, d in want], atol=tolerance)
    if want:
        cutoff = want[-1][1] - tolerance         # ties at the k-th distance may be cut either way
        assert {e for e, d in got if d < cutoff} == {e for e, d in want if d < cutoff}


QUESTIONS = ["what did I cook in the air fryer", "when is my sister's birthday", "jazz", "Kyoto trip plans",
             "learning a programming language", "the dishwasher broke again"]


@pytest.fixture
def small_index(monkeypatch):
    monkeypatch.setattr(ann_build, "MIN_VECTORS", 50)
    monkeypatch.setattr(ann_build, "FOLD_AT", 10_000)      # folds only when a test asks
    # One thread: the same graph on every run. Built by several, a graph of these 120 vectors misses a neighbour
    # the exact scan finds in about 1 build in 100 (measured), and the comparisons below would be flaky.
    monkeypatch.setattr(ann_build, "BUILD_THREADS", 1)


@pytest.fixture
def indexed(tmp_path, small_index):
    memory = Memory.open(tmp_path / "m", embedder="hashing")
    fill(memory, 0, 120)          # past MIN_VECTORS: the embedder built the index
    yield memory
    memory.close()


def ann_files(memory):
    return sorted(p.name for p in memory.db.path.parent.glob(f"{memory.db.path.name}.chunks-*"))


def recorded_files(memory):
    """The recorded generation's files (one per scope: these notes are all fact_authoritative)."""
    return sorted(file for file, _ in ann.partitions(memory.db.reader()).values())


def file_bytes(memory):
    return b"".join(ann.index_path(memory.db.path, file).read_bytes() for file in recorded_files(memory))


def test_scopes_are_stored_as_codes_that_fit_inline(tmp_path):
    memory = Memory.open(tmp_path / "m", embedder="hashing")
    memory.ingest(chat("I moved to Jiaxing", at=T0))
    indexing.embed(memory.db, memory.embedder, ("events",), now=T0 + 1)
    conn = memory.db.reader()
    assert conn.execute(f"SELECT scope_code FROM {vectors.VEC_TABLE}").fetchall() == [(1,)]   # fact_authoritative
    assert vectors.layout(conn) == vectors.LAYOUT
    assert search.nearest_event_chunks(conn, query("Jiaxing"), 5, ["conversation_only"], T0 + 1) == []
    assert len(search.nearest_event_chunks(conn, query("Jiaxing"), 5, SCOPES, T0 + 1)) == 1
    with pytest.raises(ValueError, match="unknown retrieval scope"):
        search.nearest_event_chunks(conn, query("Jiaxing"), 5, ["fact"], T0 + 1)
    memory.close()


def test_an_old_layout_is_rebuilt_from_itself_with_the_same_answers(tmp_path):
    path = tmp_path / "m"
    memory = Memory.open(path, embedder="hashing")
    fill(memory, 0, 40)
    conn = memory.db.reader()
    before = {q: exact(conn, query(q), 10) for q in QUESTIONS}
    rows = conn.execute(f"SELECT rowid, embedding, scope_code, occurred_at, event_rowid FROM {vectors.VEC_TABLE}"
                        ).fetchall()
    names = {code: scope for scope, code in vectors.SCOPE_CODES.items()}
    with memory.db.transaction() as w:      # the table as versions before issue 20 made it
        w.execute(f"DROP TABLE {vectors.VEC_TABLE}")
        w.execute(f"CREATE VIRTUAL TABLE {vectors.VEC_TABLE} USING vec0(embedding float[{memory.embedder.dimension}] "
                  "distance_metric=cosine, l1_scope text, occurred_at float, +event_rowid integer)")
        w.executemany(f"INSERT INTO {vectors.VEC_TABLE} (rowid, embedding, l1_scope, occurred_at, event_rowid) "
                      "VALUES (?, ?, ?, ?, ?)", [(r, e, names[c], t, ev) for r, e, c, t, ev in rows])
        w.execute("UPDATE vector_index SET layout = 1")
    memory.close()
    reopened = Memory.open(path, embedder="hashing")
    conn = reopened.db.reader()
    assert vectors.layout(conn) == vectors.LAYOUT
    assert conn.execute(f"SELECT rowid, embedding, scope_code, occurred_at, event_rowid FROM {vectors.VEC_TABLE} "
                        "ORDER BY rowid").fetchall() == sorted(rows)
    assert indexing.pending_count(reopened.db, now=T0 + 10_000) == 0          # nothing to embed again
    assert {q: exact(conn, query(q), 10) for q in QUESTIONS} == before
    # the trigger came back with the table: a forgotten event takes its vectors along
    reopened.forget(source_item_ids=["n3"])
    assert conn.execute(f"SELECT count(*) FROM {vectors.VEC_TABLE}").fetchone()[0] == len(rows) - 1
    reopened.close()


def test_the_index_answers_like_the_exact_scan_on_a_small_memory(indexed):
    conn = indexed.db.reader()
    name, held = vectors.ann_recorded(conn)
    assert name and held == 120 and ann_files(indexed) == recorded_files(indexed) and len(recorded_files(indexed)) == 1
    for q in QUESTIONS:
        got = ann.nearest_chunks(conn, query(q), 10, SCOPES, T0 + 10_000)
        assert got is not None
        assert_same(got, exact(conn, query(q), 10))
        assert_same(search.nearest_event_chunks(conn, query(q), 10, SCOPES, T0 + 10_000), got)


def test_the_time_filter_holds_and_a_selective_one_falls_back_to_the_exact_scan(indexed, monkeypatch):
    conn = indexed.db.reader()
    early = T0 + 30          # only the first 31 events were recorded by then
    for q in QUESTIONS:
        got = search.nearest_event_chunks(conn, query(q), 10, SCOPES, early)
        assert_same(got, exact(conn, query(q), 10, now=early))
    vector = query("jazz records")
    # conversation_only: none of these user statements, so it has no partition and the index's answer is complete …
    assert ann.nearest_chunks(conn, vector, 10, ["conversation_only"], T0 + 10_000) == []
    # … and when it may not ask for more hits than 64 of 120, three visible events leave the answer to vec0
    monkeypatch.setattr(ann, "MAX_FETCH", 64)
    assert ann.nearest_chunks(conn, vector, 10, SCOPES, T0 + 2) is None
    assert ann.nearest_chunks(conn, vector, 10, SCOPES, T0 + 10_000) is not None
    assert_same(search.nearest_event_chunks(conn, vector, 10, SCOPES, T0 + 2), exact(conn, vector, 10, now=T0 + 2))


def test_new_vectors_are_seen_before_the_index_is_written_again_and_after(indexed):
    conn = indexed.db.reader()
    name = vectors.ann_recorded(conn)[0]
    fill(indexed, 120, 30)
    assert vectors.ann_recorded(conn)[0] == name                             # not folded yet: pending
    assert conn.execute(f"SELECT count(*) FROM {vectors.PENDING_TABLE}").fetchone()[0] == 30
    for q in QUESTIONS:
        assert_same(ann.nearest_chunks(conn, query(q), 10, SCOPES, T0 + 10_000), exact(conn, query(q), 10))
    assert ann_build.maintain(indexed.db, fold_at=1) == "folded"
    new_name, held = vectors.ann_recorded(conn)
    assert new_name != name and held == 150 and ann_files(indexed) == recorded_files(indexed)   # the old file is gone
    assert conn.execute(f"SELECT count(*) FROM {vectors.PENDING_TABLE}").fetchone()[0] == 0
    for q in QUESTIONS:
        assert_same(ann.nearest_chunks(conn, query(q), 10, SCOPES, T0 + 10_000), exact(conn, query(q), 10))


def _nearest_in_another_process(path, vector, out):
    memory = Memory.open(path, embedder="hashing")
    try:
        out.put(ann.nearest_chunks(memory.db.reader(), vector, 10, SCOPES, T0 + 10_000))
    finally:
        memory.close()


def test_a_reader_in_another_process_sees_new_chunks(indexed):
    fill(indexed, 120, 20)
    newest = indexed.db.reader().execute("SELECT max(id) FROM fact_events").fetchone()[0]
    vector = query(sentence(139))
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    child = context.Process(target=_nearest_in_another_process, args=(indexed.db.path, vector, out))
    child.start()
    got = out.get(timeout=120)
    child.join(60)
    assert got is not None and got[0][0] == newest                  # the pending vector, nearest to its own text
    assert_same(got, exact(indexed.db.reader(), vector, 10))


def test_a_forgotten_event_never_comes_back_and_leaves_the_index_file(indexed):
    conn = indexed.db.reader()
    vector = query(sentence(7))
    target = ann.nearest_chunks(conn, vector, 10, SCOPES, T0 + 10_000)[0][0]
    chunk_ids = [c for (c,) in conn.execute("SELECT chunk_id FROM event_chunks WHERE event_rowid = ?", (target,))]
    forgotten = [np.frombuffer(e, dtype=np.float32).astype(np.float16).tobytes() for (e,) in conn.execute(
        f"SELECT embedding FROM {vectors.VEC_TABLE} WHERE rowid IN ({', '.join('?' * len(chunk_ids))})", chunk_ids)]
    assert all(v in file_bytes(indexed) for v in forgotten)
    ann.release(indexed.db.path)
    old = vectors.ann_recorded(conn)[0]
    with indexed.db.transaction() as w:     # the rows go, as forget's first step does, before any scrub
        w.execute("DELETE FROM fact_events WHERE id = ?", (target,))
    got = ann.nearest_chunks(conn, vector, 10, SCOPES, T0 + 10_000)
    assert target not in [event for event, _ in got]
    assert_same(got, exact(conn, vector, 10))
    indexed.forget(source_item_ids=["n8"])          # the whole forget: its scrub writes the index again
    name = vectors.ann_recorded(conn)[0]
    assert name != old and ann_files(indexed) == recorded_files(indexed)
    from usearch.index import Index
    keys = {key for file in recorded_files(indexed) for key in np.asarray(
        Index.restore(str(ann.index_path(indexed.db.path, file)), view=True).keys).tolist()}
    assert not keys & set(chunk_ids)
    assert not any(v in file_bytes(indexed) for v in forgotten)   # not in the file
    assert len(keys) == conn.execute("SELECT count(*) FROM event_chunks").fetchone()[0]


@pytest.mark.parametrize("damage", ["delete", "garbage", "truncate"])
def test_a_missing_or_damaged_file_is_rebuilt_from_vec0(indexed, damage):
    conn = indexed.db.reader()
    name = vectors.ann_recorded(conn)[0]
    path = ann.index_path(indexed.db.path, recorded_files(indexed)[0])
    ann.release(indexed.db.path)
    if damage == "delete":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(b"not an index" * 100)
    else:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    vector = query("jazz records")
    assert ann.nearest_chunks(conn, vector, 10, SCOPES, T0 + 10_000) is None       # the exact scan answers
    assert_same(search.nearest_event_chunks(conn, vector, 10, SCOPES, T0 + 10_000), exact(conn, vector, 10))
    assert ann_build.maintain(indexed.db) == "built"
    rebuilt, held = vectors.ann_recorded(conn)
    assert rebuilt != name and held == 120 and ann_files(indexed) == recorded_files(indexed)
    assert_same(ann.nearest_chunks(conn, vector, 10, SCOPES, T0 + 10_000), exact(conn, vector, 10))


def test_no_index_below_the_threshold(tmp_path):
    memory = Memory.open(tmp_path / "m", embedder="hashing")
    fill(memory, 0, 20)
    conn = memory.db.reader()
    assert vectors.ann_recorded(conn) == (None, 0) and ann_files(memory) == []
    assert conn.execute(f"SELECT count(*) FROM {vectors.PENDING_TABLE}").fetchone()[0] == 0   # nothing doubled
    assert ann.nearest_chunks(conn, query("jazz"), 10, SCOPES, T0 + 10_000) is None
    memory.close()


def test_while_vectors_keep_coming_the_file_waits_for_a_share_of_it_or_a_pause(small_index, monkeypatch, tmp_path):
    monkeypatch.setattr(ann_build, "FOLD_AT", 10)
    monkeypatch.setattr(ann_build, "BURST_SHARE", 2)              # up to half the file may wait while more come
    memory = Memory.open(tmp_path / "m", embedder="hashing")
    held = lambda: memory.db.reader().execute("SELECT ann_vectors FROM vector_index").fetchone()[0]  # noqa: E731
    try:
        fill(memory, 0, 60)                       # built past 50
        assert held() == 60
        fill(memory, 60, 12)                      # 12 pending: over FOLD_AT, under 60 / 2, still coming
        assert held() == 60
        assert ann_build.maintain(memory.db) == ""      # the same count, but not quiet for long yet
        monkeypatch.setattr(ann_build, "IDLE_FOLD_SECONDS", 0.0)
        assert ann_build.maintain(memory.db) == "folded"          # a pause: the file takes them
        assert held() == 72
        fill(memory, 72, 40)                      # 40 pending: past half of 72 at once
        assert held() == 112
        vector = query("jazz records")
        got = search.nearest_event_chunks(memory.db.reader(), vector, 10, SCOPES, T0 + 10_000)
        assert_same(got, exact(memory.db.reader(), vector, 10))
    finally:
        memory.close()


def _maintain_paused_in_another_process(path, kind, paused, resume):
    """``ann_build.maintain`` building or folding in this process, stopped once its temporary file is written."""
    ann_build.BUILD_THREADS = 1
    index_class = ann._index_class()
    save = index_class.save

    def save_and_wait(self, *args, **kwargs):
        written = save(self, *args, **kwargs)
        paused.set()
        resume.wait(120)
        return written

    index_class.save = save_and_wait
    memory = Memory.open(path, embedder="hashing")
    try:
        assert ann_build.maintain(memory.db, min_vectors=50, fold_at=1) == ("built" if kind == "build" else "folded")
    finally:
        memory.close()


def _paused_worker(path, kind):
    context = multiprocessing.get_context("spawn")
    paused, resume = context.Event(), context.Event()
    child = context.Process(target=_maintain_paused_in_another_process, args=(path, kind, paused, resume))
    child.start()
    assert paused.wait(120), "the other process never reached its save"
    return child, resume


def _memory_for(kind, path, monkeypatch):
    """120 chunks, without an index yet (a build to come) or with one and 20 pending vectors (a fold to come)."""
    memory = Memory.open(path, embedder="hashing")
    if kind == "build":
        monkeypatch.setattr(ann_build, "MIN_VECTORS", 10_000)
        fill(memory, 0, 120)
        monkeypatch.setattr(ann_build, "MIN_VECTORS", 50)
    else:
        fill(memory, 0, 120)
        fill(memory, 120, 20)
    return memory


def _temporary_files(memory):
    return [name for name in ann_files(memory) if name.endswith(".tmp")]


@pytest.mark.parametrize("kind", ["build", "fold"])
def test_while_one_process_writes_the_index_another_neither_builds_nor_deletes_and_still_answers(
        small_index, monkeypatch, tmp_path, kind):
    memory = _memory_for(kind, tmp_path / "m", monkeypatch)
    before = vectors.ann_recorded(memory.db.reader())
    conn = memory.db.reader()
    child, resume = _paused_worker(memory.db.path, kind)
    try:
        writing = _temporary_files(memory)
        assert len(writing) == 1
        assert vectors.ann_recorded(conn) == (("", 0) if kind == "build" else before)
        assert ann_build.maintain(memory.db, min_vectors=50, fold_at=1) == ""       # the claim is the other's
        assert ann_build.maintain(memory.db, erase=True) == ""
        fill(memory, 200, 10)           # embedded meanwhile (its own maintain call also stands aside)
        assert _temporary_files(memory) == writing
        if kind == "fold":              # the recorded file and the pending rows answer
            for q in QUESTIONS:
                assert_same(ann.nearest_chunks(conn, query(q), 10, SCOPES, T0 + 10_000), exact(conn, query(q), 10))
        else:                           # no file yet: the exact scan answers
            assert ann.nearest_chunks(conn, query("jazz"), 10, SCOPES, T0 + 10_000) is None
        for q in QUESTIONS:
            assert_same(search.nearest_event_chunks(conn, query(q), 10, SCOPES, T0 + 10_000),
                        exact(conn, query(q), 10))
    finally:
        resume.set()
        child.join(120)
    assert child.exitcode == 0
    held = vectors.ann_recorded(conn)[1]
    assert held == (120 if kind == "build" else 140) and ann_files(memory) == recorded_files(memory)
    # what was embedded while the file was written stays pending until the next one
    assert ann.pending_vectors(conn) == 10
    for q in QUESTIONS:
        assert_same(ann.nearest_chunks(conn, query(q), 10, SCOPES, T0 + 10_000), exact(conn, query(q), 10))
    assert ann_build.maintain(memory.db, fold_at=1) == "folded"                  # the claim is free again
    assert vectors.ann_recorded(conn)[1] == held + 10
    memory.close()


@pytest.mark.parametrize("kind", ["build", "fold"])
def test_a_write_cut_short_by_the_end_of_its_process_is_taken_over(small_index, monkeypatch, tmp_path, kind):
    memory = _memory_for(kind, tmp_path / "m", monkeypatch)
    child, _resume = _paused_worker(memory.db.path, kind)
    child.kill()                    # no clean-up of any kind: the system drops its claim
    child.join(60)
    conn = memory.db.reader()
    assert len(_temporary_files(memory)) == 1
    assert ann_build.maintain(memory.db, fold_at=1) == ("built" if kind == "build" else "folded")
    held = vectors.ann_recorded(conn)[1]
    # The abandoned file is gone.
    assert held == (120 if kind == "build" else 140) and ann_files(memory) == recorded_files(memory)
    assert ann.pending_vectors(conn) == 0
    memory.close()


class _Unreachable:
    """A real index file whose graph has lost its way: every search reaches one node (what a fold that removed 60%
    of a file at 1M events left). The test double wraps the real view; it only cuts what search returns."""

    def __init__(self, index):
        self._index = index

    def __len__(self):
        return len(self._index)

    def __getattr__(self, name):
        return getattr(self._index, name)

    def search(self, vector, count, **kwargs):
        found = self._index.search(vector, count, **kwargs)
        return type("Matches", (), {"keys": found.keys[:1], "distances": found.distances[:1]})()


def test_a_file_that_answers_short_is_searched_exactly_and_built_again(indexed, monkeypatch, caplog):
    conn = indexed.db.reader()
    now = T0 + 10_000
    vector = query("when is my sister's birthday")
    wanted = exact(conn, vector, 10)
    real_view = ann._view
    monkeypatch.setattr(ann, "_view", lambda *args: _Unreachable(real_view(*args)))
    with caplog.at_level("WARNING", logger="magi_desktop.core.store.ann"):
        assert ann.nearest_chunks(conn, vector, 10, SCOPES, now) is None        # the exact scan answers instead
    assert "answered short" in caplog.text
    assert_same(search.nearest_event_chunks(conn, vector, 10, SCOPES, now), wanted)
    before = recorded_files(indexed)
    monkeypatch.setattr(ann, "_view", real_view)
    assert ann_build.maintain(indexed.db) == "built" and recorded_files(indexed) != before
    assert_same(ann.nearest_chunks(conn, vector, 10, SCOPES, now), wanted)
    assert ann_build.maintain(indexed.db) == ""                                 # once: the new files answer in full
