"""The query paths' bounds (issue 20, item 2): a common word is read in its newest matches only, a rare one in
all of them; the keyword fallback reads the newest events; counts and mentions read what they need. The caps are
lowered here so a few dozen real events cross them; below a cap the exact ranking is kept."""
# Raw SQL computes the exact, unbounded BM25 ranking the bounded one is compared with, and reads rowids and record
# times no reader exposes.

import pytest
from payloads import chat, sensor

from magi_desktop.core.store import l1, mentions, search

AT = 1_700_000_000.0
SCOPES = ("conversation_only", "fact_authoritative")


def _visible(now):
    return l1.visible_filter(SCOPES, now)


def _ids_by_text(memory):
    return dict(memory.db.reader().execute("SELECT content, id FROM fact_events").fetchall())


@pytest.fixture
def history(memory):
    """An old turn with a rare word, then 30 turns that all say 'coffee', oldest first."""
    turns = [chat("the old zeppelin ticket and coffee", session="a", at=AT)]
    turns += [chat(f"coffee again number {i}", session="b", at=AT + 100 + i) for i in range(30)]
    memory.ingest_many(turns)
    return memory


def test_exact_bm25_below_the_cap(history):
    conn = history.db.reader()
    exact = [r[0] for r in conn.execute(
        "SELECT e.id FROM fact_events_fts JOIN fact_events e ON e.id = fact_events_fts.rowid "
        "WHERE fact_events_fts MATCH '\"zeppelin\" OR \"coffee\"' ORDER BY bm25(fact_events_fts, 1.0, 0.5) LIMIT 50")]
    assert search.events_matching(conn, ["zeppelin", "coffee"], _visible(AT + 1000), None, 0.5, 50) == exact


def test_a_common_word_is_read_in_its_newest_matches_a_rare_one_in_all(history, monkeypatch):
    monkeypatch.setattr(search, "MATCH_CAP", 10)
    monkeypatch.setattr(search, "COMMON_SCAN", 10)
    conn = history.db.reader()
    ids = _ids_by_text(history)
    found = search.events_matching(conn, ["zeppelin", "coffee"], _visible(AT + 1000), None, 0.5, 50)
    # the rare word's only match leads, however old; the common word brings its 10 newest matches only
    assert found[0] == ids["the old zeppelin ticket and coffee"]
    assert set(found[1:]) == {ids[f"coffee again number {i}"] for i in range(20, 30)}
    # newest first among the common word's matches, all scored alike
    assert found[1:] == sorted(found[1:], reverse=True)
    # alone, the common word finds its newest matches only
    assert len(search.events_matching(conn, ["coffee"], _visible(AT + 1000), None, 0.5, 50)) == 10


def test_a_common_word_in_a_window_is_read_from_the_window(history, monkeypatch):
    monkeypatch.setattr(search, "MATCH_CAP", 5)
    monkeypatch.setattr(search, "COMMON_SCAN", 5)
    conn = history.db.reader()
    ids = _ids_by_text(history)
    window = (AT + 100, AT + 110)       # the turns numbered 0..9, the oldest of the common word's matches
    found = search.events_matching(conn, ["coffee"], _visible(AT + 1000), window, 0.5, 50)
    assert set(found) == {ids[f"coffee again number {i}"] for i in range(5, 10)}


def test_invisible_events_are_never_found(history, monkeypatch):
    monkeypatch.setattr(search, "MATCH_CAP", 5)
    monkeypatch.setattr(search, "COMMON_SCAN", 5)
    conn = history.db.reader()
    assert search.events_matching(conn, ["coffee", "zeppelin"], l1.visible_filter(SCOPES, AT - 1), None, 0.5, 50) == []


def test_the_keyword_fallback_reads_the_newest_events(history, monkeypatch):
    conn = history.db.reader()
    ids = _ids_by_text(history)
    everything = search.events_containing(conn, ["zeppelin"], _visible(AT + 1000), 10)
    assert everything == [ids["the old zeppelin ticket and coffee"]]
    monkeypatch.setattr(search, "CONTAINING_SCAN", 30)          # the old turn is the 31st newest
    assert search.events_containing(conn, ["zeppelin"], _visible(AT + 1000), 10) == []
    assert search.events_containing(conn, ["number 2"], _visible(AT + 1000), 3) == \
        [ids[f"coffee again number {i}"] for i in (29, 28, 27)]


def test_events_recorded_by_counts_what_was_recorded_then(history):
    conn = history.db.reader()
    recorded = [r[0] for r in conn.execute("SELECT recorded_at FROM fact_events ORDER BY recorded_at")]
    assert l1.events_recorded_by(conn, recorded[-1]) == 31
    assert l1.events_recorded_by(conn, recorded[0] - 1) == 0
    assert l1.events_recorded_by(conn, recorded[10]) == sum(1 for r in recorded if r <= recorded[10])


def test_mentions_in_a_window_only(memory):
    memory.ingest_many([chat("first", at=AT), chat("second", at=AT + 1), chat("third", at=AT + 2)])
    conn = memory.db.reader()
    first, second, third = (r[0] for r in conn.execute("SELECT id FROM fact_events ORDER BY timestamp"))
    day = 86400.0
    with memory.db.writer() as w:
        mentions.add_mentioned_times(w, [(first, AT - 400 * day, AT - 399 * day),      # long before the window
                                         (second, AT - 10 * day, AT - 9 * day),         # in it
                                         (third, AT - 60 * day, AT - 1 * day)])         # longer than the slack
    assert mentions.about_window(conn, [first, second, third], AT - 30 * day, AT) == {second}


@pytest.fixture
def crowded(memory):
    """The assistant's turn about python (conversation_only), then more than MATCH_CAP newer page visits of another
    scope that also say it."""
    memory.set_aggregation("browser", False)
    memory.ingest_many([chat("Learning python for data work takes a month", role="assistant", session="old", at=AT)]
                       + [sensor("visit_page", {"url": f"https://docs.example/p{i}", "title": f"Python docs {i}"},
                                 source="chrome", item=f"v{i}", at=AT + 100 + i)
                          for i in range(search.MATCH_CAP + 100)])
    return memory


def test_a_scopes_match_behind_more_than_the_cap_of_another_scopes_is_found(crowded):
    conn = crowded.db.reader()
    ids = _ids_by_text(crowded)
    assert l1.event_rows(conn, source_item_id="v0")[0]["l1_retrieval_scope"] != "conversation_only"
    found = search.events_matching(conn, ["python"], l1.visible_filter(("conversation_only",), AT + 10_000),
                                   None, 0.5, 10)
    assert found == [ids["Learning python for data work takes a month"]]


def test_a_replay_before_the_newest_matches_finds_what_was_recorded_by_then(crowded):
    conn = crowded.db.reader()
    ids = _ids_by_text(crowded)
    # every scope; only the turn was recorded by then, the visits after it are the term's newest matches
    assert search.events_matching(conn, ["python"], l1.visible_filter(SCOPES, AT + 50), None, 0.5, 10) == [
        ids["Learning python for data work takes a month"]]


def test_a_scopes_match_beyond_what_one_term_may_read_is_not(crowded, monkeypatch):
    monkeypatch.setattr(search, "COMMON_READ", search.MATCH_CAP)        # one block: the newest visits only
    conn = crowded.db.reader()
    assert search.events_matching(conn, ["python"], l1.visible_filter(("conversation_only",), AT + 10_000),
                                  None, 0.5, 10) == []


def test_an_old_windows_match_is_found_when_a_later_event_mentions_the_window(crowded):
    """A turn months later mentioning the window must not make the scan start at the newest matches."""
    crowded.ingest_many([chat("back then python was new to you", role="assistant", session="later",
                              at=AT + 200 * 86400)])
    conn = crowded.db.reader()
    ids = _ids_by_text(crowded)
    later = ids["back then python was new to you"]
    with crowded.db.writer() as w:
        mentions.add_mentioned_times(w, [(later, AT - 3600, AT + 3600)])
    scopes = l1.visible_filter(("conversation_only",), AT + 300 * 86400)
    found = search.events_matching(conn, ["python"], scopes, (AT - 60, AT + 60), 0.5, 10)
    assert found == [later, ids["Learning python for data work takes a month"]]      # a tie: newest first


def test_the_events_mentioning_a_window_are_read_in_runs_of_nearby_rowids(crowded, monkeypatch):
    assert search._runs([1, 2, 5, 9, 10], 1) == [(1, 2), (5, 5), (9, 10)]
    assert search._runs([1, 2, 3, 4, 5], 1, span=2) == [(1, 3), (4, 5)]
    crowded.ingest_many([chat(f"python back then, note {i}", role="assistant", session="later",
                              at=AT + (200 + i) * 86400) for i in range(5)])
    conn = crowded.db.reader()
    ids = _ids_by_text(crowded)
    notes = [ids[f"python back then, note {i}"] for i in range(5)]
    with crowded.db.writer() as w:          # notes 2 and 3 say python too, inside the run, but not when
        mentions.add_mentioned_times(w, [(notes[i], AT - 3600, AT + 3600) for i in (0, 1, 4)])
    scopes = l1.visible_filter(("conversation_only",), AT + 300 * 86400)
    old_turn = ids["Learning python for data work takes a month"]
    found = search.events_matching(conn, ["python"], scopes, (AT - 60, AT + 60), 0.5, 10)
    assert found == [notes[4], notes[1], notes[0], old_turn]
    monkeypatch.setattr(search, "MENTION_RUN_GAP", 1)     # notes 0-1 are one run, note 4 another
    assert search.events_matching(conn, ["python"], scopes, (AT - 60, AT + 60), 0.5, 10) == found
    monkeypatch.setattr(search, "COMMON_SCAN", 2)         # the newest runs first: note 4's, then 0-1's newest
    assert search._mentioning(conn, "fact_events_fts", '"python"', scopes, [notes[i] for i in (0, 1, 4)]) == [
        notes[4], notes[1]]


def test_a_window_listing_counts_each_source_up_to_its_cap(memory, monkeypatch):
    from magi_desktop.core.retrieval import window_listing

    monkeypatch.setattr(window_listing, "COUNT_CAP", 3)
    memory.ingest_many([chat(f"I planted tomato row {i}", session="d", at=AT + i) for i in range(6)]
                       + [sensor("git_commit", {"repo": "garden", "message": "water schedule"}, source="git",
                                 item="g1", at=AT + 30)])
    pack = memory.query("What did I do today?", now=AT + 600)
    listing = pack.trace["listing"]
    assert listing["counts"] == {"chat": 4, "git": 1} and listing["counted_up_to"] == 4
    assert any("chat more than 3, git 1 event(s)" in hint for hint in pack.answering_hints)
    # the listing itself is not capped by the count: the newest turns, as many as the slots allow
    assert {f.text for f in pack.findings if f.source == "chat"} >= {f"I planted tomato row {i}" for i in (4, 5)}


def test_a_sources_listing_takes_the_users_own_events_first_then_the_newest(memory):
    memory.ingest_many([chat("I planted the tomatoes", session="d", at=AT)]
                       + [chat(f"Tomatoes like sun, tip {i}", role="assistant", session="d", at=AT + 60 + i)
                          for i in range(6)])
    where = l1.window_filter(SCOPES, AT - 1, AT + 100, AT + 600, False)
    rows = l1.listed_events_of_source(memory.db.reader(), where, "chat", False, 3)
    assert [row[2] for row in rows] == ["I planted the tomatoes", "Tomatoes like sun, tip 5",
                                        "Tomatoes like sun, tip 4"]
    ahead = l1.listed_events_of_source(memory.db.reader(), l1.window_filter(SCOPES, AT - 1, AT + 100, AT + 600, True),
                                       "chat", True, 2)
    assert [row[2] for row in ahead] == ["I planted the tomatoes", "Tomatoes like sun, tip 0"]
