"""The memory viewer: what the memory believes and why, and the user's confirm / correct / delete;
what agents remembered and what was forgotten (their pages are in :mod:`.remembered`).

Reads go through ``Memory`` on the UI thread (read connections, small pages);
every write (an action, a question that may load the model) runs on the task
pool and refreshes the pages when it is done. Actions can be undone, newest
first, until the window closes.
"""

from __future__ import annotations

from datetime import date

from ..core import Memory
from .models import (
    BELIEF_COLUMNS,
    ENTITY_COLUMNS,
    EVENT_COLUMNS,
    RecordTableModel,
    record_table,
    shown,
    shown_action,
    shown_html,
    shown_rich,
    when,
)
from .qt import (
    QAbstractItemView,
    QAction,
    QComboBox,
    QInputDialog,
    QKeySequence,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPushButton,
    Qt,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
    Signal,
)
from .remembered import ForgottenPage, RememberedPage
from .tasks import TaskRunner
from .timeline import TimelineChart
from .widgets import boxed, choice_box, in_a_column, in_a_row, search_box, split, wrapped_label

STATE_CHOICES = [("Current", "current"), ("History", "history"), ("Deleted", "denied"), ("All", None)]
TITLES = {"assertions": "Assertions", "facts": "Facts", "relationships": "Relationships"}
TIMELINE_DAYS = 14


class BeliefPage(QWidget):
    """One category of beliefs: filters, the table, and the selected belief's evidence trail."""

    acted = Signal(int, str)        # review id, what was done ("confirmed Jiaxing")

    def __init__(self, memory: Memory, runner: TaskRunner, category: str, parent=None):
        super().__init__(parent)
        self.memory, self.runner, self.category = memory, runner, category
        self.state = choice_box(STATE_CHOICES)
        self.entity = search_box("Entity or alias…")
        self.source = QComboBox()
        self.model = RecordTableModel(BELIEF_COLUMNS, self)
        self.table = record_table(self.model, "Last seen", descending=True)
        self.events = RecordTableModel(EVENT_COLUMNS, self)
        self.events_view = record_table(self.events, "Time")
        self.events_view.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.summary = wrapped_label("Select a row to see the evidence behind it.", text_format=Qt.TextFormat.RichText)
        self.history = wrapped_label()
        self.confirm_button = QPushButton("Confirm")
        self.confirm_button.setToolTip("It is right: keep it as stable, confirmed by you")
        self.correct_button = QPushButton("Correct…")
        self.correct_button.setToolTip("Give the right value; it replaces this one as your own statement")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("It is wrong: remove it; the same evidence will not bring it back")

        filters = in_a_row(QLabel("Show"), self.state, self.entity, self.source, stretch=self.entity)
        actions = in_a_row(self.summary, self.confirm_button, self.correct_button, self.delete_button,
                           stretch=self.summary)
        detail = boxed(actions, QLabel("Evidence — the recorded events behind it:"), self.events_view, self.history,
                       stretch=self.events_view)
        splitter = split(self.table, detail)
        in_a_column(self, filters, splitter, stretch=splitter)

        self.state.currentIndexChanged.connect(self.refresh)
        self.entity.textChanged.connect(self.refresh)
        self.source.currentIndexChanged.connect(self.refresh)
        self.table.selectionModel().selectionChanged.connect(self.show_selected)
        self.confirm_button.clicked.connect(self.confirm_selected)
        self.correct_button.clicked.connect(self.ask_correction)
        self.delete_button.clicked.connect(self.delete_selected)
        self._set_actions(None)

    # ------------------------------------------------------------------ data

    def set_sources(self, sources: list[str]) -> None:
        chosen = self.source.currentData()
        self.source.blockSignals(True)
        self.source.clear()
        self.source.addItem("All sources", None)
        for source in sources:
            self.source.addItem(source, source)
        index = self.source.findData(chosen)
        self.source.setCurrentIndex(max(0, index))
        self.source.blockSignals(False)

    def refresh(self) -> None:
        selected = self.selected()
        beliefs = self.memory.beliefs(self.category, state=self.state.currentData(),
                                      entity=self.entity.text().strip() or None, source=self.source.currentData())
        self.model.set_records(beliefs)
        self.table.resizeColumnsToContents()
        keys = [b.key for b in beliefs]
        if selected is not None and selected.key in keys:
            self.table.selectRow(keys.index(selected.key))
        else:
            self.show_selected()

    def selected(self):
        rows = self.table.selectionModel().selectedRows()
        return self.model.record(rows[0].row()) if rows else None

    def select_key(self, key: str) -> bool:
        for row, belief in enumerate(self.model.records):
            if belief.key == key:
                self.table.selectRow(row)
                return True
        return False

    def show_selected(self, *_args) -> None:
        belief = self.selected()
        self._set_actions(belief)
        if belief is None:
            self.summary.setText("Select a row to see the evidence behind it.")
            self.events.set_records([])
            self.history.setText("")
            return
        trail = self.memory.evidence_trail(belief.key)
        if trail is None:            # gone since the list was read
            self.events.set_records([])
            return
        self.summary.setText(
            f"<b>{shown_html(belief.subject)}</b> {shown_html(belief.relation.replace('_', ' ').lower())} "
            f"<b>{shown_html(belief.value)}</b> — {belief.state} ({shown_html(belief.status)}), "
            f"confidence {belief.confidence:.2f}, {belief.observations} observation(s), "
            f"first {when(belief.first_observed_at)}, last {when(belief.last_observed_at)}"
            + (f"; confirmed by you {when(belief.confirmed_at)}" if belief.confirmed_at else ""))
        self.events.set_records(trail["events"])
        self.events_view.resizeColumnsToContents()
        lines = []
        if trail["replaced"]:
            lines.append("Replaced: " + "; ".join(f"{b.value} ({b.status})" for b in trail["replaced"]))
        if trail["replaced_by"] is not None:
            lines.append(f"Replaced by: {trail['replaced_by'].value} ({trail['replaced_by'].status})")
        for review in trail["reviews"]:
            undone = f", undone {when(review['undone_at'])}" if review["undone_at"] else ""
            lines.append(f"You {review['action']}ed this on {when(review['created_at'])}{undone}"
                         .replace("deleteed", "deleted").replace("correcteded", "corrected"))
        self.history.setText(shown("\n".join(lines)))

    def _set_actions(self, belief) -> None:
        live = belief is not None and belief.state != "denied"
        self.confirm_button.setEnabled(live and belief.confirmed_at is None)
        self.correct_button.setEnabled(belief is not None)
        self.delete_button.setEnabled(live)

    # --------------------------------------------------------------- actions

    def confirm_selected(self) -> None:
        belief = self.selected()
        if belief is not None:
            self._run(self.memory.confirm, belief.key, f"confirmed “{belief.value}”")

    def delete_selected(self) -> None:
        belief = self.selected()
        if belief is not None:
            self._run(self.memory.deny, belief.key, f"deleted “{belief.value}”")

    def ask_correction(self) -> None:
        belief = self.selected()
        if belief is None:
            return
        value, ok = QInputDialog.getText(
            self, "Correct",
            shown_rich(f"{belief.subject} {belief.relation.replace('_', ' ').lower()} — the right value:"),
            text=belief.value)
        if ok and value.strip():
            self.correct_selected(value)

    def correct_selected(self, value: str) -> None:
        belief = self.selected()
        if belief is not None:
            self._run(self.memory.correct, belief.key, f"corrected “{belief.value}” to “{value.strip()}”",
                      value.strip())

    def _run(self, action, key: str, description: str, *args) -> None:
        for button in (self.confirm_button, self.correct_button, self.delete_button):
            button.setEnabled(False)
        self.runner.submit(action, key, *args, on_done=lambda review_id: self.acted.emit(review_id, description),
                           on_error=self._failed)

    def _failed(self, message: str) -> None:
        QMessageBox.warning(self, "Magi Desktop", shown_rich(message))
        self.show_selected()


class EntitiesPage(QWidget):
    acted = Signal(int, str)

    def __init__(self, memory: Memory, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self.memory, self.runner = memory, runner
        self.search = search_box("Search names and aliases…")
        self.model = RecordTableModel(ENTITY_COLUMNS, self)
        self.table = record_table(self.model, "Events", descending=True)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.alias_button = QPushButton("Add alias…")
        self.merge_button = QPushButton("Merge selected")
        self.merge_button.setToolTip("Select two entities that are one and the same")
        in_a_column(self, in_a_row(self.search, self.alias_button, self.merge_button, stretch=self.search), self.table,
                    stretch=self.table)
        self.search.textChanged.connect(self.refresh)
        self.alias_button.clicked.connect(self.ask_alias)
        self.merge_button.clicked.connect(self.ask_merge)

    def refresh(self) -> None:
        self.model.set_records(self.memory.entities(self.search.text().strip() or None))
        self.table.resizeColumnsToContents()

    def selected(self) -> list[dict]:
        return [self.model.record(i.row()) for i in self.table.selectionModel().selectedRows()]

    def ask_alias(self) -> None:
        chosen = self.selected()
        if len(chosen) != 1:
            QMessageBox.information(self, "Add alias", "Select one entity.")
            return
        alias, ok = QInputDialog.getText(self, "Add alias", shown_rich(f"Another name for {chosen[0]['name']}:"))
        if ok and alias.strip():
            self.add_alias(chosen[0]["entity_id"], alias.strip())

    def add_alias(self, entity_id: int, alias: str) -> None:
        self.runner.submit(self.memory.add_alias, entity_id, alias, on_done=lambda _: self.acted.emit(0, "alias added"),
                           on_error=lambda m: QMessageBox.warning(self, "Magi Desktop", shown_rich(m)))

    def ask_merge(self) -> None:
        chosen = self.selected()
        if len(chosen) != 2:
            QMessageBox.information(self, "Merge", "Select exactly two entities.")
            return
        keep, drop = sorted(chosen, key=lambda e: -e["events"])
        answer = QMessageBox.question(self, "Merge", shown_rich(f"Merge “{drop['name']}” into “{keep['name']}”? "
                                                                "This cannot be undone."))
        if answer == QMessageBox.StandardButton.Yes:
            self.merge(keep["entity_id"], drop["entity_id"])

    def merge(self, keep: int, drop: int) -> None:
        self.runner.submit(self.memory.merge_entities, keep, drop,
                           on_done=lambda review_id: self.acted.emit(0, "entities merged"),
                           on_error=lambda m: QMessageBox.warning(self, "Magi Desktop", shown_rich(m)))


class TimelinePage(QWidget):
    def __init__(self, memory: Memory, parent=None):
        super().__init__(parent)
        self.memory = memory
        self.chart = TimelineChart()
        self.caption = QLabel("")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"Recorded activity, the last {TIMELINE_DAYS} days, by source"))
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.caption)

    def refresh(self) -> None:
        activity = self.memory.activity_by_day(days=TIMELINE_DAYS)
        self.chart.set_activity(activity, date.today(), TIMELINE_DAYS)
        total = sum(sum(c.values()) for c in activity.values())
        self.caption.setText(f"{total} events from {len(activity)} source(s)" if total else "Nothing recorded yet.")


class AskPage(QWidget):
    answered = Signal(object)

    def __init__(self, memory: Memory, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self.memory, self.runner = memory, runner
        self.question = QLineEdit()
        self.question.setPlaceholderText("Ask your memory… (e.g. where do I live?)")
        self.ask_button = QPushButton("Ask")
        self.result = QTextBrowser()
        self.result.setOpenExternalLinks(False)
        in_a_column(self, in_a_row(self.question, self.ask_button, stretch=self.question), self.result,
                    stretch=self.result)
        self.question.returnPressed.connect(self.ask)
        self.ask_button.clicked.connect(self.ask)

    def ask(self) -> None:
        text = self.question.text().strip()
        if not text:
            return
        self.ask_button.setEnabled(False)
        self.result.setHtml("<i>Searching…</i>")
        self.runner.submit(self.memory.query, text, on_done=self.show_pack, on_error=self._failed)

    def _failed(self, message: str) -> None:
        self.ask_button.setEnabled(True)
        self.result.setHtml(f"<b>Could not answer:</b> {shown_html(message)}")

    def show_pack(self, pack) -> None:
        self.ask_button.setEnabled(True)
        parts = [f"<p><b>{shown_html(pack.summary)}</b></p>"]
        if pack.insufficient_evidence:
            related = " The findings below are only related; they do not answer it." if pack.findings else ""
            parts.append("<p style='color:#b3261e'><b>Insufficient evidence:</b> nothing recorded answers this "
                         f"question.{related}</p>")
        parts.append("<ol>")
        for finding in pack.findings:
            # Like `magi query`: a finding that does not answer is shown as related, greyed, never as an answer.
            meta = " · ".join(x for x in (finding.layer, when(finding.occurred_at), finding.source,
                                          finding.evidence_class, finding.status, finding.kind,
                                          "indirect" if finding.indirect else None,
                                          None if finding.answers else "related: does not answer") if x)
            text = shown_html(finding.text)
            if not finding.answers:
                text = f"<span style='color:#777'>{text}</span>"
            parts.append(f"<li><span style='color:#555'>{shown_html(meta)}</span><br>{text}</li>")
        parts.append("</ol>")
        if pack.answering_hints:
            parts.append("<p><b>Hints</b></p><ul>" + "".join(f"<li>{shown_html(h)}</li>"
                                                             for h in pack.answering_hints)
                         + "</ul>")
        self.result.setHtml("".join(parts))
        self.answered.emit(pack)


class ViewerWindow(QMainWindow):
    """The memory viewer. Its undo history lasts until the window closes."""

    def __init__(self, memory: Memory, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self.memory, self.runner = memory, runner
        self.setWindowTitle("Magi Desktop — memory viewer")
        self.resize(1100, 720)
        self.undo_stack: list[tuple[int, str]] = []
        self.tabs = QTabWidget()
        self.pages = {category: BeliefPage(memory, runner, category) for category in TITLES}
        for category, page in self.pages.items():
            self.tabs.addTab(page, TITLES[category])
            page.acted.connect(self._acted)
        self.remembered = RememberedPage(memory, runner)
        self.remembered.acted.connect(self._acted)
        self.entities = EntitiesPage(memory, runner)
        self.entities.acted.connect(self._acted)
        self.timeline = TimelinePage(memory)
        self.forgotten = ForgottenPage(memory)
        self.ask = AskPage(memory, runner)
        self.tabs.addTab(self.remembered, "Remembered")
        self.tabs.addTab(self.entities, "Entities")
        self.tabs.addTab(self.timeline, "Timeline")
        self.tabs.addTab(self.forgotten, "Forgotten")
        self.tabs.addTab(self.ask, "Ask memory")
        self.tabs.setTabToolTip(self.tabs.indexOf(self.pages["facts"]),
                                "What the memory worked out from recorded events (the knowledge graph)")
        self.tabs.setTabToolTip(self.tabs.indexOf(self.remembered),
                                "What agents saved with remember(), with your words as proof")
        self.tabs.setTabToolTip(self.tabs.indexOf(self.forgotten), "Receipts of what you had the memory forget")
        self.setCentralWidget(self.tabs)
        self.undo_action = QAction("Undo", self)
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.undo_action.triggered.connect(self.undo)
        self.undo_action.setEnabled(False)
        self.addAction(self.undo_action)
        toolbar = self.addToolBar("Review")
        toolbar.setMovable(False)
        toolbar.addAction(self.undo_action)
        refresh = QAction("Refresh", self)
        refresh.setShortcut(QKeySequence.StandardKey.Refresh)
        refresh.triggered.connect(self.refresh)
        toolbar.addAction(refresh)
        self.statusBar().showMessage("Confirm, correct or delete what the memory believes; every change can be "
                                     "undone until this window closes.")

    def refresh(self) -> None:
        sources = sorted(self.memory.stats().events["by_source"])
        for page in self.pages.values():
            page.set_sources(sources)
            page.refresh()
        self.remembered.refresh()
        self.entities.refresh()
        self.timeline.refresh()
        self.forgotten.refresh()

    def _acted(self, review_id: int, description: str) -> None:
        description = shown(description)            # it quotes the belief's value
        if review_id:
            self.undo_stack.append((review_id, description))
        self.undo_action.setEnabled(bool(self.undo_stack))
        self.undo_action.setText(shown_action(f"Undo {self.undo_stack[-1][1]}") if self.undo_stack else "Undo")
        self.statusBar().showMessage(f"You {description}.", 8000)
        self.refresh()

    def undo(self) -> None:
        if not self.undo_stack:
            return
        review_id, description = self.undo_stack.pop()
        self.undo_action.setEnabled(False)

        def undone(_result) -> None:
            self.undo_action.setEnabled(bool(self.undo_stack))
            self.undo_action.setText(shown_action(f"Undo {self.undo_stack[-1][1]}") if self.undo_stack else "Undo")
            self.statusBar().showMessage(f"Undone: {description}.", 8000)
            self.refresh()

        def failed(message: str) -> None:
            self.undo_action.setEnabled(bool(self.undo_stack))
            QMessageBox.warning(self, "Magi Desktop", shown_rich(message))

        self.runner.submit(self.memory.undo, review_id, on_done=undone, on_error=failed)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.refresh()
        super().showEvent(event)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.undo_stack.clear()            # what was done stays done once the window closes
        self.undo_action.setEnabled(False)
        self.undo_action.setText("Undo")
        event.ignore()
        self.hide()
