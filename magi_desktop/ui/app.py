"""Composition root of the desktop app: Memory + collectors + scheduler/task pool + windows + tray."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

from ..agents.http import AppHttp
from ..core import Memory
from .gc_main_thread import MainThreadCollector
from .models import shown
from .qt import QAction, QApplication, QColor, QIcon, QMenu, QPainter, QPixmap, QSystemTrayIcon, Qt, QTimer
from .recovery import open_memory
from .scheduler import AppScheduler
from .settings_dialog import SettingsDialog
from .status_window import StatusWindow
from .tasks import Task, TaskRunner
from .viewer import ViewerWindow

log = logging.getLogger(__name__)


def app_icon() -> QIcon:
    pixmap = QPixmap(64, 64)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor("#4b3f8f"))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(4, 4, 56, 56)
    painter.setPen(QColor("white"))
    font = painter.font()
    font.setPixelSize(34)
    font.setBold(True)
    painter.setFont(font)
    painter.drawText(pixmap.rect(), Qt.AlignmentFlag.AlignCenter, "M")
    painter.end()
    return QIcon(pixmap)


class DesktopApp:
    """The composition root: Memory, collectors, the scheduler and task pool, the windows, the tray.
    ``shutdown`` releases them in order."""

    def __init__(self, qapp: QApplication, memory: Memory):
        self.qapp = qapp
        self.memory = memory
        self.runner = TaskRunner()
        self.supervisor = _supervisor(memory)
        self.scheduler = AppScheduler(memory, self.runner, supervisor=self.supervisor)
        self.http = AppHttp(memory)          # started by start() when Settings → Agents says so
        self.tray: QSystemTrayIcon | None = None
        self.viewer: ViewerWindow | None = None
        tray_available = QSystemTrayIcon.isSystemTrayAvailable()
        # Without a tray the window is the only way back into the app, so closing it quits.
        self.window = StatusWindow(memory, hide_on_close=tray_available)
        self.window.setWindowIcon(app_icon())
        self.window.collectors_text = self.collectors_status
        self.window.viewer_button.clicked.connect(self.show_viewer)
        self.window.settings_button.clicked.connect(self.show_settings)
        self.window.pause_button.toggled.connect(self.set_paused)
        self.window.pause_button.setChecked(self.paused)
        self.window.reindex_button.clicked.connect(self.rebuild_index)
        self.window.cancel_button.clicked.connect(self.cancel_long_work)
        self.long_task: Task | None = None   # the index rebuild while it runs (one at a time)
        self.window.timer.timeout.connect(self._show_backfills)
        if tray_available:
            qapp.setQuitOnLastWindowClosed(False)
            self.tray = QSystemTrayIcon(app_icon())
            self.tray.setContextMenu(self._tray_menu())
            self.tray.setToolTip("Magi Desktop")
            self.tray.activated.connect(lambda _reason: self.show_window())

    def _tray_menu(self) -> QMenu:
        menu = QMenu()
        self.status_action = QAction("…", menu)
        self.status_action.setEnabled(False)
        self.pause_action = QAction("Pause collection", menu)
        self.pause_action.setCheckable(True)
        self.pause_action.setChecked(self.paused)
        self.pause_action.toggled.connect(self.set_paused)
        menu.addAction(self.status_action)
        menu.addSeparator()
        menu.addAction(self.pause_action)
        for text, slot in (("Open memory viewer", self.show_viewer), ("Status", self.show_window),
                           ("Settings…", self.show_settings)):
            action = QAction(text, menu)
            action.triggered.connect(slot)
            menu.addAction(action)
        menu.addSeparator()
        quit_action = QAction("Quit", menu)
        quit_action.triggered.connect(self.qapp.quit)
        menu.addAction(quit_action)
        menu.aboutToShow.connect(lambda: self.status_action.setText(self.status_line()))
        self._menu = menu
        return menu

    # ---------------------------------------------------------------- status

    @property
    def paused(self) -> bool:
        return self.supervisor is not None and self.supervisor.paused

    def collectors_status(self) -> str:
        if self.supervisor is None:
            return "none enabled (Settings… → Collectors)"
        from ..collectors.health import trouble_label, troubles

        running = sum(s.running for s in self.supervisor.status.values())
        text = f"{len(self.supervisor.collectors)} enabled, {running} running"
        # Whose health needs the user, as the memory keeps it (a quarantine set by `magi collect` counts too);
        # the status window has each one's reason and fix.
        saved = self.memory.collector_statuses()
        needing = [f"{name} ({trouble_label(saved[name])})" for name in sorted(self.supervisor.collectors)
                   if name in saved and troubles(saved[name])]
        if needing:
            text += f"; needs you: {', '.join(needing)}"
        return text + (" — paused" if self.paused else "")

    def status_line(self) -> str:
        """The tray menu's first line: collectors, queued work and how long the oldest job has waited."""
        stats = self.memory.stats()
        pending = stats.queued
        lag = stats.l2["oldest_pending_seconds"]
        waiting = f", oldest {lag / 60:.0f} min" if lag and lag >= 60 else f", oldest {lag:.0f} s" if lag else ""
        full = "Disk full — read-only · " if not stats.writable else ""
        return f"{full}Collectors: {self.collectors_status()} · {pending} queued{waiting}"

    # --------------------------------------------------------------- actions

    def start(self) -> None:
        self.scheduler.start()
        self._serve_http()
        if self.tray is not None:
            self.tray.show()
        else:
            self.show_window()

    def show_window(self) -> None:
        self.window.refresh()
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()

    def show_viewer(self) -> None:
        if self.viewer is None:
            self.viewer = ViewerWindow(self.memory, self.runner)
            self.viewer.setWindowIcon(app_icon())
        self.viewer.show()
        self.viewer.raise_()
        self.viewer.activateWindow()

    def settings_dialog(self) -> SettingsDialog:
        from ..collectors import load_plugins

        return SettingsDialog(self.memory.path.parent, load_plugins().collectors(), self.window, memory=self.memory,
                              release=self.release_collector, http=self.http)

    def release_collector(self, name: str) -> bool:
        """Settings' Release button: lifted in the memory (for every process), and in this app's supervisor now
        rather than at its next look; True if it was quarantined."""
        if self.supervisor is not None and name in self.supervisor.status:
            released = self.supervisor.release(name)
        else:
            released = self.memory.release_collector(name)
        self.window.refresh()
        return released

    def show_settings(self) -> None:
        dialog = self.settings_dialog()
        if dialog.exec():
            self.reload_collectors()

    def set_paused(self, paused: bool) -> None:
        """The privacy pause: no collector runs; kept in collectors.json across restarts."""
        from ..collectors import load_settings, save_settings

        if self.supervisor is not None:
            self.supervisor.paused = paused
        folder = self.memory.path.parent
        try:
            settings = load_settings(folder)
            if settings.paused != paused:
                settings.paused = paused
                save_settings(folder, settings)
        except Exception:  # a malformed file: the pause still holds for this session
            log.exception("could not save the pause")
        for control in (self.window.pause_button, getattr(self, "pause_action", None)):
            if control is not None and control.isChecked() != paused:
                control.blockSignals(True)
                control.setChecked(paused)
                control.blockSignals(False)
        self.window.pause_button.setText("Resume collection" if paused else "Pause collection")
        self.window.refresh()

    def reload_collectors(self) -> None:
        """After the settings changed: the collectors as collectors.json now says."""
        if self.supervisor is not None:
            self.supervisor.stop()
        self.supervisor = _supervisor(self.memory)
        self.scheduler.set_supervisor(self.supervisor)
        self.set_paused(self.paused)

    def rebuild_index(self) -> None:
        """Rebuild the full-text index and re-embed everything on the pool, with progress; cancellable."""
        from ..workers import reindex

        if self.long_task is not None:
            return
        self.window.reindex_button.setEnabled(False)
        self.window.show_progress("Rebuilding the search index", 0, None)
        task = self.runner.submit(reindex, self.memory, on_done=self._reindexed, on_error=self._long_work_failed)
        task.signals.progress.connect(lambda done, total: self.window.show_progress("Re-embedding", done, total))
        self.long_task = task

    def _reindexed(self, report: dict) -> None:
        self.long_task = None
        self.window.reindex_button.setEnabled(True)
        self.window.hide_progress()
        left = f"; {report['left']:,} left to the background work" if report["left"] else ""
        self.window.statusBar().showMessage(f"Search index rebuilt: {report['queued']:,} events{left}.", 10_000)

    def _long_work_failed(self, message: str) -> None:
        self.long_task = None
        self.window.reindex_button.setEnabled(True)
        self.window.hide_progress()
        self.window.statusBar().showMessage(shown(f"Failed: {message}"), 10_000)

    def _show_backfills(self) -> None:
        """A collector reporting progress (a history back-fill) shows in the long-work bar."""
        if self.long_task is not None or self.supervisor is None:
            return
        running = [s for s in self.supervisor.status.values() if s.running and s.progress]
        if not running:
            self.window.hide_progress()
            return
        status = running[0]
        self.window.show_progress(f"{status.name}: reading past history", status.progress[0], status.progress[1])

    def cancel_long_work(self) -> None:
        if self.long_task is not None:
            self.long_task.cancel()
            self.window.work_label.setText("Stopping after this batch…")
        elif self.supervisor is not None:
            for status in list(self.supervisor.status.values()):
                if status.running and status.progress:
                    self.supervisor.cancel(status.name)
            self.window.hide_progress()

    def _serve_http(self) -> None:
        """Settings → Agents → Serve over HTTP: the MCP server in this process, on this memory."""
        from ..app_settings import AppSettingsError, load_app_settings

        try:
            settings = load_app_settings(self.memory.path.parent)
        except AppSettingsError as exc:
            log.error("not serving over HTTP: %s", exc)
            return
        if settings.http_enabled:
            self.http.apply(True, settings.http_port)

    def shutdown(self) -> None:
        self.window.timer.stop()
        self.http.stop()
        if self.tray is not None:
            self.tray.hide()
        if self.long_task is not None:
            self.long_task.cancel()
        if self.supervisor is not None:
            self.supervisor.stop()
        if not self.scheduler.stop():
            # Closing under a running batch makes it roll back: nothing is lost, it runs again next start.
            log.warning("closing the memory while a background batch is still running")
        self.memory.close()


def _supervisor(memory: Memory):
    """The collectors enabled in collectors.json, supervised; None when none is (or the file is malformed)."""
    from ..collectors import SettingsError, build_supervisor

    try:
        supervisor, _errors = build_supervisor(memory, memory.path.parent, watch=True)
    except SettingsError as exc:
        log.error("collectors are off: %s", exc)
        return None
    return supervisor


def _llm(data_dir: Path | None):
    """The LLM the settings name (settings.json, else MAGI_LLM_BASE_URL), else the offline rules."""
    from ..app_settings import llm_for
    from ..core import InvalidInput
    from ..core.paths import database_path

    try:
        return llm_for(database_path(data_dir).parent)
    except InvalidInput as exc:                 # settings.json (AppSettingsError) or MAGI_LLM_* is wrong
        log.error("using the offline rules: %s", exc)
        return "rules"


def _quit_on_signals(qapp: QApplication) -> QTimer:
    """Quit cleanly on SIGTERM (logout, kill) and Ctrl+C instead of dying mid-write.

    Python runs signal handlers only between bytecodes, so a timer wakes the
    interpreter while Qt's event loop sleeps in C.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: qapp.quit())
    timer = QTimer()
    timer.timeout.connect(lambda: None)
    timer.start(250)
    return timer


def run_app(data_dir: Path | None = None) -> int:
    existing = QApplication.instance()    # a QApplication (the tests', or one made before): reused
    qapp = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    qapp.setApplicationName("Magi Desktop")
    memory = open_memory(data_dir, _llm(data_dir))   # a damaged database: the restore is offered
    if memory is None:
        return 2
    collector = MainThreadCollector(qapp)   # before any widget: none may be collected off the GUI thread
    app = DesktopApp(qapp, memory)
    app.start()
    signal_timer = _quit_on_signals(qapp)
    try:
        return qapp.exec()
    finally:
        signal_timer.stop()
        app.shutdown()
        collector.stop()
