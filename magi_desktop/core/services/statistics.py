"""What ``stats()`` shows (``magi status``, the status window): counts per layer, the queues' states, the
sources' counters, storage, redaction and model health; and the stored events per source per day."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from .. import extraction
from ..embed import Embedder
from ..l0 import WorkingMemory
from ..l2 import beliefs as l2_beliefs
from ..l2 import jobs as l2_jobs
from ..llm import LLMProvider
from ..reports import MemoryStats
from ..store import Database
from ..store.queue import EMBEDDING_JOBS, EXTRACTION_RETRIES
from .backup import Storage
from .collectors import CollectorState
from .redaction import Redactor


class Statistics:
    def __init__(self, db: Database, embedder: Embedder, llm: LLMProvider, *, vectors_ready: Callable[[], bool],
                 l0: WorkingMemory, collector_state: CollectorState, storage: Storage, redactor: Redactor) -> None:
        self.db = db
        self.embedder = embedder
        self.llm = llm
        self.vectors_ready = vectors_ready
        self.l0 = l0
        self.collector_state = collector_state
        self.storage = storage
        self.redactor = redactor

    def stats(self) -> MemoryStats:
        conn = self.db.reader()

        def grouped(sql: str) -> dict[str, int]:
            return {key: count for key, count in conn.execute(sql) if count}

        def counted(column: str) -> dict[str, int]:
            return grouped(f"SELECT {column}, sum(events) FROM l1_event_counts GROUP BY 1 ORDER BY 2 DESC")

        embedding = conn.execute("SELECT model, dimension, rebuilt_from FROM vector_index").fetchone()
        l2_states = l2_jobs.counts(conn)
        jobs = EMBEDDING_JOBS.counts(conn)
        path = Path(self.db.path)
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
        return MemoryStats(
            database=str(path),
            size_bytes=size,
            schema_version=conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0],
            events={
                "total": conn.execute("SELECT coalesce(sum(events), 0) FROM l1_event_counts").fetchone()[0],
                "by_evidence_class": counted("evidence_class"),
                "by_scope": counted("l1_retrieval_scope"),
                "by_source": counted("source"),
            },
            runtime_traces=conn.execute("SELECT count(*) FROM runtime_traces").fetchone()[0],
            chat_sessions=conn.execute("SELECT count(*) FROM chat_sessions").fetchone()[0],
            embedding={
                "model": embedding[0] if embedding else None,
                "dimension": embedding[1] if embedding else None,
                "rebuilt_from": embedding[2] if embedding else None,
                "embedder": self.embedder.name,
                "vectors_ready": self.vectors_ready(),
                "model_loaded": self.embedder.loaded,
                "chunks": conn.execute("SELECT count(*) FROM event_chunks").fetchone()[0],
                "pending": jobs.get("pending", 0),
                "dead": jobs.get("dead", 0),
            },
            sources={
                row[0]: {"accepted": row[1], "duplicates": row[2], "rejected": row[3], "last_rejection": row[4]}
                for row in conn.execute(
                    "SELECT source, accepted, duplicates, rejected, last_rejection FROM source_counters "
                    "ORDER BY source")
            },
            l2={
                "llm": self.llm.name,
                "jobs": {state: l2_states.get(state, 0) for state in ("pending", "running", "done", "dead")},
                "oldest_pending_seconds": l2_jobs.oldest_pending_age(conn, time.time()),
                "entities": conn.execute("SELECT count(*) FROM entity_catalog WHERE status = 'active'").fetchone()[0],
                "edges": conn.execute("SELECT count(*) FROM kg_edges WHERE status = 'active'").fetchone()[0],
                "assertions": conn.execute("SELECT count(*) FROM tom_trait_assertions WHERE status IN "
                                           "('tentative', 'corroborated', 'stable')").fetchone()[0],
                "episodes": conn.execute("SELECT count(*) FROM l2_episodes WHERE status = 'promoted'").fetchone()[0],
                # The user's reviews an import carried over: pending until L2 is rebuilt up to them.
                "imported_reviews": grouped("SELECT state, count(*) FROM review_replays GROUP BY 1"),
            },
            facts={
                "by_evidence": grouped("SELECT evidence_type, count(*) FROM memory_facts WHERE status = 'active' "
                                       "GROUP BY 1 ORDER BY 2 DESC"),
                "extractions": conn.execute("SELECT count(*) FROM fact_extractions").fetchone()[0],
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
