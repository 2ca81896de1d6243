"""One run of a collector: the context it sees (settings, exclusions, cursor, progress, skips, scratch space),
the times it yields (to resume a back-fill the throttle cut) and closing its generator."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.contracts import parse_timestamp
from . import scratch
from .health import RunHealth

if TYPE_CHECKING:
    from .supervisor import Supervisor

log = logging.getLogger(__name__)

CURSOR = object()             # queue marker: (collector name, CURSOR, value)


class CursorNotSaved(ValueError):
    """A collector gave ``ctx.save_cursor`` a value the memory cannot keep: its run fails with this, naming it."""


def check_cursor(collector: str, value: Any) -> Any:
    """``value`` as the memory will keep it — a copy through JSON, so a collector that goes on changing the dict
    it saved cannot move a cursor past items not yet written — or :class:`CursorNotSaved`."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise CursorNotSaved(f"collector {collector}: its cursor cannot be saved, a cursor must be JSON "
                             f"(numbers, strings, lists, objects): {exc}") from None


class RunContext:
    """What a collector sees during one run."""

    def __init__(self, supervisor: Supervisor, name: str, settings: Mapping[str, Any], cancelled: threading.Event):
        self._supervisor = supervisor
        self._name = name
        self.settings: Mapping[str, Any] = dict(settings)   # a copy: the run cannot change the supervisor's
        self._cancelled = cancelled
        self.done = 0
        self.total: int | None = None
        self._temp: Path | None = None
        self.health = RunHealth(name)

    def excluded(self, kind: str, value: str) -> bool:
        return self._supervisor.is_excluded(kind, value)

    def save_cursor(self, value: Any) -> None:
        kept = check_cursor(self._name, value)     # said now, in the collector's run, not later by the writer
        self._supervisor._put(self._name, CURSOR, kept, self._cancelled)

    def progress(self, done: int, total: int | None = None) -> None:
        self.done, self.total = done, total
        self._supervisor.status[self._name].progress = (done, total)

    def source(self, name: str) -> None:
        self.health.read(name)

    def unavailable(self, source: str, reason: str, fix: str | None = None) -> None:
        self.health.unavailable(source, reason, fix)
        log.info("collector %s: %s unavailable: %s", self._name, source, reason)

    def failing(self, source: str, error: str) -> None:
        self.health.failing(source, error)
        log.warning("collector %s: %s failing: %s", self._name, source, error)

    def skipped(self, reason: str, detail: str | None = None) -> None:
        code = self._supervisor.status[self._name].skip(reason, detail)
        log.debug("collector %s skipped an item (%s): %s", self._name, code, detail)

    @property
    def temp_dir(self) -> Path:
        """This run's scratch folder, made on first use and removed when the run ends."""
        if self._temp is None:
            self._temp = scratch.run_folder(self._supervisor.temp_root, self._name)
        return self._temp

    def finish(self) -> None:
        if self._temp is not None:
            scratch.remove(self._temp)
            self._temp = None

    @property
    def stopping(self) -> bool:
        return self._cancelled.is_set() or self._supervisor._stop.is_set()


class RunTimes:
    """The times a run yields, to resume a back-fill the throttle cut (``max_per_run``) without the collector's
    own cursor: when they came in time order, the run goes on from the newest time *below* the last one seen —
    the items at that last time come again (stored ones dedupe) with any not yet yielded — so a long back-fill
    makes progress each run instead of repeating its first ``max_per_run`` items forever. Out of order, where
    an unyielded item may be older, there is no resume point (and the run repeats, as before)."""

    def __init__(self) -> None:
        self.ordered = True
        self.top: float | None = None          # the newest time seen
        self.below_top: float | None = None    # the newest time seen before ``top``

    def see(self, payload: Any) -> None:
        try:
            at = parse_timestamp(payload.get("occurred_at"), "occurred_at")
        except Exception:  # noqa: BLE001 - the writer rejects it; it says nothing of the order
            return
        if self.top is not None and at < self.top:
            self.ordered = False
        elif self.top is None or at > self.top:
            self.below_top, self.top = self.top, at

    def resume_point(self) -> float | None:
        return self.below_top if self.ordered else None


def close_run(run: Any) -> None:
    close = getattr(run, "close", None)
    if close is None:
        return
    try:
        close()
    except BaseException:  # its clean-up failing is the collector's business
        log.debug("a collector's run did not close cleanly", exc_info=True)

