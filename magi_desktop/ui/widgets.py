"""Small widget builders the pages share: a wrapped label, a choice box, a search field, rows and columns."""

from __future__ import annotations

from collections.abc import Sequence

from .qt import QComboBox, QHBoxLayout, QLabel, QLayout, QLineEdit, QSplitter, Qt, QVBoxLayout, QWidget


def wrapped_label(text: str = "", *, text_format: Qt.TextFormat | None = None, selectable: bool = False) -> QLabel:
    """A label whose text wraps (prose, an explanation, a stored value of any length)."""
    label = QLabel(text)
    label.setWordWrap(True)
    if text_format is not None:
        label.setTextFormat(text_format)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def choice_box(choices: Sequence[tuple[str, object]]) -> QComboBox:
    """A combo box of (label, value) choices; ``currentData()`` is the value."""
    box = QComboBox()
    for label, value in choices:
        box.addItem(label, value)
    return box


def search_box(placeholder: str, *, clearable: bool = True) -> QLineEdit:
    field = QLineEdit()
    field.setPlaceholderText(placeholder)
    field.setClearButtonEnabled(clearable)
    return field


def _fill(layout: QHBoxLayout | QVBoxLayout, items: Sequence[QWidget | QLayout], stretch: QWidget | None):
    for item in items:
        if isinstance(item, QLayout):
            layout.addLayout(item)
        else:
            layout.addWidget(item, 1 if item is stretch else 0)
    return layout


def in_a_row(*items: QWidget | QLayout, stretch: QWidget | None = None) -> QHBoxLayout:
    """Items side by side; ``stretch`` takes the room left."""
    return _fill(QHBoxLayout(), items, stretch)


def in_a_column(parent: QWidget, *items: QWidget | QLayout, stretch: QWidget | None = None) -> QVBoxLayout:
    """``parent``'s layout: items one above the other; ``stretch`` takes the room left."""
    return _fill(QVBoxLayout(parent), items, stretch)


def boxed(*items: QWidget | QLayout, stretch: QWidget | None = None) -> QWidget:
    """A margin-less widget holding items one above the other (a splitter's pane)."""
    box = QWidget()
    in_a_column(box, *items, stretch=stretch).setContentsMargins(0, 0, 0, 0)
    return box


def split(top: QWidget, bottom: QWidget) -> QSplitter:
    """A table above the detail of its selected row, three parts to two."""
    splitter = QSplitter(Qt.Orientation.Vertical)
    splitter.addWidget(top)
    splitter.addWidget(bottom)
    splitter.setStretchFactor(0, 3)
    splitter.setStretchFactor(1, 2)
    return splitter
