"""L3 summaries and insights (architecture §7): windows, compression, links, idempotence, retrieval."""
# Raw SQL left sets up states no API reaches: an empty L2 queue, and one linked event row deleted under L3.

from datetime import datetime

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.l3.compress import compress, quotas
from magi_desktop.core.l3.windows import closed_windows, window_of
from magi_desktop.core.llm import ScriptedLLM
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.core.store.summaries import cited_sources, stored_summaries
from magi_desktop.core.store.tables import row_count

HOUR, DAY = 3600.0, 86400.0
# A Monday at local midnight, so the synthetic week is one calendar week wherever the tests run.
MONDAY = datetime(2026, 3, 2).timestamp()


def test_compression_keeps_quiet_sources_and_damps_busy_ones():
    assert quotas({"chrome": 800, "chat": 3}) == {"chrome": 47, "chat": 3}
    assert 30 <= quotas({"chrome": 800, "chat": 3})["chrome"] <= 50
    many = quotas({f"s{i}": 1000 for i in range(10)})
    assert sum(many.values()) <= 120 and min(many.values()) >= 4
    events = [("chrome", f"site{i % 60}") for i in range(800)] + [("chat", "hello"), ("chat", "tea"), ("chat", "x")]
    kept = compress(events, source=lambda e: e[0], key=lambda e: e[1])
    assert sum(1 for e in kept if e[0] == "chat") == 3
    assert sum(1 for e in kept if e[0] == "chrome") == 47
    assert len({e[1] for e in kept if e[0] == "chrome"}) == 47       # distinct pages before repeats


def test_windows_are_local_calendar_windows():
    start, end, key = window_of("week", MONDAY + 3 * DAY + 5 * HOUR)
    assert (start, key) == (MONDAY, "week:2026-W10") and end == datetime(2026, 3, 9).timestamp()
    assert window_of("month", MONDAY)[2] == "month:2026-03"
    days = list(closed_windows("day", MONDAY + 5 * HOUR, MONDAY + 3 * DAY + 1))
    assert [k for _, _, k, _ in days] == ["day:2026-03-02", "day:2026-03-03", "day:2026-03-04"]


def week_of_events():
    """Mixed sensors and chat over one week; a burst of 800 visits and 3 chat turns in one hour on Tuesday."""
    payloads = []
    for day in range(7):
        base = MONDAY + day * DAY
        for i in range(3):
            payloads.append(sensor("git_commit", {"repo": "falcon", "branch": "main", "message": f"step {day}.{i}",
                                                  "files_changed": 2}, source="git", at=base + 10 * HOUR + i * 600,
                                   item=f"g{day}-{i}", entities=[{"mention_text": "falcon", "entity_type": "project"}]))
        payloads.append(sensor("listen_music", {"track_name": "So What", "artist_name": "Miles Davis"},
                               source="music", at=base + 21 * HOUR, item=f"m{day}"))
    burst = MONDAY + DAY + 14 * HOUR
    for i in range(800):
        payloads.append(sensor("visit_page", {"url": f"https://docs.example/p{i % 90}", "title": f"Docs {i % 90}",
                                              "domain": "docs.example"}, source="chrome", at=burst + i * 4,
                               item=f"v{i}"))
    payloads += [chat("I am migrating falcon to the new storage engine.", at=burst + 100, session="w1", item="c1"),
                 chat("I live in Hangzhou.", at=burst + 200, session="w1", item="c2"),
                 chat("The benchmark finally passes.", at=burst + 300, session="w1", item="c3")]
    return payloads


@pytest.fixture
def week(memory):
    memory.ingest_many(week_of_events())
    memory.process_pending()
    # The week replayed as the app's scheduler would have lived it: run_due every six hours.
    for step in range(7 * 4 + 1):
        memory.run_due(now=MONDAY + step * 6 * HOUR + 2 * HOUR)
    return memory


def summaries(memory, granularity=None):
    """(summary_id, granularity, window_key, content, event_count) of the temporal summaries."""
    return [(s.summary_id, s.granularity, s.window_key, s.content, s.event_count)
            for s in stored_summaries(memory.db.reader(), summary_type="temporal", granularity=granularity)]


def links(memory, summary_id):
    return [source for source, _ in cited_sources(memory.db.reader(), summary_id)]


def test_a_week_gets_hour_day_and_week_summaries_linked_to_their_events(week):
    days = summaries(week, "day")
    assert [k for _, _, k, _, _ in days] == [f"day:2026-03-0{d}" for d in range(2, 9)]
    weekly, = summaries(week, "week")
    assert weekly[2] == "week:2026-W10" and weekly[4] == 7 * 4 + 800 + 3
    assert "falcon" in weekly[3] and "chrome 800" in weekly[3]
    hours = summaries(week, "hour")
    assert hours and all(links(week, sid) for sid, *_ in hours + days + [weekly])
    # The burst hour: 800 visits do not drown 3 chat turns — they are one activity block (core/aggregation),
    # cited once and counted as the 800 visits it stands for.
    burst, = [h for h in hours if h[2] == "hour:2026-03-03T14"]
    sources = links(week, burst[0])
    assert sources.count("chat") == 3 and sources.count("chrome") == 1
    assert "chrome 800" in burst[3] and burst[4] == 803
    assert "I live in Hangzhou." in burst[3]
    tuesday = next(d for d in days if d[2] == "day:2026-03-03")
    assert "docs.example" in tuesday[3]


def test_a_day_sees_the_previous_day_and_says_what_continues(week):
    wednesday = next(d for d in summaries(week, "day") if d[2] == "day:2026-03-04")
    assert "Continuing: falcon" in wednesday[3]


def test_running_again_or_after_a_restart_writes_no_window_twice(week, tmp_path):
    before = summaries(week)
    again = week.run_due(now=MONDAY + 7 * DAY + 3 * HOUR)
    assert all(v == 0 for k, v in again["l3"].items() if k != "insights")
    path = week.path.parent
    week.close()
    with Memory.open(path, embedder="hashing") as reopened:
        reopened.run_due(now=MONDAY + 7 * DAY + 5 * HOUR)
        assert summaries(reopened) == before


def test_a_late_event_regenerates_its_window(week):
    sunday = next(d for d in summaries(week, "day") if d[2] == "day:2026-03-08")
    week.ingest(chat("I finished the migration of falcon.", at=MONDAY + 6 * DAY + 20 * HOUR, session="w9"))
    week.run_due(now=MONDAY + 7 * DAY + 4 * HOUR)
    updated = next(d for d in summaries(week, "day") if d[2] == "day:2026-03-08")
    assert updated[0] == sunday[0] and updated[4] == sunday[4] + 1 and "finished the migration" in updated[3]
    weekly, = summaries(week, "week")
    assert weekly[4] == 7 * 4 + 800 + 3 + 1


def test_what_was_i_busy_with_last_week_is_answered_from_l3(week):
    pack = week.query("What was I busy with last week?", now=MONDAY + 7 * DAY + 2 * HOUR)
    assert pack.query_mode == "activity_summary"
    first = pack.findings[0]
    assert first.layer == "L3" and "week" in first.text and "falcon" in first.text
    assert len(first.supporting_event_ids) == 20
    stored = {r["event_id"] for r in event_rows(week.db.reader())}
    assert set(first.supporting_event_ids) <= stored
    # Before the week closed there is no week summary to find.
    early = week.query("What was I busy with this week?", now=MONDAY + 3 * DAY)
    assert not any("[temporal · week]" in f.text for f in early.findings)


def test_insights_state_change_trend_and_task_reflection(memory):
    memory.ingest(chat("Hello again.", at=MONDAY - 40 * DAY, session="early"))   # the memory reaches back 8 weeks
    memory.ingest(chat("I live in Shanghai.", at=MONDAY, session="a", item="s1"))
    memory.ingest(chat("I moved to Jiaxing.", at=MONDAY + 10 * DAY, session="b", item="s2"))
    for i, text in enumerate(["Can you help me plan the falcon release?", "Sure, what is the date?",
                              "The release is on Friday.", "Then freeze features on Wednesday.",
                              "I will tell the team.", "Good luck with the release!"]):
        memory.ingest(chat(text, role="user" if i % 2 == 0 else "assistant", at=MONDAY + 12 * DAY + i * 60,
                           session="plan"))
    for i in range(30):
        memory.ingest(sensor("visit_page", {"url": f"https://x.example/{i}"}, source="chrome",
                             at=MONDAY + 20 * DAY + i * 3600, item=f"t{i}"))
    memory.process_pending()
    report = memory.run_due(now=MONDAY + 30 * DAY)["l3"]["insights"]
    # The state change was written when L2 reconciled it (process_pending); the others by the schedule.
    assert report["state_change"] == 0 and report["task_reflection"] == 1 and report["trend"] == 1
    rows = {s.summary_category: s.title for s in stored_summaries(memory.db.reader(), summary_type="insight")}
    assert "Shanghai to Jiaxing" in rows["state_change"]
    assert "falcon release" in rows["task_reflection"]
    assert "chrome activity rose" in rows["trend"]
    change_id = stored_summaries(memory.db.reader(), category="state_change")[0].summary_id
    assert sorted(item for _, item in cited_sources(memory.db.reader(), change_id)) == ["s1", "s2"]
    assert memory.run_due(now=MONDAY + 30 * DAY + HOUR)["l3"]["insights"] == {
        "state_change": 0, "contradiction_resolved": 0, "trend": 0, "task_reflection": 0}
    pack = memory.query("how did where I live change?", now=MONDAY + 30 * DAY)
    assert any(f.layer == "L3" and "Jiaxing" in f.text for f in pack.findings)


def test_with_an_llm_the_summarizer_writes_the_prose_and_the_links_stay(tmp_path):
    answer = {"summary": "A quiet morning: two commits to falcon.", "topics": ["falcon"]}
    llm = ScriptedLLM([("l3_window_summary", "falcon", answer), ("l3_window_summary", "falcon", answer)])
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=llm)
    with memory.db.transaction() as conn:   # keep the L2 projection out of this test's script
        conn.execute("DELETE FROM l2_projection_jobs")
    for i in range(2):
        memory.ingest(sensor("git_commit", {"repo": "falcon", "message": f"c{i}"}, source="git",
                             at=MONDAY + 9 * HOUR + i * 60, item=f"c{i}"))
    with memory.db.transaction() as conn:
        conn.execute("DELETE FROM l2_projection_jobs")
    memory.run_due(now=MONDAY + DAY + HOUR)
    assert llm.finished                           # the hour and the day
    day, = summaries(memory, "day")
    assert day[3] == "A quiet morning: two commits to falcon." and len(links(memory, day[0])) == 2
    memory.close()


def test_forgetting_an_event_removes_its_links(week):
    sid = summaries(week, "day")[0][0]
    before = len(links(week, sid))
    with week.db.transaction() as conn:
        conn.execute("DELETE FROM fact_events WHERE id = (SELECT event_rowid FROM summary_event_links "
                     "WHERE summary_id = ? LIMIT 1)", (sid,))
    assert len(links(week, sid)) == before - 1


def test_a_week_that_kept_coming_back_to_something_gets_a_thematic_summary(week):
    themes = {s.title.split(" — ")[0]: (s.summary_id, s.content)
              for s in stored_summaries(week.db.reader(), summary_type="thematic")}
    assert set(themes) == {"falcon", "docs.example", "Miles Davis"}
    sid, content = themes["falcon"]
    assert "22 events on 7 day(s) — git 21, chat 1" in content
    assert len(links(week, sid)) == sum(quotas({"git": 21, "chat": 1}).values()) == 12   # representative events
    assert "800 events on 1 day(s)" in themes["docs.example"][1]
    assert len(links(week, themes["docs.example"][0])) <= 60        # its links are compressed too
    pack = week.query("summarize what happened with falcon", now=MONDAY + 7 * DAY + 2 * HOUR)
    assert any(f.layer == "L3" and "[thematic" in f.text for f in pack.findings)


def test_summaries_are_embedded_and_found_by_meaning(week):
    week.process_pending()
    count = row_count(week.db.reader(), "summary_vectors")
    assert count == row_count(week.db.reader(), "l3_summaries")
    pack = week.query("give me a recap of the music I played", now=MONDAY + 7 * DAY + 2 * HOUR)
    assert any("l3_vector" in f.paths for f in pack.findings if f.layer == "L3")


def test_a_state_change_becomes_an_insight_as_soon_as_l2_reconciles_it(memory):
    memory.ingest(chat("I live in Shanghai.", at=MONDAY, session="a", item="s1"))
    memory.ingest(chat("I moved to Jiaxing.", at=MONDAY + 10 * DAY, session="b", item="s2"))
    memory.process_pending()                                 # no run_due: the L2 callback writes it
    title, = [s.title for s in stored_summaries(memory.db.reader(), category="state_change")]
    assert "Shanghai to Jiaxing" in title


def test_summary_type_is_a_hard_filter(week):
    week.ingest(chat("I live in Shanghai.", at=MONDAY, session="x"))
    week.ingest(chat("I moved to Jiaxing.", at=MONDAY + 2 * DAY, session="y"))
    week.process_pending()
    now = MONDAY + 7 * DAY + 2 * HOUR
    insights = week.query("what changed about falcon and where I live?", now=now, summary_type="insight")
    l3 = [f for f in insights.findings if f.layer == "L3"]
    assert l3 and all(f.text.startswith("[insight") for f in l3) and l3 == insights.findings[:len(l3)]
    temporal = week.query("what was I busy with?", now=now, summary_type="temporal")
    assert all(f.text.startswith("[temporal") for f in temporal.findings if f.layer == "L3")
    with pytest.raises(ValueError, match="summary type"):
        week.query("x", summary_type="weekly")


def test_no_trend_before_the_memory_covers_both_periods(memory):
    for i in range(30):
        memory.ingest(sensor("visit_page", {"url": f"https://x.example/{i}"}, source="chrome",
                             at=MONDAY + i * 3600, item=f"t{i}"))
    assert memory.run_due(now=MONDAY + 10 * DAY)["l3"]["insights"]["trend"] == 0


def test_a_late_back_fill_of_old_history_gets_its_days_weeks_and_months_without_asking_the_model(tmp_path):
    answer = {"summary": "A quiet morning: two commits to falcon.", "topics": ["falcon"]}
    llm = ScriptedLLM([("l3_window_summary", "falcon", answer), ("l3_window_summary", "falcon", answer)])
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=llm)
    now = MONDAY + 200 * DAY + HOUR
    for i in range(2):
        memory.ingest(sensor("git_commit", {"repo": "falcon", "message": f"c{i}"}, source="git",
                             at=now - DAY + 9 * HOUR - DAY + i * 60, item=f"c{i}"))
    with memory.db.transaction() as conn:   # keep the L2 projection out of this test's script
        conn.execute("DELETE FROM l2_projection_jobs")
    memory.run_due(now=now)
    assert llm.finished and len(summaries(memory, "day")) == 1           # yesterday's hour and day: the model's
    # A year of history arrives later (a collector's back-fill), 200 days before the runs so far: its windows
    # are summarised extractively (the scripted model would fail loudly if asked), weeks and months on top.
    memory.ingest_many([sensor("git_commit", {"repo": "heron", "message": f"old {i}"}, source="git",
                               at=MONDAY + i * DAY + 10 * HOUR, item=f"old{i}") for i in range(3)])
    with memory.db.transaction() as conn:
        conn.execute("DELETE FROM l2_projection_jobs")
    memory.run_due(now=now + HOUR)
    old_days = [s for s in summaries(memory, "day") if s[2] < "day:2026-04"]
    assert [s[2] for s in old_days] == ["day:2026-03-02", "day:2026-03-03", "day:2026-03-04"]
    assert all("heron" in s[3] for s in old_days)
    assert any(s[2] == "week:2026-W10" for s in summaries(memory, "week"))
    assert any(s[2] == "month:2026-03" for s in summaries(memory, "month"))
    assert memory.run_due(now=now + 2 * HOUR).l3 == {"hour": 0, "day": 0, "week": 0, "month": 0, "insights": {
        "state_change": 0, "contradiction_resolved": 0, "trend": 0, "task_reflection": 0}}     # done once
    memory.close()
