"""The memory viewer (pytest-qt, offscreen) over a memory filled by the real core."""

import time

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory

pytest.importorskip("pytestqt")

from magi_desktop.ui.models import BELIEF_COLUMNS, ENTITY_COLUMNS, EVENT_COLUMNS, RecordTableModel  # noqa: E402
from magi_desktop.ui.tasks import TaskRunner  # noqa: E402
from magi_desktop.ui.viewer import ViewerWindow  # noqa: E402

DAY = 86400.0
T0 = time.time() - 40 * DAY


@pytest.fixture
def filled(tmp_path):
    memory = Memory.open(tmp_path / "data", embedder="hashing")
    memory.ingest(chat("I live in Shanghai.", at=T0, item="e1"))
    memory.ingest(chat("I moved to Jiaxing.", at=T0 + 30 * DAY, session="s2", item="e2"))
    memory.ingest(chat("I love jazz.", at=T0 + 31 * DAY, session="s3", item="e3"))
    memory.ingest(sensor("visit_page", {"url": "https://jazz.example/a", "title": "Jazz"}, source="chrome",
                         at=time.time() - DAY, item="v1"))
    memory.process_pending()
    yield memory
    memory.close()


@pytest.fixture
def viewer(qtbot, filled):
    runner = TaskRunner()
    window = ViewerWindow(filled, runner)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    yield window
    runner.wait()


def values(page):
    return [(b.relation, b.value) for b in page.model.records]


def select(page, value):
    row = next(i for i, b in enumerate(page.model.records) if b.value == value)
    page.table.selectRow(row)
    return page.model.records[row]


def test_every_model_passes_the_model_tester(qtmodeltester, viewer):
    for page in viewer.pages.values():
        qtmodeltester.check(page.model)
        qtmodeltester.check(page.events)
    qtmodeltester.check(viewer.entities.model)
    empty = RecordTableModel(BELIEF_COLUMNS)
    qtmodeltester.check(empty)
    assert ENTITY_COLUMNS and EVENT_COLUMNS


def test_the_viewer_lists_assertions_and_filters_them(viewer):
    page = viewer.pages["assertions"]
    assert set(values(page)) == {("lives_in", "Jiaxing"), ("likes", "jazz")}
    page.state.setCurrentIndex(page.state.findData("history"))
    assert values(page) == [("lives_in", "Shanghai")]
    page.state.setCurrentIndex(page.state.findText("All"))
    page.entity.setText("jazz")
    assert values(page) == [("likes", "jazz")]
    page.entity.setText("")
    page.source.setCurrentIndex(page.source.findData("chrome"))
    assert values(page) == []
    assert [(b.relation, b.value) for b in viewer.pages["facts"].model.records if b.state == "current"]


def test_the_evidence_trail_shows_the_events_behind_a_belief(viewer):
    page = viewer.pages["assertions"]
    select(page, "Jiaxing")
    events = page.events.records
    assert [e["source_item_id"] for e in events] == ["e2"]
    assert page.events.data(page.events.index(0, 4)).endswith("I moved to Jiaxing.")
    assert page.events.data(page.events.index(0, 3)) == "user_self_report"
    assert "Replaced: Shanghai" in page.history.text()
    assert "Jiaxing" in page.summary.text() and "current" in page.summary.text()


def test_confirm_correct_delete_change_the_database_and_survive_a_restart(qtbot, viewer, filled):
    page = viewer.pages["assertions"]
    select(page, "jazz")
    page.confirm_button.click()
    qtbot.waitUntil(lambda: filled.beliefs("assertions", entity="jazz")[0].confirmed_at is not None)
    qtbot.waitUntil(lambda: viewer.undo_action.isEnabled())
    select(page, "Jiaxing")
    page.correct_selected("Hangzhou")
    qtbot.waitUntil(lambda: ("lives_in", "Hangzhou") in values(page))
    select(page, "jazz")
    page.delete_button.click()
    qtbot.waitUntil(lambda: ("likes", "jazz") not in values(page))
    assert len(viewer.undo_stack) == 3
    path = filled.path.parent
    viewer.runner.wait()
    with Memory.open(path, embedder="hashing") as again:
        current = {(b.relation, b.value) for b in again.beliefs("assertions", state="current")}
        assert current == {("lives_in", "Hangzhou")}
        assert [b.value for b in again.beliefs("assertions", state="denied")] == ["jazz"]


def test_undo_until_the_window_closes(qtbot, viewer, filled):
    page = viewer.pages["assertions"]
    select(page, "jazz")
    page.delete_button.click()
    qtbot.waitUntil(lambda: ("likes", "jazz") not in values(page))
    viewer.undo_action.trigger()
    qtbot.waitUntil(lambda: ("likes", "jazz") in values(page))
    assert viewer.undo_stack == [] and not viewer.undo_action.isEnabled()
    select(page, "jazz")
    page.delete_button.click()
    qtbot.waitUntil(lambda: viewer.undo_action.isEnabled())
    viewer.close()
    assert not viewer.undo_action.isEnabled() and viewer.undo_stack == []
    assert filled.beliefs("assertions", state="denied")[0].value == "jazz"


def test_a_deleted_belief_stays_deleted_when_the_evidence_is_processed_again(qtbot, viewer, filled):
    page = viewer.pages["assertions"]
    select(page, "jazz")
    page.delete_button.click()
    qtbot.waitUntil(lambda: ("likes", "jazz") not in values(page))
    with filled.db.transaction() as conn:
        conn.execute("UPDATE l2_projection_jobs SET state = 'pending', attempts = 0, next_attempt_at = 0")
    filled.process_pending()
    viewer.refresh()
    assert ("likes", "jazz") not in values(page)


def test_entities_timeline_and_ask(qtbot, viewer):
    viewer.tabs.setCurrentWidget(viewer.entities)
    names = [e["name"] for e in viewer.entities.model.records]
    assert "Jiaxing" in names
    chart = viewer.timeline.chart
    assert len(chart.days) == 14 and chart.total(chart.days[-2]) + chart.total(chart.days[-1]) >= 1
    assert "chrome" in chart.series
    viewer.tabs.setCurrentWidget(viewer.ask)
    viewer.ask.question.setText("where do I live?")
    with qtbot.waitSignal(viewer.ask.answered, timeout=20_000) as answered:
        viewer.ask.ask_button.click()
    assert answered.args[0].findings
    assert "Jiaxing" in viewer.ask.result.toPlainText()
