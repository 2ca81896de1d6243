"""The main window: what the memory holds, what the background work and the collectors are
doing, and the way into the viewer and the settings."""

from __future__ import annotations

from ..collectors import SettingsError, load_settings
from ..core import Memory
from .collector_health import HealthView
from .models import shown
from .qt import (
    QFont,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    Qt,
    QTimer,
    QVBoxLayout,
    QWidget,
)

REFRESH_MS = 3000
SOURCES_SHOWN = 4            # per collector; Settings → Collectors lists them all
RELEASE_HINT = "release it in Settings… → Collectors"


def storage_text(storage: dict) -> str:
    """Whether the memory can write, and its last automatic backup."""
    if not storage["writable"]:
        text = "disk full — read-only: nothing new is stored until space is freed (it resumes by itself)"
    else:
        text = "writable"
    last = storage.get("last_backup")
    text += f"; last backup {last['label']}" if last else "; no backup yet (one is made each day)"
    if storage.get("backup_error"):
        text += f"; the last backup failed: {storage['backup_error']}"
    return text


class StatusWindow(QMainWindow):
    def __init__(self, memory: Memory, *, hide_on_close: bool):
        super().__init__()
        self.memory = memory
        self.hide_on_close = hide_on_close
        self.setWindowTitle("Magi Desktop")
        self.setMinimumWidth(520)

        title = QLabel("Magi Desktop — memory status")
        font = QFont(title.font())
        font.setPointSize(font.pointSize() + 3)
        font.setBold(True)
        title.setFont(font)

        self.fields: dict[str, QLabel] = {}
        form = QFormLayout()
        for key, label in (
            ("database", "Database"),
            ("storage", "Storage"),
            ("events", "L1 events"),
            ("classes", "Evidence classes"),
            ("sessions", "Chat sessions"),
            ("traces", "Runtime traces"),
            ("embedding", "Embedding"),
            ("queue", "Queue"),
            ("cognition", "Beliefs"),
            ("collectors", "Collectors"),
        ):
            value = QLabel("…")
            value.setWordWrap(True)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.fields[key] = value
            form.addRow(label + ":", value)
        # Each enabled collector's health, as the memory keeps it: what its last run found, in any process.
        self.collector_rows = QFormLayout()
        self.collector_rows.setContentsMargins(12, 0, 0, 0)
        self.collector_rows.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)  # by its head
        self.collector_health: dict[str, HealthView] = {}
        form.addRow(self.collector_rows)

        self.viewer_button = QPushButton("Open memory viewer")
        self.settings_button = QPushButton("Settings…")
        self.pause_button = QPushButton("Pause collection")
        self.pause_button.setCheckable(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.viewer_button)
        buttons.addWidget(self.settings_button)
        buttons.addWidget(self.pause_button)
        buttons.addStretch(1)
        self.reindex_button = QPushButton("Rebuild search index")
        self.reindex_button.setToolTip("Rebuild the full-text index and embed every event again")
        buttons.addWidget(self.reindex_button)

        # Long work (a re-index, a collector's back-fill): what it is, how far, and a way to stop it.
        self.work_label = QLabel("")
        self.progress = QProgressBar()
        self.cancel_button = QPushButton("Cancel")
        work = QHBoxLayout()
        work.addWidget(self.work_label)
        work.addWidget(self.progress, 1)
        work.addWidget(self.cancel_button)
        self.hide_progress()
        self.collectors_text = lambda: "none enabled (Settings… → Collectors)"

        layout = QVBoxLayout()
        layout.addWidget(title)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addLayout(work)
        layout.addStretch(1)
        central = QWidget()
        central.setLayout(layout)
        self.setCentralWidget(central)

        self.timer = QTimer(self)
        self.timer.timeout.connect(self.refresh)
        self.timer.start(REFRESH_MS)
        self.refresh()

    def refresh(self) -> None:
        stats = self.memory.stats()
        events = stats.events
        emb = stats.embedding
        self.fields["database"].setText(f"{stats.database} ({stats.size_bytes / 1e6:.1f} MB)")
        redaction = stats.redaction or {}
        self.fields["storage"].setText(storage_text(stats.storage) + (
            f"; stored before the current secret-redaction rules: {redaction['hint']}" if redaction.get("hint")
            else ""))
        self.fields["storage"].setStyleSheet("" if stats.storage["writable"] else "color: #b3261e")
        self.fields["events"].setText(str(events["total"]))
        self.fields["classes"].setText(
            ", ".join(f"{name} {count}" for name, count in events["by_evidence_class"].items()) or "none yet")
        self.fields["sessions"].setText(str(stats.chat_sessions))
        self.fields["traces"].setText(str(stats.runtime_traces))
        state = "model loaded" if emb["model_loaded"] else "model released (loads on demand)"
        if not emb["vectors_ready"]:
            state = "paused: the model that made the vectors is not installed"
        self.fields["embedding"].setText(f"{emb['model']} — {emb['chunks']} chunks; {state}")
        l2 = stats.l2
        lag = l2["oldest_pending_seconds"]
        self.fields["queue"].setText(
            f"{emb['pending']} to embed, {l2['jobs']['pending']} to understand"
            + (f" (oldest waiting {lag:.0f} s)" if lag else "")
            + f"; {emb['dead'] + l2['jobs']['dead']} failed for good")
        llm = l2["llm"]
        breaker = stats.llm.get("breaker")
        if breaker and breaker["state"] != "closed":
            llm += f": the endpoint keeps failing, paused after {breaker['failures_in_a_row']} failures"
        self.fields["cognition"].setText(f"{l2['assertions']} assertions, {l2['edges']} facts and relationships, "
                                         f"{l2['entities']} entities ({llm})")
        self.fields["collectors"].setText(shown(self.collectors_text()))   # plugin errors may quote what they read
        self.show_collectors(stats.collectors)

    def show_collectors(self, statuses: dict[str, dict]) -> None:
        """A row per collector enabled in collectors.json, with the health its last run saved."""
        try:
            enabled = sorted(load_settings(self.memory.path.parent).enabled)
        except SettingsError as exc:     # the app runs none: say why where the collectors would be
            self.fields["collectors"].setText(shown(f"none runs: {exc}"))
            enabled = []
        for name in [n for n in self.collector_health if n not in enabled]:
            self.collector_rows.removeRow(self.collector_health.pop(name))
        for name in enabled:
            view = self.collector_health.get(name)
            if view is None:
                view = HealthView(name, releasable=False, release_hint=RELEASE_HINT, max_sources=SOURCES_SHOWN)
                self.collector_health[name] = view
                self.collector_rows.insertRow(sorted(self.collector_health).index(name), shown(name) + ":", view)
            view.show_status(statuses.get(name))

    def show_progress(self, label: str, done: int, total: int | None) -> None:
        self.work_label.setText(label)
        self.progress.setRange(0, total or 0)          # 0..0: busy, the total is not known
        self.progress.setValue(min(done, total) if total else 0)
        self.progress.setFormat(f"{done:,} / {total:,}" if total else f"{done:,}")
        for widget in (self.work_label, self.progress, self.cancel_button):
            widget.setVisible(True)

    def hide_progress(self) -> None:
        for widget in (self.work_label, self.progress, self.cancel_button):
            widget.setVisible(False)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt naming
        if self.hide_on_close:
            event.ignore()
            self.hide()
        else:
            super().closeEvent(event)
