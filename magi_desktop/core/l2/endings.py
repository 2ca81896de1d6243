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
        rows = conn.execute(
            "SELECT k.triple_id, c.name_key FROM kg_edges k JOIN entity_catalog c ON c.entity_id = k.object_id "
            "WHERE k.subject_id = ? AND k.predicate = ? AND k.status = 'active' AND k.last_observed_at < ?",
            (ending.subject_id, ending.predicate, ending.timestamp)).fetchall()
        for tid, key in rows:
            if not _same_thing(key, ending.object_key):
                continue
            graph.retire_edge(conn, tid, replaced_by=None, reason=ENDED, now=ending.timestamp)
            conn.execute(f"UPDATE tom_trait_assertions SET status = 'superseded', superseded_by = NULL, "
                         f"retired_at = ? WHERE triple_id = ? AND status IN {graph.LIVE}", (ending.timestamp, tid))
            conn.execute("INSERT OR IGNORE INTO l2_endings (triple_id, event_rowid, ended_at) VALUES (?, ?, ?)",
                         (tid, ending.event_rowid, ending.timestamp))
            retired += 1
            touched.add(ending.subject_id)
    return retired, touched


def ended_by(conn: Connection, event_rowids: list[int]) -> list[str]:
    """The edges these events ended (read before the events are deleted)."""
    if not event_rowids:
        return []
    marks = ", ".join("?" * len(event_rowids))
    return [tid for (tid,) in conn.execute(
        f"SELECT DISTINCT triple_id FROM l2_endings WHERE event_rowid IN ({marks})", event_rowids)]


def reinstate(conn: Connection, triple_ids: list[str]) -> None:
    """These edges' endings were forgotten (their l2_endings rows went with the events): an edge no other
    ending holds is current again — unless a newer value of its single-valued attribute replaced it."""
    for tid in triple_ids:
        row = conn.execute("SELECT subject_id, predicate, last_observed_at FROM kg_edges WHERE triple_id = ? AND "
                           "status = 'retired' AND retired_reason = ? AND NOT EXISTS (SELECT 1 FROM l2_endings "
                           "WHERE triple_id = ?)", (tid, ENDED, tid)).fetchone()
        if row is None:
            continue        # forgotten itself, ended again by another event, or revived meanwhile
        spec = P.spec(row[1])
        if spec is not None and spec.single_valued and conn.execute(
                "SELECT 1 FROM kg_edges WHERE subject_id = ? AND predicate = ? AND status = 'active' "
                "AND triple_id != ? AND last_observed_at > ?", (row[0], row[1], tid, row[2])).fetchone():
            conn.execute("UPDATE kg_edges SET retired_reason = 'evolved', status = 'superseded' WHERE triple_id = ?",
                         (tid,))   # "I got a new job at Google" came after: Acme stays history
            continue
        conn.execute("UPDATE kg_edges SET status = 'active', retired_at = NULL, retired_reason = NULL "
                     "WHERE triple_id = ?", (tid,))
        conn.execute("UPDATE tom_trait_assertions SET status = CASE WHEN observations > 1 THEN 'corroborated' "
                     "ELSE 'tentative' END, retired_at = NULL WHERE triple_id = ? AND status = 'superseded' "
                     "AND superseded_by IS NULL", (tid,))


def _same_thing(stored: str, said: str) -> bool:
    """"Acme" ends "Acme Corp" (and "Acme Corp" ends "Acme"): one name is the other's first words."""
    return said == ANY or stored == said or stored.startswith(said + " ") or said.startswith(stored + " ")


def object_key(raw_object: str) -> str:
    return ANY if raw_object.strip() == ANY else name_key(raw_object)
