"""Runs collectors so that none of them can take the app down (DESIGN §10).

Each run of a collector happens in its own thread and hands payloads to one
bounded queue; a single writer drains the queue into ``Memory.ingest_many``.

* **Backpressure.** When the queue is full a collector's thread waits (its
  generator is not advanced), so memory stays bounded; a run that yields more
  than ``max_per_run`` payloads is cut there and counted as throttled.
* **Failures.** An exception ends the run and is recorded; the next run waits
  ``interval × 2^failures`` (capped); after ``quarantine_after`` failures in a row
  the collector is quarantined until ``release``.
* **Hangs.** A run past its timeout is abandoned (Python cannot kill a thread):
  it is counted as a failure, the collector is quarantined, and anything it
  still yields is dropped.
* **Cursors.** ``ctx.save_cursor(value)`` is stored only after every payload
  yielded before it has been written, so nothing acknowledged is lost and
  nothing is skipped after a crash. Without it, the newest ``occurred_at``
  written becomes the cursor.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import Memory
from ..core.contracts import parse_timestamp
from ..plugin_api import Collector

log = logging.getLogger(__name__)

QUEUE_SIZE = 2000              # payloads waiting for the writer, across all collectors
WRITE_BATCH = 500
MAX_PER_RUN = 50_000
RUN_TIMEOUT_SECONDS = 300.0
QUARANTINE_AFTER = 5
MAX_BACKOFF_SECONDS = 6 * 3600.0
_CURSOR = object()             # queue marker: (collector name, _CURSOR, value)


@dataclass
class CollectorStatus:
    name: str
    runs: int = 0
    failures: int = 0             # in a row
    last_error: str | None = None
    quarantined: bool = False
    next_run_at: float = 0.0
    running: bool = False
    counts: Counter = field(default_factory=Counter)   # yielded, stored, duplicates, rejected, throttled, dropped
    last_rejection: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "runs": self.runs, "failures": self.failures, "last_error": self.last_error,
                "quarantined": self.quarantined, "next_run_at": self.next_run_at, "running": self.running,
                "counts": dict(self.counts), "last_rejection": self.last_rejection}


class _Context:
    """What a collector sees during one run."""

    def __init__(self, supervisor: Supervisor, name: str, settings: Mapping[str, Any], cancelled: threading.Event):
        self._supervisor = supervisor
        self._name = name
        self.settings = dict(settings)
        self._cancelled = cancelled
        self.done = 0
        self.total: int | None = None

    def excluded(self, kind: str, value: str) -> bool:
        return self._supervisor.is_excluded(kind, value)

    def save_cursor(self, value: Any) -> None:
        self._supervisor._put(self._name, _CURSOR, value, self._cancelled)

    def progress(self, done: int, total: int | None = None) -> None:
        self.done, self.total = done, total

    @property
    def stopping(self) -> bool:
        return self._cancelled.is_set() or self._supervisor._stop.is_set()


class Supervisor:
    def __init__(self, memory: Memory, collectors: list[Collector], *,
                 settings: Mapping[str, Mapping[str, Any]] | None = None,
                 exclusions: Mapping[str, list[str]] | None = None, queue_size: int = QUEUE_SIZE,
                 max_per_run: int = MAX_PER_RUN, run_timeout: float = RUN_TIMEOUT_SECONDS,
                 quarantine_after: int = QUARANTINE_AFTER, clock: Callable[[], float] = time.time):
        self.memory = memory
        self.collectors = {c.name: c for c in collectors}
        self.settings = {name: dict((settings or {}).get(name, {})) for name in self.collectors}
        self.exclusions = {kind: [v.casefold() for v in values] for kind, values in (exclusions or {}).items()}
        self.max_per_run = max_per_run
        self.run_timeout = run_timeout
        self.quarantine_after = quarantine_after
        self.clock = clock
        self.status = {name: CollectorStatus(name) for name in self.collectors}
        self.paused = False
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[threading.Thread, threading.Event, float]] = {}
        self._newest: dict[str, float] = {}
        self._unsafe: set[str] = set()   # collectors with a failed write in the current run
        self._explicit: set[str] = set()      # saved a cursor in the current run
        self._keeps_cursor: set[str] = set()  # have ever saved their own cursor (never get the fallback)
        self._writer = threading.Thread(target=self._write_loop, name="magi-collect-writer", daemon=True)
        self._writer.start()

    # ------------------------------------------------------------ scheduling

    def is_excluded(self, kind: str, value: str) -> bool:
        lowered = value.casefold()
        return any(item in lowered for item in self.exclusions.get(kind, ()))

    def tick(self) -> list[str]:
        """Start every collector that is due; abandon runs past their timeout. Returns the started names."""
        now = self.clock()
        started = []
        with self._lock:
            for name, (thread, cancelled, began) in list(self._runs.items()):
                if thread.is_alive() and now - began > self.run_timeout:
                    cancelled.set()
                    del self._runs[name]
                    self._failed(name, f"hung: no end after {self.run_timeout:.0f} s", now, hung=True)
            if self.paused or self._stop.is_set():
                return started
            for name, collector in self.collectors.items():
                status = self.status[name]
                if status.quarantined or name in self._runs or now < status.next_run_at:
                    continue
                cancelled = threading.Event()
                thread = threading.Thread(target=self._run, args=(name, collector, cancelled),
                                          name=f"magi-collect-{name}", daemon=True)
                self._runs[name] = (thread, cancelled, now)
                status.running = True
                thread.start()
                started.append(name)
        return started

    def release(self, name: str) -> None:
        """Lift a quarantine (the user re-enabled the collector)."""
        with self._lock:
            status = self.status[name]
            status.quarantined, status.failures, status.next_run_at = False, 0, 0.0

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no run is in progress and the queue is written (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                busy = any(t.is_alive() for t, _, _ in self._runs.values())
            if not busy and self._queue.unfinished_tasks == 0:
                return True
            time.sleep(0.01)
        return False

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for thread, cancelled, _ in list(self._runs.values()):
            cancelled.set()
            thread.join(timeout / max(1, len(self._runs)))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self._queue.put(None, timeout=0.1)
                break
            except queue.Full:
                continue
        self._writer.join(max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------ runs

    def _run(self, name: str, collector: Collector, cancelled: threading.Event) -> None:
        status = self.status[name]
        ctx = _Context(self, name, self.settings[name], cancelled)
        error = None
        cut = False
        try:
            since = self.memory.plugin_cursor(name)
            yielded = 0
            for payload in collector.collect(since, ctx):
                if cancelled.is_set() or self._stop.is_set():
                    cut = True
                    break
                if yielded >= self.max_per_run:
                    status.counts["throttled"] += 1
                    log.warning("collector %s yielded more than %d payloads in one run; cut", name, self.max_per_run)
                    cut = True
                    break
                yielded += 1
                status.counts["yielded"] += 1
                self._put(name, payload, None, cancelled)
        except BaseException as exc:  # noqa: BLE001 - a collector's bug (even SystemExit) is its own
            error = f"{type(exc).__name__}: {exc}"
            log.warning("collector %s failed: %s", name, error)
        # Queued while the run still counts as running, so neither wait_idle nor the next run
        # can slip in before it. Only a clean, complete run may fall back to the newest time seen.
        self._put(name, _CURSOR, None, cancelled, final=True, clean=error is None and not cut)
        with self._lock:
            if self._runs.get(name, (None,))[0] is not threading.current_thread():
                return  # abandoned as hung; its outcome no longer counts
            del self._runs[name]
            status.running = False
            status.runs += 1
            now = self.clock()
            if error:
                self._failed(name, error, now)
            else:
                status.failures, status.last_error = 0, None
                status.next_run_at = now + float(collector.interval_seconds)

    def _failed(self, name: str, error: str, now: float, hung: bool = False) -> None:
        status = self.status[name]
        status.running = False
        status.failures += 1
        status.last_error = error
        if hung or status.failures >= self.quarantine_after:
            status.quarantined = True
            log.warning("collector %s quarantined: %s", name, error)
        interval = float(self.collectors[name].interval_seconds)
        status.next_run_at = now + min(MAX_BACKOFF_SECONDS, interval * 2 ** status.failures)

    def _put(self, name: str, payload: Any, cursor: Any, cancelled: threading.Event, final: bool = False,
             clean: bool = False) -> None:
        """Hand over to the writer, waiting while the queue is full (backpressure)."""
        item = (name, _CURSOR, cursor, (final, clean)) if payload is _CURSOR else (name, payload, None, None)
        while not self._stop.is_set():
            if cancelled.is_set() and not final:
                self.status[name].counts["dropped"] += 1
                return
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    # ---------------------------------------------------------------- writer

    def _write_loop(self) -> None:
        pending: list[tuple[str, dict]] = []
        while True:
            try:
                item = self._queue.get(timeout=0.2)
            except queue.Empty:
                self._flush(pending)          # a quiet moment: write what is waiting
                continue
            if item is None:
                self._flush(pending)
                self._queue.task_done()
                return
            name, payload, cursor, flags = item
            if payload is _CURSOR:
                self._flush(pending)          # everything yielded before the cursor is stored first
                self._store_cursor(name, cursor, *flags)
                self._queue.task_done()
            else:
                pending.append((name, payload))
                if len(pending) >= WRITE_BATCH:
                    self._flush(pending)

    def _flush(self, pending: list[tuple[str, dict]]) -> None:
        if not pending:
            return
        batch = list(pending)
        pending.clear()
        try:
            results = self.memory.ingest_many([p for _, p in batch], on_error="report")
        except Exception:  # noqa: BLE001 - the database is unavailable: keep the app alive, say so
            log.exception("could not store %d collected payloads", len(batch))
            for name, _ in batch:
                self.status[name].counts["write_failed"] += 1
                self._unsafe.add(name)   # no cursor may move past what was not stored
                self._queue.task_done()
            return
        for _ in batch:
            self._queue.task_done()
        for (name, payload), result in zip(batch, results, strict=True):
            counts = self.status[name].counts
            if result.error is not None:
                counts["rejected"] += 1
                self.status[name].last_rejection = str(result.error)
            elif result.duplicate:
                counts["duplicates"] += 1
            else:
                counts["stored"] += 1
            if result.error is None:
                try:
                    at = parse_timestamp(payload.get("occurred_at"), "occurred_at")
                except Exception:  # noqa: BLE001
                    continue
                self._newest[name] = max(self._newest.get(name, at), at)

    def _store_cursor(self, name: str, cursor: Any, final: bool, clean: bool = False) -> None:
        if name in self._unsafe:
            if final:
                self._unsafe.discard(name)   # the next run starts from the old cursor and repeats the rest
            return
        if final:
            explicit = name in self._explicit
            self._explicit.discard(name)
            # A collector that keeps its own cursor never gets the fallback; nor does a run
            # that failed or was cut (it would skip what was never yielded).
            if explicit or name in self._keeps_cursor or not clean or name not in self._newest:
                return
            stored = self.memory.plugin_cursor(name)
            if stored is not None and not isinstance(stored, (int, float)):
                return      # a cursor of the collector's own making is never replaced by a time
            cursor = self._newest[name]
        else:
            self._explicit.add(name)
            self._keeps_cursor.add(name)
            self.status[name].counts["cursor_saved"] += 1
        try:
            self.memory.save_plugin_cursor(name, cursor)
        except Exception:  # noqa: BLE001
            log.exception("could not store the cursor of %s", name)
