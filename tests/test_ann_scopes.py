"""The approximate chunk index partitioned by scope (store/ann.py): a fact-only question searches the facts' file
only, each file holds its scope's chunks, a fold routes a new vector to its scope's file and a forget takes one out
of the right file, and a missing file or a wrong count is rebuilt from vec0."""
# Raw SQL reads which scope each chunk's event has (the bytes the partitions are checked against), deletes an
# event's rows as forget's first step does, and spoils a recorded count: the states under test.

import numpy as np
import pytest
from payloads import chat

from magi_desktop.core import Memory
from magi_desktop.core.embed import HashingEmbedder, indexing
from magi_desktop.core.store import ann, ann_build, search, tables, vectors

T0 = 1_760_000_000.0
NOW = T0 + 10_000
FACT, CONVERSATION = "fact_authoritative", "conversation_only"
CODES = vectors.SCOPE_CODES
TOPICS = ["air fryer recipes", "moving to Jiaxing", "running every morning", "the bank appointment",
          "a standing desk", "my sister's birthday", "the client demo", "guitar lessons", "the March invoice",
          "tomatoes in the garden", "a trip to Kyoto", "the broken dishwasher", "learning Rust", "a chess club"]


def query(text: str) -> bytes:
    return np.ascontiguousarray(HashingEmbedder().embed([text])[0], dtype=np.float32).tobytes()


def embed(memory: Memory) -> None:
    indexing.embed(memory.db, memory.embedder, ("events",), now=NOW)


def facts(memory: Memory, start: int, n: int) -> None:
    """The user's statements (fact_authoritative), one topic each, once mentioning jazz."""
    memory.ingest_many([chat(f"I told you about {TOPICS[i % len(TOPICS)]} and jazz records, note {i}",
                             at=T0 + i, item=f"f{i}") for i in range(start, start + n)])


def replies(memory: Memory, start: int, n: int) -> None:
    """The assistant's turns (conversation_only), all about jazz records: the nearest chunks of a jazz question."""
    memory.ingest_many([chat(f"Jazz records, jazz records: more jazz records for you ({i})", role="assistant",
                             at=T0 + 1_000 + i, item=f"r{i}") for i in range(start, start + n)])


@pytest.fixture
def scoped(tmp_path, monkeypatch):
    monkeypatch.setattr(ann_build, "MIN_VECTORS", 50)
    monkeypatch.setattr(ann_build, "FOLD_AT", 10_000)       # folds only when a test asks
    monkeypatch.setattr(ann_build, "BUILD_THREADS", 1)       # the same graph every run (test_ann.py says why)
    memory = Memory.open(tmp_path / "m", embedder="hashing")
    facts(memory, 0, 40)
    replies(memory, 0, 160)
    embed(memory)                                      # past MIN_VECTORS: the embedder built the index
    yield memory
    memory.close()


def scope_of_chunks(memory: Memory) -> dict[int, int]:
    """chunk id -> the scope code its event has."""
    return {chunk: CODES[scope] for chunk, scope in memory.db.reader().execute(
        "SELECT c.chunk_id, e.l1_retrieval_scope FROM event_chunks c JOIN fact_events e ON e.id = c.event_rowid")}


def file_keys(memory: Memory) -> dict[int, set[int]]:
    """scope code -> the keys its recorded file holds."""
    from usearch.index import Index

    return {code: set(np.asarray(Index.restore(str(ann.index_path(memory.db.path, file)), view=True).keys).tolist())
            for code, (file, _) in ann.partitions(memory.db.reader()).items()}


def exact(memory: Memory, vector: bytes, k: int, scopes, monkeypatch) -> list[tuple[int, float]]:
    """vec0's exact answer: the search path with the index saying it cannot answer."""
    with monkeypatch.context() as m:
        m.setattr(ann, "nearest_chunks", lambda *args: None)
        return search.nearest_event_chunks(memory.db.reader(), vector, k, scopes, NOW)


def assert_same(got, want, tolerance=2e-3):
    """The same hits at the same distances (within the index's f16 rounding); among equal distances in any order."""
    assert got is not None and len(got) == len(want)
    assert np.allclose([d for _, d in got], [d for _, d in want], atol=tolerance)
    cutoff = want[-1][1] - tolerance          # ties at the k-th distance may be cut either way
    assert {e for e, d in got if d < cutoff} == {e for e, d in want if d < cutoff}


def test_the_partitions_hold_their_scopes_chunks_and_add_up(scoped):
    name, held = vectors.ann_recorded(scoped.db.reader())
    recorded = ann.partitions(scoped.db.reader())
    assert name and set(recorded) == {CODES[FACT], CODES[CONVERSATION]}
    assert held == sum(count for _, count in recorded.values()) == vectors.chunk_vector_count(scoped.db.reader())
    keys, scopes = file_keys(scoped), scope_of_chunks(scoped)
    for code, held_keys in keys.items():
        assert len(held_keys) == recorded[code][1]
        assert held_keys == {chunk for chunk, scope in scopes.items() if scope == code}
    assert len(keys[CODES[CONVERSATION]]) == 160 and len(keys[CODES[FACT]]) == 40


def test_a_fact_question_whose_nearest_chunks_are_conversation_is_answered_from_the_facts_file(scoped, monkeypatch):
    vector = query("jazz records")
    # the premise: the 64 chunks nearest the question, over both scopes, are all the assistant's
    both = exact(scoped, vector, 64, (FACT, CONVERSATION), monkeypatch)
    conversation = {e for e, _ in exact(scoped, vector, 160, (CONVERSATION,), monkeypatch)}
    assert len(both) == 64 and {e for e, _ in both} <= conversation
    # One index over both scopes would have to ask for more than 64 hits before any fact passed its filter; the
    # facts' file answers in its first round, without the exact scan.
    monkeypatch.setattr(ann, "MAX_FETCH", 64)
    rounds = []
    visible = ann._visible
    monkeypatch.setattr(ann, "_visible", lambda *args: rounds.append(1) or visible(*args))
    got = ann.nearest_chunks(scoped.db.reader(), vector, 10, (FACT,), NOW)
    assert got is not None and len(rounds) == 1
    assert not {e for e, _ in got} & conversation
    assert_same(got, exact(scoped, vector, 10, (FACT,), monkeypatch))
    # both scopes: both files searched, their hits merged by distance
    assert_same(ann.nearest_chunks(scoped.db.reader(), vector, 10, (FACT, CONVERSATION), NOW),
                exact(scoped, vector, 10, (FACT, CONVERSATION), monkeypatch))


def test_a_fold_routes_each_new_vector_to_its_scopes_file_and_keeps_the_files_that_did_not_change(scoped,
                                                                                                 monkeypatch):
    before = ann.partitions(scoped.db.reader())
    facts(scoped, 40, 3)
    embed(scoped)
    new = set(scope_of_chunks(scoped)) - set().union(*file_keys(scoped).values())
    assert len(new) == 3                                      # pending, not in a file yet
    vector = query(f"I told you about {TOPICS[40 % len(TOPICS)]} and jazz records, note 40")
    assert_same(ann.nearest_chunks(scoped.db.reader(), vector, 10, (FACT,), NOW),
                exact(scoped, vector, 10, (FACT,), monkeypatch))
    assert ann_build.maintain(scoped.db, fold_at=1) == "folded"
    after = ann.partitions(scoped.db.reader())
    assert after[CODES[CONVERSATION]] == before[CODES[CONVERSATION]]          # the same file, untouched
    assert after[CODES[FACT]][0] != before[CODES[FACT]][0] and after[CODES[FACT]][1] == 43
    assert new <= file_keys(scoped)[CODES[FACT]]
    replies(scoped, 160, 2)
    embed(scoped)
    assert ann_build.maintain(scoped.db, fold_at=1) == "folded"
    assert {code: count for code, (_, count) in ann.partitions(scoped.db.reader()).items()} == {
        CODES[FACT]: 43, CODES[CONVERSATION]: 162}
    assert sorted(p.name for p in scoped.db.path.parent.glob("*.usearch*")) == sorted(
        file for file, _ in ann.partitions(scoped.db.reader()).values())      # the replaced files are gone
    assert_same(ann.nearest_chunks(scoped.db.reader(), vector, 10, (FACT,), NOW),
                exact(scoped, vector, 10, (FACT,), monkeypatch))


def test_a_chunk_id_reused_by_another_scopes_event_moves_partition(scoped):
    scopes = scope_of_chunks(scoped)
    last = max(scopes)
    name = vectors.ann_recorded(scoped.db.reader())[0]
    assert scopes[last] == CODES[CONVERSATION]
    with scoped.db.transaction() as w:           # the newest reply's rows go: its chunk id is free again
        w.execute("DELETE FROM fact_events WHERE id = (SELECT event_rowid FROM event_chunks WHERE chunk_id = ?)",
                  (last,))
    facts(scoped, 40, 1)
    embed(scoped)                # its maintain folds: the file holds more keys than there are chunks
    assert scope_of_chunks(scoped)[last] == CODES[FACT]       # the id, now a fact's chunk
    assert vectors.ann_recorded(scoped.db.reader())[0] != name
    assert tables.row_count(scoped.db.reader(), vectors.PENDING_TABLE) == 0
    keys = file_keys(scoped)
    assert last in keys[CODES[FACT]] and last not in keys[CODES[CONVERSATION]]
    assert len(keys[CODES[CONVERSATION]]) == 159 and len(keys[CODES[FACT]]) == 41


def test_a_forgotten_chunk_leaves_its_scopes_file_and_only_that_one(scoped):
    scopes = scope_of_chunks(scoped)
    before = ann.partitions(scoped.db.reader())
    with scoped.db.transaction() as w:           # the rows go, as forget's first step does, before any scrub
        w.execute("DELETE FROM fact_events WHERE id = (SELECT event_rowid FROM event_chunks WHERE chunk_id = ?)",
                  (min(c for c, code in scopes.items() if code == CODES[CONVERSATION]),))
    assert ann_build.maintain(scoped.db, fold_at=0) == "folded"           # deleted keys: the file is written again
    after = ann.partitions(scoped.db.reader())
    assert after[CODES[FACT]] == before[CODES[FACT]] and after[CODES[CONVERSATION]][1] == 159
    scoped.forget(source_item_ids=["f7"])        # the whole forget: its scrub builds every file from vec0
    keys, scopes = file_keys(scoped), scope_of_chunks(scoped)
    assert {code: len(held) for code, held in keys.items()} == {CODES[FACT]: 39, CODES[CONVERSATION]: 159}
    for code, held in keys.items():
        assert held == {chunk for chunk, scope in scopes.items() if scope == code}


@pytest.mark.parametrize("damage", ["missing", "count"])
def test_a_missing_partition_file_or_a_wrong_count_is_rebuilt(scoped, monkeypatch, damage):
    name = vectors.ann_recorded(scoped.db.reader())[0]
    file = ann.partitions(scoped.db.reader())[CODES[CONVERSATION]][0]
    ann.release(scoped.db.path)
    vector = query("jazz records")
    if damage == "missing":
        ann.index_path(scoped.db.path, file).unlink()
        assert ann.nearest_chunks(scoped.db.reader(), vector, 10, (FACT, CONVERSATION), NOW) is None   # exact scan
        assert ann.nearest_chunks(scoped.db.reader(), vector, 10, (FACT,), NOW) is not None   # its file is fine
    else:
        with scoped.db.transaction() as w:
            w.execute("UPDATE ann_partitions SET vectors = vectors + 1 WHERE file = ?", (file,))
    assert ann_build.maintain(scoped.db) == "built"
    rebuilt = ann.partitions(scoped.db.reader())
    assert vectors.ann_recorded(scoped.db.reader())[0] != name
    assert {code: count for code, (_, count) in rebuilt.items()} == {CODES[FACT]: 40, CODES[CONVERSATION]: 160}
    assert all(ann.index_path(scoped.db.path, f).exists() for f, _ in rebuilt.values())
    assert ann_build.maintain(scoped.db) == ""                      # intact now
    assert_same(ann.nearest_chunks(scoped.db.reader(), vector, 10, (FACT, CONVERSATION), NOW),
                exact(scoped, vector, 10, (FACT, CONVERSATION), monkeypatch))
