"""L2 structured cognition (architecture §6): entities, knowledge graph, assertions, snapshots, episodes.

:func:`process` drains the projection queue (what ``Memory.process_pending``
and the worker pool call); :func:`maintain` runs the periodic upkeep.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field

from ..errors import MemoryUnavailable
from ..llm.base import LLMError, LLMOutputInvalid, LLMProvider, UnexpectedLLMCall
from ..store import Database
from ..store.entities import EntityLinker
from . import episodes, jobs, maintenance, replay, snapshots
from .projection import ProjectionReport, Projector
from .rules import HANDLERS as RULE_HANDLERS

log = logging.getLogger(__name__)

__all__ = ["L2Report", "RULE_HANDLERS", "maintain", "process"]


@dataclass
class L2Report:
    projected: ProjectionReport = field(default_factory=ProjectionReport)
    batches: int = 0
    failed: int = 0
    dead: int = 0
    snapshots: int = 0
    provider_unavailable: str | None = None
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {**self.projected.to_dict(), "batches": self.batches, "failed": self.failed, "dead": self.dead,
                "snapshots": self.snapshots, "provider_unavailable": self.provider_unavailable,
                "errors": self.errors[:10]}


def process(db: Database, llm: LLMProvider, linker: EntityLinker, limit: int | None = None,
            now: float | None = None, embed=None) -> L2Report:
    """Project due jobs batch by batch (at most ``limit`` events), then refresh queued snapshots.

    ``embed`` (texts -> vectors), when given, lets entity resolution recall candidates by meaning.
    """
    report = L2Report()
    projector = Projector(db, llm, linker, embed)
    done = 0
    while limit is None or done < limit:
        at = time.time() if now is None else now
        size = jobs.BATCH_EVENTS if limit is None else min(jobs.BATCH_EVENTS, limit - done)
        rowids = jobs.claim_batch(db, at, size, before=replay.hold(db))
        if not rowids:
            if replay.hold(db) is not None and replay.apply_due(db):
                continue                # imported reviews applied: the events after them may go on
            break
        done += len(rowids)
        report.batches += 1
        try:
            report.projected.add(projector.project(rowids, at))
        except UnexpectedLLMCall:
            jobs.release(db, rowids)
            raise
        except MemoryUnavailable:
            # The disk is full (or the file damaged): not these events' fault. The batch rolled back;
            # its jobs go back untouched if that can be written, else their lease runs out.
            linker.reset()
            with contextlib.suppress(MemoryUnavailable):
                jobs.release(db, rowids)
            raise
        except LLMError as exc:
            if isinstance(exc, LLMOutputInvalid):
                error = f"{type(exc).__name__}: {exc}"
                linker.reset()
                report.failed += len(rowids)
                report.dead += jobs.mark_failed(db, rowids, error, at)
                report.errors.append(error)
                continue
            # The endpoint is down or refuses us (a bad key): not these events' fault. The whole
            # queue waits and tries again later; nothing is charged to the jobs.
            error = f"{type(exc).__name__}: {exc}"
            log.warning("L2 paused: the LLM provider failed (%s); retrying in %.0f s", error,
                        jobs.PROVIDER_BACKOFF_SECONDS)
            jobs.postpone(db, rowids, error, at)
            report.provider_unavailable = error
            report.errors.append(error)
            break
        except Exception as exc:  # noqa: BLE001 - a failed batch is retried, never half-written
            error = f"{type(exc).__name__}: {exc}"
            log.warning("L2 projection of %d event(s) failed: %s", len(rowids), error)
            linker.reset()
            report.failed += len(rowids)
            report.dead += jobs.mark_failed(db, rowids, error, at)
            report.errors.append(error)
    with db.transaction() as conn:
        episodes.upkeep(conn)           # events deleted by a path that did not bring its episodes up to date
        report.snapshots = snapshots.refresh_queued(conn, time.time() if now is None else now)
    return report


def maintain(db: Database, now: float | None = None) -> dict[str, int]:
    now = time.time() if now is None else now
    with db.transaction() as conn:
        result = maintenance.run(conn, now)
        result["snapshots"] = snapshots.refresh_queued(conn, now)
    return result
