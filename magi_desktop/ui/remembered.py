"""The memory viewer's pages for what agents remembered and what the user had forgotten (architecture §9, §14).

*Remembered* lists the facts agents saved with ``remember()``, each with its evidence type and the
messages behind it (the one that states it; for an accepted fact, the proposal and the acceptance),
and lets the user delete one. *Forgotten* lists the receipts ``forget()`` kept: when, by what
criteria, how many rows went from each table — never what they said. Like the other pages, reads
go through ``Memory`` on the UI thread and a write runs on the task pool, then the viewer refreshes.
"""

from __future__ import annotations

from ..core import Memory
from .models import (
    FACT_COLUMNS,
    FACT_EVIDENCE_COLUMNS,
    RECEIPT_COLUMNS,
    REMOVED_COLUMNS,
    RecordTableModel,
    criteria_text,
    evidence_label,
    record_table,
    removed_rows,
    scope_text,
    shown,
    shown_html,
    shown_rich,
    when,
)
from .qt import (
    QAbstractItemView,
    QLabel,
    QMessageBox,
    QPushButton,
    Qt,
    QWidget,
    Signal,
)
from .tasks import TaskRunner
from .widgets import boxed, choice_box, in_a_column, in_a_row, search_box, split, wrapped_label

FACT_STATUS_CHOICES = [("Active", "active"), ("Replaced", "superseded"), ("Merged", "merged"),
                       ("Deleted", "deleted"), ("All", None)]
RECEIPT_LIMIT = 50
# The parts a message plays in a fact's evidence trail: the keys memory.fact() gives it under, in words.
# A key the core does not give (yet) is skipped.
MESSAGE_PARTS = (("source_message", "source_message_id", "said it"),
                 ("proposal_message", "proposal_message_id", "proposed it"),
                 ("accepting_message", "accepting_message_id", "accepted it"))
SELECT_PROMPT = "Select a row to see the messages behind it."


def _label(text: str = "", rich: bool = False) -> QLabel:
    return wrapped_label(text, text_format=Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText,
                         selectable=True)


class RememberedPage(QWidget):
    """Facts agents saved with remember(): filters, the table, the selected fact's evidence, Delete."""

    acted = Signal(int, str)        # review id (0: not undoable), what was done

    def __init__(self, memory: Memory, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self.memory, self.runner = memory, runner
        self.status = choice_box(FACT_STATUS_CHOICES)
        self.search = search_box("Search what was remembered…")
        self.model = RecordTableModel(FACT_COLUMNS, self)
        self.table = record_table(self.model, "Saved", descending=True)
        self.messages = RecordTableModel(FACT_EVIDENCE_COLUMNS, self)
        self.messages_view = record_table(self.messages, "Time")
        self.messages_view.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.summary = _label(SELECT_PROMPT, rich=True)
        self.quote = _label()
        self.missing = _label()
        self.delete_button = QPushButton("Delete…")
        self.delete_button.setToolTip("It is wrong or private: agents will not recall it again (asked first; "
                                      "not undoable)")

        filters = in_a_row(QLabel("Show"), self.status, self.search, stretch=self.search)
        actions = in_a_row(self.summary, self.delete_button, stretch=self.summary)
        detail = boxed(actions, self.quote, _label("Evidence — the messages behind it:"), self.messages_view,
                       self.missing, stretch=self.messages_view)
        splitter = split(self.table, detail)
        in_a_column(self, _label("What agents saved with remember(), each with the words of yours that prove it."),
                    filters, splitter, stretch=splitter)

        self.status.currentIndexChanged.connect(self.refresh)
        self.search.textChanged.connect(self.refresh)
        self.table.selectionModel().selectionChanged.connect(self.show_selected)
        self.delete_button.clicked.connect(self.ask_delete)
        self.delete_button.setEnabled(False)

    # ------------------------------------------------------------------ data

    def refresh(self) -> None:
        selected = self.selected()
        needle = self.search.text().strip().casefold()
        facts = [f for f in self.memory.facts(status=self.status.currentData())
                 if not needle or any(needle in (f.get(k) or "").casefold() for k in ("content", "quote", "category"))]
        self.model.set_records(facts)
        self.table.resizeColumnsToContents()
        if selected is None or not self.select_fact(selected["fact_id"]):
            self.show_selected()

    def selected(self) -> dict | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.record(rows[0].row()) if rows else None

    def select_fact(self, fact_id: int) -> bool:
        for row, fact in enumerate(self.model.records):
            if fact["fact_id"] == fact_id:
                self.table.selectRow(row)
                return True
        return False

    def show_selected(self, *_args) -> None:
        listed = self.selected()
        fact = self.memory.fact(listed["fact_id"]) if listed is not None else None   # None: gone since listed
        self.delete_button.setEnabled(fact is not None and fact["status"] != "deleted")
        if fact is None:
            self.summary.setText(SELECT_PROMPT)
            self.quote.setText("")
            self.missing.setText("")
            self.messages.set_records([])
            return
        replaced = f", replaced by #{fact['superseded_by']}" if fact["superseded_by"] else ""
        about = " · ".join(x for x in (fact["category"], scope_text(fact), fact["status"] + replaced,
                                       f"saved {when(fact['created_at'])}") if x)
        evidence = shown_html(evidence_label(fact["evidence_type"]))
        self.summary.setText(f"<b>{shown_html(fact['content'])}</b><br>"
                             f"Evidence: <b>{evidence}</b> · {shown_html(about)}")
        self.quote.setText(shown(f"Quote: “{fact['quote']}”") if fact["quote"] else "Quote: none kept")
        rows, missing = [], []
        for key, pointer, part in MESSAGE_PARTS:
            if key == "source_message" and fact.get("evidence_type") == "accepted":
                part = "raised it"          # the user asked; the agent concluded; the user accepted
            if fact.get(key) is not None:
                rows.append({**fact[key], "part": part})
            elif fact.get(pointer):
                missing.append(f"The message that {part} ({fact[pointer]}) is not among the recorded events.")
        self.messages.set_records(rows)
        self.messages_view.resizeColumnsToContents()
        self.missing.setText(shown("\n".join(missing)) if missing or rows else "No message was kept as proof.")

    # --------------------------------------------------------------- actions

    def ask_delete(self) -> None:
        fact = self.selected()
        if fact is None:
            return
        answer = QMessageBox.question(self, "Delete", shown_rich(f"Delete the remembered fact “{fact['content']}”? "
                                                                 "Agents will not recall it again. This cannot be "
                                                                 "undone."))
        if answer == QMessageBox.StandardButton.Yes:
            self.delete(fact["fact_id"], fact["content"])

    def delete(self, fact_id: int, content: str) -> None:
        self.delete_button.setEnabled(False)
        self.runner.submit(self.memory.delete_fact, fact_id,
                           on_done=lambda _: self.acted.emit(0, f"deleted the remembered fact “{content}”"),
                           on_error=self._failed)

    def _failed(self, message: str) -> None:
        QMessageBox.warning(self, "Magi Desktop", shown_rich(message))
        self.show_selected()


class ForgottenPage(QWidget):
    """The receipts of forget(), newest first, and the selected one's counts per table."""

    def __init__(self, memory: Memory, parent=None):
        super().__init__(parent)
        self.memory = memory
        self.model = RecordTableModel(RECEIPT_COLUMNS, self)
        self.table = record_table(self.model, "When", descending=True)
        self.counts = RecordTableModel(REMOVED_COLUMNS, self)
        self.counts_view = record_table(self.counts, "Removed", descending=True)
        self.counts_view.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.summary = _label("Select a receipt to see what each part of the memory lost.")
        splitter = split(self.table, boxed(self.summary, self.counts_view, stretch=self.counts_view))
        in_a_column(self, _label("Each time something was forgotten, a receipt of what went: the criteria and how "
                            "many rows each part of the memory lost — never what they said."), splitter,
               stretch=splitter)
        self.table.selectionModel().selectionChanged.connect(self.show_selected)

    def refresh(self) -> None:
        selected = self.selected()
        self.model.set_records(self.memory.forget_receipts(limit=RECEIPT_LIMIT))
        self.table.resizeColumnsToContents()
        ids = [r["receipt_id"] for r in self.model.records]
        if selected is not None and selected["receipt_id"] in ids:
            self.table.selectRow(ids.index(selected["receipt_id"]))
        else:
            self.show_selected()

    def selected(self) -> dict | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.record(rows[0].row()) if rows else None

    def show_selected(self, *_args) -> None:
        receipt = self.selected()
        if receipt is None:
            self.summary.setText("Select a receipt to see what each part of the memory lost."
                                 if self.model.records else "Nothing has been forgotten.")
            self.counts.set_records([])
            return
        self.summary.setText(shown(f"Forgotten {when(receipt['created_at'])}: {criteria_text(receipt['criteria'])} — "
                                   f"{len(receipt['event_ids'])} event(s)."))
        self.counts.set_records(removed_rows(receipt["removed"]))
        self.counts_view.resizeColumnsToContents()
