"""Typed results of the memory's background work and counters (issue 18): ``PendingReport``
(``process_pending``), ``DueReport`` (``run_due``), ``MemoryStats`` (``stats``) and ``QueueState``
(what is still queued, and what another process holds).

Each is frozen and carries the totals its callers decide on (``handled``, ``pending``, ``done``), so no
caller adds up dict fields of its own. ``to_dict()`` gives exactly the dict these methods returned before
(the JSON of ``magi status --json`` and the MCP tools is unchanged). During the move off dicts each is
also that dict, read-only — ``report["embedded"]``, ``"l3" in report``, ``report == {...}`` and
``json.dumps(report)`` keep working — a bridge to drop once no caller indexes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .embed.queue import EmbedReport
from .extraction import ExtractionReport
from .l2 import L2Report

QUEUES = ("embedding", "l2", "l4", "facts")
ERRORS_SHOWN = 10         # errors a report lists (the rest are in the log)


class DictView(dict):
    """The old dict, read-only, filled from ``to_dict()`` once the report is made: ``report["embedded"]``,
    ``json.dumps(report)``, ``isinstance(report, dict)`` and ``report == {...}`` keep working while callers
    move to the attributes (a frozen report's dict never changes after ``__post_init__``)."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def __post_init__(self) -> None:
        dict.update(self, self.to_dict())

    def _read_only(self, *_: Any, **__: Any) -> None:
        raise TypeError(f"{type(self).__name__} is read-only; use to_dict() for a dict to change")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _read_only  # type: ignore[assignment]
    __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # copy, deepcopy and pickle make the report again from its fields (a dict's way would set items).
        return _remade, (type(self), {f.name: getattr(self, f.name) for f in fields(self)})  # type: ignore[arg-type]


def _remade(cls: type[DictView], values: dict[str, Any]) -> DictView:
    return cls(**values)


@dataclass(frozen=True, eq=False)
class PendingReport(DictView):
    """One ``process_pending`` call: what each queue did.

    ``embedding`` (an ``EmbedReport``: ``embedded``, ``failed``, ``dead``, ``errors``) the embedding queue, ``l2``
    (an ``L2Report``: ``projected``, ``batches``, ``failed``…) the L2 projection queue, ``distilled`` the L4
    strategies distilled, ``facts`` (an ``ExtractionReport``: ``runs``, ``facts``, ``rejected``…) the fact
    extraction of conversations that ended or went quiet. ``handled`` is 0 when the call found nothing to do.
    """

    embedding: EmbedReport = field(default_factory=EmbedReport)
    l2: L2Report = field(default_factory=L2Report)
    distilled: int = 0                    # L4 strategies distilled
    facts: ExtractionReport = field(default_factory=ExtractionReport)

    @property
    def embedded(self) -> int:
        return self.embedding.embedded

    @property
    def projected(self) -> int:
        """Events L2 projected."""
        return self.l2.projected.events

    @property
    def failed(self) -> int:
        """Jobs that failed this time (embedding and L2; retried later with backoff)."""
        return self.embedding.failed + self.l2.failed

    @property
    def handled(self) -> int:
        """Jobs taken off a queue, done or failed: 0 means this call found nothing it could do."""
        return (self.embedding.embedded + self.embedding.failed + self.l2.projected.events + self.l2.failed
                + self.distilled + self.facts.runs + self.facts.failed)

    def to_dict(self) -> dict[str, Any]:
        return {"embedded": self.embedding.embedded, "failed": self.embedding.failed, "dead": self.embedding.dead,
                "errors": self.embedding.errors[:ERRORS_SHOWN], "l2": self.l2.to_dict(),
                "l4": {"distilled": self.distilled}, "facts": self.facts.to_dict()}


@dataclass(frozen=True, eq=False)
class DueReport(DictView):
    """One ``run_due`` call: the report of each periodic job that ran (None: not asked for).

    ``backup`` the daily backup (made or not, and why), ``forget`` an interrupted forget resumed, ``l2_maintenance``
    L2 upkeep (TTL expiry, episodes, entity merges, orphans, jobs a crash left running), ``l0_sessions_ended`` the
    idle working-memory sessions ended, ``l3`` the summaries written per granularity and the insights, ``tiers``
    the events moved to the cold tier.
    """

    backup: dict[str, Any] | None = None
    forget: dict[str, Any] | None = None
    l2_maintenance: dict[str, Any] | None = None
    l0_sessions_ended: int | None = None
    l3: dict[str, Any] | None = None
    tiers: dict[str, Any] | None = None

    @property
    def new_summaries(self) -> bool:
        """Whether L3 wrote summaries or insights (they wait to be embedded)."""
        if not self.l3:
            return False
        return any(isinstance(v, int) and v for v in self.l3.values()) or any(self.l3.get("insights", {}).values())

    def to_dict(self) -> dict[str, Any]:
        parts = {"backup": self.backup, "forget": self.forget, "l2_maintenance": self.l2_maintenance,
                 "l0_sessions_ended": self.l0_sessions_ended, "l3": self.l3, "tiers": self.tiers}
        return {key: value for key, value in parts.items() if value is not None}


@dataclass(frozen=True, eq=False)
class QueueState:
    """What is left in the queues: ``due`` jobs this process can take now, per queue, and ``held`` ones
    another connection has claimed under a live lease (they are done, or due again, when it ends)."""

    due: Mapping[str, int]
    held: Mapping[str, int]

    @property
    def pending(self) -> int:
        return sum(self.due.values())

    @property
    def held_total(self) -> int:
        return sum(self.held.values())

    @property
    def done(self) -> bool:
        """Nothing due and nothing held: every queue is drained."""
        return self.pending == 0 and self.held_total == 0

    def to_dict(self) -> dict[str, Any]:
        return {"due": dict(self.due), "held": dict(self.held)}


@dataclass(frozen=True, eq=False)
class MemoryStats(DictView):
    """``stats()``: counts per layer, queue states, storage, redaction and model health.

    ``database`` the file's path, ``size_bytes`` with its WAL and journal, ``schema_version`` the last migration;
    ``events`` L1 counts (``total``, ``by_evidence_class``, ``by_scope``, ``by_source``, the hot and cold
    ``tiers``, ``activity_blocks``); ``runtime_traces`` tool runs kept for the audit; ``chat_sessions``;
    ``embedding`` the vector index (``model``, ``dimension``, ``chunks``, ``pending``, ``dead``, whether vectors are
    ready and the model loaded); ``sources`` per source ``accepted``, ``duplicates``, ``rejected`` and the last
    rejection; ``l2`` the L2 queue (``jobs`` per state, ``oldest_pending_seconds``) and its entities, edges,
    assertions and episodes; ``facts`` saved facts ``by_evidence``, ``extractions``, ``conversations_due``,
    ``failed``; ``collectors`` each collector's last status; ``storage`` disk and backups (``writable``…);
    ``redaction`` the rule set stored text was redacted with; ``llm`` the provider's health;
    ``working_memory_sessions`` live L0 sessions. ``event_count``, ``writable`` and ``queued`` are the totals the
    app shows.
    """

    database: str
    size_bytes: int
    schema_version: int
    events: dict[str, Any]
    runtime_traces: int
    chat_sessions: int
    embedding: dict[str, Any]
    sources: dict[str, dict[str, Any]]
    l2: dict[str, Any]
    facts: dict[str, Any]
    collectors: dict[str, dict[str, Any]]
    storage: dict[str, Any]
    redaction: dict[str, Any]
    llm: dict[str, Any]
    working_memory_sessions: int

    @property
    def event_count(self) -> int:
        return int(self.events["total"])

    @property
    def writable(self) -> bool:
        return bool(self.storage["writable"])

    @property
    def queued(self) -> int:
        """Jobs waiting in the embedding and L2 queues, whenever due (the tray's "n queued")."""
        return int(self.embedding["pending"] + self.l2["jobs"]["pending"])

    def to_dict(self) -> dict[str, Any]:
        return {"database": self.database, "size_bytes": self.size_bytes, "schema_version": self.schema_version,
                "events": self.events, "runtime_traces": self.runtime_traces, "chat_sessions": self.chat_sessions,
                "embedding": self.embedding, "sources": self.sources, "l2": self.l2, "facts": self.facts,
                "collectors": self.collectors, "storage": self.storage, "redaction": self.redaction,
                "llm": self.llm, "working_memory_sessions": self.working_memory_sessions}
