"""Facts that stop being true without a new value (issue 17, item 4): "I quit my job at Acme", "I moved out
of Berlin", "我从清华毕业了", "I got laid off".

An update with a new value ("I joined Google") evolves the old fact through the single-valued rule. An
ending names no successor, so nothing would replace the old edge and "Where do I work?" would still answer
Acme. A claim with ``ended: true`` retires the speaker's live edge of that predicate — the one whose object
it names, or, with object ``*`` ("I quit my job"), every live one — when that edge was last observed before
the ending. The edge and the assertions made from it become history (``retired_reason = 'ended'``), and
``l2_endings`` records which event ended it — not as evidence for the fact: forgetting the fact's own
message still forgets the fact. A later statement of the same fact brings it back (``graph.write_edge``
revives an edge observed after its retirement), and so does forgetting the ending (:func:`reinstate`,
called by forget) unless a newer value of a single-valued attribute took its place meanwhile. An ending
never creates an entity or an edge.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..store import assertions
from ..store import endings as store
from ..store import graph as store_graph
from ..store.connection import Connection
from ..store.entities import name_key
from . import graph
from . import predicates as P

ANY = "*"           # an ending's object when the text names none ("I quit my job")
ENDED = "ended"     # kg_edges.retired_reason of a fact the user said stopped


@dataclass(frozen=True)
class Ending:
    event_rowid: int
    timestamp: float
    subject_id: int | None          # None: the speaker has no entity yet, so nothing of theirs can end
    predicate: str
    object_key: str                 # a name key, or ANY


def apply(conn: Connection, endings: list[Ending]) -> tuple[int, set[int]]:
    """Retire what each ending ends (inside the caller's write transaction): (edges retired, subjects touched)."""
    retired, touched = 0, set()
    for ending in endings:
        if ending.subject_id is None:
            continue
        rows = store_graph.active_edges_observed_before(conn, ending.subject_id, ending.predicate, ending.timestamp)
        for tid, key in rows:
            if not _same_thing(key, ending.object_key):
                continue
            store_graph.retire_edge(conn, tid, replaced_by=None, reason=ENDED, now=ending.timestamp)
            assertions.supersede_assertions_of_edge(conn, tid, graph.LIVE, ending.timestamp)
            store.record_ending(conn, tid, ending.event_rowid, ending.timestamp)
            retired += 1
            touched.add(ending.subject_id)
    return retired, touched


def ended_by(conn: Connection, event_rowids: list[int]) -> list[str]:
    """The edges these events ended (read before the events are deleted)."""
    if not event_rowids:
        return []
    return store.edges_ended_by(conn, event_rowids)


def reinstate(conn: Connection, triple_ids: list[str]) -> None:
    """These edges' endings were forgotten (their l2_endings rows went with the events): an edge no other
    ending holds is current again — unless a newer value of its single-valued attribute replaced it."""
    for tid in triple_ids:
        row = store.ended_edge_without_ending(conn, tid, ENDED)
        if row is None:
            continue        # forgotten itself, ended again by another event, or revived meanwhile
        spec = P.spec(row[1])
        if spec is not None and spec.single_valued and store_graph.has_newer_active_edge(conn, row[0], row[1], tid,
                                                                                         row[2]):
            store_graph.mark_evolved(conn, tid)   # "I got a new job at Google" came after: Acme stays history
            continue
        store_graph.reactivate_edge(conn, tid)
        assertions.revive_assertions_of_edge(conn, tid)


def _same_thing(stored: str, said: str) -> bool:
    """"Acme" ends "Acme Corp" (and "Acme Corp" ends "Acme"): one name is the other's first words."""
    return said == ANY or stored == said or stored.startswith(said + " ") or said.startswith(stored + " ")


def object_key(raw_object: str) -> str:
    return ANY if raw_object.strip() == ANY else name_key(raw_object)
