"""Composition root of the desktop app: Memory + background worker + tray or window."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

from ..core import Memory
from ..workers import BackgroundWorker
from .qt import QAction, QApplication, QColor, QIcon, QMenu, QPainter, QPixmap, QSystemTrayIcon, Qt, QTimer
from .status_window import StatusWindow

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
    """Owns the memory, the worker and the top-level widgets; ``shutdown`` releases them."""

    def __init__(self, qapp: QApplication, memory: Memory):
        self.qapp = qapp
        self.memory = memory
        self.supervisor = _supervisor(memory)
        self.worker = BackgroundWorker(memory, tick=self.supervisor.tick if self.supervisor else None)
        if self.supervisor is not None:
            self.supervisor.on_due = self.worker.wake
        self.tray: QSystemTrayIcon | None = None
        tray_available = QSystemTrayIcon.isSystemTrayAvailable()
        # Without a tray the window is the only way back into the app, so closing it quits.
        self.window = StatusWindow(memory, hide_on_close=tray_available)
        self.window.setWindowIcon(app_icon())
        if tray_available:
            qapp.setQuitOnLastWindowClosed(False)
            self.tray = QSystemTrayIcon(app_icon())
            menu = QMenu()
            open_action = QAction("Open Magi Desktop", menu)
            open_action.triggered.connect(self.show_window)
            quit_action = QAction("Quit", menu)
            quit_action.triggered.connect(qapp.quit)
            menu.addAction(open_action)
            menu.addSeparator()
            menu.addAction(quit_action)
            self.tray.setContextMenu(menu)
            self.tray.setToolTip("Magi Desktop")
            self.tray.activated.connect(lambda _reason: self.show_window())
            self._menu = menu

    def start(self) -> None:
        self.worker.start()
        if self.tray is not None:
            self.tray.show()
        else:
            self.show_window()

    def show_window(self) -> None:
        self.window.refresh()
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()

    def shutdown(self) -> None:
        self.window.timer.stop()
        if self.tray is not None:
            self.tray.hide()
        if self.supervisor is not None:
            self.supervisor.stop()
        if not self.worker.stop():
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
    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    qapp.setApplicationName("Magi Desktop")
    memory = Memory.open(data_dir)
    app = DesktopApp(qapp, memory)
    app.start()
    signal_timer = _quit_on_signals(qapp)
    try:
        return qapp.exec()
    finally:
        signal_timer.stop()
        app.shutdown()
