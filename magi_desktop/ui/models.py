"""Table models of the memory viewer: one generic read-only model over a list of records,
and the column sets for beliefs, evidence events and entities."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .qt import QAbstractTableModel, QColor, QModelIndex, Qt

STATE_COLOURS = {"current": "#1b7f3b", "history": "#7a7a7a", "denied": "#b3261e"}


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else ""


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Any], Any]
    tooltip: Callable[[Any], str] | None = None
    align_right: bool = False


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

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(self.records)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self.records)):
            return None
        record, column = self.records[index.row()], self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            value = column.value(record)
            return "" if value is None else str(value)
        if role == Qt.ItemDataRole.ToolTipRole and column.tooltip is not None:
            return column.tooltip(record)
        if role == Qt.ItemDataRole.TextAlignmentRole and column.align_right:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole:
            state = getattr(record, "state", None)
            if state in STATE_COLOURS and column.header == "State":
                return QColor(STATE_COLOURS[state])
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
    Column("State", lambda b: b.state, lambda b: f"stored as {b.status}"),
    Column("Confidence", lambda b: f"{b.confidence:.2f}", align_right=True),
    Column("Seen", lambda b: b.observations, lambda b: "observations", align_right=True),
    Column("Last seen", lambda b: when(b.last_observed_at)),
    Column("Sources", lambda b: ", ".join(b.sources)),
    Column("Confirmed", lambda b: "✓ you" if b.confirmed_at else "", lambda b: when(b.confirmed_at)),
]

EVENT_COLUMNS = [
    Column("Time", lambda e: when(e["timestamp"])),
    Column("Source", lambda e: e["source"]),
    Column("Author", lambda e: e["author"]),
    Column("Evidence", lambda e: e["evidence_class"]),
    Column("What was recorded", lambda e: e["content"], lambda e: e["content"]),
]

ENTITY_COLUMNS = [
    Column("Name", lambda e: e["name"]),
    Column("Type", lambda e: e["entity_type"]),
    Column("Also known as", lambda e: ", ".join(e["aliases"])),
    Column("Events", lambda e: e["events"], align_right=True),
]
