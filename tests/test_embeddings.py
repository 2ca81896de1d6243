"""Embeddings: the numpy MiniLM against reference vectors, the fallback, chunking, the queue."""
# Raw SQL left: an event row deleted under the embedder (no API reaches that), and the foreign-key check after.

import sys
import time

import numpy as np
import pytest
from payloads import chat

from magi_desktop.core import Memory
from magi_desktop.core.embed import HashingEmbedder, MiniLMEmbedder, resolve_embedder
from magi_desktop.core.embed.chunking import chunk_text
from magi_desktop.core.embed.queue import MAX_ATTEMPTS, backoff_delay, embed_pending
from magi_desktop.core.store import vectors
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.queue import EMBEDDING_JOBS
from magi_desktop.core.store.tables import row_count

pytestmark = pytest.mark.slow


# ------------------------------------------------------------------ model


@pytest.fixture(scope="module", params=["onnx", "numpy"])
def each_backend(request):
    """The model on each of its two forward passes (the onnxruntime graph, the numpy fallback)."""
    embedder = MiniLMEmbedder(idle_seconds=None, backend=request.param)
    yield embedder
    embedder.release()


def test_minilm_matches_sentence_transformers_reference(each_backend, minilm_reference):
    """Reference vectors were produced by sentence-transformers + torch on the same weights."""
    vectors = each_backend.embed(minilm_reference["sentences"])
    assert each_backend.backend == each_backend.requested_backend
    reference = np.array(minilm_reference["vectors"], dtype=np.float32)
    assert vectors.shape == reference.shape == (len(minilm_reference["sentences"]), 384)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() > 0.99999
    assert np.abs(vectors - reference).max() < 1e-4


def test_minilm_result_does_not_depend_on_batching(each_backend, minilm_reference):
    sentences = minilm_reference["sentences"]
    together = each_backend.embed(sentences)
    alone = np.vstack([each_backend.embed([s]) for s in sentences])
    assert np.abs(together - alone).max() < 1e-5


def test_onnx_and_numpy_agree_on_long_inputs_split_by_the_token_budget(minilm_reference):
    """Texts of 256 tokens (truncated) next to short ones: batches cut by the token budget, run two at once on
    onnxruntime, give the numpy pass's vectors in the caller's order."""
    texts = [("word " * 400) + str(i) if i % 3 == 0 else s for i, s in enumerate(minilm_reference["sentences"] * 3)]
    fast = MiniLMEmbedder(idle_seconds=None, backend="onnx", batch_tokens=1024, threads=2)
    slow = MiniLMEmbedder(idle_seconds=None, backend="numpy", batch_tokens=1024)
    got, expected = fast.embed(texts), slow.embed(texts)
    batches = fast._batches([e.ids for e in fast._tokenizer.encode_batch(texts)])
    assert len(batches) > 2 and all(b.ids.size <= 1024 for b in batches)
    assert sorted(r for b in batches for r in b.rows) == list(range(len(texts)))
    assert (got * expected).sum(axis=1).min() > 0.99999
    fast.release()
    slow.release()


def test_numpy_question_uses_one_blas_thread(monkeypatch):
    """A single text (a question) runs with one BLAS thread; a batch with the process's setting."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    embedder = MiniLMEmbedder(idle_seconds=None, backend="numpy", batch_size=2)
    embedder.embed(["load"])
    seen = []
    real = embedder._engine.weights.encode

    def observed(ids, mask):
        seen.append(max(p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"))
        return real(ids, mask)

    monkeypatch.setattr(embedder._engine.weights, "encode", observed)
    default = max(p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas")
    embedder.embed(["what did I buy?"])
    embedder.embed(["one", "two", "three"])
    assert seen == [1, default, default]
    embedder.release()


def test_the_graph_is_cached_and_a_damaged_one_is_rebuilt(tmp_path, monkeypatch):
    from magi_desktop.core.embed import minilm_onnx

    monkeypatch.setenv("MAGI_CACHE_DIR", str(tmp_path))
    path = minilm_onnx.graph_path()
    assert path.parent.parent == tmp_path and not path.exists()
    first = MiniLMEmbedder(idle_seconds=None).embed(["hello"])
    assert path.is_file() and list(path.parent.iterdir()) == [path]     # no partial file left behind
    path.write_bytes(path.read_bytes()[: 1000])                          # a truncated file
    embedder = MiniLMEmbedder(idle_seconds=None)
    assert np.abs(embedder.embed(["hello"]) - first).max() < 1e-6
    assert embedder.backend == "onnx" and path.stat().st_size > 1_000_000


def test_without_onnxruntime_the_numpy_pass_runs(monkeypatch, minilm_reference):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)             # as if it were not installed
    embedder = MiniLMEmbedder(idle_seconds=None, graph=None)
    vectors = embedder.embed(minilm_reference["sentences"][:2])
    assert embedder.backend == "numpy"
    reference = np.array(minilm_reference["vectors"][:2], dtype=np.float32)
    assert (vectors * reference).sum(axis=1).min() > 0.99999
    with pytest.raises((ImportError, RuntimeError)):     # RuntimeError: the graph cannot be built without it
        MiniLMEmbedder(idle_seconds=None, backend="onnx").embed(["x"])


def test_minilm_semantics(minilm):
    a, b, c = minilm.embed(["I bought a pressure cooker", "I purchased a kitchen appliance",
                            "The stock market fell sharply today"])
    assert a @ b > a @ c + 0.2


def test_minilm_releases_weights_when_idle():
    embedder = MiniLMEmbedder(idle_seconds=0.2)
    first = embedder.embed(["hello"])
    assert embedder.loaded
    deadline = time.monotonic() + 5
    while embedder.loaded and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not embedder.loaded
    assert np.allclose(embedder.embed(["hello"]), first, atol=1e-6)  # reloads on demand
    embedder.release()
    assert not embedder.loaded


def test_embed_nothing(minilm):
    assert minilm.embed([]).shape == (0, 384)


def test_resolve_embedder():
    assert isinstance(resolve_embedder("hashing"), HashingEmbedder)
    assert isinstance(resolve_embedder("default"), MiniLMEmbedder)
    custom = HashingEmbedder(dimension=64)
    assert resolve_embedder(custom) is custom
    with pytest.raises(ValueError):
        resolve_embedder("bert-huge")


def test_hashing_embedder_is_deterministic_and_lexical():
    e = HashingEmbedder()
    a, b, c = e.embed(["air fryer recipes", "air fryers recipe", "quantum chromodynamics"])
    assert np.allclose(e.embed(["air fryer recipes"])[0], a)
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-6)
    assert a @ b > a @ c


# --------------------------------------------------------------- chunking


def test_short_text_is_one_chunk():
    [chunk] = chunk_text("a short sentence")
    assert (chunk.start, chunk.end) == (0, 16)


def test_long_text_is_split_with_overlap_and_offsets():
    words = [f"w{i}" for i in range(500)]
    text = " ".join(words)
    chunks = chunk_text(text, max_units=100, overlap=20)
    assert len(chunks) == 6
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start < a.end  # overlap
    assert text[chunks[1].start:chunks[1].end].split()[0] == "w80"
    assert all(len(text[c.start:c.end].split()) <= 100 for c in chunks)


def test_chinese_is_chunked_by_character():
    text = "我" * 250
    chunks = chunk_text(text, max_units=100, overlap=10)
    assert [c.end - c.start for c in chunks] == [100, 100, 70]


def test_chunking_rejects_nonsense_bounds():
    with pytest.raises(ValueError):
        chunk_text("x", max_units=10, overlap=10)


# ------------------------------------------------------------------ queue


def test_process_pending_embeds_every_event_once(memory):
    memory.ingest_many([chat(f"message number {i}", at=1.7e9 + i) for i in range(150)])
    memory.ingest(chat("long " * 600, at=1.8e9))
    assert memory.pending_by_queue() == {"embedding": 151, "l2": 151, "l4": 0, "facts": 0}
    report = memory.process_pending()
    assert report["embedded"] == 151 and report["failed"] == 0
    conn = memory.db.reader()
    assert row_count(conn, "embedding_jobs") == 0
    assert vectors.chunked_event_count(conn) == 151
    assert vectors.chunk_vector_count(conn) == memory.stats()["embedding"]["chunks"] > 151
    assert memory.process_pending()["embedded"] == 0


def test_process_pending_respects_limit(memory):
    memory.ingest_many([chat(f"m {i}", at=1.7e9 + i) for i in range(10)])
    assert memory.process_pending(limit=4)["embedded"] == 4
    assert memory.pending_by_queue()["embedding"] == 6


class PoisonedEmbedder(HashingEmbedder):
    """Fails on any batch containing the word POISON (fault injection for the retry path)."""

    name = "poisoned-test-embedder"

    def embed(self, texts):
        if any("POISON" in t for t in texts):
            raise RuntimeError("cannot embed poison")
        return super().embed(texts)


def test_a_failing_event_is_isolated_retried_and_dead_lettered(tmp_path):
    mem = Memory.open(tmp_path / "p", embedder=PoisonedEmbedder())
    mem.ingest_many([chat("good one", at=1.7e9), chat("POISON pill", at=1.7e9 + 1), chat("good two", at=1.7e9 + 2)])
    clock = 2_000_000_000.0
    report = embed_pending(mem.db, mem.embedder, now=clock)
    assert (report.embedded, report.failed) == (2, 1)
    conn = mem.db.reader()
    state, attempts, due, error = next(iter(EMBEDDING_JOBS.jobs(conn).values()))
    assert (state, attempts) == ("pending", 1) and "cannot embed poison" in error
    assert due == clock + backoff_delay(1)
    assert embed_pending(mem.db, mem.embedder, now=clock + 1).failed == 0  # not due yet
    for attempt in range(2, MAX_ATTEMPTS + 1):
        clock += backoff_delay(attempt - 1) + 1
        assert embed_pending(mem.db, mem.embedder, now=clock).failed == 1
    assert [(job.state, job.attempts) for job in EMBEDDING_JOBS.jobs(conn).values()] == [("dead", MAX_ATTEMPTS)]
    assert embed_pending(mem.db, mem.embedder, now=clock + 10**6).failed == 0  # dead letters stay put
    assert mem.stats()["embedding"]["dead"] == 1
    assert mem.stats()["embedding"]["chunks"] == 2
    mem.close()


def test_a_model_change_marks_vectors_stale_and_reembeds(tmp_path):
    path = tmp_path / "switch"
    first = Memory.open(path, embedder=HashingEmbedder(dimension=384))
    first.ingest_many([chat("tea", at=1.7e9), chat("coffee", at=1.7e9 + 1)])
    first.process_pending()
    first.close()

    class Other(HashingEmbedder):
        name = "other-model"

    second = Memory.open(path, embedder=Other(dimension=128))
    stats = second.stats()["embedding"]
    assert (stats["model"], stats["dimension"], stats["rebuilt_from"]) == ("other-model", 128, "hashing-ngram-v1")
    assert (stats["chunks"], stats["pending"]) == (0, 2)
    assert second.process_pending()["embedded"] == 2
    conn = second.db.reader()
    blob = vectors.chunk_vectors_of_events(conn, [r["id"] for r in event_rows(conn)])[0][1]
    assert len(blob) == 128 * 4
    assert vectors.chunk_models(conn) == {"other-model"}
    second.close()


def test_a_missing_model_never_wipes_its_vectors(tmp_path):
    path = tmp_path / "keep"
    real = Memory.open(path, embedder=HashingEmbedder())
    real.ingest(chat("tea"))
    real.process_pending()
    real.close()

    class StandIn(HashingEmbedder):
        name = "another-fallback"

    degraded = Memory.open(path, embedder=StandIn(stands_in_for="hashing-ngram-v1"))
    degraded.ingest(chat("coffee"))
    assert not degraded.vectors_ready
    assert degraded.process_pending()["embedded"] == 0
    stats = degraded.stats()["embedding"]
    assert (stats["model"], stats["chunks"], stats["pending"]) == ("hashing-ngram-v1", 1, 1)
    degraded.close()

    back = Memory.open(path, embedder=HashingEmbedder())
    assert back.process_pending()["embedded"] == 1
    back.close()


def test_forgotten_event_mid_embedding_is_skipped(memory):
    memory.ingest_many([chat("keep me", at=1.7e9), chat("forget me", at=1.7e9 + 1)])
    original = memory.embedder.embed

    def embed_then_forget(texts):
        with memory.db.transaction() as conn:
            conn.execute("DELETE FROM fact_events WHERE content = 'forget me'")
        return original(texts)

    memory.embedder.embed = embed_then_forget
    assert memory.process_pending()["embedded"] == 1
    conn = memory.db.reader()
    assert memory.stats()["embedding"]["chunks"] == 1
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
