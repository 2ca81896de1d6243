"""The app's background work: apscheduler says when, the Qt task pool runs it (architecture §11).

* ``process`` — drain the embedding, L2, L4 and fact-extraction queues (``workers.jobs.drain``):
  when ingest queues work (the memory's listener) and every ``idle_poll`` seconds (a conversation
  becomes due for extraction by going quiet, which no ingest announces).
* the periodic jobs of ``Memory.run_due``, each on its own schedule (``PERIODIC_SECONDS``) and
  once at start: ``maintenance`` (L2 upkeep, idle sessions), ``l3:hour`` … ``l3:month`` (the
  windows closed since), ``l3:insights``, ``backup`` (the daily automatic backup).
* ``collect`` — the collector supervisor's ``tick`` (cheap: it starts runs on their own
  threads), every ``tick_seconds``, and at once when a watched file changes.

apscheduler fires on its own thread; a job is handed to the UI thread as a queued
signal and submitted to the pool from there, one run per kind at a time (a request
during a run makes it run once more). The UI thread never runs a job itself.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from ..core import Memory
from ..workers import drain, maintain
from .qt import QObject, Signal
from .tasks import Task, TaskRunner

log = logging.getLogger(__name__)

# How often each periodic job looks for work (seconds). A window is summarised at most this long
# after it closes; the jobs are cheap when nothing is due.
PERIODIC_SECONDS = {"maintenance": 600.0, "l3:hour": 300.0, "l3:day": 900.0, "l3:week": 3600.0,
                    "l3:month": 3600.0, "l3:insights": 900.0, "tiers": 3600.0,
                    "backup": 3600.0}     # looks every hour; backs up when the newest backup is a day old


class AppScheduler(QObject):
    due = Signal(str)                     # a job kind is due (emitted from any thread)
    finished = Signal(str, object)        # kind, its result
    failed = Signal(str, str)             # kind, error

    def __init__(self, memory: Memory, runner: TaskRunner, *, supervisor=None, batch: int = 64,
                 idle_poll: float = 30.0, maintenance_seconds: float = 600.0, tick_seconds: float = 5.0,
                 parent: QObject | None = None):
        super().__init__(parent)
        from apscheduler.schedulers.background import BackgroundScheduler

        self.memory, self.runner, self.batch = memory, runner, batch
        self.tasks: dict[str, Task] = {}
        self.runs: dict[str, int] = {"process": 0, **{job: 0 for job in PERIODIC_SECONDS}}
        self.last_error: str | None = None
        self._again: set[str] = set()
        self._stopping = False
        # A run that comes late is run, not skipped: apscheduler's default grace of 1 s dropped the
        # start-up runs ("next_run_time=now" below) whenever start() came more than a second after this
        # — a slow start, a busy machine — and the periodic jobs then waited a whole interval.
        self.scheduler = BackgroundScheduler(daemon=True, timezone=timezone.utc,
                                             job_defaults={"misfire_grace_time": None, "coalesce": True})
        now = datetime.now(timezone.utc)
        self.scheduler.add_job(self.due.emit, "interval", args=["process"], seconds=idle_poll, id="process",
                               next_run_time=now, coalesce=True, max_instances=1)
        for job, seconds in PERIODIC_SECONDS.items():
            every = maintenance_seconds if job == "maintenance" else seconds
            self.scheduler.add_job(self.due.emit, "interval", args=[job], seconds=every, id=job,
                                   next_run_time=now, coalesce=True, max_instances=1)
        self.tick_seconds = tick_seconds
        self.set_supervisor(supervisor)
        self.due.connect(self._start)
        memory.add_listener(lambda: self.due.emit("process"))

    def start(self) -> None:
        self.scheduler.start()

    def set_supervisor(self, supervisor) -> None:
        """Collect with this supervisor from now on (None: no collection)."""
        self.supervisor = supervisor
        if self.scheduler.get_job("collect") is not None:
            self.scheduler.remove_job("collect")
        if supervisor is not None:
            self.scheduler.add_job(self._tick, "interval", seconds=self.tick_seconds, id="collect",
                                   next_run_time=datetime.now(timezone.utc), coalesce=True, max_instances=1)
            supervisor.on_due = self.collect_now

    def collect_now(self) -> None:
        """Tick the supervisor now (a watched file changed); safe from any thread."""
        if self.scheduler.running and not self._stopping and self.scheduler.get_job("collect") is not None:
            self.scheduler.modify_job("collect", next_run_time=datetime.now(timezone.utc))

    def _tick(self) -> None:
        try:
            self.supervisor.tick()
        except Exception as exc:  # a broken tick must not stop the schedule
            log.exception("collector tick failed")
            self.last_error = f"{type(exc).__name__}: {exc}"

    def _start(self, kind: str) -> None:      # on the UI thread
        if self._stopping:
            return
        if kind in self.tasks:
            self._again.add(kind)
            return
        if kind == "process":
            # No waiting for work another process holds: the scheduler comes back soon anyway, and a
            # sleeping drain would keep one of the pool's threads from the periodic jobs.
            task = self.runner.submit(drain, self.memory, self.batch, patience=0.0)
        else:
            task = self.runner.submit(maintain, self.memory, (kind,))
        task.signals.done.connect(lambda result, k=kind: self._done(k, result))
        task.signals.failed.connect(lambda error, k=kind: self._failed(k, error))
        task.signals.finished.connect(lambda k=kind: self._finished(k))
        self.tasks[kind] = task

    def _done(self, kind: str, result) -> None:
        self.runs[kind] += 1
        self.finished.emit(kind, result)

    def _failed(self, kind: str, error: str) -> None:
        self.last_error = error
        self.failed.emit(kind, error)

    def _finished(self, kind: str) -> None:
        self.tasks.pop(kind, None)
        if kind in self._again:
            self._again.discard(kind)
            self._start(kind)

    @property
    def busy(self) -> bool:
        return bool(self.tasks)

    def stop(self, timeout_ms: int = 30_000) -> bool:
        """Stop scheduling, let the running batch commit (the drain stops between batches), wait for it."""
        self._stopping = True
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        for task in self.tasks.values():
            task.cancel()
        return self.runner.wait(timeout_ms)
