"""The task pool adapter: core functions run off the UI thread, report through signals."""

import threading
import time

import pytest

pytest.importorskip("pytestqt")

from magi_desktop.ui.qt import QTimer
from magi_desktop.ui.tasks import TaskRunner


def long_job(steps, progress, cancelled):
    for i in range(steps):
        if cancelled():
            return ("cancelled", i)
        time.sleep(0.05)
        progress(i + 1, steps)
    return ("done", threading.current_thread().name)


def test_a_long_job_runs_on_the_pool_while_the_event_loop_keeps_going(qtbot):
    runner = TaskRunner()
    ticks, progress = [], []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(10)
    task = runner.submit(long_job, 20)
    task.signals.progress.connect(lambda done, total: progress.append((done, total)))
    with qtbot.waitSignal(task.signals.done, timeout=10_000) as done:
        pass
    timer.stop()
    state, thread = done.args[0]
    assert state == "done" and thread != threading.current_thread().name
    assert len(ticks) >= 30               # ~1 s of work: the UI thread kept processing events
    assert progress[-1] == (20, 20)
    qtbot.waitUntil(lambda: runner.busy == 0)


def test_a_task_can_be_cancelled(qtbot):
    runner = TaskRunner()
    task = runner.submit(long_job, 200)
    qtbot.wait(100)
    task.cancel()
    with qtbot.waitSignal(task.signals.done, timeout=10_000) as done:
        pass
    assert done.args[0][0] == "cancelled"


def test_a_failing_task_reports_its_error(qtbot):
    runner = TaskRunner()

    def broken():
        raise RuntimeError("disk on fire")

    errors = []
    runner.submit(broken, on_error=errors.append)        # connected before it starts: nothing is missed
    qtbot.waitUntil(lambda: bool(errors), timeout=5000)
    assert errors == ["RuntimeError: disk on fire"]
    qtbot.waitUntil(lambda: runner.busy == 0)
