"""Garbage collection runs on the GUI thread while the app runs: a widget caught in a reference
cycle is never destroyed by a worker thread that happened to allocate (Qt waits for the GUI thread
inside the destructor, or crashes — seen as "Garbage-collecting" in a fatal error's trace)."""

import gc
import threading

import pytest

pytest.importorskip("pytestqt")

from magi_desktop.ui.gc_main_thread import MainThreadCollector
from magi_desktop.ui.qt import Qt, QWidget


def test_a_widget_in_a_cycle_is_collected_on_the_gui_thread_not_in_a_worker(qtbot):
    assert gc.isenabled()
    collector = MainThreadCollector(interval_ms=20)
    try:
        destroyed_in = []
        widget = QWidget()
        widget.itself = widget                          # a cycle: only the cyclic collector frees it
        widget.destroyed.connect(lambda: destroyed_in.append(threading.current_thread().name),
                                 Qt.ConnectionType.DirectConnection)
        del widget

        kept = []

        def allocate():     # enough new containers that the automatic collector would have run here
            kept.extend([] for _ in range(50 * gc.get_threshold()[0]))

        worker = threading.Thread(target=allocate, name="worker")
        worker.start()
        worker.join()
        assert destroyed_in == []                       # the worker collected nothing
        qtbot.waitUntil(lambda: bool(destroyed_in), timeout=5_000)
        assert destroyed_in == ["MainThread"]
    finally:
        collector.stop()
    assert gc.isenabled()                               # given back when the app closes
