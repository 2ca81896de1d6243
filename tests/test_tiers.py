"""Hot and cold tiers (issue 20): what goes cold, what stays hot, and that cold rows stay whole and forgettable."""
# Raw SQL reads which full-text and vector index holds a row, and a vector's bytes to look for them in the index
# file: no API says where a row's index terms or vector bytes live; it reads the cold chunks' month partitions, and
# builds the cold chunk table as a memory before its partitions (vector layout 2) holds it.

from datetime import datetime

import pytest
from payloads import chat, sensor

from magi_desktop.core.errors import InvalidInput
from magi_desktop.core.store import tiers
from magi_desktop.core.store.search import match_count

HOUR, DAY = 3600.0, 86400.0
OLD = datetime(2025, 3, 4, 9).timestamp()         # a Tuesday morning, local time
NOW = OLD + 400 * DAY


def visit(i, at, title="Sourdough starter guide"):
    return sensor("visit_page", {"url": f"https://bread.example/p{i}", "title": f"{title} {i}",
                                 "domain": "bread.example"}, source="chrome", at=at, item=f"v{i}")


def tier_of(memory, text):
    return memory.db.reader().execute("SELECT tier FROM fact_events WHERE content LIKE ?", (f"%{text}%",)).fetchone()[0]


def index_holding(memory, rowid):
    conn = memory.db.reader()
    fts = [t for t in ("fact_events_fts", "fact_events_cold_fts")
           if conn.execute(f"SELECT count(*) FROM {t} WHERE rowid = ?", (rowid,)).fetchone()[0]]
    chunks = [c for (c,) in conn.execute("SELECT chunk_id FROM event_chunks WHERE event_rowid = ?", (rowid,))]
    vec = [t for t in ("chunk_vectors", "chunk_vectors_cold") for c in chunks
           if conn.execute(f"SELECT count(*) FROM {t} WHERE rowid = ?", (c,)).fetchone()[0]]
    return fts, vec


def rowid_of(memory, text):
    return memory.db.reader().execute("SELECT id FROM fact_events WHERE content LIKE ?", (f"%{text}%",)).fetchone()[0]


@pytest.fixture
def aged(memory):
    """A day of visits and a chat 400 days before NOW, and a visit of yesterday; summarised. The visits are not
    folded into an activity block, so each counts here (a block goes cold as any event: the last test)."""
    memory.set_aggregation("browser", False)
    memory.ingest_many([visit(i, OLD + i * 60) for i in range(20)]
                       + [chat("I bake bread every Sunday.", at=OLD + HOUR, session="old", item="c1"),
                          chat("A rye starter needs a week.", role="assistant", at=OLD + HOUR + 5, session="old",
                               item="c2"),
                          visit(99, NOW - DAY, title="Croissant lamination")])
    memory.process_pending()
    memory.run_due(now=OLD + 2 * DAY, jobs=["maintenance", "l3:hour", "l3:day"])     # lived through: summarised
    return memory


def test_old_summarised_sensor_events_and_assistant_turns_go_cold_and_the_users_words_stay(aged):
    report = aged.run_due(now=NOW, jobs=["tiers"]).tiers
    # 16 of the visits and the assistant's turn; the visits' edge ("the user VISITED bread.example") keeps its
    # newest evidence hot: the young visit and the four latest old ones.
    assert report["moved_cold"] == 17 and report["kept_hot"] == 1
    assert tier_of(aged, "Sourdough starter guide 3") == tiers.COLD
    assert tier_of(aged, "Sourdough starter guide 19") == tiers.HOT
    assert tier_of(aged, "rye starter") == tiers.COLD
    assert tier_of(aged, "bake bread") == tiers.KEPT_HOT
    assert tier_of(aged, "Croissant") == tiers.HOT                  # young
    cold_row = rowid_of(aged, "Sourdough starter guide 3")
    assert index_holding(aged, cold_row) == (["fact_events_cold_fts"], ["chunk_vectors_cold"])
    conn = aged.db.reader()
    assert match_count(conn, "fact_events_cold_fts", "sourdough") == 16
    assert match_count(conn, "fact_events_fts", "sourdough") == 4
    assert match_count(conn, "fact_events_fts", "bake") == 1
    assert tiers.sizes(conn) == {"hot": 6, "cold": 17, "kept_hot": 1}
    again = aged.run_due(now=NOW, jobs=["tiers"]).tiers                # idempotent
    assert again["moved_cold"] == 0


def test_nothing_goes_cold_before_a_summary_covers_it(memory):
    memory.set_aggregation("browser", False)
    memory.ingest_many([visit(i, OLD + i * 60) for i in range(8)])
    memory.process_pending()
    assert memory.run_due(now=NOW, jobs=["tiers"]).tiers["moved_cold"] == 0
    # L3 summarises the days of events it had not seen, however old (a back-fill of last year's history).
    memory.run_due(now=NOW, jobs=["l3:hour", "l3:day", "l3:week", "l3:month"])
    assert memory.run_due(now=NOW, jobs=["tiers"]).tiers["moved_cold"] == 3     # the newest five: the edge's


def test_the_age_is_a_setting_and_zero_turns_tiering_off(aged):
    aged.run_due(now=NOW, jobs=["tiers"])
    aged.set_cold_after_days(0)                  # what was cold comes back
    assert tiers.sizes(aged.db.reader())["cold"] == 0
    assert aged.stats().events["tiers"] == {"hot": 23, "cold": 0, "kept_hot": 1, "cold_after_days": 0.0}
    assert aged.run_due(now=NOW, jobs=["tiers"]).tiers == {"examined": 0, "moved_cold": 0, "kept_hot": 0,
                                                            "warmed": 0, "cutoff": None}
    aged.set_cold_after_days(500)
    assert aged.run_due(now=NOW, jobs=["tiers"]).tiers["moved_cold"] == 0          # 400 days is not old enough
    for bad in (-1, "90", True, None):
        with pytest.raises(InvalidInput, match="cold_after_days"):
            aged.set_cold_after_days(bad)


def test_a_cold_event_is_forgotten_from_the_cold_indexes(aged):
    aged.run_due(now=NOW, jobs=["tiers"])
    conn = aged.db.reader()
    before = conn.execute("SELECT count(*) FROM chunk_vectors_cold").fetchone()[0]
    aged.forget(source="chrome", end=OLD + 10 * 60 + 1)         # visits 0 to 10, all cold
    assert match_count(conn, "fact_events_cold_fts", "sourdough") == 5
    assert conn.execute("SELECT count(*) FROM chunk_vectors_cold").fetchone()[0] == before - 11


def test_reindex_keeps_each_event_in_its_own_tiers_index(aged):
    aged.run_due(now=NOW, jobs=["tiers"])
    aged.reindex()
    conn = aged.db.reader()
    assert match_count(conn, "fact_events_fts", "sourdough") == 4
    assert match_count(conn, "fact_events_cold_fts", "sourdough") == 16
    assert match_count(conn, "fact_events_fts", "croissant") == 1


def test_a_run_looks_at_a_bounded_number_of_rows_and_goes_on_where_it_stopped(aged, monkeypatch):
    monkeypatch.setattr(tiers, "SCAN_LIMIT", 8)
    moved = [aged.run_due(now=NOW, jobs=["tiers"]).tiers for _ in range(4)]
    assert [m["examined"] for m in moved] == [8, 8, 6, 4]        # from the start again: the edge's four
    assert sum(m["moved_cold"] for m in moved) == 17


def test_warm_all_brings_every_cold_event_back(aged):
    aged.run_due(now=NOW, jobs=["tiers"])
    assert tiers.warm_all(aged.db) == 17
    conn = aged.db.reader()
    assert match_count(conn, "fact_events_fts", "sourdough") == 20
    assert match_count(conn, "fact_events_cold_fts", "sourdough") == 0
    assert index_holding(aged, rowid_of(aged, "Sourdough starter guide 3")) == (["fact_events_fts"], ["chunk_vectors"])


def test_a_belief_whose_newest_evidence_was_forgotten_brings_its_next_evidence_back(aged):
    aged.run_due(now=NOW, jobs=["tiers"])
    aged.forget(source="chrome", start=OLD + 16 * 60)          # the young visit and the four old ones kept hot
    assert aged.run_due(now=NOW, jobs=["tiers"]).tiers["warmed"] == 5
    assert match_count(aged.db.reader(), "fact_events_fts", "sourdough") == 5
    assert tier_of(aged, "Sourdough starter guide 11") == tiers.HOT
    assert tier_of(aged, "Sourdough starter guide 10") == tiers.COLD


def test_export_carries_cold_events_and_the_setting_and_an_import_starts_hot(aged, tmp_path):
    from magi_desktop.core import Memory

    aged.set_cold_after_days(300)
    aged.run_due(now=NOW, jobs=["tiers"])
    aged.export_jsonl(tmp_path / "out.jsonl")
    other = Memory.open(tmp_path / "other", embedder="hashing")
    try:
        other.import_jsonl(tmp_path / "out.jsonl")
        conn = other.db.reader()
        assert other.stats().events["tiers"]["cold_after_days"] == 300.0
        # every event, and the visits' activity block the import folds again (the rule is on there)
        assert conn.execute("SELECT count(*) FROM fact_events").fetchone()[0] == 24
        assert match_count(conn, "fact_events_fts", "sourdough") == 21       # all hot (and the block) until tiered
        assert match_count(conn, "fact_events_cold_fts", "sourdough") == 0
    finally:
        other.close()


def test_an_event_embedded_after_it_went_cold_has_its_vectors_in_the_cold_table(memory):
    memory.set_aggregation("browser", False)
    memory.ingest_many([visit(i, OLD + i * 60) for i in range(8)])
    memory.process_pending(queues=("l2",))
    memory.run_due(now=OLD + 2 * DAY, jobs=["l3:hour", "l3:day"])
    assert memory.run_due(now=NOW, jobs=["tiers"]).tiers["moved_cold"] == 3
    memory.process_pending(queues=("embedding",))
    cold = rowid_of(memory, "Sourdough starter guide 0")
    assert index_holding(memory, cold) == (["fact_events_cold_fts"], ["chunk_vectors_cold"])
    assert index_holding(memory, rowid_of(memory, "Sourdough starter guide 7")) == (["fact_events_fts"],
                                                                                   ["chunk_vectors"])


def test_default_recall_leaves_the_cold_tier_out_and_reaches_it_when_the_question_does(aged):
    aged.run_due(now=NOW, jobs=["tiers"])

    def cold_found(pack):
        ids = [f.event_id for f in pack.findings if f.layer == "L1"]
        return aged.db.reader().execute(f"SELECT count(*) FROM fact_events WHERE tier = 1 AND event_id IN "
                                        f"({', '.join('?' * len(ids))})", ids).fetchone()[0]

    hot = aged.query("When do I bake bread?", now=NOW)
    assert hot.status == "ok" and hot.trace.get("cold") is None       # a hot answer: the cold index is not read
    assert "I bake bread every Sunday." in hot.findings[0].text
    assert cold_found(hot) == 0
    everything = aged.query("sourdough starter guide", now=NOW, search_all=True)
    assert everything.trace["cold"] == "searched: asked to search everything"
    assert cold_found(everything) >= 5
    old = aged.query("Which sourdough pages did I read in March last year?", now=NOW)
    assert old.trace["cold"] == "searched: the window is old"
    assert cold_found(old) >= 5
    aged.forget(source="chrome", start=OLD + 16 * 60)        # the hot visits: now only cold ones say "sourdough"
    missing = aged.query("Which sourdough starter guides did I read?", now=NOW)
    assert missing.trace["cold"] == "searched by words: nothing hot answered"
    assert missing.status == "ok" and cold_found(missing) >= 5


def test_a_chunk_gone_cold_leaves_the_approximate_index_and_comes_back_with_its_event(aged, monkeypatch):
    import numpy as np

    from magi_desktop.core.embed import HashingEmbedder
    from magi_desktop.core.store import ann, ann_build, search

    monkeypatch.setattr(ann_build, "MIN_VECTORS", 5)
    assert ann_build.maintain(aged.db) == "built"
    vector = np.ascontiguousarray(HashingEmbedder().embed(["sourdough starter guide"])[0], dtype=np.float32).tobytes()
    scopes = ("fact_authoritative", "conversation_only")

    def nearest():
        conn = aged.db.reader()
        assert ann.nearest_chunks(conn, vector, 10, scopes, NOW) is not None        # the index answers
        return {r for r, _ in search.nearest_event_chunks(conn, vector, 10, scopes, NOW)}

    assert rowid_of(aged, "Sourdough starter guide 3") in nearest()
    aged.run_due(now=NOW, jobs=["tiers"])          # moves, then writes the index file again without them
    cold = tiers.is_cold(aged.db.reader(), list(range(1, 30)))
    assert cold and not nearest() & cold
    name, held = aged.db.reader().execute("SELECT ann_file, ann_vectors FROM vector_index").fetchone()
    assert held == aged.db.reader().execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] == 6
    aged.set_cold_after_days(0)                    # back: pending for the index until its next file
    assert rowid_of(aged, "Sourdough starter guide 3") in nearest()


@pytest.mark.parametrize("share, rebuilt", [(0.1, True), (1.0, False)])
def test_a_fold_that_would_take_most_of_a_file_out_builds_it_from_vec0(aged, monkeypatch, share, rebuilt):
    """usearch's graph does not mend after losing most of its nodes (at 1M events, the first tiering run left the
    fact file answering some questions with one hit): past REBUILD_SHARE of a partition the fold builds instead."""
    from magi_desktop.core.store import ann, ann_build

    monkeypatch.setattr(ann_build, "MIN_VECTORS", 5)
    monkeypatch.setattr(ann_build, "REBUILD_SHARE", share)
    assert ann_build.maintain(aged.db) == "built"
    builds = []
    real_build = ann_build.build
    monkeypatch.setattr(ann_build, "build", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    before = sum(held for _, held in ann.partitions(aged.db.reader()).values())
    aged.run_due(now=NOW, jobs=["tiers"])          # 17 of 23 vectors go cold
    after = sum(held for _, held in ann.partitions(aged.db.reader()).values())
    assert (before, after) == (23, 6) and bool(builds) is rebuilt


def test_an_activity_block_goes_cold_with_its_members_and_its_forgetting_still_reaches_both(memory):
    memory.ingest_many([visit(i, OLD + i * 60) for i in range(12)])
    memory.process_pending()
    memory.run_due(now=OLD + 2 * DAY, jobs=["l3:hour", "l3:day"])
    memory.run_due(now=NOW, jobs=["tiers"])
    block = rowid_of(memory, "Browsed bread.example")
    assert tier_of(memory, "Browsed bread.example") == tiers.COLD          # not a belief's evidence: l1_only
    assert index_holding(memory, block)[0] == ["fact_events_cold_fts"]
    memory.forget(source="chrome")
    conn = memory.db.reader()
    assert conn.execute("SELECT count(*) FROM fact_events").fetchone()[0] == 0
    assert match_count(conn, "fact_events_cold_fts", "sourdough") == 0


def test_forgetting_a_turn_reindexes_the_next_one_in_its_own_tier_when_tiers_alternate(aged):
    """User turn, cold assistant turn, user turn: forgetting the first must not lose the third's terms."""
    aged.ingest_many([chat("Walrus facts please.", at=OLD + 3 * HOUR, session="z", item="z1"),
                      chat("Walruses weigh a ton.", role="assistant", at=OLD + 3 * HOUR + 5, session="z", item="z2"),
                      chat("I want to see walruses in Svalbard.", at=OLD + 3 * HOUR + 10, session="z", item="z3")])
    aged.process_pending()
    aged.run_due(now=OLD + 3 * DAY, jobs=["l3:hour", "l3:day"])
    aged.run_due(now=NOW, jobs=["tiers"])
    assert tier_of(aged, "Walruses weigh") == tiers.COLD and tier_of(aged, "Svalbard") == tiers.KEPT_HOT
    aged.forget(source_item_ids=["z1"])
    conn = aged.db.reader()
    assert match_count(conn, "fact_events_fts", "svalbard") == 1
    assert match_count(conn, "fact_events_cold_fts", "ton") == 1
    assert match_count(conn, "fact_events_fts", "ton") == 0


def test_a_forgotten_cold_event_leaves_no_vector_bytes_in_the_approximate_index_file(aged, monkeypatch):
    import numpy as np

    from magi_desktop.core.store import ann, ann_build

    monkeypatch.setattr(ann_build, "MIN_VECTORS", 5)
    assert ann_build.maintain(aged.db) == "built"
    target = rowid_of(aged, "Sourdough starter guide 3")
    conn = aged.db.reader()
    chunk = conn.execute("SELECT chunk_id FROM event_chunks WHERE event_rowid = ?", (target,)).fetchone()[0]
    vector = np.frombuffer(conn.execute("SELECT embedding FROM chunk_vectors WHERE rowid = ?", (chunk,)).fetchone()[0],
                           dtype=np.float32)
    aged.run_due(now=NOW, jobs=["tiers"])          # gone cold: removed from the file by a fold, bytes maybe kept
    aged.forget(event_ids=[conn.execute("SELECT event_id FROM fact_events WHERE id = ?", (target,)).fetchone()[0]])
    data = b"".join((aged.path.parent / file).read_bytes() for file, _ in ann.partitions(aged.db.reader()).values())
    assert data and vector.astype(np.float16).tobytes() not in data and vector.tobytes() not in data


def test_raising_the_age_brings_the_cold_back_and_the_next_run_sends_back_what_is_still_old_enough(aged):
    aged.run_due(now=NOW, jobs=["tiers"])
    assert tiers.sizes(aged.db.reader())["cold"] == 17
    aged.set_cold_after_days(365)
    assert tiers.sizes(aged.db.reader())["cold"] == 0
    assert aged.run_due(now=NOW, jobs=["tiers"]).tiers["moved_cold"] == 17        # 400 days: old enough still
    aged.set_cold_after_days(100)                # lowered: nothing to bring back
    assert tiers.sizes(aged.db.reader())["cold"] == 17


def test_a_question_nothing_hot_answers_adds_the_cold_words_to_its_hot_recall(aged, monkeypatch):
    from magi_desktop.core.store import search

    aged.run_due(now=NOW, jobs=["tiers"])
    aged.forget(source="chrome", start=OLD + 16 * 60)        # the hot visits: now only cold ones say "sourdough"
    question = "Which sourdough starter guides did I read?"
    # What the retry found when it asked the whole question again with the cold tier searched by its words:
    # everything searched, the cold chunk vectors left out.
    with monkeypatch.context() as words_only:
        words_only.setattr(search, "nearest_cold_event_chunks", lambda *args: [])
        again = aged.query(question, now=NOW, search_all=True)
    calls = []

    def counted(name):
        real = getattr(search, name)

        def call(*args, **kwargs):
            calls.append((name, kwargs.get("index", "fact_events_fts")))
            return real(*args, **kwargs)
        return call

    for name in ("events_matching", "nearest_event_chunks", "nearest_cold_event_chunks", "events_containing"):
        monkeypatch.setattr(search, name, counted(name))
    retried = aged.query(question, now=NOW)
    assert retried.trace["cold"] == "searched by words: nothing hot answered"
    assert [(f.event_id, f.paths) for f in retried.findings] == [(f.event_id, f.paths) for f in again.findings]
    assert retried.status == again.status == "ok"
    # each hot path once; the cold tier by its words only
    assert sorted(calls) == [("events_matching", "fact_events_cold_fts"), ("events_matching", "fact_events_fts"),
                             ("nearest_event_chunks", "fact_events_fts")]
    assert {"bm25", "vector", "bm25_cold"} <= retried.trace["paths"].keys()


@pytest.fixture
def months(memory):
    """Six visits in each of January, March and May 2025, summarised by month and tiered: the edge keeps May's
    newest five hot, the others go cold."""
    memory.set_aggregation("browser", False)
    starts = [datetime(2025, month, 10, 9).timestamp() for month in (1, 3, 5)]
    memory.ingest_many([visit(m * 10 + i, start + i * 60) for m, start in enumerate(starts) for i in range(6)])
    memory.process_pending()
    memory.run_due(now=NOW, jobs=["l3:hour", "l3:day", "l3:week", "l3:month"])
    assert memory.run_due(now=NOW, jobs=["tiers"]).tiers["moved_cold"] == 13
    return memory


def happened(memory, rowids):
    from magi_desktop.core.store import l1

    return {row[0]: datetime.fromtimestamp(row[2]).month for row in l1.candidate_rows(memory.db.reader(), rowids)}


def test_an_old_windows_cold_vectors_are_read_from_its_months_and_the_events_mentioning_it(months):
    import numpy as np

    from magi_desktop.core.embed import HashingEmbedder
    from magi_desktop.core.store import l1, mentions, search

    conn = months.db.reader()
    vector = np.ascontiguousarray(HashingEmbedder().embed(["sourdough starter guide"])[0], dtype=np.float32).tobytes()
    scopes = ("fact_authoritative", "conversation_only")
    everything = [r for r, _ in search.nearest_cold_event_chunks(conn, vector, 50, scopes, NOW)]
    assert sorted(happened(months, everything).values()) == [1] * 6 + [3] * 6 + [5]
    # each chunk is in the partition of the month its event happened in
    stored = conn.execute("SELECT event_rowid, month FROM chunk_vectors_cold").fetchall()
    times = {row[0]: row[2] for row in l1.candidate_rows(conn, [rowid for rowid, _ in stored])}
    assert len(stored) == 13 and all(month == tiers.month_of(times[rowid]) for rowid, month in stored)
    march = (datetime(2025, 3, 1).timestamp(), datetime(2025, 4, 1).timestamp())
    found = search.nearest_cold_event_chunks(conn, vector, 50, scopes, NOW, march)
    assert set(happened(months, [r for r, _ in found]).values()) == {3} and len(found) == 6
    # the same distances as the whole table's scan gives them, in the same order
    assert found == [row for row in search.nearest_cold_event_chunks(conn, vector, 50, scopes, NOW)
                     if row[0] in {r for r, _ in found}]
    january = min(r for r, month in happened(months, everything).items() if month == 1)
    with months.db.writer() as w:                   # a January visit that says a time in March
        mentions.add_mentioned_times(w, [(january, march[0] + 86400, march[0] + 2 * 86400)])
    found = [r for r, _ in search.nearest_cold_event_chunks(conn, vector, 50, scopes, NOW, march)]
    assert january in found and sorted(happened(months, found).values()) == [1] * 6 + [3] * 6


def test_an_old_window_with_no_cold_event_in_it_reads_every_cold_vector_and_k_bounds_the_months(months):
    import numpy as np

    from magi_desktop.core.embed import HashingEmbedder
    from magi_desktop.core.store import search

    conn = months.db.reader()
    vector = np.ascontiguousarray(HashingEmbedder().embed(["sourdough starter guide"])[0], dtype=np.float32).tobytes()
    scopes = ("fact_authoritative", "conversation_only")
    everything = search.nearest_cold_event_chunks(conn, vector, 50, scopes, NOW)
    # February holds none: the engine then keeps what lies outside the window (it may describe that time)
    february = (datetime(2025, 2, 1).timestamp(), datetime(2025, 3, 1).timestamp())
    assert search.nearest_cold_event_chunks(conn, vector, 50, scopes, NOW, february) == everything
    # January to May spans five partitions; sqlite-vec answers k per partition, the nearest k of all are kept
    spring = (datetime(2025, 1, 1).timestamp(), datetime(2025, 6, 1).timestamp())
    assert search.nearest_cold_event_chunks(conn, vector, 4, scopes, NOW, spring) == everything[:4]


def test_a_cold_chunk_table_made_before_its_partitions_is_rebuilt_from_itself(months):
    from magi_desktop.core import Memory
    from magi_desktop.core.store import vectors

    conn = months.db.reader()
    columns = "rowid, embedding, scope_code, occurred_at, event_rowid"
    rows = conn.execute(f"SELECT {columns} FROM chunk_vectors_cold ORDER BY rowid").fetchall()
    with months.db.transaction() as w:              # the table as layout 2 made it
        w.execute("DROP TABLE chunk_vectors_cold")
        w.execute(f"CREATE VIRTUAL TABLE chunk_vectors_cold USING vec0(embedding float[{months.embedder.dimension}] "
                  "distance_metric=cosine, scope_code integer, occurred_at float, +event_rowid integer)")
        w.executemany(f"INSERT INTO chunk_vectors_cold ({columns}) VALUES (?, ?, ?, ?, ?)", rows)
        w.execute("UPDATE vector_index SET layout = 2")
    # Until the memory opens again (its model missing, say), events still move in and out of the old table.
    months.set_cold_after_days(0)
    assert tiers.sizes(conn)["cold"] == 0
    months.set_cold_after_days(tiers.DEFAULT_COLD_AFTER_DAYS)
    assert months.run_due(now=NOW, jobs=["tiers"]).tiers["moved_cold"] == 13
    path = months.path
    months.close()
    reopened = Memory.open(path.parent, embedder="hashing")
    try:
        conn = reopened.db.reader()
        assert vectors.layout(conn) == vectors.LAYOUT
        assert conn.execute(f"SELECT {columns} FROM chunk_vectors_cold ORDER BY rowid").fetchall() == rows
        assert sorted(m for (m,) in conn.execute("SELECT DISTINCT month FROM chunk_vectors_cold")) == [
            tiers.month_of(datetime(2025, month, 10, 9).timestamp()) for month in (1, 3, 5)]
        reopened.forget(source="chrome", end=datetime(2025, 2, 1).timestamp())     # the trigger is back
        assert conn.execute("SELECT count(*) FROM chunk_vectors_cold").fetchone()[0] == len(rows) - 6
    finally:
        reopened.close()
