"""Live sessions (architecture §3, L0): the working memory of each agent session — its goal, focus entities,
recent tool runs and threads — and its end, after which its conversation is ready for fact extraction."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from ..contracts import MemoryEvent
from ..errors import InvalidInput
from ..l0 import WorkingMemory
from ..l2.constants import SELF_KEY
from ..session_constants import SESSION_IDLE_SECONDS
from ..store import Database
from ..store.entities import EntityLinker, entity_names
from ..store.l1_reads import chat_message_position, latest_chat_messages
from ..store.sessions import next_generation

#: The current turn holds at most this many messages (the latest): a turn is what the human said since the
#: agent last answered, rarely more than a few; a runaway loop must not make every remember() read thousands.
TURN_MESSAGES = 50
#: A page of a session's messages, at most.
MESSAGES_PAGE = 500


def _message(row: tuple[Any, ...]) -> dict[str, Any]:
    """A stored chat message as agents see it: the text as stored (secrets redacted, recalled memory cut out)."""
    _, event_id, timestamp, content, metadata_json, source_item_id = row
    timeline = json.loads(metadata_json).get("timeline", {})
    message = {"id": event_id, "role": timeline.get("role"), "text": content, "provenance": timeline.get("provenance"),
               "at": timestamp, "source_item_id": source_item_id, "tool_name": timeline.get("tool_name")}
    return {key: value for key, value in message.items() if value is not None}


class Sessions:
    def __init__(self, db: Database, *, linker: EntityLinker, l0: WorkingMemory) -> None:
        self.db = db
        self.linker = linker            # finds the entities a session's turns name (its focus)
        self.l0 = l0

    def working_events(self, session_id: str | None) -> list[MemoryEvent]:
        """Ephemeral (L0-only) events of a session, oldest first; never stored on disk."""
        return self.l0.events(session_id or "")

    def working_memory(self, session_id: str) -> dict[str, Any] | None:
        """A live session's workbench for the agent: goal, focus entities, recent tool runs, a running
        summary and the threads of its dialogue (None once the session has ended)."""
        def focus_of(texts: list[str]) -> list[str]:
            conn = self.db.reader()
            counts: Counter = Counter()
            for text in texts:
                counts.update({entity_id for entity_id, _, key in self.linker.find(conn, text) if key != SELF_KEY})
            names = entity_names(conn, list(counts))
            return [names[i] for i, _ in counts.most_common() if i in names]

        return self.l0.get(session_id, focus_of)

    def session_messages(self, session_id: str, limit: int = 100,
                         before: str | None = None) -> list[dict[str, Any]]:
        """A conversation's stored chat messages, oldest first: the latest ``limit`` (at most
        :data:`MESSAGES_PAGE`), or the ``limit`` before the message whose event id is ``before`` (the
        previous page). Each is ``{id, role, text, provenance, at, source_item_id, tool_name}``, its text
        as stored: secrets redacted, recalled memory cut out."""
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInput("session_id must be a non-empty string")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MESSAGES_PAGE:
            raise InvalidInput(f"limit must be a whole number from 1 to {MESSAGES_PAGE}")
        conn = self.db.reader()
        cursor = None
        if before is not None:
            cursor = chat_message_position(conn, session_id, before)
            if cursor is None:
                raise InvalidInput(f"no message {before!r} in session {session_id!r}")
        rows = latest_chat_messages(conn, session_id, limit, before=cursor)
        return [_message(r) for r in reversed(rows)]

    def current_turn(self, session_id: str, now: float | None = None) -> list[dict[str, Any]] | None:
        """The session's current turn, oldest first: its messages stored since its latest assistant message
        (all of them when the assistant has not spoken yet), at most the latest :data:`TURN_MESSAGES`, and only
        those the memory received in the last :data:`SESSION_IDLE_SECONDS` before ``now`` — an older message
        belongs to a conversation that has ended (and an imported one was never said to this agent). None when
        no such message is stored. Read from the stored events, so every process on the memory — another MCP
        server, one restarted, the CLI — sees the same turn."""
        now = time.time() if now is None else now
        rows = latest_chat_messages(self.db.reader(), session_id, TURN_MESSAGES + 1,
                                    stored_since=now - SESSION_IDLE_SECONDS)
        if not rows:
            return None
        turn = []
        for row in rows[:TURN_MESSAGES]:
            message = _message(row)
            if message.get("role") == "assistant":
                break
            turn.append(message)
        return turn[::-1]

    def set_goal(self, session_id: str, goal: str) -> None:
        """The agent states what the session is for (otherwise the first request is taken as the goal)."""
        if not goal or not goal.strip():
            raise InvalidInput("the goal is empty")
        self.l0.set_goal(session_id, goal)

    def end_session(self, session_id: str | None) -> None:
        """The session ended: its working memory is cleared (what reached L1 stays), and its conversation so
        far is ready for fact extraction; later messages of the same id are its next generation."""
        self.l0.end(session_id or "")
        if session_id:
            with self.db.transaction() as conn:
                next_generation(conn, session_id)
