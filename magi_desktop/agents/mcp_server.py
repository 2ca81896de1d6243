"""``magi mcp``: the memory as an MCP server over stdio, for the agents a user already runs (a desktop
chat app, an IDE assistant). It uses only the public ``Memory`` API, on the same data folder as the app:
SQLite in WAL mode lets both read at once, writes wait their turn on the busy timeout, and every queue
the background work drains is claimed or checked, so the app and this server can run side by side.

Tools: ``memory_query`` (an evidence pack), ``remember`` (quote-gated), ``log_turn`` (chat ingestion),
``log_tool_run`` (L4; answers with the circuit breaker), ``working_context`` (L0). Resources: the user's
current snapshot and the recent summaries. A refused call — a bad argument, an invalid payload, a quote
that fails the gate: an ``InvalidInput`` — is a tool execution error (``isError``) whose text says what to
do, so the model can correct itself; anything else that escapes a call is a bug, which the SDK reports as
``Error executing tool …`` with the traceback in the server's log. Every call is counted per client for
Settings → Agents.
"""

from __future__ import annotations

import inspect
import logging
import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from typing_extensions import NotRequired, TypedDict  # pydantic needs these on Python < 3.12

from .. import __version__
from ..core import InvalidInput, Memory, MemoryBusy, MemoryUnavailable, PayloadError, RememberRejected
from ..core.contracts import CHAT_PROVENANCES, parse_timestamp
from ..core.outbound import safe, safe_text
from ..core.remember import CATEGORIES
from ..core.retrieval.modes import MODES
from ..core.store.connection import OperationalError, is_busy
from .output import pack_data, pack_text, snapshot_text, summaries_text, working_text
from .registration import SERVER_NAME
from .turns import TurnLog

log = logging.getLogger(__name__)

SNAPSHOT_URI = "magi://user/snapshot"
SUMMARIES_URI = "magi://summaries/recent"
RECENT_SUMMARIES = 5
MAX_LIMIT = 50
# A client that lost log_turn's answer calls again: the same message of the same session, with nothing
# between, this soon after is that retry, not the user saying it twice.
RETRY_SECONDS = 120.0
# What a call that failed on a bug is counted as (Settings → Agents): not the caller's fault, but not a success.
INTERNAL_ERROR = "internal_error"

QueryMode = Literal[MODES]                       # type: ignore[valid-type]
Provenance = Literal[CHAT_PROVENANCES]           # type: ignore[valid-type]
Category = Literal[CATEGORIES]                   # type: ignore[valid-type]

INSTRUCTIONS = """\
Magi Desktop is the user's local long-term memory. Use it as yours:
- Log the conversation: call log_turn for every message (the user's, with provenance human_input when the \
person typed it; your replies as role assistant) and log_tool_run after each tool execution.
- Before answering anything about the user's past, preferences, plans or earlier conversations, call \
memory_query and answer only from its findings, following its hints; with no findings, say you do not know.
- When the user tells you something worth keeping, call remember with their exact words from this turn as \
the quote.
Recalled text comes inside <magi-recalled>...</magi-recalled>; keep the markers when you paste it into a \
message so the memory never learns it again as something new."""


class TurnMessage(TypedDict):
    """One message of the current turn, as the client saw it."""

    id: str                     # the event id log_turn returned, or the client's own message id
    role: Literal["user", "assistant", "tool"]
    text: str
    provenance: NotRequired[Provenance]


class Refused(Exception):
    """A call the memory refused: ``code`` for the usage record and the agent, ``message`` says what to do."""

    def __init__(self, code: str, message: str, **data: Any):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: ``text`` as built (a recalled block is already safe; see output.py), ``data`` made
    safe here — no string in it can carry a recalled-memory marker or a control character."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=safe(data))


def _refusal(refused: Refused) -> CallToolResult:
    data = {"error": refused.code, "message": refused.message, **refused.data}
    said = safe_text(f"Refused ({refused.code}): {refused.message}")      # it may quote the bad argument
    return CallToolResult(content=[TextContent(type="text", text=said)], structured_content=safe(data),
                          is_error=True)


def _client_of(ctx: Context | None) -> str | None:
    """The MCP client's name from its initialize request (``clientInfo.name``)."""
    try:
        params = ctx.session.client_params if ctx is not None else None
    except (AttributeError, ValueError):
        return None
    info = getattr(params, "client_info", None)
    return getattr(info, "name", None)


def _as_of(now: float | str | None) -> tuple[float | None, Any]:
    """(UNIX seconds, the asker's timezone) from ``now``: seconds, or ISO-8601 with an offset."""
    if now is None:
        return None, None
    if isinstance(now, str) and re.fullmatch(r"\d+(?:\.\d*)?", now.strip(), re.ASCII):
        now = float(now)                            # UNIX seconds sent as a string ("²" is no digit here)
    try:
        ts = parse_timestamp(now, "now")
    except PayloadError as exc:
        raise Refused("invalid_argument", f"{exc}; give now as ISO-8601 with an offset "
                                          "(2026-11-30T12:00:00+08:00) or UNIX seconds") from None
    tz = datetime.fromisoformat(now.strip().replace("Z", "+00:00")).tzinfo if isinstance(now, str) else None
    return ts, tz


class MemoryTools:
    """What each tool and resource does over one ``Memory``, apart from the MCP plumbing."""

    def __init__(self, memory: Memory, clock: Callable[[], float] = time.time):
        self.memory = memory
        self.turns = TurnLog()
        self.clock = clock
        self.client: str | None = None      # the connection's client, for resource reads (stdio: one client)

    def call(self, client: str | None, tool: str, work: Callable[[], CallToolResult]) -> CallToolResult:
        """Run one tool call, turn a refusal into a tool execution error, and count it for the client."""
        client = client or self.client
        rejected = None
        try:
            result = work()
        except Refused as refused:
            result, rejected = _refusal(refused), refused.code
        except PayloadError as exc:
            result, rejected = _refusal(Refused("invalid_payload", str(exc), field=exc.field)), exc.field
        except RememberRejected as exc:
            result = _refusal(Refused(exc.reason, str(exc).split(": ", 1)[-1], rejected=True))
            rejected = exc.reason
        except InvalidInput as exc:     # a plain ValueError is a bug, not the caller's argument: it propagates
            result, rejected = _refusal(Refused("invalid_argument", str(exc))), "invalid_argument"
        except (MemoryBusy, OperationalError) as exc:
            if not isinstance(exc, MemoryBusy) and not is_busy(exc):
                raise
            log.warning("%s failed: %s", tool, exc)       # the write lock stayed taken past the patience
            result = _refusal(Refused("busy", "the memory is busy (another program holds its write lock); "
                                              "nothing was stored, call again"))
        except MemoryUnavailable as exc:                # the environment (a full disk…), not the call: said as is
            log.warning("%s failed: %s", tool, exc)
            result, rejected = _refusal(Refused("memory_unavailable", str(exc))), "memory_unavailable"
        except Exception:
            self._count(client, tool, INTERNAL_ERROR)       # a bug: counted, then reported by the SDK as a crash
            raise
        self._count(client, tool, rejected)
        return result

    def _count(self, client: str | None, tool: str, rejected: str | None) -> None:
        try:
            self.memory.record_agent_call(client, tool, rejected=rejected)
        except Exception:  # counting must never fail the call itself
            log.exception("could not count a call of %s", tool)

    # ------------------------------------------------------------------ tools

    def query(self, question: str, query_mode: str | None, now: float | str | None, session_id: str | None,
              limit: int) -> CallToolResult:
        ts, tz = _as_of(now)
        if not 1 <= limit <= MAX_LIMIT:
            raise Refused("invalid_argument", f"limit must be between 1 and {MAX_LIMIT}")
        pack = self.memory.query(question, mode=query_mode, now=ts, limit=limit, session_id=session_id, tz=tz)
        return _result(pack_text(pack), pack_data(pack))

    def log_turn(self, session_id: str, role: str, text: str, provenance: str | None,
                 tool_name: str | None, message_id: str | None = None) -> CallToolResult:
        chat: dict[str, Any] = {"role": role, "text": text}
        if provenance is not None:
            chat["provenance"] = provenance
        if tool_name is not None:
            chat["tool_name"] = tool_name
        payload: dict[str, Any] = {"source_type": "chat", "session_id": session_id, "occurred_at": self.clock(),
                                   "chat": chat}
        if message_id is not None:
            payload["source_item_id"] = message_id      # the client's id: a retry with it is stored once
        try:
            stored = self.memory.ingest_turn(payload, retry_within=RETRY_SECONDS)
        except PayloadError as exc:
            if exc.field != "source_item_id" or message_id is None:
                raise
            raise Refused("message_id_reused", f"message_id {message_id!r} is already another message's (another "
                                               "session, or other words); give each message its own id",
                          field="message_id") from None
        if stored.event_id is None:
            raise RuntimeError("ingest_turn stored no event and raised nothing")   # a bug, never the caller's
        event = self.memory.get_event(stored.event_id) or {}
        # The turn holds the message as stored — secrets redacted, recalled memory cut out — so a quote
        # can only be what the memory itself keeps of the user's words.
        if not (stored.duplicate and any(m["id"] == stored.event_id for m in self.turns.current(session_id) or [])):
            self.turns.add(session_id, {"id": stored.event_id, "role": role, "text": event.get("content", text),
                                        "provenance": provenance})
        in_turn = len(self.turns.current(session_id) or [])
        data = {"event_id": stored.event_id, "duplicate": stored.duplicate, "evidence_class": stored.evidence_class,
                "current_turn_messages": in_turn}
        said = "already stored (a retry)" if stored.duplicate else f"stored as {stored.evidence_class}"
        return _result(safe_text(f"Turn {stored.event_id} {said}; the current turn of {session_id} holds {in_turn} "
                                 "message(s)."), data)

    def log_tool_run(self, tool: str, category: str, ok: bool, duration_ms: float | None, input: Any, output: Any,
                     error: str | None, session_id: str | None) -> CallToolResult:
        action = {"tool": tool, "category": category, "ok": ok, "duration_ms": duration_ms, "input": input,
                  "output": output, "error": error}
        payload = {"source_type": "runtime", "occurred_at": self.clock(),
                   "action": {key: value for key, value in action.items() if value is not None}}
        if session_id is not None:
            payload["session_id"] = session_id
        stored = self.memory.ingest(payload)
        decision = self.memory.tool_decision(tool, category)
        data = {"event_id": stored.event_id, "duplicate": stored.duplicate, "breaker": decision.to_dict()}
        if decision.allowed:
            advice = f"breaker {decision.state}: {tool} may be called ({decision.reason})"
        else:
            advice = f"breaker OPEN: do not call {tool} now — {decision.reason}"
        return _result(f"Tool run {stored.event_id} recorded; {advice}.", data)

    def remember(self, quote: str, content: str, session_id: str | None, turn_messages: list[dict] | None,
                 category: str | None, replaces: int | None, project: str | None) -> CallToolResult:
        if turn_messages is None:
            if session_id is None:
                raise Refused("no_current_turn", "pass session_id (the session whose messages you log with "
                                                 "log_turn) or the turn's messages in turn_messages")
            turn_messages = self.turns.current(session_id)
            if not turn_messages:
                raise Refused("no_current_turn", f"no message of session {session_id!r} was logged since the last "
                                                 "assistant message: log the user's message with log_turn first, "
                                                 "or pass turn_messages")
        fact_id = self.memory.remember(quote, content, turn_messages, category=category, replaces=replaces,
                                       project=project, session_id=session_id)
        fact = self.memory.fact(fact_id) or {}
        data = {"fact_id": fact_id, "evidence_type": fact.get("evidence_type"),
                "source_message_id": fact.get("source_message_id"), "replaces": replaces}
        return _result(f"Saved fact {fact_id} ({fact.get('evidence_type')}: the user said it, message "
                       f"{fact.get('source_message_id')})" + (f"; it replaces fact {replaces}" if replaces else "")
                       + ".", data)

    def working_context(self, session_id: str) -> CallToolResult:
        workbench = self.memory.working_memory(session_id)
        return _result(working_text(session_id, workbench), {"session_id": session_id, "working_memory": workbench})

    # -------------------------------------------------------------- resources

    def read(self, name: str, render: Callable[[], str]) -> str:
        try:
            return render()
        finally:
            try:
                self.memory.record_agent_call(self.client, name)
            except Exception:  # counting must never fail the read
                log.exception("could not count a read of %s", name)

    def snapshot(self) -> str:
        return self.read("user_snapshot", lambda: snapshot_text(self.memory.user_snapshot()))

    def summaries(self) -> str:
        return self.read("recent_summaries",
                         lambda: summaries_text(self.memory.recent_summaries(limit=RECENT_SUMMARIES)))


def _tool(server: MCPServer, annotations: ToolAnnotations) -> Callable:
    """Register a function as a tool, its docstring (dedented) as the description the agent reads."""
    def register(fn: Callable) -> Callable:
        server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations)
        return fn
    return register


def build_server(memory: Memory, clock: Callable[[], float] = time.time) -> MCPServer:
    """The MCP server over ``memory``: its tools, resources and instructions (not yet running)."""
    tools = MemoryTools(memory, clock)
    server = MCPServer(SERVER_NAME, title="Magi Desktop memory", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    async def note_client(ctx, call_next):
        result = await call_next(ctx)               # initialize sets the client's parameters
        tools.client = _client_of(ctx) or tools.client
        return result

    server.middleware.append(note_client)
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writing = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @_tool(server, reading)
    def memory_query(question: str, query_mode: QueryMode | None = None, now: float | str | None = None,
                     session_id: str | None = None, limit: int = 10, ctx: Context | None = None) -> CallToolResult:
        """Ask the user's long-term memory before answering anything about their past, preferences, plans or
        earlier conversations. Returns an evidence pack: numbered findings (id, local time, author, source,
        evidence class, text; derived ones cite the events behind them) and hints. Answer only from the
        findings and follow the hints; with no findings, say you do not know — do not guess.

        query_mode (optional; chosen by rules when omitted):
        - exact_fact: a stable fact about the user ("What is my cat called?")
        - current_state: what holds now, newer evidence wins ("Where do I live now?")
        - temporal_compare: order in time ("What did I buy before the air fryer?")
        - episode_recall: what was said in an earlier conversation, the assistant's replies included
          ("What did you recommend last time?")
        - cross_session: a topic across many conversations ("Which recipes came up in our chats?")
        - event_stream: what happened recently, in order
        - summary / activity_summary: an overview of a period ("Summarise my week", "What was I busy with?")
        - strategy: how a tool or task went before ("How did we handle web search?")
        Fact modes see only the user's own statements and observations, never an assistant's echo.
        now: answer as of this moment (ISO-8601 with an offset, or UNIX seconds); later events are invisible.
        session_id: the asking conversation — its own turns are not evidence, and its working memory rides along.
        limit: findings at most (1-50, default 10).
        The text comes inside <magi-recalled>...</magi-recalled>: keep the markers if you paste it into a
        message, so the memory never learns recalled text again as new testimony."""
        return tools.call(_client_of(ctx), "memory_query",
                          lambda: tools.query(question, query_mode, now, session_id, limit))

    @_tool(server, writing)
    def log_turn(session_id: str, role: Literal["user", "assistant", "tool"], text: str,
                 provenance: Provenance | None = None, tool_name: str | None = None, message_id: str | None = None,
                 ctx: Context | None = None) -> CallToolResult:
        """Store one chat message in the memory: call it for every message of the conversation, in order —
        the user's, your own replies (role assistant) and tool output shown in the chat (role tool).

        provenance is REQUIRED for role user, because agent frameworks also put generated text in user
        messages, and only a person's own words may become facts about them:
        - human_input: the person typed (or said) it; interjection: they broke in while you were working
        - task_result, timer, wake, template: generated text in a user message; quarantined: untrusted input
        - recalled: text this memory gave you (also anything inside <magi-recalled> markers, which is dropped)
        Never mark your own or a tool's text as human_input. The turn's messages since your last reply are
        what remember() checks quotes against. message_id (optional): your own id for the message, unique
        across sessions — calling again with it stores nothing new, so a retry is safe; without it, the same
        message sent again right after (within 2 minutes, nothing between) is taken as a retry too.
        Returns the stored event's id, its evidence class, and duplicate: true for a retry."""
        return tools.call(_client_of(ctx), "log_turn", lambda: tools.log_turn(session_id, role, text, provenance,
                                                                               tool_name, message_id))

    @_tool(server, writing)
    def log_tool_run(tool: str, category: str, ok: bool, duration_ms: float | None = None, input: Any = None,
                     output: Any = None, error: str | None = None, session_id: str | None = None,
                     ctx: Context | None = None) -> CallToolResult:
        """Record one tool execution (after every call of a tool you use: its name, a category such as
        search / code / file / browser, whether it worked, how long it took, and the error if it failed).
        The memory keeps per-tool experience and a circuit breaker: after 3 failures in a row the breaker
        opens and the answer says not to call that tool for a while (it half-opens after 600 s; 2 successes
        close it). Follow it: use another way while it is open. Secrets in input and output are redacted."""
        return tools.call(_client_of(ctx), "log_tool_run", lambda: tools.log_tool_run(
            tool, category, ok, duration_ms, input, output, error, session_id))

    @_tool(server, writing)
    def remember(quote: str, content: str, session_id: str | None = None,
                 turn_messages: list[TurnMessage] | None = None, category: Category | None = None,
                 replaces: int | None = None, project: str | None = None, ctx: Context | None = None) -> CallToolResult:
        """Save a fact the user told you, at once. Only with proof: quote must be the user's exact words
        (whitespace aside) from ONE of their own messages (provenance human_input or interjection) of the
        CURRENT turn — not a paraphrase, not an earlier turn, not your text, a tool result or recalled memory,
        and never two messages joined. content is the fact, stated plainly ("The user's sister is Anna.").

        The current turn: pass session_id and it is every message you logged with log_turn for that session
        since your last assistant message; or pass the messages yourself in turn_messages ({id, role, text,
        provenance}). category (user facts): profile, preference, relation, knowledge, event; with project
        (a project fact): knowledge, event, state, procedure, directive. replaces: the id of a fact this one
        corrects (the quote gate applies too). A refusal gives its reason (quote_not_found,
        quote_not_from_the_human, quote_spans_messages, quote_too_short, quote_from_a_question, empty_quote,
        message_without_id, invalid_category, no_current_turn...) and what to do instead."""
        messages = [dict(m) for m in turn_messages] if turn_messages is not None else None
        return tools.call(_client_of(ctx), "remember", lambda: tools.remember(
            quote, content, session_id, messages, category, replaces, project))

    @_tool(server, reading)
    def working_context(session_id: str, ctx: Context | None = None) -> CallToolResult:
        """The session's working memory (L0): its goal, the people and things it is about, the recent tool
        runs and a running summary with the threads of the dialogue. Call it when you resume a session or
        lose track. Only sessions whose turns were logged through this server, until idle 30 minutes."""
        return tools.call(_client_of(ctx), "working_context", lambda: tools.working_context(session_id))

    @server.resource(SNAPSHOT_URI, name="user_snapshot", title="What the memory believes about the user",
                     mime_type="text/markdown",
                     description="The user's current traits, states and relationships (from their own statements "
                                 "and observations) and the facts agents saved with remember().")
    def user_snapshot() -> str:
        return tools.snapshot()

    @server.resource(SUMMARIES_URI, name="recent_summaries", title="Recent summaries", mime_type="text/markdown",
                     description=f"The {RECENT_SUMMARIES} latest summaries of the user's hours, days, weeks and "
                                 "months, themes and insights, each with its window.")
    def recent_summaries() -> str:
        return tools.summaries()

    return server


# A tool call that must write waits this long for another program's write lock, then is refused as busy
# (an agent's own call times out sooner than the CLI's patience).
LOCK_PATIENCE_SECONDS = 30.0


def _log_lock_wait(waited: float, acquired: bool) -> None:
    """In the log (stdout is the protocol): a write that waited for another program's write lock."""
    if acquired and waited >= 1:
        log.info("got the memory's write lock after %.1f s", waited)
    elif not acquired and 1 <= waited < 1.3:
        log.info("waiting for another program writing to the memory")


def serve(data_dir=None, *, background: bool = True) -> int:
    """Run the server over stdio until the client closes it, on the memory in ``data_dir``; with
    ``background`` it also does the background work (embedding, L2, summaries) as the app would."""
    from ..app_settings import llm_for
    from ..core.paths import database_path
    from ..workers import BackgroundWorker

    folder = database_path(data_dir).parent
    try:
        llm = llm_for(folder)
    except InvalidInput as exc:                 # settings.json (AppSettingsError) or MAGI_LLM_* is wrong
        log.error("using the offline rules: %s", exc)
        llm = "rules"
    memory = Memory.open(data_dir, llm=llm, lock_wait=_log_lock_wait, lock_patience=LOCK_PATIENCE_SECONDS)
    worker = BackgroundWorker(memory) if background else None
    try:
        if worker is not None:
            worker.start()
        build_server(memory).run("stdio")
    finally:
        if worker is not None:
            worker.stop()
        memory.close()
    return 0


__all__ = ["MemoryTools", "SERVER_NAME", "build_server", "serve"]
