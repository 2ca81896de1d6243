"""A collector's health as a widget: its state in colour (the reason and the fix), a line per source and per
reason items were left out, and — in Settings — a Release button for a quarantined collector. The words are
:mod:`magi_desktop.collectors.health`'s, from the status the memory keeps, so the windows say what the CLI says."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..collectors.health import COLLECTING, FAILING, IDLE, QUARANTINED, UNAVAILABLE, describe, state_of, tallies
from .models import shown
from .qt import QFont, QHBoxLayout, QLabel, QPushButton, Qt, QVBoxLayout, QWidget, Signal

STATE_COLOURS = {COLLECTING: "#1e7b34", IDLE: None, UNAVAILABLE: "#8a5a00", FAILING: "#b3261e",
                 QUARANTINED: "#b3261e"}


def _plain_label(bold: bool = False) -> QLabel:
    """A label for a plugin's words: plain text (never markup), wrapped, selectable for a bug report."""
    label = QLabel("")
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if bold:
        font = QFont(label.font())
        font.setBold(True)
        label.setFont(font)
    return label


class HealthView(QWidget):
    """One collector's health. ``releasable``: a quarantine shows a Release button (Settings); elsewhere the
    words say where to release it. ``max_sources`` keeps a long list of sources short (the status window)."""

    release_requested = Signal(str)

    def __init__(self, name: str, *, releasable: bool, release_hint: str, max_sources: int | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.name = name
        self.release_hint = release_hint
        self.max_sources = max_sources
        self.state = _plain_label(bold=True)
        self.details = _plain_label()
        self.release_button = QPushButton("Release")
        self.release_button.setToolTip("Run this collector again (it was stopped after failing); every Magi "
                                       "process honours the release")
        self.release_button.clicked.connect(lambda: self.release_requested.emit(self.name))
        self.release_button.setVisible(False)
        self.releasable = releasable
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.state, 1)
        head.addWidget(self.release_button, 0, Qt.AlignmentFlag.AlignTop)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addLayout(head)
        column.addWidget(self.details)
        self.show_status(None)

    def show_status(self, status: Mapping[str, Any] | None) -> None:
        """Show a saved status (``memory.collector_statuses()[name]``); None before the collector has run."""
        status = {"name": self.name, **(status or {})}
        state = state_of(status)
        head, *sources = describe(status, release_hint=self.release_hint, max_sources=self.max_sources)
        self.state.setText(shown(head))
        colour = STATE_COLOURS.get(state or "")
        self.state.setStyleSheet(f"color: {colour}" if colour else "")
        lines = [shown(line).replace("\n", " ") for line in (*sources, *tallies(status))]   # one line each
        self.details.setText("\n".join(lines))
        self.details.setVisible(bool(lines))
        self.release_button.setVisible(self.releasable and state == QUARANTINED)
