"""``AsyncMemory``: the memory for asyncio programs, each :class:`Memory` call run in a worker thread.

A ``Memory`` call blocks (SQLite, the embedding model): awaited in an event loop it would stop every other task
until it returned. ``AsyncMemory`` holds a ``Memory`` and offers each of its public methods as a coroutine that
makes the same call through :func:`asyncio.to_thread` — the same memory and the same rules, not a second
implementation of them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Generator
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from .memory import Memory

P = ParamSpec("P")
R = TypeVar("R")


class _Offloaded(Generic[P, R]):
    """A :class:`Memory` method as an :class:`AsyncMemory` coroutine method, with its signature and docstring: the
    call runs on the wrapped memory in a worker thread (``asyncio.to_thread``)."""

    def __init__(self, method: Callable[Concatenate[Memory, P], R]) -> None:
        self.name = method.__name__
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _Offloaded[P, R]: ...
    @overload
    def __get__(self, instance: AsyncMemory, owner: type | None = None) -> Callable[P, Coroutine[Any, Any, R]]: ...
    def __get__(self, instance: AsyncMemory | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        method: Callable[P, R] = getattr(instance.memory, self.name)

        @functools.wraps(method)
        async def offloaded(*args: P.args, **kwargs: P.kwargs) -> R:
            return await asyncio.to_thread(method, *args, **kwargs)

        return offloaded


class _Opening:
    """What :meth:`AsyncMemory.open` returns: ``await`` it for the memory, or ``async with`` it to have the memory
    closed when the block ends."""

    def __init__(self, open_memory: Callable[[], Memory]) -> None:
        self._open_memory = open_memory
        self._opened: AsyncMemory | None = None

    async def _open(self) -> AsyncMemory:
        return AsyncMemory(await asyncio.to_thread(self._open_memory))

    def __await__(self) -> Generator[Any, None, AsyncMemory]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncMemory:
        self._opened = await self._open()
        return self._opened

    async def __aexit__(self, *exc: object) -> None:
        if self._opened is not None:
            await self._opened.close()


def _opener(open_memory: Callable[P, Memory]) -> Callable[P, _Opening]:
    """``Memory.open``'s signature, opening in a worker thread."""

    @functools.wraps(open_memory)
    def open(*args: P.args, **kwargs: P.kwargs) -> _Opening:
        return _Opening(functools.partial(open_memory, *args, **kwargs))

    open.__doc__ = ("Open the memory as :meth:`Memory.open` does, with the same arguments, in a worker thread: "
                    "``memory = await AsyncMemory.open(...)``, or ``async with AsyncMemory.open(...) as memory:`` to "
                    "close it when the block ends.\n\n" + (open_memory.__doc__ or ""))
    return open


class AsyncMemory:
    """A :class:`Memory` for asyncio: every public method of ``Memory`` is here as a coroutine method with the same
    arguments and result, run in a worker thread of the loop's default executor (``asyncio.to_thread``).

    ``async with AsyncMemory.open(path) as memory:`` (or ``memory = await AsyncMemory.open(path)`` and, at the end,
    ``await memory.close()``); ``AsyncMemory(memory)`` wraps one already open, and ``.memory`` is the ``Memory``
    (its services, ``add_listener``, the attributes).

    Calls may overlap — ``Memory`` is thread-safe, and the desktop app already calls one from its GUI thread, a
    background worker and a thread pool at once:

    - Reads (``query``, ``facts``, ``beliefs``, ``stats``…) run in parallel, each worker thread on its own read
      connection; SQLite and onnxruntime release the GIL, the rest of the Python work shares it.
    - Writes (``ingest``, ``remember``, the reviews, …) take turns on the one writer connection: a write waits, in its
      thread, for the one before it (and for another program's, up to ``lock_patience``).
    - ``process_pending``, ``run_due``, ``forget`` / ``resume_forget``, ``redact_stored`` and ``import_jsonl`` also
      take the memory's process lock: one of them at a time; the others wait.
    - A waiting call holds one of the default executor's threads (``min(32, CPUs + 4)``): many long calls at once
      can take them all and delay other ``to_thread`` work of the program.
    - ``close()`` only once the calls you started have finished: it closes the connections under them.
    - A listener added with ``memory.memory.add_listener(callback)`` is called on the worker thread that committed;
      ``loop.call_soon_threadsafe`` brings it back to the loop.
    """

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    open = staticmethod(_opener(Memory.open))

    async def close(self) -> None:
        """Close the memory (in a worker thread); the calls you started must have finished."""
        await asyncio.to_thread(self.memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def path(self) -> Path:
        return self.memory.path

    # Every public method of Memory, in its order (tests/test_async_memory.py checks that none is missing).
    ingest = _Offloaded(Memory.ingest)
    ingest_many = _Offloaded(Memory.ingest_many)
    ingest_turn = _Offloaded(Memory.ingest_turn)
    working_events = _Offloaded(Memory.working_events)
    working_memory = _Offloaded(Memory.working_memory)
    session_messages = _Offloaded(Memory.session_messages)
    current_turn = _Offloaded(Memory.current_turn)
    set_goal = _Offloaded(Memory.set_goal)
    end_session = _Offloaded(Memory.end_session)
    query = _Offloaded(Memory.query)
    tool_decision = _Offloaded(Memory.tool_decision)
    skills = _Offloaded(Memory.skills)
    get_event = _Offloaded(Memory.get_event)
    remember = _Offloaded(Memory.remember)
    merge_facts = _Offloaded(Memory.merge_facts)
    facts = _Offloaded(Memory.facts)
    fact = _Offloaded(Memory.fact)
    delete_fact = _Offloaded(Memory.delete_fact)
    extract_facts = _Offloaded(Memory.extract_facts)
    extractions = _Offloaded(Memory.extractions)
    beliefs = _Offloaded(Memory.beliefs)
    belief = _Offloaded(Memory.belief)
    evidence_trail = _Offloaded(Memory.evidence_trail)
    confirm = _Offloaded(Memory.confirm)
    deny = _Offloaded(Memory.deny)
    correct = _Offloaded(Memory.correct)
    undo = _Offloaded(Memory.undo)
    reviews = _Offloaded(Memory.reviews)
    entities = _Offloaded(Memory.entities)
    merge_entities = _Offloaded(Memory.merge_entities)
    add_alias = _Offloaded(Memory.add_alias)
    reindex = _Offloaded(Memory.reindex)
    stats = _Offloaded(Memory.stats)
    list_events = _Offloaded(Memory.list_events)
    recent_activity = _Offloaded(Memory.recent_activity)
    activity_by_day = _Offloaded(Memory.activity_by_day)
    backups = _Offloaded(Memory.backups)
    backup_now = _Offloaded(Memory.backup_now)
    set_cold_after_days = _Offloaded(Memory.set_cold_after_days)
    backup_if_due = _Offloaded(Memory.backup_if_due)
    storage_status = _Offloaded(Memory.storage_status)
    plugin_cursor = _Offloaded(Memory.plugin_cursor)
    save_plugin_cursor = _Offloaded(Memory.save_plugin_cursor)
    save_collector_status = _Offloaded(Memory.save_collector_status)
    collector_statuses = _Offloaded(Memory.collector_statuses)
    release_collector = _Offloaded(Memory.release_collector)
    aggregation_settings = _Offloaded(Memory.aggregation_settings)
    set_aggregation = _Offloaded(Memory.set_aggregation)
    record_agent_call = _Offloaded(Memory.record_agent_call)
    agent_usage = _Offloaded(Memory.agent_usage)
    user_snapshot = _Offloaded(Memory.user_snapshot)
    recent_summaries = _Offloaded(Memory.recent_summaries)
    export_jsonl = _Offloaded(Memory.export_jsonl)
    export_markdown = _Offloaded(Memory.export_markdown)
    import_jsonl = _Offloaded(Memory.import_jsonl)
    forget = _Offloaded(Memory.forget)
    forget_preview = _Offloaded(Memory.forget_preview)
    forget_receipts = _Offloaded(Memory.forget_receipts)
    forget_pending = _Offloaded(Memory.forget_pending)
    resume_forget = _Offloaded(Memory.resume_forget)
    redaction_status = _Offloaded(Memory.redaction_status)
    redact_stored = _Offloaded(Memory.redact_stored)
    redaction_receipts = _Offloaded(Memory.redaction_receipts)
    process_pending = _Offloaded(Memory.process_pending)
    pending_by_queue = _Offloaded(Memory.pending_by_queue)
    pending_work = _Offloaded(Memory.pending_work)
    queue_state = _Offloaded(Memory.queue_state)
    retry_dead_jobs = _Offloaded(Memory.retry_dead_jobs)
    run_due = _Offloaded(Memory.run_due)
