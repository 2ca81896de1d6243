"""Python's cyclic garbage collector, run on the GUI thread only.

The collector runs in whichever thread happens to allocate when a generation fills up. Widgets,
dialogs and their slots often sit in reference cycles; collected in a worker thread (the
collectors' writer, the pool that runs L2), a ``QWidget`` is destroyed off the GUI thread — Qt then
waits for the GUI thread inside the destructor, or crashes ("Garbage-collecting" in the fatal
error's trace). So while the app runs, automatic collection is off and a timer on the GUI thread
collects each generation when it is due, as the automatic collector would have.
"""

from __future__ import annotations

import gc

from .qt import QObject, QTimer

INTERVAL_MS = 500


class MainThreadCollector(QObject):
    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS):
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.collect_due)
        self._timer.start(interval_ms)

    def collect_due(self) -> None:
        """Collect the oldest generation whose allocation count passed its threshold (and the younger)."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                gc.collect(generation)
                return

    def stop(self) -> None:
        """Collect once more here, then give collection back to Python (the app is closing)."""
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
