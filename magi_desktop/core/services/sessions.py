"""Live sessions (architecture §3, L0): the working memory of each agent session — its goal, focus entities,
recent tool runs and threads — and its end, after which its conversation is ready for fact extraction."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..contracts import MemoryEvent
from ..errors import InvalidInput
from ..l0 import WorkingMemory
from ..l2.constants import SELF_KEY
from ..store import Database
from ..store.entities import EntityLinker, entity_names
from ..store.sessions import next_generation


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
