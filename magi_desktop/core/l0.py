"""L0 working memory (architecture §2): the current session's workbench — its goal, the entities it is
about, the recent tool runs, a running summary and the threads of its dialogue. In memory only,
per session; cleared when the session ends (``Memory.end_session``, or idle for
``IDLE_SECONDS``). It never becomes evidence: it is the agent's context, not the user's word.

Threads follow the dialogue tree of the Familiars seed: a user turn attaches to the earlier
turn that scores best on similarity, recency and being the immediate predecessor, or starts
a new thread when nothing scores above ``ATTACH``. The seed's weights (0.3 / 0.3 / 0.35,
threshold 0.35) let the predecessor alone pass the threshold, so no topic shift would ever
start a thread; here similarity leads (0.6 / 0.2 / 0.2, threshold 0.45), measured on the
hashing embedder's bag of words (cheap, no model load on the ingest path). Replies (assistant,
tool) attach to the turn they answer.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .contracts import MemoryEvent
from .embed import HashingEmbedder
from .session_constants import SESSION_IDLE_SECONDS, SESSIONS_KEPT

EVENTS_KEPT = 50
IDLE_SECONDS = SESSION_IDLE_SECONDS     # session_constants.py: when a quiet session has ended
TOOLS_KEPT = 5
FOCUS_KEPT = 8
SUMMARY_TURNS = 4
SIMILARITY, RECENCY, PREDECESSOR = 0.6, 0.2, 0.2
ATTACH = 0.45
RECENCY_TAU = 600.0
TURN_CHARS = 160

_VECTORS = HashingEmbedder()


@dataclass
class Turn:
    event_id: str
    author: str
    text: str
    at: float
    parent: int | None = None
    thread: int = 0


def thread(turns: list[Turn]) -> list[Turn]:
    """Attach every turn to its parent (see the module's note); sets ``parent`` and ``thread``."""
    vectors = _VECTORS.embed([t.text for t in turns]) if turns else np.zeros((0, 1))
    for i, turn in enumerate(turns):
        turn.parent = None
        if i and turn.author != "user":
            turn.parent = i - 1                                  # a reply answers the turn before it
        elif i:
            best, best_score = None, -math.inf
            for j in range(i):
                sim = float(np.dot(vectors[i], vectors[j]))
                recency = math.exp(-max(0.0, turn.at - turns[j].at) / RECENCY_TAU)
                score = SIMILARITY * sim + RECENCY * recency + PREDECESSOR * (j == i - 1)
                if score > best_score:
                    best, best_score = j, score
            if best is not None and best_score >= ATTACH:
                # A follow-up to a question hangs under the answer to it, as in the seed.
                answer = next((k for k in range(best + 1, i) if turns[k].parent == best
                               and turns[k].author != "user"), None)
                turn.parent = answer if turns[best].author == "user" and answer is not None else best
        turn.thread = turns[turn.parent].thread if turn.parent is not None else i
    return turns


@dataclass
class Session:
    session_id: str
    goal: str | None = None
    goal_set_by: str | None = None          # "agent" | "inferred"
    tools: deque = field(default_factory=lambda: deque(maxlen=TOOLS_KEPT))
    turns: deque = field(default_factory=lambda: deque(maxlen=EVENTS_KEPT))
    events: deque = field(default_factory=lambda: deque(maxlen=EVENTS_KEPT))   # L0-only events
    updated_at: float = 0.0

    def to_dict(self, focus: list[str]) -> dict[str, Any]:
        turns = thread([Turn(t.event_id, t.author, t.text, t.at) for t in self.turns])
        threads: dict[int, list[Turn]] = {}
        for turn in turns:
            threads.setdefault(turn.thread, []).append(turn)
        summary = []
        if self.goal:
            summary.append(f"Goal: {self.goal}.")
        summary.append(f"{len(turns)} turn(s) in {len(threads)} thread(s).")
        if focus:
            summary.append("About: " + ", ".join(focus) + ".")
        if self.tools:
            summary.append("Tools: " + ", ".join(f"{t['tool']} {'ok' if t['ok'] else 'failed'}" for t in self.tools)
                           + ".")
        asked = [t.text for t in turns if t.author == "user"][-SUMMARY_TURNS:]
        if asked:
            summary.append("Latest: " + " / ".join(asked))
        return {
            "session_id": self.session_id,
            "goal": self.goal,
            "goal_set_by": self.goal_set_by,
            "focus_entities": focus,
            "tool_context": list(self.tools),
            "running_summary": " ".join(summary),
            "threads": [{"thread_id": tid, "turns": [t.event_id for t in ts], "topic": ts[0].text,
                         "last_at": ts[-1].at} for tid, ts in threads.items()],
            "turns": [{"event_id": t.event_id, "author": t.author, "text": t.text, "parent": t.parent,
                       "thread": t.thread} for t in turns],
            "ephemeral_events": [e.event_id for e in self.events],
            "updated_at": self.updated_at,
        }


class WorkingMemory:
    """Every live session's workbench; thread-safe."""

    def __init__(self):
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def _session(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = Session(session_id)
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > SESSIONS_KEPT:
            self._sessions.popitem(last=False)
        return session

    def observe(self, event: MemoryEvent, *, ephemeral: bool) -> None:
        """Take in one event of a session (a chat turn, a tool run, an L0-only note). Cheap: threads and
        focus are worked out when the workbench is read."""
        with self._lock:
            session = self._session(event.session_id or "")
            session.updated_at = max(session.updated_at, event.timestamp)
            if ephemeral:
                session.events.append(event)
            if event.event_type == "ACTION_EXECUTED":
                run = event.metadata.get("timeline", {})
                session.tools.append({"tool": run.get("tool"), "category": run.get("category"), "ok": run.get("ok"),
                                      "error": (run.get("error") or "")[:200] or None, "at": event.timestamp})
            elif event.event_type == "CHAT_MESSAGE":
                text = " ".join(event.content.split())[:TURN_CHARS]
                session.turns.append(Turn(event.event_id, event.author_type, text, event.timestamp))
                if session.goal is None and event.author_type == "user" and event.content_type in (
                        "directive", "question"):
                    session.goal, session.goal_set_by = text, "inferred"

    def set_goal(self, session_id: str, goal: str) -> None:
        with self._lock:
            session = self._session(session_id)
            session.goal, session.goal_set_by = " ".join(goal.split())[:500], "agent"

    def get(self, session_id: str, focus_of=None) -> dict[str, Any] | None:
        """The workbench of a session; ``focus_of(texts)`` names the entities its user turns mention."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            texts = [t.text for t in session.turns if t.author == "user"]
        focus = focus_of(texts)[:FOCUS_KEPT] if focus_of is not None else []
        with self._lock:
            return session.to_dict(focus)

    def events(self, session_id: str) -> list[MemoryEvent]:
        with self._lock:
            session = self._sessions.get(session_id)
            return list(session.events) if session else []

    def end(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(session_id, None) is not None

    def expire(self, now: float) -> int:
        """Sessions idle for ``IDLE_SECONDS`` have ended."""
        with self._lock:
            stale = [sid for sid, s in self._sessions.items() if now - s.updated_at >= IDLE_SECONDS]
            for sid in stale:
                del self._sessions[sid]
            return len(stale)

    def __len__(self) -> int:
        return len(self._sessions)
