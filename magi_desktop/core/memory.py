"""``Memory``: the one facade the rest of the world uses (architecture §12)."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import tzinfo
from pathlib import Path
from typing import Any, Literal

from . import extraction, l2, l3, l4, retries
from .contracts import IngestResult, MemoryEvent, PayloadError, is_valid_source_type, validate_payload
from .embed import Embedder, indexing, resolve_embedder
from .embed.indexing import EmbedReport, pending_count
from .errors import MemoryUnavailable
from .ingest import L0_ONLY, RUNTIME_TRACE, normalize, tool_run_of
from .l0 import WorkingMemory
from .l2 import jobs as l2_jobs
from .l3 import insights as l3_insights
from .llm import LLMProvider, OpenAICompatibleLLM, OpenAISettings, RulesLLM
from .memory_agents import AgentsMixin
from .memory_backup import BackupMixin
from .memory_export import ExportMixin
from .memory_facts import FactsMixin
from .memory_forget import ForgetMixin
from .memory_redact import RedactMixin, note_rules
from .memory_review import ReviewMixin
from .mentioned_times import index_mentioned_times
from .outbound import safe
from .paths import database_path
from .redact import CURRENT, RuleSet, redact_text
from .render import TemplateRegistry
from .reredact import stored_version
from .retrieval import EvidencePack, Retriever
from .retrieval.structured import L2Graph
from .speakers import settle as settle_speakers
from .store import Database, SchemaTooNew
from .store.connection import Connection, DatabaseError, LockWait, write_transaction
from .store.entities import EntityLinker
from .store.l1 import count_ingest, event_row, insert_events, insert_traces, meta_secret, stored_secret
from .store.queue import EMBEDDING_JOBS, EXTRACTION_RETRIES
from .store.vectors import current_model, ensure_vector_index

log = logging.getLogger(__name__)


LLM_PROVIDERS = ("rules", "openai")  # or pass an LLMProvider instance (e.g. a ScriptedLLM in tests)
PERIODIC_JOBS = ("maintenance", "l3:hour", "l3:day", "l3:week", "l3:month", "l3:insights", "backup")
_UNKNOWN_SOURCE = "(invalid source)"
# A huge ingest_many is stored in transactions of this many payloads (~0.2-0.4 s each), with a short pause
# between them, so another writer (an MCP log_turn, a collector, the app) never waits long (issue 16).
WRITE_BATCH = 2000
WRITE_BREATHER_SECONDS = 0.05
OPEN_PATIENCE_SECONDS = 5.0    # opening waits no longer for the lock to finish a forget's work (left to later)
OPEN_FORGET_SECONDS = 2.0      # and works on an interrupted forget no longer than this (the rest: in the background)


class Memory(ReviewMixin, FactsMixin, ForgetMixin, ExportMixin, AgentsMixin, BackupMixin, RedactMixin):
    """Layered long-term memory over one SQLite database.

    Open with :meth:`open`; every method is thread-safe. Writes are serialised
    on one writer connection; reads use a connection per thread.
    """

    def __init__(self, db: Database, embedder: Embedder, *, llm: LLMProvider, user_id: str,
                 templates: TemplateRegistry, key_secret: bytes, vectors_ready: bool = True,
                 redaction: RuleSet = CURRENT):
        self.db = db
        self.redaction = redaction
        self.embedder = embedder
        #: False when the model that made the stored vectors is missing: the
        #: index is kept intact and embedding waits for the model to return.
        self.vectors_ready = vectors_ready
        self._key_secret = key_secret
        self.llm = llm
        self.user_id = user_id
        self.templates = templates
        self._listeners: list[Callable[[], None]] = []
        self._l0 = WorkingMemory()
        self._process_lock = threading.Lock()
        self._forget_lock = threading.RLock()      # one resume / scrub of forget jobs at a time
        self._forgets_running: set[int] = set()    # receipt ids of the forget jobs this process is deleting
        self._entities = EntityLinker()
        self._retriever = Retriever(db, embedder, self._entities, vectors_ready=lambda: self.vectors_ready,
                                    graph=L2Graph())

    # ----------------------------------------------------------- lifecycle

    @classmethod
    def open(
        cls,
        path: str | os.PathLike | None = None,
        embedder: str | Embedder = "default",
        llm: str | LLMProvider = "rules",
        *,
        user_id: str = "local",
        templates: TemplateRegistry | None = None,
        redaction: RuleSet | None = None,
        lock_wait: LockWait | None = None,
        lock_patience: float | None = None,
    ) -> Memory:
        """Create or migrate the database at ``path`` (a data folder or a ``.db`` file).

        ``path=None`` uses ``$MAGI_DATA_DIR`` or the platform's user data folder.
        ``llm`` is "rules" (offline, the default), "openai" (an OpenAI-compatible
        endpoint configured by ``MAGI_LLM_*`` variables) or a provider instance.
        ``redaction`` is the secret-redaction rule set (default: the current rules).
        ``lock_wait(seconds, acquired)`` is told while a write waits for another program's write lock
        (default: the process's, see ``store.connection.on_lock_wait``); after ``lock_patience`` seconds
        (default 300) the write gives up with :class:`MemoryBusy`. Opening writes only when the database
        needs it (a migration, a first start, a forget a crash interrupted), so it normally waits for nobody.
        """
        llm = resolve_llm(llm)
        embedder = resolve_embedder(embedder)
        location = database_path(path)
        try:
            db = Database(location, lock_wait=lock_wait, lock_patience=lock_patience)
        except (OSError, DatabaseError, SchemaTooNew) as exc:
            raise MemoryUnavailable(f"cannot open the memory at {location}: {exc}") from exc
        try:
            with db.writer() as conn:
                vectors_ready = _prepare_vector_index(conn, embedder)
                # Read first: opening takes the write lock only when there is something to write.
                key_secret = stored_secret(conn, "idempotency_secret")
                if key_secret is None:
                    with write_transaction(conn):
                        key_secret = meta_secret(conn, "idempotency_secret")
                if stored_version(conn) is None:     # a new memory, or one from before the rules had versions
                    note_rules(conn, redaction or CURRENT)
            l2_jobs.recover_running(db)
        except BaseException:
            db.close()
            raise
        memory = cls(db, embedder, llm=llm, user_id=user_id, templates=templates or TemplateRegistry(),
                     vectors_ready=vectors_ready, key_secret=key_secret,
                     redaction=redaction or CURRENT)
        try:
            with db.patience(OPEN_PATIENCE_SECONDS):
                memory.resume_forget(budget=OPEN_FORGET_SECONDS)   # a forget a crash interrupted, a held scrub
        except MemoryUnavailable as exc:        # busy, a full disk: the background work and run_due try again
            log.warning("an unfinished forget waits: %s", exc)
        return memory

    def close(self) -> None:
        self.embedder.release()
        self.db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def path(self) -> Path:
        return Path(self.db.path)

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after each commit that queued background work."""
        self._listeners.append(callback)

    # -------------------------------------------------------------- ingest

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
            raise ValueError("on_error must be 'raise' or 'report'")
        payloads = list(payloads)
        if not payloads:
            return []
        now = time.time()
        normalized: list[tuple[MemoryEvent, str] | PayloadError] = []
        for index, raw in enumerate(payloads):
            try:
                normalized.append(self._normalize(raw, now))
            except PayloadError as exc:
                error = exc.at(index) if len(payloads) > 1 else exc
                if on_error == "raise":
                    self._count_rejections([(raw, error)])
                    raise error from None
                normalized.append((raw, error))
        results: list[IngestResult] = []
        took = 0.0
        for first in range(0, len(normalized), WRITE_BATCH):
            if first:
                time.sleep(min(WRITE_BREATHER_SECONDS, took / 2))   # another writer's turn (see WRITE_BATCH)
            started = time.monotonic()
            results += self._write(normalized[first:first + WRITE_BATCH], now)
            took = time.monotonic() - started
        return results

    def ingest_turn(self, payload: Mapping[str, Any], retry_within: float) -> IngestResult:
        """:meth:`ingest` for a chat message a client may send again (core/retries.py): a retry — the same
        item id, or without one the same message as the last of its session within ``retry_within``
        seconds — returns the stored one (``duplicate``); an item id another message has is refused
        (:class:`PayloadError` on ``source_item_id``)."""
        now = time.time()
        event, target = self._normalize(payload, now)
        return self._write([(event, target)], now, guard=lambda conn: retries.repeated(conn, event, retry_within))[0]

    def _normalize(self, raw: Any, now: float) -> tuple[MemoryEvent, str]:
        payload = validate_payload(raw)
        try:
            return normalize(payload, self.templates, user_id=self.user_id, key_secret=self._key_secret, now=now,
                             rules=self.redaction)
        except Exception as exc:  # noqa: BLE001 - one odd payload must not sink its batch
            # A payload that passed validation but broke normalisation is a bug
            # here, not the sender's fault: log it with its traceback, reject it.
            log.exception("could not normalise a valid payload from %s", payload.source_type)
            raise PayloadError("payload", f"could not be processed ({type(exc).__name__}); "
                                          "this is a bug in Magi Desktop, please report it") from exc

    def _write(self, items: list[tuple], now: float,
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
            self._entities.reset()  # ids it cached in the rolled-back transaction are gone
            raise
        for _, event in by_target[L0_ONLY]:
            self._l0.observe(event, ephemeral=True)
        for position, event in (*by_target["l1"], *by_target[RUNTIME_TRACE]):
            if not results[position].duplicate and results[position].target != "retired":
                self._l0.observe(event, ephemeral=False)
        if any(not results[position].duplicate for position, _ in by_target["l1"]):
            self._notify()
        return results

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
                        settle_speakers(conn, inserted, self._entities.link)   # "Name: text" turns (speakers.py)
                        index_mentioned_times(conn, inserted)   # "last month I …" (mentioned_times.py)
                        self._entities.link(conn, inserted)
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
        except Exception:  # noqa: BLE001 - counting must never mask the payload error
            log.exception("could not count a rejected payload")

    # ------------------------------------------------------------ L0 working memory

    def working_events(self, session_id: str | None) -> list[MemoryEvent]:
        """Ephemeral (L0-only) events of a session, oldest first; never stored on disk."""
        return self._l0.events(session_id or "")

    def working_memory(self, session_id: str) -> dict[str, Any] | None:
        """A live session's workbench for the agent: goal, focus entities, recent tool runs, a running
        summary and the threads of its dialogue (None once the session has ended)."""
        def focus_of(texts: list[str]) -> list[str]:
            conn = self.db.reader()
            counts: Counter = Counter()
            for text in texts:
                counts.update({entity_id for entity_id, _, key in self._entities.find(conn, text) if key != "@user"})
            names = dict(conn.execute(
                f"SELECT entity_id, name FROM entity_catalog WHERE entity_id IN ({', '.join('?' * len(counts))})",
                list(counts)).fetchall()) if counts else {}
            return [names[i] for i, _ in counts.most_common() if i in names]

        return self._l0.get(session_id, focus_of)

    def set_goal(self, session_id: str, goal: str) -> None:
        """The agent states what the session is for (otherwise the first request is taken as the goal)."""
        if not goal or not goal.strip():
            raise ValueError("the goal is empty")
        self._l0.set_goal(session_id, goal)

    def end_session(self, session_id: str | None) -> None:
        """The session ended: its working memory is cleared (what reached L1 stays), and its conversation so
        far is ready for fact extraction; later messages of the same id are its next generation."""
        self._l0.end(session_id or "")
        if session_id:
            with self.db.transaction() as conn:
                conn.execute("UPDATE chat_sessions SET generation = generation + 1 WHERE session_id = ?",
                             (session_id,))

    def _notify(self) -> None:
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # noqa: BLE001 - a listener must not break ingest
                log.exception("memory listener failed")

    # ---------------------------------------------------------- background

    def pending_work(self) -> int:
        """How many queued jobs are due now (and can run), over every queue."""
        return sum(self.pending_by_queue().values())

    def retry_dead_jobs(self) -> int:
        """Give dead-lettered L2 jobs and fact extractions another five attempts (e.g. after fixing the
        LLM endpoint); returns how many were revived."""
        return l2_jobs.revive_dead(self.db) + extraction.revive_dead(self.db)

    def pending_by_queue(self) -> dict[str, int]:
        """Due jobs per queue: {"embedding": n, "l2": m, "l4": k, "facts": conversations to extract}."""
        return {"embedding": pending_count(self.db) if self.vectors_ready else 0,
                "l2": l2_jobs.pending_count(self.db),
                "l4": self.db.reader().execute("SELECT count(*) FROM procedural_skills WHERE distill_due = 1"
                                               ).fetchone()[0],
                "facts": extraction.pending_count(self.db.reader(), time.time())}

    def process_pending(self, limit: int | None = None, now: float | None = None,
                        queues: tuple[str, ...] = ("embedding", "l2", "l4", "facts")) -> dict[str, Any]:
        """Drain the background queues now: embeddings, then L2 projection and snapshots, then the
        L4 strategies due for distillation, then the conversations due for fact extraction.

        ``limit`` caps the events each queue handles in this call; ``now`` is the
        clock the L2 queue runs on (tests and replays); ``queues`` picks which to
        drain. Failed jobs are retried later with backoff and end in the dead
        letter; see :meth:`stats`.
        """
        unknown = set(queues) - {"embedding", "l2", "l4", "facts"}
        if unknown:
            raise ValueError(f"unknown queue(s) {', '.join(sorted(unknown))}; queues are embedding, l2, l4 and facts")
        extracted = extraction.ExtractionReport()
        distilled = 0
        report = EmbedReport()
        cognition = l2.L2Report()
        with self._process_lock:
            if self.vectors_ready and "embedding" in queues:
                report = indexing.embed(self.db, self.embedder, ("events", "summaries"), limit=limit)
            if "l2" in queues:
                embed = self.embedder.embed if self.vectors_ready else None
                cognition = l2.process(self.db, self.llm, self._entities, limit=limit, now=now, embed=embed)
                if cognition.projected.superseded:
                    l3_insights.reconciled(self.db, time.time() if now is None else now)
                if self.vectors_ready:   # L2's own vectors are part of the L2 work
                    report.add(indexing.embed(self.db, self.embedder, ("edges", "entities")))
            if "l4" in queues:
                distilled = l4.distill.run(self.db, self.llm, time.time() if now is None else now,
                                           limit=limit or l4.distill.BATCH)
        if "facts" in queues:
            # Outside the lock: claims keep extractors apart, and model calls must not hold up forget().
            extracted = extraction.run(self.db, self.llm, now, limit=min(limit or extraction.BATCH, extraction.BATCH))
        return {"embedded": report.embedded, "failed": report.failed, "dead": report.dead,
                "errors": report.errors[:10], "l2": cognition.to_dict(), "l4": {"distilled": distilled},
                "facts": extracted.to_dict()}

    def run_due(self, now: float | None = None, jobs: Iterable[str] | None = None) -> dict[str, Any]:
        """Run every periodic job due at ``now``, synchronously and idempotently: L2 maintenance (TTL expiry,
        episodes, entity merges, orphans) and the end of idle sessions (``maintenance``), the L3 windows
        closed by ``now`` (``l3:hour``, ``l3:day``, ``l3:week``, ``l3:month``) and the rule-made insights
        (``l3:insights``), and the daily backup (``backup``, by the real clock). ``jobs`` picks some (the app's
        scheduler runs each on its own schedule); None runs them all, which is how a test or a benchmark
        replays a month with successive ``now``."""
        chosen = set(PERIODIC_JOBS if jobs is None else jobs)
        unknown = chosen - set(PERIODIC_JOBS)
        if unknown:
            raise ValueError(f"unknown periodic job(s) {', '.join(sorted(unknown))}; jobs are "
                             f"{', '.join(PERIODIC_JOBS)}")
        report: dict[str, Any] = {}
        if "backup" in chosen:
            report["backup"] = self.backup_if_due()
        if "maintenance" in chosen:
            report["forget"] = self.resume_forget()     # outside the process lock: chunks take it each
        with self._process_lock:
            try:
                if "maintenance" in chosen:
                    # A job still marked running past its lease was left by a crash: due again.
                    recovered = l2_jobs.recover_running(self.db)     # leases are in real time
                    report["l2_maintenance"] = l2.maintain(self.db, now) | {"jobs_recovered": recovered}
                    report["l0_sessions_ended"] = self._l0.expire(time.time() if now is None else now)
                granularities = tuple(g for g in l3.GRANULARITIES if f"l3:{g}" in chosen)
                if granularities or "l3:insights" in chosen:
                    report["l3"] = l3.run(self.db, self.llm, now, granularities=granularities,
                                          insights="l3:insights" in chosen)
                    if any(isinstance(v, int) and v for v in report["l3"].values()) or any(
                            report["l3"].get("insights", {}).values()):
                        self._notify()          # new summaries to embed
                return report
            finally:
                self._entities.reset()   # maintenance may have merged or dropped entities it cached

    # ---------------------------------------------------------------- read

    def query(self, text: str, mode: str | None = None, now: float | None = None, limit: int = 10,
              session_id: str | None = None, tz: tzinfo | None = None,
              summary_type: str | None = None) -> EvidencePack:
        """Answer a question with an evidence pack (architecture §5).

        ``mode`` is one of the nine query modes (chosen by rules when None);
        ``now`` (UNIX seconds) answers as of that moment — later events are
        invisible; ``session_id`` is the asking conversation, whose own turns
        are not evidence for it; ``tz`` is the asker's timezone for "yesterday" and
        friends (default: this machine's local time).
        """
        if not isinstance(text, str) or not text.strip():
            raise ValueError("the question is empty")
        pack = self._retriever.query(text, mode=mode, now=now, limit=limit, session_id=session_id, tz=tz,
                                     summary_type=summary_type)
        if session_id is not None:
            pack.working_memory = self.working_memory(session_id)
        # The pack is what leaves the memory: no stored text in it may carry a control sequence or a
        # recalled-memory marker to whoever reads it (outbound.py).
        return safe(pack)

    def plugin_cursor(self, name: str) -> Any:
        """Where a collector's next run starts (None before its first stored run)."""
        row = self.db.reader().execute("SELECT cursor_json FROM plugin_state WHERE name = ?", (name,)).fetchone()
        return json.loads(row[0]) if row and row[0] is not None else None

    def save_plugin_cursor(self, name: str, cursor: Any) -> None:
        """Keep a collector's cursor (JSON-serialisable)."""
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO plugin_state (name, cursor_json, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (name) DO UPDATE SET cursor_json = excluded.cursor_json, "
                         "updated_at = excluded.updated_at", (name, json.dumps(cursor), time.time()))

    # ------------------------------------------------------------ L4 (architecture §8)

    def tool_decision(self, tool: str, category: str | None = None, now: float | None = None) -> l4.Decision:
        """Ask before using a tool: refused while its circuit breaker is open (3 failures in a row; it
        half-opens after 600 s and closes after 2 successes)."""
        return l4.decision(self.db.reader(), tool, category, time.time() if now is None else now)

    def skills(self) -> list[dict[str, Any]]:
        """Every tool's experience: runs, success rate, breaker, the distilled strategy."""
        rows = self.db.reader().execute(
            "SELECT tool, category, runs, successes, failures, mean_duration_ms, breaker_state, breaker_opened_at, "
            "optimized_prompt, distilled_at FROM procedural_skills ORDER BY last_run_at DESC").fetchall()
        keys = ("tool", "category", "runs", "successes", "failures", "mean_duration_ms", "breaker_state",
                "breaker_opened_at", "optimized_prompt", "distilled_at")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def save_collector_status(self, name: str, status: dict[str, Any]) -> None:
        """Keep what the supervisor knows of a collector (runs, failures, counters) for ``stats``."""
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO plugin_state (name, status_json, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (name) DO UPDATE SET status_json = excluded.status_json, "
                         "updated_at = excluded.updated_at", (name, json.dumps(status), time.time()))

    def collector_statuses(self) -> dict[str, dict[str, Any]]:
        """The last saved status of every collector that has run, by name."""
        rows = self.db.reader().execute(
            "SELECT name, status_json FROM plugin_state WHERE status_json IS NOT NULL ORDER BY name")
        return {name: json.loads(text) for name, text in rows}

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """One stored L1 event as a dict (metadata decoded), or None."""
        return event_row(self.db.reader(), event_id)

    def stats(self) -> dict[str, Any]:
        conn = self.db.reader()

        def grouped(sql: str) -> dict[str, int]:
            return {key: count for key, count in conn.execute(sql) if count}

        def counted(column: str) -> dict[str, int]:
            return grouped(f"SELECT {column}, sum(events) FROM l1_event_counts GROUP BY 1 ORDER BY 2 DESC")

        embedding = conn.execute("SELECT model, dimension, rebuilt_from FROM vector_index").fetchone()
        l2_states = l2_jobs.counts(conn)
        jobs = EMBEDDING_JOBS.counts(conn)
        path = self.path
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
        return {
            "database": str(path),
            "size_bytes": size,
            "schema_version": conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0],
            "events": {
                "total": conn.execute("SELECT coalesce(sum(events), 0) FROM l1_event_counts").fetchone()[0],
                "by_evidence_class": counted("evidence_class"),
                "by_scope": counted("l1_retrieval_scope"),
                "by_source": counted("source"),
            },
            "runtime_traces": conn.execute("SELECT count(*) FROM runtime_traces").fetchone()[0],
            "chat_sessions": conn.execute("SELECT count(*) FROM chat_sessions").fetchone()[0],
            "embedding": {
                "model": embedding[0] if embedding else None,
                "dimension": embedding[1] if embedding else None,
                "rebuilt_from": embedding[2] if embedding else None,
                "embedder": self.embedder.name,
                "vectors_ready": self.vectors_ready,
                "model_loaded": bool(getattr(self.embedder, "loaded", False)),
                "chunks": conn.execute("SELECT count(*) FROM event_chunks").fetchone()[0],
                "pending": jobs.get("pending", 0),
                "dead": jobs.get("dead", 0),
            },
            "sources": {
                row[0]: {"accepted": row[1], "duplicates": row[2], "rejected": row[3], "last_rejection": row[4]}
                for row in conn.execute(
                    "SELECT source, accepted, duplicates, rejected, last_rejection FROM source_counters "
                    "ORDER BY source")
            },
            "l2": {
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
            "facts": {
                "by_evidence": grouped("SELECT evidence_type, count(*) FROM memory_facts WHERE status = 'active' "
                                       "GROUP BY 1 ORDER BY 2 DESC"),
                "extractions": conn.execute("SELECT count(*) FROM fact_extractions").fetchone()[0],
                "conversations_due": extraction.pending_count(conn, time.time()),
                "failed": EXTRACTION_RETRIES.counts(conn),
            },
            "collectors": self.collector_statuses(),
            "storage": self.storage_status(),
            "redaction": self.redaction_status(),
            "llm": self.llm.health() if hasattr(self.llm, "health") else {"name": self.llm.name},
            "working_memory_sessions": len(self._l0),
        }


def resolve_llm(llm: str | LLMProvider) -> LLMProvider:
    """A provider from its name ("rules", "openai") or the instance itself."""
    if isinstance(llm, LLMProvider) and not isinstance(llm, str):
        return llm
    if llm == "rules":
        return RulesLLM({**l2.RULE_HANDLERS, **extraction.RULE_HANDLERS})
    if llm == "openai":
        return OpenAICompatibleLLM(OpenAISettings.from_env())
    raise ValueError(f"LLM provider {llm!r} is not available; choose one of {', '.join(LLM_PROVIDERS)} "
                     "or pass a provider instance")


def _record_tool_runs(conn, events: list[MemoryEvent]) -> None:
    """L4 learns from every new tool execution, in the transaction that stores it (architecture §8)."""
    for event in events:
        run = tool_run_of(event)
        if run is None:
            continue
        row = conn.execute("SELECT id FROM runtime_traces WHERE trace_id = ?", (event.event_id,)).fetchone()
        l4.record(conn, run, event.timestamp, row[0] if row else None)


def _count_rejections(conn, rejections: list[tuple[Any, PayloadError]]) -> None:
    """Count rejected payloads per source (an invalid source name is not stored as such)."""
    for raw, error in rejections:
        source = raw.get("source_type") if isinstance(raw, Mapping) else None
        if not is_valid_source_type(source):
            source = _UNKNOWN_SOURCE
        # Escaped: a message quoting a bad value must still be storable (a lone surrogate is not UTF-8).
        message = redact_text(str(error))[:500].encode("utf-8", "backslashreplace").decode("utf-8")
        count_ingest(conn, source, rejected=1, rejection=message)


def _prepare_vector_index(conn, embedder: Embedder) -> bool:
    """Match the vector index to the embedder; False if vectors must wait for a missing model."""
    recorded = current_model(conn)
    stand_in = getattr(embedder, "stands_in_for", None)
    if stand_in and recorded and recorded[0] == stand_in:
        log.warning("the vectors were made by %s, which is not installed: vector search and embedding "
                    "are paused until it is back (run `magi doctor`)", stand_in)
        return False
    change = ensure_vector_index(conn, embedder.name, embedder.dimension)
    if change.stale_model:
        log.info("embedding model changed from %s to %s: %d events queued for re-embedding",
                 change.stale_model, embedder.name, change.requeued)
    return True
