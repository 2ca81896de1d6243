"""``Memory``: the one facade the rest of the world uses (architecture §12)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import tzinfo
from pathlib import Path
from typing import IO, Any, Generic, Literal, TypeVar, overload

from . import extraction, l2, l4
from .aggregation import fold as aggregation
from .contracts import IngestResult, Instant, MemoryEvent, parse_now
from .deprecation import DEFAULT_USER_ID, warn_user_id
from .embed import Embedder, resolve_embedder
from .errors import InvalidInput, MemoryUnavailable
from .import_report import ImportReport
from .l0 import WorkingMemory
from .l2 import beliefs as l2_beliefs
from .l2 import jobs as l2_jobs
from .llm import LLMProvider, OpenAICompatibleLLM, OpenAISettings, RulesLLM
from .llm.base import completed_llm
from .outbound import safe
from .paths import database_path
from .redact import CURRENT, RuleSet
from .render import TemplateRegistry
from .reports import QUEUES, DueReport, MemoryStats, PendingReport, QueueState
from .reredact import stored_version
from .retrieval import EvidencePack, Retriever
from .retrieval.structured import L2Graph
from .services.agents import AgentDesk
from .services.belief_review import BeliefReview
from .services.browsing import Browsing
from .services.collector_state import CollectorState
from .services.fact_book import FactBook
from .services.forgetting import Forgetting
from .services.ingestion import Ingestion
from .services.normalizer import Normalizer
from .services.periodic import PeriodicJobs
from .services.processing import Processing
from .services.redactor import Redactor, note_rules
from .services.search_index import SearchIndex
from .services.sessions import Sessions
from .services.statistics import Statistics
from .services.storage import Storage
from .services.transfer import Transfer
from .store import Database, SchemaTooNew, backup
from .store.connection import DatabaseError, LockWait, write_transaction
from .store.entities import EntityLinker
from .store.l1 import event_row, meta_secret, stored_secret
from .store.skills import skill_rows
from .store.vectors import current_model, ensure_vector_index

log = logging.getLogger(__name__)


LLM_PROVIDERS = ("rules", "openai")  # or pass an LLMProvider instance (e.g. a ScriptedLLM in tests)
OPEN_PATIENCE_SECONDS = 5.0    # opening waits no longer for the lock to finish a forget's work (left to later)
OPEN_FORGET_SECONDS = 2.0      # and works on an interrupted forget no longer than this (the rest: in the background)


V = TypeVar("V")


class _OnNormalizer(Generic[V]):
    """A ``Memory`` attribute kept on its :class:`Normalizer` (``memory.templates`` is the normaliser's), so
    setting it changes what ingest does, as it did when ``Memory`` normalised itself."""

    def __init__(self, name: str, doc: str) -> None:
        self.name, self.__doc__ = name, doc

    @overload
    def __get__(self, memory: None, owner: type | None = None) -> _OnNormalizer[V]: ...
    @overload
    def __get__(self, memory: Memory, owner: type | None = None) -> V: ...
    def __get__(self, memory: Memory | None, owner: type | None = None) -> V | _OnNormalizer[V]:
        return self if memory is None else getattr(memory._normalize, self.name)

    def __set__(self, memory: Memory, value: V) -> None:
        setattr(memory._normalize, self.name, value)


class _UserId(_OnNormalizer[str]):
    """``memory.user_id``, deprecated: setting a user other than the default warns (core/deprecation.py)."""

    def __set__(self, memory: Memory, value: str) -> None:
        if value != DEFAULT_USER_ID:
            warn_user_id("Memory.user_id")
        super().__set__(memory, value)


class Memory:
    """Layered long-term memory over one SQLite database.

    Open with :meth:`open`; every method is thread-safe. Writes are serialised
    on one writer connection; reads use a connection per thread.

    Every method that takes ``now`` (the moment it acts as of; default: the clock) takes UNIX seconds, an
    ISO-8601 string with a UTC offset (``"2026-11-30T09:15:00+08:00"``) or a :class:`~datetime.datetime` —
    aware, or naive for this machine's local time; anything else raises :class:`PayloadError` on ``now``.

    The facade answers queries itself and holds a service per domain (see :mod:`.services`): ``ingestion``,
    ``sessions``, ``fact_book``, ``belief_review``, ``search_index``, ``statistics``, ``storage``,
    ``collector_state``, ``agents``, ``transfer``, ``forgetting``, ``redactor``, ``processing`` and
    ``periodic``; the documented methods of each delegate to it.
    """

    def __init__(self, db: Database, embedder: Embedder, *, llm: LLMProvider, user_id: str,
                 templates: TemplateRegistry, key_secret: bytes, vectors_ready: bool = True,
                 redaction: RuleSet = CURRENT):
        self.db = db
        self.embedder = embedder
        #: False when the model that made the stored vectors is missing: the
        #: index is kept intact and embedding waits for the model to return.
        self.vectors_ready = vectors_ready
        self.llm = llm
        self._listeners: list[Callable[[], None]] = []
        self._l0 = WorkingMemory()
        self._process_lock = threading.Lock()
        self._entities = EntityLinker()
        self._normalize = Normalizer(templates, user_id=user_id, key_secret=key_secret, rules=redaction)
        self._retriever = Retriever(db, embedder, self._entities, vectors_ready=lambda: self.vectors_ready,
                                    graph=L2Graph())

        def ready() -> bool:
            return self.vectors_ready

        lock, linker = self._process_lock, self._entities
        self.ingestion = Ingestion(db, self._normalize, linker=linker, l0=self._l0, notify=self._notify)
        self.sessions = Sessions(db, linker=linker, l0=self._l0)
        self.fact_book = FactBook(db, llm)
        self.belief_review = BeliefReview(db, linker, self._normalize, self._notify)
        self.search_index = SearchIndex(db, self._notify)
        self.storage = Storage(db)
        self.collector_state = CollectorState(db)
        self.agents = AgentDesk(db, self.fact_book)
        self.transfer = Transfer(db, lock=lock, linker=linker, normalize=self._normalize,
                                 belief_review=self.belief_review, notify=self._notify)
        self.forgetting = Forgetting(db, lock=lock, linker=linker, l0=self._l0, normalize=self._normalize)
        self.redactor = Redactor(db, lock=lock, linker=linker, normalize=self._normalize, notify=self._notify)
        self.browsing = Browsing(db)
        self.statistics = Statistics(db, embedder, llm, vectors_ready=ready, l0=self._l0,
                                     collector_state=self.collector_state, storage=self.storage,
                                     redactor=self.redactor)
        self.processing = Processing(db, embedder, llm, lock=lock, linker=linker, vectors_ready=ready)
        self.periodic = PeriodicJobs(db, llm, lock=lock, linker=linker, l0=self._l0, storage=self.storage,
                                     forgetting=self.forgetting, notify=self._notify)

    # What ingest normalises with lives in the Normalizer the services share: these read and set it there.
    redaction = _OnNormalizer[RuleSet]("rules", "The rules ingest redacts with (``Memory.open(redaction=...)``).")
    templates = _OnNormalizer[TemplateRegistry]("templates", "The content templates ingest renders with.")
    user_id = _UserId("user_id", "The user new events are stored for. Deprecated: one memory is one person; "
                                 "people who share a machine use separate data folders.")

    # ----------------------------------------------------------- lifecycle

    @classmethod
    def open(
        cls,
        path: str | os.PathLike | None = None,
        embedder: str | Embedder = "default",
        llm: str | LLMProvider = "rules",
        *,
        user_id: str = DEFAULT_USER_ID,
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

        ``user_id`` is deprecated: one memory is one person, and a memory opened for another user still
        answers from everything stored in it. A value other than the default warns
        (:class:`DeprecationWarning`) and is stored with new events as before; the next release refuses it.
        People who share a machine use separate data folders (``path``).
        """
        if user_id != DEFAULT_USER_ID:
            warn_user_id("Memory.open(user_id=...)")
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
        return self.ingestion.ingest(payload)

    def ingest_many(self, payloads: Iterable[Mapping[str, Any]],
                    on_error: Literal["raise", "report"] = "raise") -> list[IngestResult]:
        return self.ingestion.ingest_many(payloads, on_error)

    def ingest_turn(self, payload: Mapping[str, Any], retry_within: float) -> IngestResult:
        return self.ingestion.ingest_turn(payload, retry_within)

    # ------------------------------------------------------------ L0 working memory

    def working_events(self, session_id: str | None) -> list[MemoryEvent]:
        return self.sessions.working_events(session_id)

    def working_memory(self, session_id: str) -> dict[str, Any] | None:
        return self.sessions.working_memory(session_id)

    def session_messages(self, session_id: str, limit: int = 100, before: str | None = None) -> list[dict[str, Any]]:
        return self.sessions.session_messages(session_id, limit, before)

    def current_turn(self, session_id: str, now: Instant | None = None) -> list[dict[str, Any]] | None:
        return self.sessions.current_turn(session_id, parse_now(now))

    def set_goal(self, session_id: str, goal: str) -> None:
        self.sessions.set_goal(session_id, goal)

    def end_session(self, session_id: str | None) -> None:
        self.sessions.end_session(session_id)

    def _notify(self) -> None:
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # a listener must not break ingest
                log.exception("memory listener failed")

    # ---------------------------------------------------------------- read

    def query(self, text: str, mode: str | None = None, now: Instant | None = None, limit: int = 10,
              session_id: str | None = None, tz: tzinfo | None = None,
              summary_type: str | None = None, search_all: bool = False) -> EvidencePack:
        """Answer a question with an evidence pack (architecture §5).

        ``mode`` is one of the nine query modes (chosen by rules when None);
        ``now`` (UNIX seconds, ISO-8601 with an offset, or a datetime: naive is local time) answers as of
        that moment — later events are invisible; ``session_id`` is the asking conversation, whose own turns
        are not evidence for it; ``tz`` is the asker's timezone for "yesterday" and
        friends (default: this machine's local time, whatever offset ``now`` was written with). Old events L3
        has summarised are cold and searched only when the question's window is that old, nothing else
        answers, or ``search_all``.
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("the question is empty")
        pack = self._retriever.query(text, mode=mode, now=parse_now(now), limit=limit, session_id=session_id, tz=tz,
                                     summary_type=summary_type, search_all=search_all)
        if session_id is not None:
            pack.working_memory = self.working_memory(session_id)
        # The pack is what leaves the memory: no stored text in it may carry a control sequence or a
        # recalled-memory marker to whoever reads it (outbound.py).
        return safe(pack)

    # ------------------------------------------------------------ L4 (architecture §8)

    def tool_decision(self, tool: str, category: str | None = None, now: Instant | None = None) -> l4.Decision:
        """Ask before using a tool: refused while its circuit breaker is open (3 failures in a row; it
        half-opens after 600 s and closes after 2 successes)."""
        at = parse_now(now)
        return l4.decision(self.db.reader(), tool, category, time.time() if at is None else at)

    def skills(self) -> list[dict[str, Any]]:
        """Every tool's experience: runs, success rate, breaker, the distilled strategy."""
        return skill_rows(self.db.reader())

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """One stored L1 event as a dict (metadata decoded), or None."""
        return event_row(self.db.reader(), event_id)

    # -------------------------------------------------- fact_book (FactBook)

    def remember(self, quote: str, content: str, turn_messages: Sequence[Mapping[str, Any]],
                 category: str | None = None, replaces: int | None = None, project: str | None = None,
                 session_id: str | None = None) -> int:
        return self.fact_book.remember(quote, content, turn_messages, category, replaces, project, session_id)

    def merge_facts(self, fact_ids: Sequence[int], content: str) -> int:
        return self.fact_book.merge_facts(fact_ids, content)

    def facts(self, status: str | None = "active", *, fact_id: int | None = None) -> list[dict[str, Any]]:
        return self.fact_book.facts(status, fact_id=fact_id)

    def fact(self, fact_id: int) -> dict[str, Any] | None:
        return self.fact_book.fact(fact_id)

    def delete_fact(self, fact_id: int) -> bool:
        return self.fact_book.delete_fact(fact_id)

    def extract_facts(self, now: Instant | None = None, limit: int | None = None) -> dict[str, Any]:
        return self.fact_book.extract_facts(parse_now(now), limit)

    def extractions(self, limit: int = 50) -> list[dict[str, Any]]:
        return self.fact_book.extractions(limit)

    # -------------------------------------------------- belief_review (BeliefReview)

    def beliefs(self, category: str = "assertions", *, state: str | None = None, entity: str | None = None,
                source: str | None = None, limit: int = 1000) -> list[l2_beliefs.Belief]:
        return self.belief_review.beliefs(category, state=state, entity=entity, source=source, limit=limit)

    def belief(self, key: str) -> l2_beliefs.Belief | None:
        return self.belief_review.belief(key)

    def evidence_trail(self, key: str) -> dict[str, Any] | None:
        return self.belief_review.evidence_trail(key)

    def confirm(self, key: str) -> int:
        return self.belief_review.confirm(key)

    def deny(self, key: str) -> int:
        return self.belief_review.deny(key)

    def correct(self, key: str, value: str) -> int:
        return self.belief_review.correct(key, value)

    def undo(self, review_id: int) -> dict[str, Any]:
        return self.belief_review.undo(review_id)

    def reviews(self, limit: int = 100) -> list[dict[str, Any]]:
        return self.belief_review.reviews(limit)

    def entities(self, search: str | None = None, limit: int = 500) -> list[dict[str, Any]]:
        return self.belief_review.entities(search, limit)

    def merge_entities(self, keep: int, drop: int) -> int:
        return self.belief_review.merge_entities(keep, drop)

    def add_alias(self, entity_id: int, alias: str) -> None:
        return self.belief_review.add_alias(entity_id, alias)

    # -------------------------------------------------- search_index (SearchIndex)

    def reindex(self) -> int:
        return self.search_index.reindex()

    # -------------------------------------------------- statistics (Statistics)

    def stats(self) -> MemoryStats:
        return self.statistics.stats()

    def list_events(self, *, source: str | None = None, start: Instant | None = None, end: Instant | None = None,
                    session_id: str | None = None, limit: int = 50, before: str | None = None,
                    members: bool = False) -> dict[str, Any]:
        return self.browsing.list_events(source=source, start=parse_now(start, "start"), end=parse_now(end, "end"),
                                         session_id=session_id, limit=limit, before=before, members=members)

    def recent_activity(self, hours: float = 24, now: Instant | None = None, limit: int = 20) -> dict[str, Any]:
        return self.browsing.recent_activity(hours, parse_now(now), limit)

    def activity_by_day(self, days: int = 14, now: Instant | None = None) -> dict[str, dict[str, int]]:
        return self.statistics.activity_by_day(days, parse_now(now))

    # -------------------------------------------------- storage (Storage)

    def backups(self) -> list[dict[str, Any]]:
        return self.storage.backups()

    def backup_now(self, reason: str = "manual") -> dict[str, Any]:
        return self.storage.backup_now(reason)

    def set_cold_after_days(self, days: float) -> None:
        return self.storage.set_cold_after_days(days)

    def backup_if_due(self, interval: float = backup.INTERVAL_SECONDS) -> dict[str, Any]:
        return self.storage.backup_if_due(interval)

    def storage_status(self) -> dict[str, Any]:
        return self.storage.storage_status()

    # -------------------------------------------------- collector_state (CollectorState)

    def plugin_cursor(self, name: str) -> Any:
        return self.collector_state.plugin_cursor(name)

    def save_plugin_cursor(self, name: str, cursor: Any) -> None:
        return self.collector_state.save_plugin_cursor(name, cursor)

    def save_collector_status(self, name: str, status: dict[str, Any]) -> None:
        return self.collector_state.save_collector_status(name, status)

    def collector_statuses(self) -> dict[str, dict[str, Any]]:
        return self.collector_state.collector_statuses()

    def release_collector(self, name: str) -> bool:
        """Lift a collector's quarantine for every process (``magi plugins --release``, Settings); True if it was
        quarantined."""
        return self.collector_state.release(name)

    # -------------------------------------------------- activity blocks (core/aggregation)

    def aggregation_settings(self) -> dict[str, bool]:
        """Each aggregation rule (``browser``, ``terminal``, ``music``) and whether it folds new events into
        hourly activity blocks (default: on)."""
        return aggregation.settings(self.db.reader())

    def set_aggregation(self, rule: str, enabled: bool) -> None:
        """Turn a rule's folding on or off for what is ingested from now on (stored blocks stay, and so do all
        members). :class:`InvalidInput` for a rule that does not exist."""
        if not isinstance(enabled, bool):
            raise InvalidInput("enabled must be true or false")
        with self.db.transaction() as conn:
            aggregation.set_enabled(conn, rule, enabled)

    # -------------------------------------------------- agents (AgentDesk)

    def record_agent_call(self, client: str | None, tool: str, *, rejected: str | None = None,
                          now: Instant | None = None) -> None:
        return self.agents.record_agent_call(client, tool, rejected=rejected, now=parse_now(now))

    def agent_usage(self) -> list[dict[str, Any]]:
        return self.agents.agent_usage()

    def user_snapshot(self, now: Instant | None = None) -> dict[str, Any]:
        return self.agents.user_snapshot(parse_now(now))

    def recent_summaries(self, limit: int = 5, summary_type: str | None = None) -> list[dict[str, Any]]:
        return self.agents.recent_summaries(limit, summary_type)

    # -------------------------------------------------- transfer (Transfer)

    def export_jsonl(self, out: str | os.PathLike | IO[str]) -> dict[str, int]:
        return self.transfer.export_jsonl(out)

    def export_markdown(self, directory: str | os.PathLike) -> list[Path]:
        return self.transfer.export_markdown(directory)

    def import_jsonl(self, source: str | os.PathLike | IO[bytes]) -> ImportReport:
        return self.transfer.import_jsonl(source)

    # -------------------------------------------------- forgetting (Forgetting)

    def forget(self, event_ids: Sequence[str] | None = None, source_item_ids: Sequence[str] | None = None,
               entity: str | None = None, source: str | None = None, start: Instant | None = None,
               end: Instant | None = None) -> dict[str, Any]:
        return self.forgetting.forget(event_ids, source_item_ids, entity, source, parse_now(start, "start"),
                                      parse_now(end, "end"))

    def forget_preview(self, event_ids: Sequence[str] | None = None, source_item_ids: Sequence[str] | None = None,
                       entity: str | None = None, source: str | None = None, start: Instant | None = None,
                       end: Instant | None = None) -> dict[str, Any]:
        return self.forgetting.forget_preview(event_ids, source_item_ids, entity, source, parse_now(start, "start"),
                                              parse_now(end, "end"))

    def forget_receipts(self, limit: int = 50, *, entity: str | None = None,
                        source_item_id: str | None = None) -> list[dict[str, Any]]:
        return self.forgetting.forget_receipts(limit, entity=entity, source_item_id=source_item_id)

    def forget_pending(self) -> bool:
        return self.forgetting.forget_pending()

    def resume_forget(self, budget: float | None = None) -> dict[str, Any]:
        return self.forgetting.resume_forget(budget)

    # -------------------------------------------------- redactor (Redactor)

    def redaction_status(self) -> dict[str, Any]:
        return self.redactor.redaction_status()

    def redact_stored(self, dry_run: bool = False) -> dict[str, Any]:
        return self.redactor.redact_stored(dry_run)

    def redaction_receipts(self, limit: int = 20) -> list[dict[str, Any]]:
        return self.redactor.redaction_receipts(limit)

    # -------------------------------------------------- processing (Processing)

    def process_pending(self, limit: int | None = None, now: Instant | None = None,
                        queues: tuple[str, ...] = QUEUES) -> PendingReport:
        return self.processing.process_pending(limit, parse_now(now), queues)

    def pending_by_queue(self) -> dict[str, int]:
        return self.processing.pending_by_queue()

    def pending_work(self) -> int:
        return self.processing.pending_work()

    def queue_state(self) -> QueueState:
        return self.processing.queue_state()

    def retry_dead_jobs(self) -> int:
        return self.processing.retry_dead_jobs()

    # -------------------------------------------------- periodic (PeriodicJobs)

    def run_due(self, now: Instant | None = None, jobs: Iterable[str] | None = None) -> DueReport:
        return self.periodic.run_due(parse_now(now), jobs)


def _document_delegates() -> None:
    """A flat method that delegates shows its service's docstring (``help(mem.remember)``), kept in one place."""
    for service in (Ingestion, Sessions, FactBook, BeliefReview, Browsing, SearchIndex, Statistics, Storage,
                    CollectorState, AgentDesk, Transfer, Forgetting, Redactor, Processing, PeriodicJobs):
        for name, function in vars(service).items():
            flat = vars(Memory).get(name)
            if callable(flat) and not name.startswith("_") and flat.__doc__ is None:
                flat.__doc__ = function.__doc__


_document_delegates()


def resolve_llm(llm: str | LLMProvider) -> LLMProvider:
    """A provider from its name ("rules", "openai") or the instance itself."""
    if not isinstance(llm, str):
        return completed_llm(llm)
    if llm == "rules":
        return RulesLLM({**l2.RULE_HANDLERS, **extraction.RULE_HANDLERS})
    if llm == "openai":
        return OpenAICompatibleLLM(OpenAISettings.from_env())
    raise InvalidInput(f"LLM provider {llm!r} is not available; choose one of {', '.join(LLM_PROVIDERS)} "
                       "or pass a provider instance")


def _prepare_vector_index(conn, embedder: Embedder) -> bool:
    """Match the vector index to the embedder; False if vectors must wait for a missing model."""
    recorded = current_model(conn)
    stand_in = embedder.stands_in_for
    if stand_in and recorded and recorded[0] == stand_in:
        log.warning("the vectors were made by %s, which is not installed: vector search and embedding "
                    "are paused until it is back (run `magi doctor`)", stand_in)
        return False
    change = ensure_vector_index(conn, embedder.name, embedder.dimension)
    if change.stale_model:
        log.info("embedding model changed from %s to %s: %d events queued for re-embedding",
                 change.stale_model, embedder.name, change.requeued)
    return True
