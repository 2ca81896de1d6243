"""Runs collectors so that none of them can take the app down (architecture §10).

Each run of a collector happens in its own thread and hands payloads to one
bounded queue; a single writer drains the queue into ``Memory.ingest_many``.

* **Backpressure.** When the queue is full a collector's thread waits (its
  generator is not advanced), so memory stays bounded; a run that yields more
  than ``max_per_run`` payloads is cut there and counted as throttled.
* **Failures.** An exception ends the run and is recorded; the next run waits
  ``interval × 2^failures`` (capped); after ``quarantine_after`` failures in a row
  the collector is quarantined until released (``magi plugins --release``,
  Settings, ``Memory.release_collector``) or its plugin's version changes. The
  failures and the quarantine are kept in the memory (its guard), and read at
  every tick, so ``magi collect``, the app and any other process honour them.
* **Hangs.** A run past its timeout is abandoned (Python cannot kill a thread):
  it is counted as a failure, the collector is quarantined, and anything it
  still yields is dropped.
* **Cursors.** ``ctx.save_cursor(value)`` is stored only after every payload
  yielded before it has been written, so nothing acknowledged is lost and
  nothing is skipped after a crash. Without it, the newest ``occurred_at``
  written becomes the cursor; a run the throttle cut, read in time order, goes
  on next time from the newest time below the last one it read (``RunTimes``).
* **Watching.** A collector may name files to watch (``watch_paths(settings)``);
  after ``watch()`` a change to one of them makes the collector due at once,
  so a new shell command is read seconds after it is written, not at the next
  interval. The run itself is the same incremental ``collect``.
* **Skipped items.** ``ctx.skipped(reason, detail)`` counts an item the
  collector left out (a broken calendar event, an unreadable History, a binary
  line in a shell history) by reason. A skip is not a failure: the run stays ok
  and nothing moves towards quarantine. The counts are in the status.
* **Scratch space.** ``ctx.temp_dir`` is a folder of the run's own inside the
  data folder (``paths.temp_dir``); it is removed when the run ends, and what a
  killed process left there is removed when a supervisor starts (``scratch``).
* **Health.** A run says what it found of each source it reads (``ctx.source``,
  ``ctx.unavailable``, ``ctx.failing``, or ``Unavailable`` raised when nothing
  can be read); the writer completes it with what was stored — collecting,
  idle, unavailable with its reason and fix, failing with the source's name
  (``health``). It is saved with the status. Unavailable is no failure.
* **Status.** Each collector's runs, failures and counters are saved in the
  memory after every run (``Memory.collector_statuses``), so ``magi status``
  shows them from another process and a restart continues the counts.

The pieces: ``runs`` (what a collector sees during a run, resuming a cut back-fill), ``status`` (its counters)
and ``screening`` (exclusions, payloads a sensor may not send); this module schedules, runs and writes.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import Memory, MemoryUnavailable
from ..core.contracts import parse_timestamp
from ..core.paths import temp_dir
from ..plugin_api import Collector, Unavailable
from . import scratch
from .health import FAILING, RunHealth
from .runs import CURSOR, RunContext, RunTimes, close_run
from .screening import exclusion_forms, mentions_any, refusal
from .settings import unset_required, with_defaults
from .status import CollectorStatus

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver  # watchdog is imported when watching starts

log = logging.getLogger(__name__)

QUEUE_SIZE = 2000              # payloads waiting for the writer, across all collectors
WRITE_BATCH = 500
MAX_PER_RUN = 50_000
RUN_TIMEOUT_SECONDS = 300.0
QUARANTINE_AFTER = 5
MAX_BACKOFF_SECONDS = 6 * 3600.0
_WRITES = {"modified", "created", "moved", "closed"}   # watchdog events that mean a file changed


class Supervisor:
    def __init__(self, memory: Memory, collectors: list[Collector], *,
                 settings: Mapping[str, Mapping[str, Any]] | None = None,
                 exclusions: Mapping[str, list[str]] | None = None, queue_size: int = QUEUE_SIZE,
                 max_per_run: int = MAX_PER_RUN, run_timeout: float = RUN_TIMEOUT_SECONDS,
                 quarantine_after: int = QUARANTINE_AFTER, clock: Callable[[], float] = time.time,
                 temp_root: Path | None = None, versions: Mapping[str, str | None] | None = None,
                 invalid_settings: Mapping[str, str] | None = None):
        self.memory = memory
        self.collectors = {c.name: c for c in collectors}
        # The source types each collector writes: its own, and the extras it lists that are no other
        # collector's own (a "notes" plugin listing "calendar" must not replace the calendar's meetings).
        primaries = {c.source_type for c in collectors}
        self._sources = {c.name: (c.source_type, *(t for t in getattr(c, "source_types", ())
                                                   if t == c.source_type or t not in primaries))
                         for c in collectors}
        # What a run sees: the user's settings over the defaults the collector declares.
        self.settings = {name: with_defaults(c, (settings or {}).get(name, {})) for name, c in self.collectors.items()}
        # Settings hold for the supervisor's life: whether a required one is unset is known once, not each run.
        self._unset = {name: unset_required(c, self.settings[name]) for name, c in self.collectors.items()}
        self.exclusions = {kind: exclusion_forms(kind, values) for kind, values in (exclusions or {}).items()}
        # Domains and paths are also looked for in everything a payload says (a window title naming
        # the bank, a `curl` of it, a command run in an excluded folder), whichever plugin made it.
        self._mentions = [v for kind in ("domains", "paths") for v in self.exclusions.get(kind, ())]
        self.max_per_run = max_per_run
        self.run_timeout = run_timeout
        self.quarantine_after = quarantine_after
        self.clock = clock
        try:
            saved = memory.collector_statuses()
        except Exception:  # counters are a convenience; collecting must still start
            log.exception("could not read the saved collector status")
            saved = {}
        self.status = {name: CollectorStatus.resumed(name, saved.get(name)) for name in self.collectors}
        # The plugin version each collector comes from: a quarantine ends by itself when it changes (a fix).
        self.versions = {name: (versions or {}).get(name) for name in self.collectors}
        # Collectors whose settings failed their schema ("collectors.x.settings.y: …"): unavailable until fixed.
        self.invalid_settings = dict(invalid_settings or {})
        # Collectors' copies of locked files live in the data folder; a crash's leftovers go at start.
        self.temp_root = Path(temp_root) if temp_root is not None else temp_dir(memory.path.parent)
        try:
            scratch.clean(self.temp_root)
        except OSError:
            log.warning("could not clean the scratch folder %s", self.temp_root, exc_info=True)
        self.paused = False
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # The run thread and the writer both save a collector's status; each takes its snapshot under
        # this lock, so the last save is also the newest (not an older snapshot that waited longer).
        self._persist_lock = threading.Lock()
        self._runs: dict[str, tuple[threading.Thread, threading.Event, float]] = {}
        self._newest: dict[str, float] = {}
        self._unsafe: set[str] = set()   # collectors with a failed write in the current run
        self._explicit: set[str] = set()      # saved a cursor in the current run
        self._keeps_cursor: set[str] = set()  # have ever saved their own cursor (never get the fallback)
        self._stored: dict[str, Counter] = {}    # the current run's new items, by source (the writer's)
        self._health: dict[str, RunHealth] = {}  # the current run's health, until it ends or is abandoned
        self._writer = threading.Thread(target=self._write_loop, name="magi-collect-writer", daemon=True)
        self._writer.start()
        self._sync_guards()
        self._observer: BaseObserver | None = None
        self.on_due: Callable[[], None] | None = None    # told when a watched file makes a collector due

    # ------------------------------------------------------------ scheduling

    def is_excluded(self, kind: str, value: str) -> bool:
        lowered = value.casefold()
        return any(item in lowered for item in self.exclusions.get(kind, ()))

    def tick(self) -> list[str]:
        """Start every collector that is due; abandon runs past their timeout. Returns the started names."""
        now = self.clock()
        started: list[str] = []
        hung: list[str] = []
        with self._lock:
            # Measured on the monotonic clock: a laptop that slept through a run has not seen it hang.
            for name, (thread, cancelled, began) in list(self._runs.items()):
                if thread.is_alive() and time.monotonic() - began > self.run_timeout:
                    cancelled.set()
                    del self._runs[name]
                    abandoned = self._health.pop(name, None)
                    if abandoned is not None:
                        abandoned.abandoned = True     # what it still yields says nothing of its health
                    self._failed(name, f"hung: no end after {self.run_timeout:.0f} s", now, hung=True)
                    hung.append(name)
        for name in hung:
            self._persist(name)
        self._sync_guards()
        with self._lock:
            if self.paused or self._stop.is_set():
                return started
            for name, collector in self.collectors.items():
                status = self.status[name]
                if status.quarantined or name in self._runs or now < status.next_run_at:
                    continue
                cancelled = threading.Event()
                thread = threading.Thread(target=self._run, args=(name, collector, cancelled),
                                          name=f"magi-collect-{name}", daemon=True)
                self._runs[name] = (thread, cancelled, time.monotonic())
                status.running = True
                thread.start()
                started.append(name)
        return started

    def wake(self, name: str) -> None:
        """Make a collector due now (its watched file changed); a quarantine still holds."""
        with self._lock:
            status = self.status.get(name)
            if status is None or status.quarantined:
                return
            status.next_run_at = min(status.next_run_at, self.clock())
        if self.on_due is not None:
            self.on_due()

    def watch(self) -> list[str]:
        """Start watching the files collectors name (watchdog). Returns the watched files."""
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        supervisor = self

        class Changed(FileSystemEventHandler):
            def __init__(self, targets: dict[str, set[str]]):
                self.targets = targets       # file path -> collectors watching it

            def on_any_event(self, event):
                if event.event_type not in _WRITES:    # our own reading opens and closes the file too
                    return
                for path in (getattr(event, "src_path", ""), getattr(event, "dest_path", "")):
                    for name in self.targets.get(str(path), ()):
                        supervisor.wake(name)

        by_folder: dict[str, dict[str, set[str]]] = {}
        for name, collector in self.collectors.items():
            watch_paths = getattr(collector, "watch_paths", None)
            if watch_paths is None:
                continue
            try:
                paths = [str(p) for p in watch_paths(self.settings[name])]
            except Exception:  # a plugin's bug only costs it the watching
                log.exception("collector %s could not name its files to watch", name)
                continue
            for path in paths:
                folder = os.path.dirname(os.path.abspath(path))
                if os.path.isdir(folder):
                    by_folder.setdefault(folder, {}).setdefault(os.path.abspath(path), set()).add(name)
        if not by_folder:
            return []
        observer = Observer()
        for folder, targets in by_folder.items():
            observer.schedule(Changed(targets), folder, recursive=False)
        observer.daemon = True
        observer.start()
        self._observer = observer
        return sorted(path for targets in by_folder.values() for path in targets)

    def cancel(self, name: str) -> bool:
        """Stop a running run (the user cancelled a long back-fill). It ends as cut, not failed; its
        saved cursor holds, so the next run goes on from there. False if it was not running."""
        with self._lock:
            run = self._runs.get(name)
            if run is None:
                return False
            run[1].set()
            self.status[name].counts["cancelled"] += 1
            return True

    def release(self, name: str, upgraded_to: str | None = None) -> bool:
        """Lift a quarantine, for every process (the user released the collector, or its plugin was
        ``upgraded_to`` a new version: the versions that failed are then kept); True if it was quarantined."""
        was = self.status[name].quarantined
        try:
            was = self.memory.collector_state.release(name, upgraded_to=upgraded_to) or was
        except Exception:  # the database is unavailable: this process releases it still
            log.warning("could not save the release of collector %s", name, exc_info=True)
        with self._lock:
            status = self.status[name]
            status.quarantined, status.failures, status.next_run_at = False, 0, 0.0
        return was

    def _sync_guards(self) -> None:
        """Take the memory's word on failures and quarantine: another process may have quarantined a collector
        (a hang in `magi collect`) or released it (`magi plugins --release`) since this one last looked."""
        try:
            guards = self.memory.collector_state.collector_guards()
        except Exception:  # the database is unavailable: this process's own counts go on
            log.debug("could not read the collectors' guards", exc_info=True)
            return
        for name, guard in guards.items():
            status = self.status.get(name)
            if status is None:
                continue
            version = self.versions.get(name)
            failed_versions = guard.get("versions") or [guard.get("version")]
            if guard["quarantined"] and version is not None and version not in failed_versions:
                log.warning("collector %s released from quarantine: its version is now %s (%s failed)", name,
                            version, ", ".join(map(str, failed_versions)))
                self.release(name, upgraded_to=version)
                continue
            with self._lock:
                if guard["quarantined"] and not status.quarantined:
                    status.quarantined, status.failures = True, int(guard["failures"])
                    status.last_error = guard.get("reason") or status.last_error
                elif not guard["quarantined"] and status.quarantined and name not in self._runs:
                    status.quarantined, status.failures, status.next_run_at = False, 0, 0.0
                elif name not in self._runs:
                    status.failures = int(guard["failures"])    # another process's failures in a row count too

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
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
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
        ctx = RunContext(self, name, self.settings[name], cancelled)
        self._health[name] = ctx.health
        error = None
        unavailable: Unavailable | None = None
        throttled = False
        cut = False
        run = None
        times = RunTimes()
        resume: float | None = None    # where a back-fill cut by the throttle goes on (see RunTimes)
        try:
            if name in self.invalid_settings:
                raise Unavailable(f"settings not valid: {self.invalid_settings[name]}", "fix them in Settings")
            unset = self._unset[name]
            if unset is not None:
                raise unset
            since = self.memory.plugin_cursor(name)
            yielded = 0
            run = collector.collect(since, ctx)
            for payload in run:
                if cancelled.is_set() or self._stop.is_set():
                    cut = True
                    break
                if yielded >= self.max_per_run:
                    status.counts["throttled"] += 1
                    log.warning("collector %s yielded more than %d payloads in one run; cut", name, self.max_per_run)
                    cut = throttled = True
                    resume = times.resume_point()
                    break
                yielded += 1
                times.see(payload)
                status.counts["yielded"] += 1
                if self._mentions and mentions_any(payload, self._mentions):
                    status.counts["excluded"] += 1
                    continue
                self._put(name, payload, ctx.health.current, cancelled)
        except Unavailable as exc:       # nothing to read on this machine: said, and no failure
            unavailable = exc
            log.info("collector %s unavailable: %s", name, exc)
        except BaseException as exc:  # noqa: BLE001 - a collector's bug (even SystemExit) is its own
            error = f"{type(exc).__name__}: {exc}"
            log.warning("collector %s failed: %s", name, error)
        finally:
            close_run(run)               # a cut run's generator releases its files before its folder goes
            ctx.finish()
        # Queued while the run still counts as running, so neither wait_idle nor the next run
        # can slip in before it. Only a clean, complete run may fall back to the newest time seen.
        self._put(name, CURSOR, resume if error is None else None, cancelled, final=True,
                  clean=error is None and unavailable is None and not cut, outcome=(ctx.health, error, unavailable,
                                                                      throttled and resume is None))
        with self._lock:
            if self._runs.get(name, (None,))[0] is not threading.current_thread():
                return  # abandoned as hung; its outcome no longer counts
            del self._runs[name]
            self._health.pop(name, None)
            status.running = False
            status.progress = None
            status.runs += 1
            now = self.clock()
            status.last_run_at = now
            if error:
                self._failed(name, error, now)
            else:
                status.failures, status.last_error = 0, None
                status.next_run_at = now + float(collector.interval_seconds)
        if not error:
            try:
                self.memory.collector_state.record_success(name)
            except Exception:  # the database is unavailable; the counts stay in this process
                log.debug("could not save collector %s's success", name, exc_info=True)
        self._persist(name)

    def _persist(self, name: str) -> None:
        try:
            with self._persist_lock:
                self.memory.save_collector_status(name, self.status[name].to_dict())
        except Exception:  # noqa: BLE001 - the database is unavailable; the counters stay in memory
            log.warning("could not save the status of collector %s", name)

    def _failed(self, name: str, error: str, now: float, hung: bool = False) -> None:
        status = self.status[name]
        status.running = False
        status.failures += 1
        status.last_error = error
        quarantine = hung or status.failures >= self.quarantine_after
        try:     # every process's failures count: the memory keeps them (its guard)
            guard = self.memory.collector_state.record_failure(name, error, quarantine_after=self.quarantine_after,
                                                               hung=hung, version=self.versions.get(name))
            status.failures, quarantine = int(guard["failures"]), bool(guard["quarantined"])
        except Exception:  # the database is unavailable: this process's own count decides
            log.debug("could not save collector %s's failure", name, exc_info=True)
        if hung:
            # The previous run's sources would read as this one's: a hung run read nothing to the end.
            status.health = {"state": FAILING, "reason": error, "fix": None, "at": now, "sources": {}}
        if quarantine and not status.quarantined:
            status.quarantined = True
            log.warning("collector %s quarantined: %s", name, error)
        interval = float(self.collectors[name].interval_seconds)
        status.next_run_at = now + min(MAX_BACKOFF_SECONDS, interval * 2 ** status.failures)

    def _put(self, name: str, payload: Any, cursor: Any, cancelled: threading.Event, final: bool = False,
             clean: bool = False, outcome: tuple | None = None) -> None:
        """Hand over to the writer, waiting while the queue is full (backpressure). With a payload, ``cursor``
        is the source it came from; the run's last item carries its ``outcome`` (health, error, unavailable,
        cut with no resume point)."""
        item = ((name, CURSOR, cursor, (final, clean, outcome)) if payload is CURSOR
                else (name, payload, cursor, None))
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
        pending: list[tuple[str, dict, str]] = []
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
            if payload is CURSOR:
                self._flush(pending)          # everything yielded before the cursor is stored first
                final, clean, outcome = flags
                if final and outcome is not None and getattr(outcome[0], "abandoned", False):
                    # A hung run ending late: the collector may be running again since its release, and this
                    # run's end must not take that run's counts or cursor flags.
                    self._queue.task_done()
                    continue
                self._store_cursor(name, cursor, final, clean)
                if final:
                    self._record_health(name, outcome)
                    self._persist(name)       # the run's payloads are all counted now
                self._queue.task_done()
            else:
                pending.append((name, payload, cursor))
                if len(pending) >= WRITE_BATCH:
                    self._flush(pending)

    def _record_health(self, name: str, outcome: tuple | None) -> None:
        stored = self._stored.pop(name, Counter())
        if outcome is None:
            return
        health, error, unavailable, stuck = outcome
        if getattr(health, "abandoned", False):
            return
        summary = health.summary(stored, error=error, unavailable=unavailable, now=self.clock())
        if stuck and name not in self._keeps_cursor and error is None:
            # Cut by the throttle, out of time order and without a cursor of its own: the next run reads the
            # same items again, for ever. Not the user's doing, but theirs to know (and the plugin author's).
            summary.update(state=FAILING, fix="the plugin should save a cursor as it goes (ctx.save_cursor)",
                           reason=f"cut at {self.max_per_run:,} items and cannot go on from there: it reads "
                                  "newest first and saves no cursor")
        self.status[name].health = summary

    def _flush(self, pending: list[tuple[str, dict, str]]) -> None:
        if not pending:
            return
        batch = []
        for name, payload, source in pending:
            refused = refusal(payload, self._sources[name], name)    # speaks for someone, or another's source
            if refused is not None:
                self.status[name].reject(refused.code, str(refused))
                self._queue.task_done()
            else:
                batch.append((name, payload, source))
        pending.clear()
        if not batch:
            return
        try:
            results = self.memory.ingest_many([p for _, p, _ in batch], on_error="report")
        except Exception as exc:  # the database is unavailable: keep the app alive, say so
            if isinstance(exc, MemoryUnavailable):   # a full disk: the environment, not a bug
                log.warning("could not store %d collected payloads: %s", len(batch), exc)
            else:
                log.exception("could not store %d collected payloads", len(batch))
            for name, _, _ in batch:
                self.status[name].counts["write_failed"] += 1
                self._unsafe.add(name)   # no cursor may move past what was not stored
                self._queue.task_done()
            return
        for _ in batch:
            self._queue.task_done()
        for (name, payload, source), result in zip(batch, results, strict=True):
            counts = self.status[name].counts
            if result.error is not None:
                # By the bad field's name, its first part: "provenance.url" and "provenance.title" are both bad
                # provenance, and a hostile source cannot grow the reasons by inventing field names.
                field_name = str(getattr(result.error, "field", "") or "payload").split(".")[0].split("[")[0]
                self.status[name].reject(field_name, str(result.error))
            elif result.duplicate:
                counts["duplicates"] += 1
            elif result.target == "retired":
                counts["retired"] += 1         # a cancelled or removed item's stored version went
            else:
                counts["stored"] += 1
                self._stored.setdefault(name, Counter())[source] += 1
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
            if explicit or name in self._keeps_cursor:
                return
            throttled = not clean and cursor is not None    # a back-fill the throttle cut, read in time order
            if not (clean and name in self._newest) and not throttled:
                return
            stored = self.memory.plugin_cursor(name)
            if stored is not None and not isinstance(stored, (int, float)):
                return      # a cursor of the collector's own making is never replaced by a time
            if throttled and stored is not None and cursor <= stored:
                return      # no progress to keep (every item it read had one time)
            cursor = cursor if throttled else self._newest[name]
        else:
            self._explicit.add(name)
            self._keeps_cursor.add(name)
            self.status[name].counts["cursor_saved"] += 1
        try:
            self.memory.save_plugin_cursor(name, cursor)
        except Exception:
            log.exception("could not store the cursor of %s", name)


