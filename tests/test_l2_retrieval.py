"""L2 in the evidence pack: grounding, current vs history as of now, assertions, graph spreading, episodes."""
# Raw SQL left: an event row deleted under L2 without the forget path, to see its edge's vector go.

from payloads import chat

from magi_desktop.core.retrieval.paths import QueryContext
from magi_desktop.core.retrieval.structured import L2Graph, ground
from magi_desktop.core.retrieval.temporal import TemporalIntent
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.tables import row_count
from magi_desktop.core.store.vectors import edges_without_vectors

DAY = 86400.0
T0 = 1_760_000_000.0


def l2(pack):
    return [f for f in pack.findings if f.layer == "L2"]


def moved(memory):
    memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
    memory.ingest(chat("I moved from Shanghai to Jiaxing.", at=T0 + 30 * DAY, session="s2", item="e2"))
    memory.process_pending()


def test_the_current_home_leads_and_cites_its_event(memory):
    moved(memory)
    pack = memory.query("Where do I live now?", now=T0 + 40 * DAY)
    top = pack.findings[0]
    assert top.layer == "L2" and top.status == "current" and "Jiaxing" in top.text
    assert top.supporting_source_item_ids == ["e2"]
    assert all(f.status == "current" for f in l2(pack))       # "now" questions get no history rows
    assert any("'current' holds" in hint for hint in pack.answering_hints)
    assert pack.to_dict()["findings"][0]["status"] == "current"


def test_history_is_there_when_asked_for(memory):
    moved(memory)
    pack = memory.query("Where did I live before?", now=T0 + 40 * DAY)
    first = l2(pack)[0]                                         # asked about the past: history ranks first
    assert first.status == "history" and "Shanghai" in first.text and "replaced by Jiaxing" in first.text
    assert first.supporting_source_item_ids == ["e1"]
    zh = memory.query("我以前住在哪里？", now=T0 + 40 * DAY)
    assert l2(zh)[0].status == "history" and "Shanghai" in l2(zh)[0].text


def test_as_of_a_past_now_the_old_home_was_current(memory):
    moved(memory)
    pack = memory.query("Where do I live?", now=T0 + 10 * DAY)
    assert [(f.status, "Shanghai" in f.text) for f in l2(pack)][0] == ("current", True)
    assert all("Jiaxing" not in f.text for f in pack.findings)


def test_a_passing_state_is_current_only_until_it_lapses(memory):
    memory.ingest(chat("I'm so stressed today.", at=T0, item="s"))
    memory.process_pending()
    fresh = memory.query("Am I stressed?", now=T0 + 3600)
    assert any(f.status == "current" and "stress = high" in f.text for f in l2(fresh))
    later = memory.query("Am I stressed now?", now=T0 + 3 * DAY)
    assert later.query_mode == "current_state"
    assert not [f for f in l2(later) if "stress" in f.text]
    memory.run_due(now=T0 + 3 * DAY)
    history = memory.query("Was I stressed before?", now=T0 + 3 * DAY)
    assert any(f.status == "history" and "expired" in f.text for f in l2(history))


def test_a_named_speaker_is_the_subject(memory):
    memory.ingest(chat("I live in Boston these days.", speaker="Caroline", at=T0, item="c1"))
    memory.ingest(chat("I live in Austin.", speaker="Melanie", at=T0 + 60, item="m1"))
    memory.process_pending()
    pack = memory.query("Where does Caroline live?", now=T0 + DAY)
    assert pack.findings[0].layer == "L1"                      # in fact mode her own words lead…
    assert "Caroline lives in Boston" in l2(pack)[0].text      # …and the derived fact follows
    assert all("Austin" not in f.text for f in l2(pack))
    now = memory.query("Where does Caroline live now?", now=T0 + DAY)
    assert "Caroline lives in Boston" in now.findings[0].text  # "now" questions: the current fact leads


def test_l2_findings_come_on_top_of_the_limit(memory):
    memory.ingest_many([chat(f"I live in Shanghai, note {i}.", at=T0 + i, item=f"n{i}", session=f"s{i}")
                        for i in range(4)])
    memory.process_pending()
    pack = memory.query("Where do I live?", now=T0 + DAY, limit=2)
    assert [f.layer for f in pack.findings] == ["L1", "L1", "L2"]


def test_a_question_l2_cannot_ground_adds_nothing(memory):
    moved(memory)
    pack = memory.query("What is the capital of Peru?", now=T0 + 40 * DAY)
    assert not l2(pack)


def test_grounding_plan_reads_families_subjects_and_history(memory):
    moved(memory)
    conn = memory.db.reader()
    plan = ground(conn, "我以前住在哪里？", "exact_fact", [], TemporalIntent())
    assert "LIVES_IN" in plan.predicates and plan.history and plan.subject_ids
    plan = ground(conn, "What music do I like now?", "current_state", [], TemporalIntent())
    assert {"LIKES", "LISTENED_TO"} <= plan.predicates and plan.current_only and not plan.history


def test_graph_spreading_follows_edges_between_entities(memory):
    memory.ingest(chat("I'm stressed because of the deadline.", at=T0, item="a"))
    memory.process_pending()
    memory.ingest(chat("The deadline for the report is Friday.", at=T0 + 60, item="b", session="s2"))
    memory.ingest(chat("I'm so stressed.", at=T0 + 120, item="c", session="s3"))
    memory.process_pending()
    conn = memory.db.reader()
    rowid = {item: event_rows(conn, source_item_id=item)[0]["id"] for item in "abc"}
    ctx = QueryContext(text="", terms=[], scopes=("fact_authoritative",), now=T0 + DAY, fetch_k=10)
    spread = L2Graph().spread(conn, ctx, [rowid["c"]])
    assert spread[:2] == [rowid["a"], rowid["b"]]               # stressed <- CAUSED - deadline -> its events
    early = QueryContext(text="", terms=[], scopes=("fact_authoritative",), now=T0 - 1, fetch_k=10)
    assert L2Graph().spread(conn, early, [rowid["c"]]) == []     # the edge did not exist yet


def test_episodes_answer_event_questions(memory):
    memory.ingest_many([chat(f"Repotting the fern, step {i}", at=T0 + i * 60, session="garden", item=f"g{i}")
                        for i in range(5)])
    memory.process_pending(now=T0 + 600)
    memory.run_due(now=T0 + 700)
    pack = memory.query("What happened while repotting the fern?", now=T0 + DAY)
    assert pack.query_mode == "event_stream"
    episode = [f for f in l2(pack) if f.paths == ["l2_episodes"]]
    assert episode and episode[0].supporting_source_item_ids == [f"g{i}" for i in range(5)]


def test_edges_are_embedded_and_found_by_meaning(tmp_path, minilm):
    from magi_desktop.core import Memory

    memory = Memory.open(tmp_path / "m", embedder=minilm)
    memory.ingest(chat("I adopted a kitten named Miso.", at=T0, item="k"))
    memory.process_pending()
    conn = memory.db.reader()
    assert edges_without_vectors(conn, after=0, limit=1) == []
    assert row_count(conn, "edge_vectors") == row_count(conn, "kg_edges") > 0
    # No word of the question names the edge's predicate or object: only its meaning connects them.
    pack = memory.query("Which animal do I take care of?", now=T0 + DAY)
    semantic = [f for f in l2(pack) if "kitten" in f.text or "Miso" in f.text]
    assert semantic and semantic[0].supporting_source_item_ids == ["k"]
    with memory.db.transaction() as w:
        w.execute("DELETE FROM fact_events WHERE source_item_id = 'k'")
    assert row_count(conn, "edge_vectors") == 0
    memory.close()
