"""The parts of retrieval on their own: mode rules, temporal parsing, each recall path, RRF and rerank."""

from datetime import datetime, timezone

import pytest
from payloads import chat, sensor

from magi_desktop.core.retrieval import paths
from magi_desktop.core.retrieval.fusion import (
    ASSISTANT_PENALTY,
    USER_BONUS,
    RerankFeatures,
    diversify,
    normalise,
    rerank,
    rerank_adjustment,
    weighted_rrf,
)
from magi_desktop.core.retrieval.modes import PATH_WEIGHTS, SESSION_SPREAD, classify_mode, scopes_for
from magi_desktop.core.retrieval.temporal import parse_temporal
from magi_desktop.core.retrieval.terms import content_terms
from magi_desktop.core.store.entities import catalog, entity_links
from magi_desktop.core.store.l1 import event_rows

UTC = timezone.utc
# Wednesday 2026-11-25 15:00 UTC
NOW = datetime(2026, 11, 25, 15, 0, tzinfo=UTC).timestamp()


def day(y, m, d):
    return datetime(y, m, d, tzinfo=UTC).timestamp()


# ------------------------------------------------------------------ modes

@pytest.mark.parametrize("question, mode", [
    ("What is my cat's name?", "exact_fact"),
    ("Where do I live now?", "current_state"),
    ("我现在住在哪里？", "current_state"),
    ("What did I buy before the air fryer?", "temporal_compare"),
    ("我搬家之前住在哪里", "temporal_compare"),
    ("What did you recommend for soup?", "episode_recall"),
    ("你之前说过什么食谱？", "episode_recall"),
    ("Across our previous conversations, what recipes came up?", "cross_session"),
    ("What happened recently?", "event_stream"),
    ("Summarise my week", "summary"),
    ("What was I busy with last week?", "activity_summary"),
    ("我上周在忙什么？", "activity_summary"),
    ("How did we fix the flaky test last time?", "strategy"),
    ("上次怎么解决这类问题的？", "strategy"),
])
def test_mode_rules(question, mode):
    assert classify_mode(question)[0] == mode


def test_fact_modes_see_only_fact_scope():
    assert scopes_for("exact_fact") == ("fact_authoritative",)
    assert set(scopes_for("episode_recall")) == {"fact_authoritative", "conversation_only"}
    assert PATH_WEIGHTS["exact_fact"]["entity"] == 1.2
    assert PATH_WEIGHTS["episode_recall"]["vector"] == 1.2 and PATH_WEIGHTS["episode_recall"]["entity"] == 0.6
    assert PATH_WEIGHTS["event_stream"]["entity"] == PATH_WEIGHTS["event_stream"]["graph"] == 0


# --------------------------------------------------------------- temporal

@pytest.mark.parametrize("question, start, end", [
    ("what did I do yesterday", day(2026, 11, 24), day(2026, 11, 25)),
    ("what did I do today", day(2026, 11, 25), day(2026, 11, 26)),
    ("pages I read last week", day(2026, 11, 16), day(2026, 11, 23)),
    ("last Wednesday", day(2026, 11, 18), day(2026, 11, 19)),
    ("last Monday", day(2026, 11, 23), day(2026, 11, 24)),
    ("what happened in March", day(2026, 3, 1), day(2026, 4, 1)),
    ("in December", day(2025, 12, 1), day(2026, 1, 1)),
    ("in May 2023", day(2023, 5, 1), day(2023, 6, 1)),
    ("on 8 May, 2023", day(2023, 5, 8), day(2023, 5, 9)),
    ("3 days ago", day(2026, 11, 22), day(2026, 11, 23)),
    ("in the last 2 weeks", day(2026, 11, 12), day(2026, 11, 26)),
    ("in 2024", day(2024, 1, 1), day(2025, 1, 1)),
    ("我上周三做了什么", day(2026, 11, 18), day(2026, 11, 19)),
    ("我昨天去了哪里", day(2026, 11, 24), day(2026, 11, 25)),
    ("上个月", day(2026, 10, 1), day(2026, 11, 1)),
    ("2023年5月", day(2023, 5, 1), day(2023, 6, 1)),
    ("三天前", day(2026, 11, 22), day(2026, 11, 23)),
    ("三天之前", day(2026, 11, 22), day(2026, 11, 23)),
    ("十五天前", day(2026, 11, 10), day(2026, 11, 11)),
    ("上上周", day(2026, 11, 9), day(2026, 11, 16)),
    ("前年", day(2024, 1, 1), day(2025, 1, 1)),
    ("最近三天", day(2026, 11, 23), day(2026, 11, 26)),
    ("过去一周", day(2026, 11, 19), day(2026, 11, 26)),
    ("in the past week", day(2026, 11, 19), day(2026, 11, 26)),
    ("the past few days", day(2026, 11, 23), day(2026, 11, 26)),
    ("on 2023-05-08", day(2023, 5, 8), day(2023, 5, 9)),
    ("on 5/8/2023", day(2023, 5, 8), day(2023, 5, 9)),
    ("before last week", 0.0, day(2026, 11, 16)),
    ("since yesterday", day(2026, 11, 24), NOW + 1),
    ("after last month", day(2026, 11, 1), NOW + 1),
    ("since March", day(2026, 3, 1), NOW + 1),
    ("before 2020", 0.0, day(2020, 1, 1)),
    ("what did I do before Monday", 0.0, day(2026, 11, 23)),
])
def test_temporal_windows(question, start, end):
    intent = parse_temporal(question, NOW, UTC)
    assert (intent.window.start, intent.window.end) == (start, end)


def test_recent_and_no_time():
    assert parse_temporal("what have I been reading lately", NOW, UTC).recent
    recent = parse_temporal("最近在听什么歌", NOW, UTC)
    assert recent.recent and recent.window is None  # a preference for newer evidence, not a cut-off
    assert not parse_temporal("What is my cat's name?", NOW, UTC).present
    assert parse_temporal("May I ask what my cat's name is?", NOW, UTC).window is None


@pytest.mark.parametrize("question, direction, phrase", [
    ("What kitchen appliance did I buy before the air fryer?", "before", "air fryer"),
    ("Where did I live before I moved to Jiaxing?", "before", "I moved to Jiaxing"),
    ("what did I read after my trip to Kyoto", "after", "trip to Kyoto"),
    ("我在买空气炸锅前买了什么厨房家电？", "before", "买空气炸锅"),
    ("搬到嘉兴之后我换了什么工作", "after", "搬到嘉兴"),
])
def test_anchors(question, direction, phrase):
    anchor = parse_temporal(question, NOW, UTC).anchor
    assert (anchor.direction, anchor.phrase) == (direction, phrase)


def test_a_date_after_before_is_a_window_not_an_anchor():
    intent = parse_temporal("What did Maria do before April 10, 2023?", NOW, UTC)
    assert intent.anchor is None and intent.window.end == day(2023, 4, 10)
    after = parse_temporal("what happened after March 3rd 2026", NOW, UTC)
    assert after.anchor is None and after.window.start == day(2026, 3, 4)


@pytest.mark.parametrize("question", [
    "What did Jan tell me about the budget?",   # a name, not January
    "Since when have I been vegetarian?",       # no event to anchor on
    "我之前说过我喜欢什么颜色？",                  # 之前 after a pronoun is just "before"
    "你之前推荐了什么？",
])
def test_not_a_time(question):
    intent = parse_temporal(question, NOW, UTC)
    assert intent.window is None and intent.anchor is None


def test_bare_chinese_qian_anchor():
    anchor = parse_temporal("买空气炸锅前我买了什么厨房家电？", NOW, UTC).anchor
    assert (anchor.direction, anchor.phrase) == ("before", "买空气炸锅")
    assert parse_temporal("我目前住在哪里", NOW, UTC).anchor is None


def test_local_time_follows_the_machines_zone(monkeypatch):
    import time as time_module

    monkeypatch.setenv("TZ", "Europe/Berlin")
    time_module.tzset()
    try:
        july = datetime(2026, 7, 15, 12, 0, tzinfo=UTC).timestamp()
        window = parse_temporal("yesterday", july).window  # no tz: local time, summer time included
        assert window.start == datetime(2026, 7, 13, 22, 0, tzinfo=UTC).timestamp()  # 00:00 CEST
        january = datetime(2026, 1, 15, 12, 0, tzinfo=UTC).timestamp()
        assert parse_temporal("yesterday", january).window.start == datetime(2026, 1, 13, 23, 0,
                                                                              tzinfo=UTC).timestamp()
    finally:
        monkeypatch.delenv("TZ")
        time_module.tzset()


def test_ago_is_a_window_not_an_anchor():
    intent = parse_temporal("三天前我吃了什么", NOW, UTC)
    assert intent.anchor is None and intent.window is not None


@pytest.mark.parametrize("a, b", [("fryers", "fryer"), ("noted", "note"), ("stopped", "stop"), ("bought", "buy"),
                                  ("lived", "live"), ("making", "make"), ("running", "run"), ("cities", "city")])
def test_stems_meet(a, b):
    from magi_desktop.core.retrieval.terms import stem

    assert stem(a) == stem(b)


# ----------------------------------------------------------------- fusion

def test_weighted_rrf():
    fused = weighted_rrf({"a": [1, 2, 3], "b": [3, 1], "off": [9]}, {"a": 1.0, "b": 2.0, "off": 0.0}, k=60)
    scores = dict(fused)
    assert scores[1] == pytest.approx(1 / 61 + 2 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 2 / 61)
    assert 9 not in scores
    assert [item for item, _ in fused] == [3, 1, 2]


def test_normalise():
    assert normalise([2.0, 4.0, 3.0]) == [0.5, 1.0, 0.75]
    assert normalise([1.0, 1.0]) == [1.0, 1.0]
    assert normalise([]) == []


def test_rerank_adjustments():
    now = 1_000_000.0
    user = rerank_adjustment(RerankFeatures("user", "I like tea", now - 1e9), [], now, recency_weight=0)
    assistant = rerank_adjustment(RerankFeatures("assistant", "You like tea", now - 1e9), [], now, recency_weight=0)
    assert user == pytest.approx(USER_BONUS) and assistant == pytest.approx(ASSISTANT_PENALTY)
    quoted_user = rerank_adjustment(RerankFeatures("user", "I said 'green tea' twice", now - 1e9), ["green tea"], now,
                                    recency_weight=0)
    assert quoted_user == pytest.approx(USER_BONUS + 0.45)
    quoted_assistant = rerank_adjustment(RerankFeatures("assistant", "green tea", now - 1e9), ["green tea"], now,
                                         recency_weight=0)
    assert quoted_assistant == pytest.approx(ASSISTANT_PENALTY + 0.15)
    long_text = rerank_adjustment(RerankFeatures("assistant", "x" * 5000, now - 1e9), [], now, recency_weight=0)
    assert long_text == pytest.approx(ASSISTANT_PENALTY - 0.25)
    medium = rerank_adjustment(RerankFeatures("assistant", "x" * 740, now - 1e9), [], now, recency_weight=0)
    assert medium == pytest.approx(ASSISTANT_PENALTY - 0.125)
    fresh = rerank_adjustment(RerankFeatures("external", "x", now), [], now, recency_weight=0.05)
    month = rerank_adjustment(RerankFeatures("external", "x", now - 30 * 86400), [], now, recency_weight=0.05)
    assert fresh == pytest.approx(0.05) and month == pytest.approx(0.025)


def test_rerank_lifts_the_user_over_a_close_assistant_and_keeps_the_tail():
    fused = [(1, 0.030), (2, 0.029), (3, 0.010), (4, 0.001)]
    features = {1: RerankFeatures("assistant", "you live in Paris", 0), 2: RerankFeatures("user", "I live in Lyon", 0),
                3: RerankFeatures("user", "x", 0), 4: RerankFeatures("user", "y", 0)}
    ranked = rerank(fused, features, [], now=0, top=3)
    assert [item for item, _ in ranked] == [2, 1, 3, 4]
    assert ranked[-1][1] < ranked[-2][1]


def test_diversify_spreads_over_sessions():
    ranked = [(1, 1.0), (2, 0.95), (3, 0.9), (4, 0.8), (5, 0.7)]
    sessions = {1: "a", 2: "a", 3: "a", 4: "b", 5: None}
    spread = diversify(ranked, sessions, penalty=0.15)
    # 2 drops below 4 (0.95 - 0.15); 3 drops twice (0.9 - 0.3) below the sessionless 5
    assert [item for item, _ in spread] == [1, 4, 2, 5, 3]
    assert dict(spread)[3] == pytest.approx(0.6) and dict(spread)[5] == pytest.approx(0.7)
    assert diversify(ranked, sessions, penalty=0.0) == ranked


def test_session_spread_only_where_breadth_is_asked():
    assert SESSION_SPREAD.get("exact_fact", 0.0) == 0.0
    assert SESSION_SPREAD["cross_session"] > 0


# ------------------------------------------------------------------ paths

@pytest.fixture
def loaded(memory):
    memory.ingest_many([
        chat("I adopted a grey cat named Miso", session="s1", at=1000.0 * 86400, item="t1"),
        chat("What food do cats like?", session="s1", at=1000.0 * 86400 + 10, item="t2"),
        chat("Cats like fish, and Miso may too.", role="assistant", session="s1", at=1000.0 * 86400 + 20, item="t3"),
        chat("Release v2.3 fixed the login bug", session="s2", at=1001.0 * 86400, item="t4"),
        chat("I drink green tea every morning", session="s2", at=1002.0 * 86400, item="t5"),
        sensor("listen_music", {"track_name": "Clair de Lune", "artist_name": "Debussy"}, source="music",
               entities=[{"mention_text": "Debussy", "entity_type": "person"}], at=1003.0 * 86400, item="m1"),
        sensor("listen_music", {"track_name": "Arabesque", "artist_name": "Debussy"}, source="music",
               entities=[{"mention_text": "Debussy", "entity_type": "person"}], at=1004.0 * 86400, item="m2"),
    ])
    memory.process_pending()
    return memory


def ctx(text, scopes=("fact_authoritative", "conversation_only"), now=2000.0 * 86400, window=None, vector=None):
    from magi_desktop.core.retrieval.terms import quoted_phrases

    return paths.QueryContext(text=text, terms=content_terms(text), scopes=scopes, now=now, fetch_k=10,
                              window=window, query_vector=vector, quoted=quoted_phrases(text))


def items(memory, rowids):
    item_of = {r["id"]: r["source_item_id"] for r in event_rows(memory.db.reader())}
    return [item_of[r] for r in rowids]


def rowid_of(conn, item):
    return event_rows(conn, source_item_id=item)[0]["id"]


def test_bm25_path_respects_scope_and_now(loaded):
    conn = loaded.db.reader()
    assert items(loaded, paths.bm25(conn, ctx("cat Miso")))[0] == "t1"
    assert "t3" not in items(loaded, paths.bm25(conn, ctx("Miso fish", scopes=("fact_authoritative",))))
    assert items(loaded, paths.bm25(conn, ctx("green tea", now=1001.5 * 86400))) == []


def test_temporal_bm25_only_with_a_window(loaded):
    from magi_desktop.core.retrieval.temporal import Window

    conn = loaded.db.reader()
    assert paths.temporal_bm25(conn, ctx("Debussy")) == []
    window = Window(1003.5 * 86400, 1005 * 86400, "test")
    assert items(loaded, paths.temporal_bm25(conn, ctx("Debussy", window=window))) == ["m2"]


def test_vector_path_folds_chunks_to_events(loaded):
    query = loaded.embedder.embed(["grey cat Miso adopted"])[0]
    ranked = items(loaded, paths.vector(loaded.db.reader(), ctx("x", vector=query)))
    assert ranked[0] == "t1" and len(ranked) == len(set(ranked))


def test_keyword_path_finds_what_fts_splits(loaded):
    conn = loaded.db.reader()
    assert items(loaded, paths.keyword(conn, ctx("which release was v2.3"))) == ["t4"]
    assert items(loaded, paths.keyword(conn, ctx('the "green tea" habit'))) == ["t5"]
    assert paths.keyword(conn, ctx("plain words only")) == []


def test_entity_expansion_path(loaded):
    conn = loaded.db.reader()
    seed = rowid_of(conn, "m1")
    assert items(loaded, paths.entity_expansion(conn, ctx("x"), [seed])) == ["m2"]
    debussy = catalog(conn, name="Debussy")[0].entity_id
    assert set(items(loaded, paths.entity_expansion(conn, ctx("x"), [], [debussy]))) == {"m1", "m2"}


def test_an_entity_of_more_events_than_the_cap_is_not_expanded_through_whatever_its_share(loaded, monkeypatch):
    conn = loaded.db.reader()
    seed = rowid_of(conn, "m1")
    monkeypatch.setattr(paths, "MIN_ENTITY_EVENTS", 1)
    monkeypatch.setattr(paths, "MAX_ENTITY_SHARE", 1.0)      # the share lets every entity through
    monkeypatch.setattr(paths, "MAX_ENTITY_EVENTS", 2)
    assert items(loaded, paths.entity_expansion(conn, ctx("x"), [seed])) == ["m2"]    # Debussy's 2 events
    monkeypatch.setattr(paths, "MAX_ENTITY_EVENTS", 1)
    assert paths.entity_expansion(conn, ctx("x"), [seed]) == []


def test_neighbours_path_and_empty_graph(loaded):
    conn = loaded.db.reader()
    seed = rowid_of(conn, "t2")
    assert items(loaded, paths.neighbours(conn, ctx("x"), [seed])) == ["t2", "t3", "t1"]
    fact_only = paths.neighbours(conn, ctx("x", scopes=("fact_authoritative",)), [seed])
    assert items(loaded, fact_only) == ["t2", "t1"]
    assert paths.NoGraph().spread(conn, ctx("x"), [seed]) == []


def test_expansion_paths_hide_what_happened_after_now(loaded):
    conn = loaded.db.reader()
    m1 = rowid_of(conn, "m1")
    early = ctx("x", now=1003.5 * 86400)  # after m1, before m2
    assert paths.entity_expansion(conn, early, [m1]) == []
    t1 = rowid_of(conn, "t1")
    assert items(loaded, paths.neighbours(conn, ctx("x", now=1000.0 * 86400 + 5), [t1])) == ["t1"]


def test_vector_path_respects_scope_and_now(loaded):
    query = loaded.embedder.embed(["Cats like fish, and Miso may too."])[0]
    conn = loaded.db.reader()
    assert "t3" in items(loaded, paths.vector(conn, ctx("x", vector=query)))
    assert "t3" not in items(loaded, paths.vector(conn, ctx("x", scopes=("fact_authoritative",), vector=query)))
    assert items(loaded, paths.vector(conn, ctx("x", now=1000.0 * 86400 + 1, vector=query))) == ["t1"]


def test_entity_links_are_written_at_ingest(loaded):
    rows = entity_links(loaded.db.reader())
    assert ("m1", "Debussy", 1.0) in rows and ("m2", "Debussy", 1.0) in rows


def test_a_day_summary_mostly_outside_the_questions_day_is_left_out():
    """Asked "yesterday" in UTC+14 while the summaries keep UTC days: the UTC day that is mostly the user's today
    is not yesterday's (tests/test_real_life.py met it between 00:00 and 03:30 UTC only)."""
    from magi_desktop.core.retrieval.summaries import _mostly_elsewhere
    from magi_desktop.core.retrieval.temporal import Window

    day = 86400.0
    yesterday = Window(30 * day - 14 * 3600, 31 * day - 14 * 3600, "yesterday")       # local midnight to midnight
    row = lambda start, end, stype="temporal": (1, stype, None, "day", "t", "c", start, end)  # noqa: E731
    assert _mostly_elsewhere(row(30 * day, 31 * day), yesterday)              # 10 of its 24 hours inside
    assert _mostly_elsewhere(row(29 * day, 30 * day), yesterday)              # 14 of 24: 10 hours of the day before
    assert not _mostly_elsewhere(row(29 * day + 6 * 3600, 30 * day + 6 * 3600), yesterday)   # 20 of 24
    assert not _mostly_elsewhere(row(0, 60 * day), yesterday)                 # longer than the window: ranked
    assert not _mostly_elsewhere(row(30 * day, 31 * day, "thematic"), yesterday)
    # Twelve hours ahead (tests/test_real_life.py at 02:00-03:00 UTC): the machine's day is half of each.
    today = Window(30 * day - 12 * 3600, 31 * day - 12 * 3600, "today")
    assert _mostly_elsewhere(row(29 * day, 30 * day), today)
    assert _mostly_elsewhere(row(30 * day, 31 * day), today)
