"""The current turn of each session, as ``remember()`` needs it when the client does not send it.

Definition (README, "MCP server"): the current turn of session S is every message this server logged
for S with ``log_turn`` after the most recent assistant message logged for S — all of S's logged
messages when no assistant message came yet — oldest first, at most :data:`MESSAGES_KEPT` (the latest).
An assistant message closes the turn: the next message starts a new one. Each message is kept as the
memory stored it (secrets redacted, recalled memory cut out). Messages of every role and
provenance are kept (a tool result, a timer's user-role message), because the quote gate itself decides
which may hold a quote — only the human's own words (``human_input``, ``interjection``) — and says why
when a quote is in the wrong kind of message.

Kept in this process only, for at most :data:`SESSIONS_KEPT` sessions (the least recently used go
first): a restarted server has no current turn until the next ``log_turn``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from typing import Any

from ..core.session_constants import SESSIONS_KEPT

MESSAGES_KEPT = 50


class TurnLog:
    def __init__(self, sessions_kept: int = SESSIONS_KEPT, messages_kept: int = MESSAGES_KEPT):
        self._sessions: OrderedDict[str, deque] = OrderedDict()
        self._sessions_kept = sessions_kept
        self._messages_kept = messages_kept
        self._lock = threading.Lock()

    def add(self, session_id: str, message: dict[str, Any]) -> None:
        """Log a stored message ``{"id", "role", "text", "provenance"}``; an assistant message ends the turn."""
        with self._lock:
            turn = self._sessions.pop(session_id, None)
            if turn is None or message["role"] == "assistant":
                turn = deque(maxlen=self._messages_kept)
            if message["role"] != "assistant":
                turn.append(dict(message))
            self._sessions[session_id] = turn
            while len(self._sessions) > self._sessions_kept:
                self._sessions.popitem(last=False)

    def current(self, session_id: str) -> list[dict[str, Any]] | None:
        """The session's current turn, oldest first; None when nothing was logged for it here."""
        with self._lock:
            turn = self._sessions.get(session_id)
            return None if turn is None else [dict(m) for m in turn]
