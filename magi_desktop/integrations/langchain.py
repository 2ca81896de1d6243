"""LangChain over the memory (the ``[langchain]`` extra: ``langchain-core`` only, nothing that reaches the network).

- :class:`MagiRetriever` answers a question with documents: a first one that states the evidence pack
  (status, mode, hints — an ``insufficient`` pack says so to whoever reads the documents), then one per
  finding, with the finding's id, time, author, source and evidence class in its metadata.
- :class:`MagiChatMessageHistory` stores a conversation's messages as chat turns of the memory and reads
  them back, for chains that keep a chat history (``RunnableWithMessageHistory``, or by hand).

Two rules of the memory hold here as everywhere (README, "Agents: the MCP server"):

- **Recalled text cannot come back as testimony.** Every document's text is a
  ``<magi-recalled>…</magi-recalled>`` block (:func:`~magi_desktop.core.recalled.recalled_block`). A chain
  pastes it into a prompt; if that prompt, or a reply copying it, is stored again (through this history, the
  MCP server or ``Memory.ingest``), the memory cuts the block out instead of learning it a second time as
  what the user said. Keep the markers when you format the documents.
- **Provenance is never guessed.** LangChain apps also put generated text into ``HumanMessage``s (task
  results, templates, another agent's output), and only what a person typed may become a fact about them.
  So a ``HumanMessage`` is stored as the person's words (``human_input``) only when the history is told
  so — ``human_typed=True``, for a chat app whose human messages are what its user typed — or when the
  message says it itself: ``additional_kwargs={"provenance": "human_input"}`` (or ``"task_result"``,
  ``"template"``… for generated text; the values of the payload's ``chat.provenance``). Otherwise it is
  refused, and nothing of that call is stored.

Only the public :class:`~magi_desktop.core.Memory` API is used (``tests/test_layering.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo
from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, HumanMessage, ToolMessage
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:      # the extra is optional: say how to get it
    raise ImportError("magi_desktop.integrations.langchain needs langchain-core: "
                      "pip install 'magi-desktop[langchain]'") from exc

from ..core import EvidencePack, Finding, InvalidInput, Memory
from ..core.recalled import recalled_block

__all__ = ["MagiChatMessageHistory", "MagiRetriever", "pack_documents"]

#: ``Document.metadata["kind"]`` of the first document (the pack) and of the others (its findings).
PACK_KIND, FINDING_KIND = "magi_pack", "finding"
#: Messages read per call of ``Memory.session_messages`` (it gives at most 500 at a time).
MESSAGES_PAGE = 500
#: At least this long between two messages stored by one history: a message's dedupe key holds its time to the
#: microsecond (core/ingest.py), so two equal messages at one tick of the clock would be taken for one.
MESSAGE_STEP_SECONDS = 0.001

_ROLE_OF_CHAT_MESSAGE = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
                         "tool": "tool"}


# --- the retriever ----------------------------------------------------------------------------------------------


class MagiRetriever(BaseRetriever):
    """Documents from :meth:`Memory.query`: the pack first (``metadata["kind"] == "magi_pack"``), then each
    finding (``"finding"``, ``Document.id`` = the finding's event id). See :func:`pack_documents`.

    ``mode``, ``limit``, ``session_id`` (the asking conversation: a turn of it that repeats the question is not
    evidence), ``now`` (as of then: later events are invisible) and ``tz`` are ``Memory.query``'s; each may
    also be given per call, ``retriever.invoke(question, now=...)``.
    """

    memory: Memory
    mode: str | None = None
    limit: int = 10
    session_id: str | None = None
    now: float | None = None
    tz: tzinfo | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **options: Any) -> list[Document]:
        asked = {"mode": self.mode, "limit": self.limit, "session_id": self.session_id, "now": self.now,
                 "tz": self.tz} | options
        return pack_documents(self.memory.query(query, **asked))


def pack_documents(pack: EvidencePack) -> list[Document]:
    """The pack as documents: first the pack itself, then one per finding, best first.

    The first document always comes: its text says how many findings there are, whether they answer (an
    ``insufficient`` pack: "do not guess") and the answering hints; its metadata holds ``status``,
    ``insufficient_evidence``, ``query_mode``, ``hints`` and ``finding_ids``. A finding's metadata holds
    ``id``, ``layer``, ``occurred_at`` (UNIX seconds) and ``at`` (local time), ``author``, ``source``,
    ``source_item_id``, ``session_id``, ``evidence_class``, ``answers`` (does it answer the question, or is it
    only related), ``status`` ("current"/"history" or None), ``indirect``, ``score``, ``supporting_event_ids``
    (what a derived finding rests on) and the pack's ``pack_status`` and ``insufficient_evidence``, so a
    finding taken out of the list still says whether the pack answered. Every text is a recalled block.
    """
    about_pack = {"pack_status": pack.status, "insufficient_evidence": pack.insufficient_evidence,
                  "query_mode": pack.query_mode}
    summary = Document(page_content=recalled_block(_pack_text(pack)),
                       metadata={"kind": PACK_KIND, "status": pack.status,
                                 "insufficient_evidence": pack.insufficient_evidence, "query_mode": pack.query_mode,
                                 "hints": list(pack.answering_hints),
                                 "finding_ids": [f.event_id for f in pack.findings]})
    return [summary, *(Document(id=f.event_id, page_content=recalled_block(f.text),
                                metadata=_finding_metadata(f) | about_pack) for f in pack.findings)]


def _pack_text(pack: EvidencePack) -> str:
    lines = [f"Memory answer ({pack.query_mode} mode, {pack.status}): {len(pack.findings)} finding(s)."]
    if not pack.findings:
        lines.append("No stored evidence answers this: do not guess; say you do not know or ask the user.")
    elif pack.insufficient_evidence:
        lines.append("None of these findings answers this (they are only related): do not guess; say you do not "
                     "know or ask the user.")
    if pack.answering_hints:
        lines.append("Hints:")
        lines.extend(f"- {hint}" for hint in pack.answering_hints)
    return "\n".join(lines)


def _finding_metadata(f: Finding) -> dict[str, Any]:
    return {"kind": FINDING_KIND, "id": f.event_id, "layer": f.layer, "occurred_at": f.occurred_at,
            "at": datetime.fromtimestamp(f.occurred_at).astimezone().isoformat(timespec="minutes"),
            "author": f.speaker or f.author, "source": f.source, "source_item_id": f.source_item_id,
            "session_id": f.session_id, "evidence_class": f.evidence_class, "answers": f.answers,
            "status": f.status, "indirect": f.indirect, "score": f.score,
            "supporting_event_ids": list(f.supporting_event_ids)}


# --- the chat message history -----------------------------------------------------------------------------------


class MagiChatMessageHistory(BaseChatMessageHistory):
    """One conversation (``session_id``) of the memory as a LangChain chat history.

    ``add_messages`` stores each message as a chat turn: ``HumanMessage`` → role ``user`` (its provenance as
    the module says: ``human_typed=True``, or the message's ``additional_kwargs["provenance"]``; else
    refused), ``AIMessage`` → ``assistant``, ``ToolMessage`` → ``tool`` (its ``name`` as the tool's);
    a ``ChatMessage`` by its role. A system message is refused: it is the app's instruction, not a turn of
    the conversation. The message's text is stored (``message.text``: images and other blocks are not);
    a message without text — an ``AIMessage`` that only calls tools — stores nothing. A message with an
    ``id`` is stored under it, so adding it again stores nothing new (an id that another message already
    has is refused with ``PayloadError``). Every message is checked here before the first is stored; each
    is then stored in its own transaction, like the MCP server's ``log_turn``, so one the memory refuses
    (``PayloadError``: a provenance it does not know, a text over its limit) leaves those before it stored.

    ``messages`` reads the conversation back from the memory, oldest first, as stored: secrets redacted,
    recalled blocks cut out. A message the memory keeps for the audit only — provenance ``timer``, ``wake``,
    ``template``, ``quarantined``, or nothing but a recalled block — is not read back. The memory keeps
    what was said — role, text, provenance, a tool's name — not the tool-call structure (an ``AIMessage``'s
    ``tool_calls``): a tool turn comes back as a ``ToolMessage`` whose ``tool_call_id`` is its own id. Each
    message's ``id`` is the one it was added with, else its event id; a ``HumanMessage`` carries its
    provenance in ``additional_kwargs``.

    ``clear()`` forgets the conversation for good, and only when the history was made with
    ``forget_on_clear=True``: it is ``Memory.forget`` of every message of the session — removed everywhere,
    with what was derived from it, and the files scrubbed (README, "Forget: what it does to the files").
    Otherwise it refuses (``InvalidInput``): to start afresh, open a history with a new ``session_id``.
    """

    def __init__(self, memory: Memory, session_id: str, *, human_typed: bool = False,
                 forget_on_clear: bool = False, clock: Callable[[], float] = time.time) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInput("session_id must be a non-empty string")
        super().__init__()
        self.memory = memory
        self.session_id = session_id
        self.human_typed = human_typed          # every HumanMessage without a provenance is what a person typed
        self.forget_on_clear = forget_on_clear
        self.clock = clock
        self._last_at = 0.0                     # the time of the last message stored here

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        payloads = [payload for payload in map(self._payload, messages) if payload is not None]
        for payload in payloads:
            # retry_within=0: in one process nothing is sent again for a lost answer, so two equal messages
            # in a row are two messages; an id's reuse is still checked (core/retries.py).
            self.memory.ingest_turn(payload, retry_within=0.0)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # read from the memory, set by add_messages
        return [_langchain_message(stored) for stored in self._stored()]

    def clear(self) -> None:
        if not self.forget_on_clear:
            raise InvalidInput(f"clear() would forget session {self.session_id!r} for good (Memory.forget); make "
                               "the history with forget_on_clear=True for that, or start a new session_id")
        event_ids = [stored["id"] for stored in self._stored()]
        if event_ids:
            self.memory.forget(event_ids=event_ids)

    def _stored(self) -> list[dict[str, Any]]:
        """Every stored message of the session, oldest first, a page at a time from the newest."""
        pages: list[list[dict[str, Any]]] = []
        before = None
        while True:
            page = self.memory.session_messages(self.session_id, limit=MESSAGES_PAGE, before=before)
            pages.append(page)
            if len(page) < MESSAGES_PAGE:
                return [stored for older in reversed(pages) for stored in older]
            before = page[0]["id"]

    def _payload(self, message: BaseMessage) -> dict[str, Any] | None:
        """The chat payload of ``message``; None when there is nothing to store (no text, or read from here)."""
        role = _role(message)
        text = message.text
        if not text.strip() or self._read_from_here(message):
            return None
        chat: dict[str, Any] = {"role": role, "text": text}
        provenance = message.additional_kwargs.get("provenance")
        if provenance is None and role == "user":
            if not self.human_typed:
                raise InvalidInput(
                    "a HumanMessage needs its provenance: make the history with human_typed=True when a person "
                    "typed its human messages, or give the message additional_kwargs={'provenance': ...} "
                    "('human_input' when a person typed it; 'task_result', 'template', 'timer'… when a program "
                    "wrote it)")
            provenance = "human_input"
        if provenance is not None:
            chat["provenance"] = provenance
        if role == "tool" and message.name:
            chat["tool_name"] = message.name
        payload: dict[str, Any] = {"source_type": "chat", "session_id": self.session_id,
                                   "occurred_at": self._next_time(), "chat": chat}
        if message.id:
            payload["source_item_id"] = message.id      # added again, it is the same message
        return payload

    def _next_time(self) -> float:
        """Now, later than the message before: two equal messages at one clock tick (a coarse clock, one
        batch) are two messages in their order, not one message sent twice."""
        self._last_at = max(self.clock(), self._last_at + MESSAGE_STEP_SECONDS)
        return self._last_at

    def _read_from_here(self, message: BaseMessage) -> bool:
        """``message`` came from :attr:`messages` under its event id (it had no id of its own)."""
        if not message.id:
            return False
        event = self.memory.get_event(message.id)
        return event is not None and event["session_id"] == self.session_id


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, ChatMessage) and message.role.lower() in _ROLE_OF_CHAT_MESSAGE:
        return _ROLE_OF_CHAT_MESSAGE[message.role.lower()]
    raise InvalidInput(f"a {type(message).__name__} is not a turn of the conversation the memory keeps (human, AI "
                       "and tool messages are): keep system instructions in the prompt, not in the history")


def _langchain_message(stored: dict[str, Any]) -> BaseMessage:
    message_id = stored.get("source_item_id") or stored["id"]
    text = stored["text"]
    if stored["role"] == "user":
        return HumanMessage(content=text, id=message_id, additional_kwargs={"provenance": stored.get("provenance")})
    if stored["role"] == "tool":
        return ToolMessage(content=text, id=message_id, tool_call_id=message_id, name=stored.get("tool_name"))
    return AIMessage(content=text, id=message_id)
