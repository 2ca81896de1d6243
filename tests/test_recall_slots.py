"""Recall (issue 17, item 7): the times a turn mentions, each path's strongest hits kept through fusion, and
the session path's reserved places."""

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from payloads import chat

from magi_desktop.core.mentioned_times import mentioned_windows
from magi_desktop.core.retrieval import slots
from magi_desktop.core.retrieval.fusion import weighted_rrf

UTC = timezone.utc


def ts(*parts):
    return datetime(*parts, tzinfo=UTC).timestamp()


APRIL = ts(2023, 4, 20, 15)


# ------------------------------------------------------------ mentioned times

def dates(windows):
    return [(datetime.fromtimestamp(a, UTC).date().isoformat(), datetime.fromtimestamp(b, UTC).date().isoformat())
            for a, b in windows]


def test_relative_dates_resolve_against_the_turns_own_date():
    assert dates(mentioned_windows("Last month I got hurt", APRIL, UTC)) == [("2023-03-01", "2023-04-01")]
    assert dates(mentioned_windows("I went to a support group yesterday", APRIL, UTC)) == [("2023-04-19", "2023-04-20")]
    assert dates(mentioned_windows("上个月我受伤了", APRIL, UTC)) == [("2023-03-01", "2023-04-01")]
    assert dates(mentioned_windows("two weeks ago we met, and in 2022 too", APRIL, UTC)) == [
        ("2023-04-03", "2023-04-10"), ("2022-01-01", "2023-01-01")]


def test_no_window_from_bare_words_or_the_turns_own_time():
    for text in ("the march was long", "today is fine", "this week is busy", "I may go", "at 10:30", ""):
        assert mentioned_windows(text, APRIL, UTC) == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.floats(min_value=0, max_value=4e9))
def test_any_text_gives_only_past_bounded_windows(text, at):
    for start, end in mentioned_windows(text, at, UTC):
        assert start < end <= at and end - start <= 366 * 86400


def test_an_april_turn_about_last_month_is_in_a_march_window(memory):
    memory.ingest_many([chat("Last month I hurt my knee playing football", at=APRIL),
                        chat("My knee is better now", at=APRIL + 60)])
    memory.process_pending()
    pack = memory.query("How did I hurt my knee in March 2023?", now=ts(2023, 5, 20), tz=UTC)
    assert [f.text for f in pack.findings if f.layer == "L1"] == ["Last month I hurt my knee playing football"]
    assert not pack.trace.get("window_fallback")


def test_mentioned_times_follow_their_event_on_forget(memory):
    result = memory.ingest(chat("Last month I hurt my knee", at=APRIL))
    conn = memory.db.reader()
    assert conn.execute("SELECT count(*) FROM event_mentioned_times").fetchone()[0] == 1
    memory.forget(event_ids=[result.event_id])
    assert memory.db.reader().execute("SELECT count(*) FROM event_mentioned_times").fetchone()[0] == 0


# ------------------------------------------------------------ fusion protection

def test_a_paths_top_hit_survives_fusion():
    # Item 99 is BM25's best hit and nobody else's; items 1..30 are ranked by three other paths.
    agreed = list(range(1, 31))
    rankings = {"bm25": [99] + agreed, "vector": agreed, "neighbors": agreed, "entity": agreed}
    fused = weighted_rrf(rankings, {"bm25": 1.0, "vector": 1.0, "neighbors": 1.0, "entity": 1.0})
    assert 99 not in [item for item, _ in fused[:10]]          # what plain RRF does
    kept = slots.reserve_slots(fused, rankings, fused, {})
    top = [item for item, _ in kept[:slots.PROTECT_WITHIN]]
    assert 99 in top and top[:9] == agreed[:9]                 # it takes the last place, the rest keep order
    scores = [score for _, score in kept]
    assert scores == sorted(scores, reverse=True) and len(kept) == len(fused)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["bm25", "vector", "neighbors", "entity"]),
                       st.lists(st.integers(0, 40), unique=True, max_size=30), min_size=1),
       st.dictionaries(st.integers(0, 40), st.sampled_from(["s1", "s2", "s3", "s4", "s5"])))
def test_reserving_keeps_every_item_once_and_each_paths_best_in_the_top(rankings, sessions):
    fused = weighted_rrf(rankings, {path: 1.0 for path in rankings})
    kept = slots.reserve_slots(fused, rankings, fused, sessions)
    assert sorted(item for item, _ in kept) == sorted(item for item, _ in fused)
    top = {item for item, _ in kept[:slots.PROTECT_WITHIN]}
    for path in slots.PROTECTED_PATHS:
        if rankings.get(path):
            assert rankings[path][0] in top


# ------------------------------------------------------------ the session path

def test_the_best_sessions_get_a_place_in_the_top():
    # Session A fills the first 12 places; session B's turns rank 13th and 14th but B is the second
    # best session (its two turns together score more than A's weakest), so it gets a place.
    ranked = [(i, 1.0 - i * 0.01) for i in range(12)] + [(100, 0.85), (101, 0.84)]
    sessions = {i: "A" for i in range(12)} | {100: "B", 101: "B"}
    kept = slots.reserve_slots(ranked, {}, ranked, sessions)
    top = [item for item, _ in kept[:slots.PROTECT_WITHIN]]
    assert 100 in top and 101 not in top
    assert slots.session_ranking(ranked, sessions) == ["A", "B"]


# ------------------------------------------------------------ "X and Y", short turns, topical names

def test_each_named_speaker_gets_a_place():
    ranked = [(i, 1.0 - i * 0.01) for i in range(15)]
    speaker = {i: "Caroline" for i in range(14)} | {14: "Melanie"}
    sessions = {i: "A" for i in range(15)}
    kept = slots.reserve_slots(ranked, {}, ranked, sessions, speaker, {"caroline", "melanie"})
    assert 14 in [item for item, _ in kept[:slots.PROTECT_WITHIN]]
    alone = slots.reserve_slots(ranked, {}, ranked, sessions, speaker, {"melanie"})   # one name: no place
    assert 14 not in [item for item, _ in alone[:slots.PROTECT_WITHIN]]


def test_a_short_turn_that_matches_only_a_name_is_demoted():
    from magi_desktop.core.retrieval.fusion import RerankFeatures, rerank, short_unmatched

    asked = {"adopt", "dog"}
    assert short_unmatched("Caroline: Thanks, Mel!", asked)
    assert not short_unmatched("Caroline: I adopted a dog", asked)
    assert not short_unmatched("Caroline: we spent the whole afternoon walking along the river in town", asked)
    thanks = "Caroline: Thanks, Mel!"
    features = {1: RerankFeatures("user", thanks, 0.0, True, short_unmatched(thanks, asked)),
                2: RerankFeatures("user", "Caroline: the shelter had puppies", 0.0, True)}
    assert [item for item, _ in rerank([(1, 1.0), (2, 0.9)], features, [], 0.0)] == [2, 1]


def test_a_name_nobody_speaks_stays_a_search_word(memory):
    memory.ingest_many([
        chat("Anna: I love the band Lumen", session="a", at=APRIL, entities=[{"mention_text": "Lumen",
                                                                                "entity_type": "creator"}]),
        chat("Anna: my week was quiet", session="a", at=APRIL + 30),
        chat("Anna: I went to a concert", session="a", at=APRIL + 60)])
    memory.process_pending()
    pack = memory.query("What does Anna think of Lumen?", now=APRIL + 3600)
    assert "lumen" in pack.trace["terms"] and "anna" not in pack.trace["terms"]
    assert pack.findings[0].text == "Anna: I love the band Lumen"
