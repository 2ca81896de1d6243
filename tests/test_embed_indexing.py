"""The embedding home (embed/indexing.py): every vector kind with one batching and one failure handling."""

import pytest
from payloads import chat

from magi_desktop.core import Memory, l2
from magi_desktop.core.embed import HashingEmbedder, indexing
from magi_desktop.core.store import vectors
from magi_desktop.core.store.entities import EntityLinker

T0 = 1_760_000_000.0


class Refusing(HashingEmbedder):
    """The memory's own model (same name and dimension), failing on any batch with a word it is told to refuse."""

    def __init__(self, word):
        super().__init__()
        self.word = word
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        if any(self.word in text for text in texts):
            raise RuntimeError(f"cannot embed {self.word}")
        return super().embed(texts)


@pytest.fixture
def projected(tmp_path):
    """A memory whose L2 ran without vectors: two edges and two entities (Jiaxing, jazz) wait for theirs."""
    memory = Memory.open(tmp_path / "m", embedder="hashing")
    memory.ingest(chat("I moved to Jiaxing.", at=T0))
    memory.ingest(chat("I love jazz.", at=T0 + 5, session="s2"))
    l2.process(memory.db, memory.llm, EntityLinker())          # no ``embed``: L2 alone, as before the vectors
    yield memory
    memory.close()


def waiting(memory):
    conn = memory.db.reader()
    return ([text for _, text in vectors.edges_without_vectors(conn, -1, 100)],
            [name for _, name in vectors.entities_without_vectors(conn, -1, 100)])


def test_a_failing_text_is_isolated_and_left_for_the_next_call(projected):
    assert waiting(projected) == (["the user LIVES_IN Jiaxing", "the user LIKES jazz"], ["Jiaxing", "jazz"])
    refusing = Refusing("jazz")
    report = indexing.embed(projected.db, refusing, ("edges", "entities"))        # no exception
    assert report.vectors == {"edges": 1, "entities": 1}
    assert report.skipped == {"edges": 1, "entities": 1}
    assert report.errors == ["RuntimeError: cannot embed jazz"] * 2
    assert (report.embedded, report.failed, report.dead) == (0, 0, 0)           # no event job was charged
    assert refusing.calls == 6          # per kind: the batch, then each of its two texts alone — and no more
    assert waiting(projected) == (["the user LIKES jazz"], ["jazz"])
    again = indexing.embed(projected.db, HashingEmbedder(), ("edges", "entities"))
    assert again.vectors == {"edges": 1, "entities": 1} and not again.skipped
    assert waiting(projected) == ([], [])


def test_an_index_rebuilt_for_another_model_meanwhile_drops_the_batch(projected):
    class Other(HashingEmbedder):
        name = "another-model"

    report = indexing.embed(projected.db, Other(), ("edges",))
    assert not report.vectors and not report.errors
    assert waiting(projected)[0] == ["the user LIVES_IN Jiaxing", "the user LIKES jazz"]


def test_every_kind_in_one_call(projected):
    projected.ingest(chat("A third note.", at=T0 + 10, session="s3"))
    report = indexing.embed(projected.db, projected.embedder)
    assert report.embedded == 3 and report.vectors == {"events": 3, "edges": 2, "entities": 2}
    assert indexing.pending_count(projected.db) == 0 and waiting(projected) == ([], [])
    with pytest.raises(ValueError, match="unknown vector kind"):
        indexing.embed(projected.db, projected.embedder, ("events", "pictures"))


def test_the_edge_sentence_says_the_predicate_in_words():
    assert indexing.edge_sentence("Caroline LIVES_IN Boston") == "Caroline lives in Boston"
    assert indexing.edge_sentence("the user LIKES jazz") == "the user likes jazz"
