"""The summaries' vectors (store/vectors.py layout 4): partitioned by the month a summary's window ends in, with
the window's bounds, so L3's vector ranking reads the months a question reaches back to, and still answers the
k nearest of the summaries overlapping its window however many nearer ones lie outside it."""
# Raw SQL reads the vec0 table as it is on disk (its partitions) and builds it as layout 3 made it.

from datetime import datetime, timezone

import numpy as np
import pytest
from payloads import sensor

from magi_desktop.core import Memory
from magi_desktop.core.embed.hashing import HashingEmbedder
from magi_desktop.core.store import search, tiers, vectors
from magi_desktop.core.store.summaries import SummaryFilter, recall_filter, stored_summaries

DAY = 86400.0
START = datetime(2025, 1, 6, tzinfo=timezone.utc).timestamp()       # a Monday
NOW = datetime(2025, 6, 20, tzinfo=timezone.utc).timestamp()
TOPICS = ["sourdough", "kayak", "violin", "orchids", "chess"]


@pytest.fixture
def months(tmp_path):
    """Five months of daily commits, each month about its own topic, summarised (days, weeks, months) and
    embedded as a late back-fill would be."""
    memory = Memory.open(tmp_path / "data", embedder="hashing")
    memory.ingest_many([sensor("git_commit", {"repo": TOPICS[int(i // 30)], "message": f"{TOPICS[int(i // 30)]} "
                                              f"notes, day {i}"}, source="git", at=START + i * DAY + 36_000,
                               item=f"c{i}") for i in range(150)])
    memory.process_pending()
    memory.run_due(now=NOW, jobs=["l3:day", "l3:week", "l3:month"])
    memory.process_pending(queues=("embedding",))
    yield memory
    memory.close()


def _vector(text: str) -> bytes:
    return np.ascontiguousarray(HashingEmbedder().embed([text])[0], dtype=np.float32).tobytes()


def _exact(conn, vector: bytes, where: SummaryFilter) -> list[int]:
    """Every summary passing ``where``, nearest first: the whole table's KNN, filtered after."""
    return search.nearest_summaries(conn, vector, 4096, SummaryFilter(where.clause, where.args))


def test_summary_vectors_sit_in_the_month_their_window_ends_in(months):
    conn = months.db.reader()
    ends = {s.summary_id: s.window_end for s in stored_summaries(conn)}
    stored = vectors.summary_vector_months(conn)
    assert stored.keys() == ends.keys() and len(ends) > 150
    assert stored == {sid: tiers.month_of(end) for sid, end in ends.items()}
    assert len(set(stored.values())) >= 5


def test_a_window_gets_the_k_nearest_of_its_own_summaries_however_many_nearer_lie_outside(months):
    conn = months.db.reader()
    march = (datetime(2025, 3, 3, tzinfo=timezone.utc).timestamp(), datetime(2025, 3, 17, tzinfo=timezone.utc)
             .timestamp())
    where = recall_filter(NOW, *march, None)
    vector = _vector("sourdough notes")         # January's topic: the nearest summaries of all are January's
    everything = _exact(conn, vector, SummaryFilter("1", []))
    assert everything[:20] and all(sid not in set(_exact(conn, vector, where)) for sid in everything[:20])
    found = search.nearest_summaries(conn, vector, 5, where)
    assert found == _exact(conn, vector, where)[:5] and len(found) == 5
    # every summary overlapping the window, those stored in a later month's partition too (March's month summary
    # ends on 1 April): the partitions read run to the month of "now", not of the window's end
    every = search.nearest_summaries(conn, vector, 4096, where)
    assert every == _exact(conn, vector, where)
    ends = {s.summary_id: s.window_end for s in stored_summaries(conn)}
    assert any(tiers.month_of(ends[sid]) > tiers.month_of(march[1]) for sid in every)


def test_the_vector_path_finds_an_old_windows_summary_by_meaning(months):
    pack = months.query("a recap of the violin notes in March 2025", now=NOW, mode="summary")
    assert any("l3_vector" in f.paths and "violin" in f.text for f in pack.findings if f.layer == "L3")


def test_a_summary_table_made_before_its_partitions_is_rebuilt_from_itself(months):
    conn = months.db.reader()
    rows = conn.execute("SELECT rowid, embedding FROM summary_vectors ORDER BY rowid").fetchall()
    vector = _vector("kayak notes")
    where = recall_filter(NOW, START, NOW, None)
    before = search.nearest_summaries(conn, vector, 8, where)
    with months.db.transaction() as w:                    # the table and trigger as layout 3 made them
        w.execute("DROP TABLE summary_vectors")
        w.execute("DROP TRIGGER l3_summaries_vec_update")
        w.execute(f"CREATE VIRTUAL TABLE summary_vectors USING vec0(embedding float[{months.embedder.dimension}] "
                  "distance_metric=cosine)")
        w.executemany("INSERT INTO summary_vectors (rowid, embedding) VALUES (?, ?)", rows)
        w.execute("CREATE TRIGGER l3_summaries_vec_update AFTER UPDATE OF content ON l3_summaries BEGIN "
                  "DELETE FROM summary_vectors WHERE rowid = old.summary_id; END")
        w.execute("UPDATE vector_index SET layout = 3")
    path = months.path
    months.close()
    reopened = Memory.open(path.parent, embedder="hashing")
    try:
        conn = reopened.db.reader()
        assert vectors.layout(conn) == vectors.LAYOUT
        assert conn.execute("SELECT rowid, embedding FROM summary_vectors ORDER BY rowid").fetchall() == rows
        assert search.nearest_summaries(conn, vector, 8, where) == before
        # the trigger is the new one: a summary whose window moves loses its vector (it is embedded again)
        sid = before[0]
        with reopened.db.transaction() as w:
            w.execute("UPDATE l3_summaries SET window_end = window_end + 1 WHERE summary_id = ?", (sid,))
        assert sid not in vectors.summary_vector_months(conn)
    finally:
        reopened.close()
