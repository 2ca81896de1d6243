"""A plain thread that drains the memory's queues whenever ingest queues work,
and runs the periodic jobs (``Memory.run_due``: TTL expiry, episodes, entity upkeep)
every ``maintenance_seconds``.

The desktop app runs the same functions (``workers.jobs``) on a Qt thread pool;
this runner is what the CLI, tests and a headless service use.
"""

from __future__ import annotations

import logging
import threading
import time

from ..core import Memory, MemoryUnavailable
from .jobs import maintain, process_batch

log = logging.getLogger(__name__)


class BackgroundWorker:
    def __init__(self, memory: Memory, *, batch: int = 64, idle_poll_seconds: float = 30.0,
                 maintenance_seconds: float = 600.0, tick=None):
        self.memory = memory
        self.tick = tick              # called every loop: e.g. a collector supervisor's tick
        self.batch = batch
        self.idle_poll_seconds = idle_poll_seconds
        self.maintenance_seconds = maintenance_seconds   # how often the periodic jobs (run_due) run
        self._next_maintenance = 0.0
        self.maintenance_runs = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.processed = 0
        self.projected = 0
        self.last_error: str | None = None
        memory.add_listener(self._wake.set)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="magi-background", daemon=True)
            self._thread.start()

    def _maintain_if_due(self) -> None:
        if time.monotonic() < self._next_maintenance:
            return
        self._next_maintenance = time.monotonic() + self.maintenance_seconds
        try:
            maintain(self.memory)
            self.maintenance_runs += 1
        except Exception as exc:  # upkeep failing must not stop the queues
            log.exception("periodic maintenance failed")
            self.last_error = f"{type(exc).__name__}: {exc}"

    def wake(self) -> None:
        """Loop now instead of at the next poll (a watched file changed, work arrived)."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> bool:
        """Finish the current batch (it commits or rolls back whole) and stop; False if still running."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("background worker still busy after %.0f s", timeout)
                return False
            self._thread = None
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            self._maintain_if_due()
            if self.tick is not None:
                try:
                    self.tick()
                except Exception as exc:  # collectors must not stop the queues
                    log.exception("collector tick failed")
                    self.last_error = f"{type(exc).__name__}: {exc}"
            try:
                handled, report = process_batch(self.memory, self.batch)
                self.processed += report.embedded
                self.projected += report.projected
            except Exception as exc:  # keep the worker alive; the error is reported
                if isinstance(exc, MemoryUnavailable):     # a full disk: said once per poll, no traceback
                    log.warning("background processing paused: %s", exc)
                else:
                    log.exception("background processing failed")
                self.last_error = f"{type(exc).__name__}: {exc}"
                handled = 0
            if handled == 0:
                self._wake.wait(self.idle_poll_seconds)
                self._wake.clear()
