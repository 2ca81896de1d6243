"""Ingest (architecture §3, §4): payloads normalised, then stored in one write transaction per batch —
events, runtime traces and the L0-only ones told apart, speakers settled, mentioned times and entities linked,
L4 told of each new tool run, every source's counts kept — and the working memory and listeners told after."""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

from .. import l4, retries
from ..aggregation.fold import fold as fold_into_blocks
from ..contracts import IngestResult, MemoryEvent, PayloadError, is_valid_source_type, tool_run_of
from ..deprecation import DEFAULT_USER_ID, warn_user_id
from ..errors import InvalidInput
from ..ingest import L0_ONLY, RUNTIME_TRACE
from ..l0 import WorkingMemory
from ..mentioned_times import index_mentioned_times
from ..redact import redact_text
from ..speakers import settle as settle_speakers
from ..store import Database
from ..store.connection import Connection
from ..store.entities import EntityLinker
from ..store.l1 import count_ingest, insert_events, insert_traces, trace_rowid
from .normalizer import Normalizer

log = logging.getLogger(__name__)

_UNKNOWN_SOURCE = "(invalid source)"
# A payload after normalising: the event and where it goes, or the raw payload and why it was refused.
_Normalized = tuple[MemoryEvent, str] | tuple[Mapping[str, Any], PayloadError]
# A huge ingest_many is stored in transactions of this many payloads (~0.2-0.4 s each), with a short pause
# between them, so another writer (an MCP log_turn, a collector, the app) never waits long (issue 16).
WRITE_BATCH = 2000
WRITE_BREATHER_SECONDS = 0.05


class Ingestion:
    def __init__(self, db: Database, normalize: Normalizer, *, linker: EntityLinker, l0: WorkingMemory,
                 notify: Callable[[], None]) -> None:
        self.db = db
        self.normalize = normalize      # the payload → event rules, with the memory's dedupe secret
        self.linker = linker            # entities linked in the storing transaction (its cache reset on a rollback)
        self.l0 = l0                    # the working memory sees every new event
        self.notify = notify            # listeners told once new events queued background work

    def ingest(self, payload: Mapping[str, Any]) -> IngestResult:
        """Validate, normalise and store one payload. Raises :class:`PayloadError` on bad input."""
        return self.ingest_many([payload])[0]

    def ingest_many(self, payloads: Iterable[Mapping[str, Any]],
                    on_error: Literal["raise", "report"] = "raise") -> list[IngestResult]:
        """Store a batch in one transaction (a batch over ``WRITE_BATCH`` payloads in one transaction per
        ``WRITE_BATCH``, every payload validated before the first); results in input order.

        ``on_error="raise"`` (default): if any payload is invalid, raise its
        :class:`PayloadError` (``error.index`` says which) and store nothing.
        ``on_error="report"``: store the valid payloads and return an
        ``IngestResult(error=...)`` in the place of each invalid one.
        """
        if on_error not in ("raise", "report"):
            raise InvalidInput("on_error must be 'raise' or 'report'")
        payloads = list(payloads)
        if not payloads:
            return []
        now = time.time()
        normalized: list[_Normalized] = []
        for first in range(0, len(payloads), WRITE_BATCH):
            with gc_paused():
                for index in range(first, min(first + WRITE_BATCH, len(payloads))):
                    raw = payloads[index]
                    try:
                        normalized.append(self.normalize(raw, now))
                    except PayloadError as exc:
                        error = exc.at(index) if len(payloads) > 1 else exc
                        if on_error == "raise":
                            self._count_rejections([(raw, error)])
                            raise error from None
                        normalized.append((raw, error))
        _warn_if_user_id(payloads)
        results: list[IngestResult] = []
        took = 0.0
        for first in range(0, len(normalized), WRITE_BATCH):
            if first:
                time.sleep(min(WRITE_BREATHER_SECONDS, took / 2))   # another writer's turn (see WRITE_BATCH)
            started = time.monotonic()
            with gc_paused():
                results += self._write(normalized[first:first + WRITE_BATCH], now)
            took = time.monotonic() - started
        return results

    def ingest_turn(self, payload: Mapping[str, Any], retry_within: float) -> IngestResult:
        """:meth:`ingest` for a chat message a client may send again (core/retries.py): a retry — the same
        item id, or without one the same message as the last of its session within ``retry_within``
        seconds — returns the stored one (``duplicate``); an item id another message has is refused
        (:class:`PayloadError` on ``source_item_id``)."""
        now = time.time()
        event, target = self.normalize(payload, now)
        _warn_if_user_id([payload])
        return self._write([(event, target)], now, guard=lambda conn: retries.repeated(conn, event, retry_within))[0]

    def _write(self, items: Sequence[_Normalized], now: float,
               guard: Callable[[Connection], IngestResult | None] | None = None) -> list[IngestResult]:
        """Store normalised events; ``items`` holds (event, target) or (raw payload, PayloadError). ``guard``
        (one item): asked inside the write transaction first; a result from it is returned instead."""
        by_target: dict[str, list[tuple[int, MemoryEvent]]] = {L0_ONLY: [], RUNTIME_TRACE: [], "l1": []}
        results: list[IngestResult | None] = [None] * len(items)
        rejections = []
        for position, item in enumerate(items):
            if isinstance(item[1], PayloadError):
                rejections.append(item)
                results[position] = IngestResult(event_id=None, error=item[1])
                continue
            event, target = item
            by_target[target if target in (L0_ONLY, RUNTIME_TRACE) else "l1"].append((position, event))

        tally: dict[str, Counter] = {}
        try:
            self._store(by_target, results, rejections, tally, now, guard)
        except BaseException:
            self.linker.reset()  # ids it cached in the rolled-back transaction are gone
            raise
        for _, event in by_target[L0_ONLY]:
            self.l0.observe(event, ephemeral=True)
        stored = [result for result in results if result is not None]
        if len(stored) != len(results):
            raise RuntimeError("_store left a position without a result")
        for position, event in (*by_target["l1"], *by_target[RUNTIME_TRACE]):
            if not stored[position].duplicate and stored[position].target != "retired":
                self.l0.observe(event, ephemeral=False)
        if any(not stored[position].duplicate for position, _ in by_target["l1"]):
            self.notify()
        return stored

    def _store(self, by_target, results, rejections, tally, now, guard=None) -> None:
        with self.db.transaction() as conn:
            if guard is not None and (earlier := guard(conn)) is not None:
                results[0] = earlier
                source = next(event.source for placed in by_target.values() for _, event in placed)
                count_ingest(conn, source, accepted=0, duplicates=1, now=now)
                return
            for group, store in (("l1", insert_events), (RUNTIME_TRACE, insert_traces)):
                placed = by_target[group]
                if placed:
                    stored = store(conn, [event for _, event in placed])
                    if group == RUNTIME_TRACE:
                        _record_tool_runs(conn, [event for (_, event), outcome in zip(placed, stored, strict=True)
                                                 if not outcome.duplicate])
                    if group == "l1":
                        inserted = [(outcome.rowid, event) for (_, event), outcome
                                    in zip(placed, stored, strict=True) if outcome.rowid is not None]
                        settle_speakers(conn, inserted, self.linker.link)   # "Name: text" turns (speakers.py)
                        index_mentioned_times(conn, inserted)   # "last month I …" (mentioned_times.py)
                        self.linker.link(conn, inserted)
                        # Visits, commands, plays folded into their hour's activity blocks (core/aggregation).
                        self.linker.link(conn, fold_into_blocks(conn, inserted, self.normalize, now))
                    for (position, _event), outcome in zip(placed, stored, strict=True):
                        results[position] = IngestResult(
                            event_id=outcome.event_id, duplicate=outcome.duplicate, target=outcome.target,
                            evidence_class=outcome.evidence_class)
            for position, event in by_target[L0_ONLY]:
                results[position] = IngestResult(event_id=event.event_id, target=L0_ONLY,
                                                 evidence_class=event.evidence_class)
            for position, event in (*by_target["l1"], *by_target[RUNTIME_TRACE], *by_target[L0_ONLY]):
                tally.setdefault(event.source, Counter())["duplicates" if results[position].duplicate
                                                          else "accepted"] += 1
            for source, counts in tally.items():
                count_ingest(conn, source, accepted=counts["accepted"], duplicates=counts["duplicates"], now=now)
            _count_rejections(conn, rejections)

    def _count_rejections(self, rejections: list[tuple[Any, PayloadError]]) -> None:
        try:
            with self.db.transaction() as conn:
                _count_rejections(conn, rejections)
        except Exception:  # counting must never mask the payload error
            log.exception("could not count a rejected payload")


def _warn_if_user_id(payloads: Sequence[Any]) -> None:
    """A payload's ``user_id`` is deprecated (core/deprecation.py): warned once per call that sends another user."""
    if any(isinstance(raw, Mapping) and raw.get("user_id") not in (None, DEFAULT_USER_ID) for raw in payloads):
        warn_user_id("a payload's user_id")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (one ``WRITE_BATCH``): a batch allocates thousands of
    short-lived objects, nearly all freed by reference counting, yet each 700 allocations start a collection
    that walks the young ones (and now and then every object of the process). Measured: 7-8% faster ingest
    (benchmarks/ingest.py). Whatever cycles the batch made are collected once it is enabled again."""
    if not gc.isenabled():      # nested, or the application turned it off itself
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _record_tool_runs(conn, events: list[MemoryEvent]) -> None:
    """L4 learns from every new tool execution, in the transaction that stores it (architecture §8)."""
    for event in events:
        run = tool_run_of(event)
        if run is None:
            continue
        l4.record(conn, run, event.timestamp, trace_rowid(conn, event.event_id))


def _count_rejections(conn, rejections: list[tuple[Any, PayloadError]]) -> None:
    """Count rejected payloads per source (an invalid source name is not stored as such)."""
    for raw, error in rejections:
        source = raw.get("source_type") if isinstance(raw, Mapping) else None
        if not is_valid_source_type(source):
            source = _UNKNOWN_SOURCE
        # Escaped: a message quoting a bad value must still be storable (a lone surrogate is not UTF-8).
        message = redact_text(str(error))[:500].encode("utf-8", "backslashreplace").decode("utf-8")
        count_ingest(conn, source, rejected=1, rejection=message)
