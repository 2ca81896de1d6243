"""Table models of the memory viewer: one generic read-only model over a list of records, the
table view that shows one, and the column sets for beliefs, evidence events, entities, remembered
facts and forget receipts."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core import safe_text
from .qt import (
    QAbstractItemView,
    QAbstractTableModel,
    QColor,
    QHeaderView,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    QTableView,
)

STATE_COLOURS = {"current": "#1b7f3b", "history": "#7a7a7a", "denied": "#b3261e"}
FACT_STATUS_COLOURS = {"active": "#1b7f3b", "superseded": "#7a7a7a", "merged": "#7a7a7a", "deleted": "#b3261e"}
# A remembered fact's evidence (architecture §9), strongest first: what each type means to the user.
EVIDENCE_LABELS = {
    "stated": "stated — the user said it",
    "accepted": "accepted — the user accepted the agent's conclusion",
    "unknown": "unknown — no proof kept",
}
EVIDENCE_COLOURS = {"stated": "#1b7f3b", "accepted": "#8a5a00", "unknown": "#7a7a7a"}
# What a forget receipt's tables hold, in words (core/forget.py counts them).
TABLE_LABELS = {
    "fact_events": "recorded events",
    "event_chunks": "text chunks for search",
    "chunk_vectors": "search vectors",
    "embedding_jobs": "pending indexing jobs",
    "l2_projection_jobs": "pending belief jobs",
    "l1_event_entities": "links to entities",
    "entity_mentions": "entity mentions",
    "l2_evidence": "evidence behind beliefs",
    "kg_edges": "facts and relationships",
    "tom_trait_assertions": "assertions",
    "l2_episodes": "episodes",
    "l3_summaries": "summaries",
    "summary_event_links": "summary citations",
}


def shown(value: Any) -> str:
    """Stored text as a window may show it: no control, bidi or invisible characters (core/outbound.py)."""
    return "" if value is None else safe_text(str(value))


def shown_html(value: Any) -> str:
    """:func:`shown`, escaped for a rich-text label (a label's text, not an attribute: quotes stay as typed)."""
    return html.escape(shown(value), quote=False)


def shown_rich(value: Any) -> str:
    """Text for a widget that guesses plain from rich text (a message box, an input dialog's label):
    marked rich, so that what the stored text holds is shown, never interpreted as markup."""
    return "<p>" + shown_html(value).replace("\n", "<br>") + "</p>"


def shown_action(value: Any) -> str:
    """Text for a menu or a button: no ``&`` of the stored text may become a keyboard shortcut."""
    return shown(value).replace("&", "&&")


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else ""


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Any], Any]
    tooltip: Callable[[Any], str] | None = None
    align_right: bool = False
    colour: Callable[[Any], str | None] | None = None     # the text's colour, by the record


class RecordTableModel(QAbstractTableModel):
    """Rows are records (dataclasses or dicts); columns say how to show them. Sortable by any column."""

    def __init__(self, columns: Sequence[Column], parent=None):
        super().__init__(parent)
        self.columns = list(columns)
        self.records: list[Any] = []
        self._sorted: tuple[int, Qt.SortOrder] | None = None

    def set_records(self, records: Sequence[Any]) -> None:
        """Replace the rows, kept in the order the user last sorted by."""
        self.beginResetModel()
        self.records = list(records)
        if self._sorted is not None:
            self._sort_records(*self._sorted)
        self.endResetModel()

    def record(self, row: int) -> Any:
        return self.records[row]

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(self.records)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self.records)):
            return None
        record, column = self.records[index.row()], self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return shown(column.value(record))
        if role == Qt.ItemDataRole.ToolTipRole and column.tooltip is not None:
            return shown(column.tooltip(record))
        if role == Qt.ItemDataRole.TextAlignmentRole and column.align_right:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and column.colour is not None:
            colour = column.colour(record)
            return QColor(colour) if colour else None
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt API
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self.columns[section].header if 0 <= section < len(self.columns) else None
        return section + 1

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if not (0 <= column < len(self.columns)):
            return
        self._sorted = (column, order)
        self.layoutAboutToBeChanged.emit()
        self._sort_records(column, order)
        self.layoutChanged.emit()

    def _sort_records(self, column: int, order: Qt.SortOrder) -> None:
        getter = self.columns[column].value
        self.records.sort(key=lambda r: _sort_key(getter(r)), reverse=order == Qt.SortOrder.DescendingOrder)


def record_table(model: RecordTableModel, sort_by: str | None = None, descending: bool = False) -> QTableView:
    """A read-only, sortable, row-selecting view of ``model``, first sorted by the column headed ``sort_by``."""
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setSortingEnabled(True)
    view.setAlternatingRowColors(True)
    view.verticalHeader().setVisible(False)
    view.horizontalHeader().setStretchLastSection(True)
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    if sort_by is not None:
        column = next(i for i, c in enumerate(model.columns) if c.header == sort_by)
        view.sortByColumn(column, Qt.SortOrder.DescendingOrder if descending else Qt.SortOrder.AscendingOrder)
    return view


def _sort_key(value: Any) -> tuple:
    if value is None:
        return (0, "")
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, str(value).casefold())


BELIEF_COLUMNS = [
    Column("Subject", lambda b: b.subject),
    Column("Relation", lambda b: b.relation.replace("_", " ").lower()),
    Column("Value", lambda b: b.value),
    Column("State", lambda b: b.state, lambda b: f"stored as {b.status}", colour=lambda b: STATE_COLOURS.get(b.state)),
    Column("Confidence", lambda b: f"{b.confidence:.2f}", align_right=True),
    Column("Seen", lambda b: b.observations, lambda b: "observations", align_right=True),
    Column("Last seen", lambda b: when(b.last_observed_at)),
    Column("Sources", lambda b: ", ".join(b.sources)),
    Column("Confirmed", lambda b: "✓ you" if b.confirmed_at else "", lambda b: when(b.confirmed_at)),
]

EVENT_COLUMNS = [
    Column("Time", lambda e: when(e["timestamp"])),
    Column("Source", lambda e: e["source"]),
    # A belief's trail calls it "author", an event row (Memory.fact's messages) "author_type".
    Column("Author", lambda e: e.get("author", e.get("author_type"))),
    Column("Evidence", lambda e: e["evidence_class"]),
    Column("What was recorded", lambda e: e["content"], lambda e: e["content"]),
]

ENTITY_COLUMNS = [
    Column("Name", lambda e: e["name"]),
    Column("Type", lambda e: e["entity_type"]),
    Column("Also known as", lambda e: ", ".join(e["aliases"])),
    Column("Events", lambda e: e["events"], align_right=True),
]

FACT_COLUMNS = [
    Column("Remembered", lambda f: f["content"], lambda f: f["content"]),
    Column("Evidence", lambda f: evidence_label(f["evidence_type"]),
           colour=lambda f: EVIDENCE_COLOURS.get(f["evidence_type"])),
    Column("Quote", lambda f: f["quote"], lambda f: f["quote"] or "no quote kept"),
    Column("Category", lambda f: f["category"]),
    Column("Scope", lambda f: scope_text(f)),
    Column("Status", lambda f: f["status"], colour=lambda f: FACT_STATUS_COLOURS.get(f["status"])),
    Column("Saved", lambda f: when(f["created_at"])),
]

# The messages behind a remembered fact: EVENT_COLUMNS, each row saying what part it plays.
FACT_EVIDENCE_COLUMNS = [Column("Part", lambda e: e["part"]), *EVENT_COLUMNS]

RECEIPT_COLUMNS = [
    Column("When", lambda r: when(r["created_at"])),
    Column("What was forgotten", lambda r: criteria_text(r["criteria"]), lambda r: criteria_text(r["criteria"])),
    Column("Events", lambda r: len(r["event_ids"]), align_right=True),
    Column("Removed", lambda r: removed_text(r["removed"]), lambda r: removed_text(r["removed"])),
    Column("Scrub", lambda r: r.get("scrub", "done"),
           lambda r: "no file of the memory holds it any more" if r.get("scrub", "done") == "done"
           else "the old pages are cleared once no program reads them"),
]

REMOVED_COLUMNS = [
    Column("What", lambda c: c["what"], lambda c: f"table {c['table']}"),
    Column("Removed", lambda c: c["count"], align_right=True),
]


def evidence_label(evidence_type: str | None) -> str:
    return EVIDENCE_LABELS.get(evidence_type or "unknown", evidence_type or "")


def scope_text(fact: dict[str, Any]) -> str:
    """Whom a remembered fact is about: "user", or "project falcon"."""
    return f"project {fact['project']}" if fact["scope"] == "project" and fact["project"] else fact["scope"]


def criteria_text(criteria: dict[str, Any]) -> str:
    """A forget receipt's criteria in words: "items v1; source chrome; from 2025-01-02 10:00"."""
    parts = []
    for key, value in criteria.items():
        if key == "event_ids":
            parts.append(f"{len(value)} chosen event(s)")
        elif key == "source_item_ids":      # keyed hashes: the item ids are not kept
            parts.append(f"{len(value)} chosen item(s)" if _keyed(value[0] if value else "")
                         else "items " + ", ".join(map(str, value)))
        elif key == "entity":
            parts.append("mentions of an entity (its name is not kept)" if _keyed(value) else f"mentions of “{value}”")
        elif key == "source":
            parts.append(f"source {value}")
        elif key == "start":
            parts.append(f"from {when(value)}")
        elif key == "end":
            parts.append(f"until {when(value)}")
        else:
            parts.append(f"{key.replace('_', ' ')}: {value}")
    return "; ".join(parts) or "—"


def _keyed(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("hmac-sha256:")


def removed_rows(removed: dict[str, int]) -> list[dict[str, Any]]:
    """A receipt's per-table counts as rows, in the order of TABLE_LABELS, tables it does not know last."""
    order = list(TABLE_LABELS)
    tables = sorted(removed, key=lambda t: (order.index(t) if t in order else len(order), t))
    return [{"table": t, "what": TABLE_LABELS.get(t, t.replace("_", " ")), "count": removed[t]} for t in tables]


def removed_text(removed: dict[str, int]) -> str:
    """A receipt's per-table counts in words: "recorded events: 1, search vectors: 2"."""
    return ", ".join(f"{row['what']}: {row['count']}" for row in removed_rows(removed)) or "nothing"
