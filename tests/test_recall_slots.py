"""Recall (issue 17, item 7): the times a turn mentions, each path's strongest hits kept through fusion, and
the session path's reserved places."""

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from payloads import chat

from magi_desktop.core.mentioned_times import mentioned_windows
from magi_desktop.core.retrieval import slots
from magi_desktop.core.retrieval.fusion import weighted_rrf
from magi_desktop.core.store.tables import row_count

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
    assert row_count(conn, "event_mentioned_times") == 1
    memory.forget(event_ids=[result.event_id])
    assert row_count(memory.db.reader(), "event_mentioned_times") == 0


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


# ------------------------------------------------------------ list questions

def test_list_question_shapes():
    from magi_desktop.core.retrieval.aggregate import asks_for_many

    for question in ("What activities does Melanie partake in?", "What books has Tim read?",
                     "Which cities has Jon visited?", "What are Joanna's hobbies?",
                     "What LGBTQ+ events has she been to?",
                     "How many times has Nate walked his turtles?", "What do Jon and Gina both like?",
                     "Where has Maria made friends?", "What has Melanie painted?", "What people has Maria met?",
                     "What musical artists/bands has Melanie seen?", "What kind of books does Caroline have?"):
        assert asks_for_many(question), question
    for question in ("What did Caroline research?", "What is Caroline's relationship status?",
                     "What motivates Joanna to keep writing?", "Where did Anna move from?", "Who is Tim?",
                     "What does Melanie do to destress?", "When did Nate get Tilly?", "What is my sister's name?",
                     "Which song motivates Caroline?", "", "?", "what"):
        assert not asks_for_many(question), question


def _chatty_session_and_scattered_mentions(memory):
    """Session "a" talks about books for twelve turns; five later sessions each name one book Anna read."""
    day = 86400.0
    memory.ingest_many(
        [chat(f"Anna: books are great, I love books and reading books number {i}", session="a", at=APRIL + i * 30)
         for i in range(12)]
        + [chat(f"Anna: I read the book {title} last week", session=f"s{n}", at=APRIL + (n + 1) * day)
           for n, title in enumerate(("Dune", "Emma", "Ulysses", "Beloved", "Rebecca"))])
    memory.process_pending()


def test_a_list_question_spreads_its_places_over_sessions(memory):
    _chatty_session_and_scattered_mentions(memory)
    pack = memory.query("What books has Anna read?", now=APRIL + 30 * 86400, limit=10)
    sessions = {f.session_id for f in pack.findings if f.layer == "L1"}
    assert {f"s{n}" for n in range(5)} <= sessions


def test_a_single_answer_question_keeps_its_best_turns(memory):
    _chatty_session_and_scattered_mentions(memory)
    pack = memory.query("What did Anna say about reading books?", now=APRIL + 30 * 86400, limit=10)
    assert sum(f.session_id == "a" for f in pack.findings if f.layer == "L1") >= 5


# ------------------------------------------------------------ a name in address is no mention

def test_a_name_in_address_is_not_a_mention():
    from magi_desktop.core.retrieval.address import addressed_only

    for text in ("caroline: yep, melanie! being ourselves is great", "hey melanie, hope all is good",
                 "thanks, melanie.", "wow, melanie, that looks great", "melanie, do you paint?", "oh melanie!"):
        assert addressed_only(text, "melanie"), text
    for text in ("melanie went camping", "i saw melanie.", "thanks, melanie! melanie told me she paints",
                 "i painted with melanie yesterday", "no mention here", ""):
        assert not addressed_only(text, "melanie"), text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.sampled_from(["melanie", "jon", "anna maria", "o'neil"]))
def test_address_is_only_judged_where_the_name_occurs(text, name):
    from magi_desktop.core.retrieval.address import addressed_only

    text = text.casefold()
    if addressed_only(text, name):
        assert name in text


def test_a_reply_addressing_a_person_does_not_outrank_their_own_words(memory):
    # Mel's own turn answers; Caro's replies only address her ("Wow, Mel!") yet shared the named-person
    # bonus and, being newer and alike, led the pack.
    turns = [chat("Mel: camping with the kids is the best part of my summer", session="a", at=APRIL),
             chat("Mel: see you soon", session="a", at=APRIL + 30),
             chat("Mel: bye for now", session="a", at=APRIL + 60)]
    turns += [chat(f"Caro: Wow, Mel! That summer sounds great, {word}", session=f"b{i}", at=APRIL + (i + 1) * 600)
              for i, word in enumerate(("really", "truly", "honestly", "totally", "so fun"))]
    memory.ingest_many(turns)
    memory.process_pending()
    pack = memory.query("What does Mel do in the summer?", now=APRIL + 86400, limit=5)
    assert pack.trace["entities"] == ["mel"]
    assert pack.findings[0].text.startswith("Mel: camping")
