"""What ``stats()`` shows (``magi status``, the status window): counts per layer, the queues' states, the
sources' counters, storage, redaction and model health; and the stored events per source per day."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from .. import extraction
from ..embed import Embedder
from ..l0 import WorkingMemory
from ..l2 import beliefs as l2_beliefs
from ..l2 import jobs as l2_jobs
from ..l2.constants import LIVE
from ..llm import LLMProvider
from ..reports import MemoryStats
from ..store import Database, activity_blocks, tiers
from ..store import statistics as counts
from ..store.queue import EMBEDDING_JOBS, EXTRACTION_RETRIES
from .collector_state import CollectorState
from .redactor import Redactor
from .storage import Storage


@dataclass(eq=False, repr=False)     # a service: compared by identity, like the others
class Statistics:
    """What it reads: the database, the models' and queues' state, and the services that know the rest."""

    db: Database
    embedder: Embedder
    llm: LLMProvider
    _: KW_ONLY
    vectors_ready: Callable[[], bool]
    l0: WorkingMemory
    collector_state: CollectorState
    storage: Storage
    redactor: Redactor

    def stats(self) -> MemoryStats:
        conn = self.db.reader()
        embedding = counts.embedding_index(conn)
        l2_states = l2_jobs.counts(conn)
        jobs = EMBEDDING_JOBS.counts(conn)
        path = Path(self.db.path)
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
        return MemoryStats(
            database=str(path),
            size_bytes=size,
            schema_version=counts.latest_migration(conn),
            events={
                "total": counts.events_total(conn),
                "by_evidence_class": counts.events_by(conn, "evidence_class"),
                "by_scope": counts.events_by(conn, "l1_retrieval_scope"),
                "by_source": counts.events_by(conn, "source"),
                # hot: searched by default; cold: summarised and old, searched when a question reaches back
                "tiers": {**tiers.sizes(conn), "cold_after_days": tiers.cold_after_days(conn)},
                # of the total: hourly blocks of page visits, commands and plays, stored beside their members
                "activity_blocks": activity_blocks.live_block_count(conn),
            },
            runtime_traces=counts.runtime_traces(conn),
            chat_sessions=counts.chat_sessions(conn),
            embedding={
                "model": embedding[0] if embedding else None,
                "dimension": embedding[1] if embedding else None,
                "rebuilt_from": embedding[2] if embedding else None,
                "embedder": self.embedder.name,
                "vectors_ready": self.vectors_ready(),
                "model_loaded": self.embedder.loaded,
                "chunks": counts.event_chunks(conn),
                "pending": jobs.get("pending", 0),
                "dead": jobs.get("dead", 0),
            },
            sources={
                row[0]: {"accepted": row[1], "duplicates": row[2], "rejected": row[3], "last_rejection": row[4]}
                for row in counts.source_counters(conn)
            },
            l2={
                "llm": self.llm.name,
                "jobs": {state: l2_states.get(state, 0) for state in ("pending", "running", "done", "dead")},
                "oldest_pending_seconds": l2_jobs.oldest_pending_age(conn, time.time()),
                "entities": counts.active_entities(conn),
                "edges": counts.active_edges(conn),
                "assertions": counts.live_assertions(conn, LIVE),
                "episodes": counts.promoted_episodes(conn),
                # The user's reviews an import carried over: pending until L2 is rebuilt up to them.
                "imported_reviews": counts.review_replays_by_state(conn),
            },
            facts={
                "by_evidence": counts.active_facts_by_evidence(conn),
                "extractions": counts.extractions(conn),
                "conversations_due": extraction.pending_count(conn, time.time()),
                "failed": EXTRACTION_RETRIES.counts(conn),
            },
            collectors=self.collector_state.collector_statuses(),
            storage=self.storage.storage_status(),
            redaction=self.redactor.redaction_status(),
            llm=self.llm.health(),
            working_memory_sessions=len(self.l0),
        )

    def activity_by_day(self, days: int = 14, now: float | None = None) -> dict[str, dict[str, int]]:
        """Stored events per source per local day, the last ``days`` days up to ``now``."""
        now = time.time() if now is None else now
        return l2_beliefs.activity_by_day(self.db.reader(), now - days * 86400, now)
