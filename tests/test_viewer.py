"""The memory viewer (pytest-qt, offscreen) over a memory filled by the real core."""
# Raw SQL left: states no API reaches: the L2 queue put back to pending, fact rows no code path writes.

import time

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory

pytest.importorskip("pytestqt")

from magi_desktop.ui.models import BELIEF_COLUMNS, ENTITY_COLUMNS, EVENT_COLUMNS, RecordTableModel
from magi_desktop.ui.qt import QApplication, QMessageBox, QTimer
from magi_desktop.ui.tasks import TaskRunner
from magi_desktop.ui.viewer import ViewerWindow

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


def test_ask_marks_the_findings_that_do_not_answer(qtbot, viewer):
    viewer.tabs.setCurrentWidget(viewer.ask)
    viewer.ask.question.setText("Where does my sister live?")     # nothing says; the user's homes are related
    with qtbot.waitSignal(viewer.ask.answered, timeout=20_000) as answered:
        viewer.ask.ask_button.click()
    pack = answered.args[0]
    shown = viewer.ask.result.toPlainText()
    assert pack.status == "insufficient" and pack.findings and not any(f.answers for f in pack.findings)
    assert "Insufficient evidence" in shown and "only related" in shown
    assert shown.count("related: does not answer") == len(pack.findings)
    viewer.ask.question.setText("where do I live?")
    with qtbot.waitSignal(viewer.ask.answered, timeout=20_000) as answered:
        viewer.ask.ask_button.click()
    pack = answered.args[0]
    shown = viewer.ask.result.toPlainText()
    assert shown.count("related: does not answer") == sum(not f.answers for f in pack.findings) < len(pack.findings)


SISTER = "Please note: my sister's name is Anna, and she lives in Suzhou."


def remember_sister(memory):
    """A stated fact whose quoted message was recorded (item m1), and one kept from before evidence types."""
    memory.ingest(chat(SISTER, at=time.time() - DAY, session="s9", item="m1"))
    stated = memory.remember("my sister's name is Anna", "The user's sister is called Anna.",
                             [{"id": "m1", "role": "user", "text": SISTER, "provenance": "human_input"}],
                             category="relation", session_id="s9")
    with memory.db.transaction() as conn:          # no API makes a fact without proof: an old row has none
        unknown = conn.execute("INSERT INTO memory_facts (content, created_at, updated_at) VALUES "
                               "('The user has a cat.', 0, 0)").lastrowid
    return stated, unknown


def fact_cell(page, fact_id, header):
    row = next(i for i, f in enumerate(page.model.records) if f["fact_id"] == fact_id)
    column = next(i for i, c in enumerate(page.model.columns) if c.header == header)
    return page.model.data(page.model.index(row, column))


def answer_next_question(button):
    """Click ``button`` in the next message box that opens (a real dialog, answered from the event loop)."""
    def click():
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            box.button(button).click()
        else:
            QTimer.singleShot(10, click)
    QTimer.singleShot(0, click)


def test_remembered_facts_are_listed_apart_from_the_facts_beliefs_with_their_evidence(qtmodeltester, viewer, filled):
    stated, unknown = remember_sister(filled)
    viewer.refresh()
    tabs = [viewer.tabs.tabText(i) for i in range(viewer.tabs.count())]
    assert "Facts" in tabs and "Remembered" in tabs and "Forgotten" in tabs
    page = viewer.remembered
    qtmodeltester.check(page.model)
    assert [f["fact_id"] for f in page.model.records] == [stated, unknown]      # newest saved first
    assert fact_cell(page, stated, "Evidence") == "stated — the user said it"
    assert fact_cell(page, stated, "Quote") == "my sister's name is Anna"
    assert fact_cell(page, unknown, "Evidence") == "unknown — no proof kept"
    assert not any(b.value == "The user's sister is called Anna." for b in viewer.pages["facts"].model.records)
    page.search.setText("cat")
    assert [f["fact_id"] for f in page.model.records] == [unknown]


def test_a_remembered_fact_shows_its_quote_and_the_messages_behind_it(qtmodeltester, viewer, filled):
    stated, unknown = remember_sister(filled)
    filled.ingest(chat("Yes, that's right.", at=time.time() - DAY + 60, session="s9", item="m2"))
    with filled.db.transaction() as conn:          # as an accepted fact would be kept (no API makes one yet)
        conn.execute("UPDATE memory_facts SET evidence_type = 'accepted', accepting_message_id = 'm2' "
                     "WHERE fact_id = ?", (stated,))
    viewer.refresh()
    page = viewer.remembered
    assert not page.delete_button.isEnabled()
    page.select_fact(stated)
    assert "accepted — the user accepted the agent's conclusion" in page.summary.text()
    assert page.quote.text() == "Quote: “my sister's name is Anna”"
    qtmodeltester.check(page.messages)
    said, accepted = page.messages.records
    assert said["part"] == "raised it" and said["source_item_id"] == "m1"
    assert page.messages.data(page.messages.index(0, 5)).endswith(SISTER)
    assert accepted["part"] == "accepted it"
    assert page.messages.data(page.messages.index(1, 5)).endswith("Yes, that's right.")
    assert page.missing.text() == "" and page.delete_button.isEnabled()
    page.select_fact(unknown)
    assert page.messages.records == [] and page.missing.text() == "No message was kept as proof."


def test_deleting_a_remembered_fact_asks_first_and_removes_it_from_the_active_list(qtbot, viewer, filled):
    stated, unknown = remember_sister(filled)
    viewer.refresh()
    page = viewer.remembered
    page.select_fact(stated)
    answer_next_question(QMessageBox.StandardButton.No)
    page.delete_button.click()
    viewer.runner.wait()
    assert [f["fact_id"] for f in filled.facts()] == [stated, unknown]       # said no: nothing deleted
    answer_next_question(QMessageBox.StandardButton.Yes)
    page.delete_button.click()
    qtbot.waitUntil(lambda: [f["fact_id"] for f in page.model.records] == [unknown])
    assert [f["fact_id"] for f in filled.facts()] == [unknown]
    assert [f["fact_id"] for f in filled.facts(status="deleted")] == [stated]
    assert "deleted the remembered fact" in viewer.statusBar().currentMessage()
    page.status.setCurrentIndex(page.status.findData("deleted"))
    page.select_fact(stated)
    assert fact_cell(page, stated, "Status") == "deleted" and not page.delete_button.isEnabled()


def test_a_forget_receipt_is_listed_with_its_criteria_and_counts(qtmodeltester, viewer, filled):
    assert viewer.forgotten.model.records == []
    assert viewer.forgotten.summary.text() == "Nothing has been forgotten."
    receipt = filled.forget(source_item_ids=["e3"])
    viewer.refresh()
    page = viewer.forgotten
    qtmodeltester.check(page.model)
    qtmodeltester.check(page.counts)
    assert [r["receipt_id"] for r in page.model.records] == [receipt["receipt_id"]]
    assert page.model.data(page.model.index(0, 1)) == "1 chosen item(s)"     # the receipt keeps no item id
    assert page.model.data(page.model.index(0, 2)) == "1"
    assert page.model.data(page.model.index(0, 4)) == "done"                  # the scrub
    assert page.model.data(page.model.index(0, 3)).startswith("recorded events: 1, ")
    page.table.selectRow(0)
    counts = {c["what"]: c["count"] for c in page.counts.records}
    assert counts["recorded events"] == 1 and counts["evidence behind beliefs"] >= 1
    assert sum(counts.values()) == sum(receipt["removed"].values())
    assert "1 chosen item(s)" in page.summary.text() and "1 event(s)" in page.summary.text()
    assert "e3" not in page.summary.text()
    assert ("likes", "jazz") not in values(viewer.pages["assertions"])      # what it alone supported went too
