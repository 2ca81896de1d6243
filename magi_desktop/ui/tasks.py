"""Running the core's plain functions off the UI thread (architecture §11).

A :class:`Task` is a QRunnable around any callable; it reports through the
signals of a small QObject (a QRunnable is not a QObject and cannot emit).
Signals cross back to the UI thread by Qt's queued connections, so a slot
never runs on the pool's thread. A callable that accepts ``progress`` and
``cancelled`` keywords can report progress and be cancelled.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..core import MemoryUnavailable
from .qt import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger(__name__)


class TaskSignals(QObject):
    done = Signal(object)          # the callable's return value
    failed = Signal(str)           # "Kind: message" of what it raised
    progress = Signal(int, int)    # done, total (total 0: unknown)
    finished = Signal()            # after done or failed


class Task(QRunnable):
    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any):
        super().__init__()
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.signals = TaskSignals()
        self.cancel_event = threading.Event()
        self.setAutoDelete(False)      # the caller keeps it (and its signals) alive until finished
        accepted: Mapping[str, inspect.Parameter]
        try:
            accepted = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            accepted = {}
        if "progress" in accepted:
            self.kwargs["progress"] = lambda done, total=None: self.signals.progress.emit(int(done), int(total or 0))
        if "cancelled" in accepted:
            self.kwargs["cancelled"] = self.cancel_event.is_set

    def cancel(self) -> None:
        self.cancel_event.set()

    def run(self) -> None:  # runs on a pool thread
        try:
            result = self.fn(*self.args, **self.kwargs)
        except MemoryUnavailable as exc:       # the environment (a full disk), not a bug: no traceback
            log.warning("background task %s: %s", getattr(self.fn, "__name__", self.fn), exc)
            self.signals.failed.emit(f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # reported to the UI, logged with its traceback
            log.exception("background task %s failed", getattr(self.fn, "__name__", self.fn))
            self.signals.failed.emit(f"{type(exc).__name__}: {exc}")
        else:
            self.signals.done.emit(result)
        self.signals.finished.emit()


class TaskRunner(QObject):
    """One pool for the app; keeps running tasks referenced until they finish."""

    def __init__(self, pool: QThreadPool | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.pool = pool or QThreadPool.globalInstance()
        self._running: set[Task] = set()

    def submit(self, fn: Callable[..., Any], *args: Any, on_done: Callable[[Any], object] | None = None,
               on_error: Callable[[str], object] | None = None, **kwargs: Any) -> Task:
        task = Task(fn, *args, **kwargs)
        if on_done is not None:
            task.signals.done.connect(on_done)
        if on_error is not None:
            task.signals.failed.connect(on_error)
        task.signals.finished.connect(lambda: self._running.discard(task))
        self._running.add(task)
        self.pool.start(task)
        return task

    @property
    def busy(self) -> int:
        return len(self._running)

    def cancel_all(self) -> None:
        for task in list(self._running):
            task.cancel()

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until every task finished (shutdown only: never from a slot)."""
        return self.pool.waitForDone(msecs)
