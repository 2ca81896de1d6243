"""Entity resolution, cheapest first (architecture §6).

resolved id from the model → this batch's cache → exact name or alias of a
compatible type → candidate pool (names containing, or contained in, the
mention; at most 20) decided by the disambiguation task → reuse (adding the
surface form as an alias) or create. A mention without a usable type, or
below the confidence floor, is kept only as an ``entity_mentions`` row to be
bound later. Similar names recall candidates; they never decide identity.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..llm.base import LLMOutputInvalid, LLMProvider
from ..store import entities
from ..store.connection import Connection
from ..store.entities import name_key
from ..store.search import nearest_entities
from .constants import SELF_KEY, SELF_NAME
from .tasks import DISAMBIGUATE, ENTITY_TYPES

MIN_ENTITY_CONFIDENCE = 0.5
MIN_DISAMBIGUATION_CONFIDENCE = 0.5
CANDIDATE_POOL = 20
MIN_POOL_KEY_CHARS = 3
POOL_SIMILARITY = 0.6         # a name this close in meaning joins the candidate pool (never decides identity)

# Loose type names models (and plugins) use, mapped onto the controlled vocabulary.
TYPE_SYNONYMS = {
    "artist": "creator", "author": "creator", "musician": "creator", "band": "creator", "singer": "creator",
    "city": "place", "country": "place", "location": "place", "region": "place", "town": "place",
    "company": "organization", "org": "organization", "employer": "organization", "school": "organization",
    "university": "organization", "app": "software", "application": "software", "tool": "software",
    "program": "software", "site": "website", "domain": "website", "url": "website", "song": "media",
    "track": "media", "album": "media", "movie": "media", "film": "media", "book": "media", "show": "media",
    "video": "media", "pet": "animal", "dish": "food", "drink": "food", "appliance": "product",
    "item": "product", "gadget": "device", "repo": "project", "repository": "project", "hobby": "activity",
    "sport": "activity", "job": "role", "occupation": "role", "feeling": "state", "emotion": "state",
    "meeting": "event", "concept": "topic", "subject": "topic", "object": "thing",
}
# Types one identity may carry in different mentions ("Debussy" the person and the creator).
COMPATIBLE = {("person", "creator"), ("creator", "person"), ("product", "device"), ("device", "product"),
              ("thing", "product"), ("product", "thing"), ("software", "product"), ("product", "software")}


PEOPLE = frozenset({"person", "creator"})


def controlled_type(raw: str | None) -> str | None:
    if not raw:
        return None
    kind = raw.strip().casefold()
    kind = TYPE_SYNONYMS.get(kind, kind)
    return kind if kind in ENTITY_TYPES else None


def compatible(a: str, b: str) -> bool:
    return a == b or (a, b) in COMPATIBLE


@dataclass
class Resolved:
    """Where a mention landed: an existing entity id, or a (name, type) to create in the write phase."""

    entity_id: int | None
    name: str
    entity_type: str
    alias: str | None = None      # a new surface form of an existing entity
    fixed_key: str | None = None  # the name key to create it under (the user's own entity)

    @property
    def key(self) -> tuple[str, str]:
        return (self.fixed_key or name_key(self.name), self.entity_type)


class Resolver:
    def __init__(self, conn: Connection, llm: LLMProvider, embed=None):
        self.conn = conn
        self.llm = llm
        self.embed = embed          # texts -> vectors; None: substring recall only
        self.cache: dict[tuple[str, str], Resolved] = {}
        self.llm_calls = 0

    def resolve(self, name: str, raw_type: str | None, resolved_id: int | None = None,
                confidence: float = 1.0, guessed_type: bool = False) -> Resolved | None:
        """The entity a mention refers to, or None (keep it as a mention only).

        ``guessed_type``: the type is only a default (a predicate's usual object), so an
        existing entity of that name is taken whatever its type ("jazz" liked, then studied).
        """
        kind = controlled_type(raw_type)
        key = name_key(name)
        if kind is None or confidence < MIN_ENTITY_CONFIDENCE or not key:
            return None
        if resolved_id is not None:
            hit = self._by_id(resolved_id)
            if hit is not None and compatible(hit.entity_type, kind):
                return self._remember(key, kind, hit, name)
        if (key, kind) in self.cache:
            return self.cache[(key, kind)]
        exact = self._exact(key, kind, any_type=guessed_type)
        if exact is not None:
            return self._remember(key, kind, exact, name)
        pool = self._pool(key, kind)
        if pool:
            chosen = self._disambiguate(name, kind, pool)
            if chosen is not None:
                return self._remember(key, kind, chosen, name)
        created = Resolved(None, name, kind)
        self.cache[(key, kind)] = created
        return created

    def self_entity(self, speaker: str | None) -> Resolved:
        """Whom "I" means: the chat speaker when named, else the user of this memory."""
        if speaker and name_key(speaker):
            return self.resolve(speaker, "person") or Resolved(None, speaker, "person")
        row = entities.person_by_key(self.conn, SELF_KEY)
        return Resolved(row[0], row[1], row[2]) if row else Resolved(None, SELF_NAME, "person", fixed_key=SELF_KEY)

    def _remember(self, key: str, kind: str, hit: Resolved, surface: str) -> Resolved:
        alias = surface if name_key(surface) != name_key(hit.name) else None
        resolved = Resolved(hit.entity_id, hit.name, hit.entity_type, alias)
        self.cache[(key, kind)] = resolved
        return resolved

    def _by_id(self, entity_id: int) -> Resolved | None:
        for _ in range(8):  # follow merges
            row = entities.entity_merge_row(self.conn, entity_id)
            if row is None:
                return None
            if row[3] != "merged" or row[4] is None:
                return Resolved(row[0], row[1], row[2])
            entity_id = row[4]
        return None

    def _exact(self, key: str, kind: str, any_type: bool = False) -> Resolved | None:
        rows = entities.active_entities_named(self.conn, key, f"%{json.dumps(key)[1:-1]}%")
        for entity_id, name, entity_type, aliases in rows:
            keys = {name_key(name), *(name_key(a) for a in json.loads(aliases))}
            loose = any_type and (entity_type in PEOPLE) == (kind in PEOPLE)   # "Jordan" the place is no person
            if key in keys and (loose or compatible(entity_type, kind)):
                return Resolved(entity_id, name, entity_type)
        return None

    def _pool(self, key: str, kind: str) -> list[dict]:
        """Candidates whose name contains the mention or is contained in it, then the nearest by meaning."""
        rows = []
        if len(key) >= MIN_POOL_KEY_CHARS:
            rows = entities.active_entities_overlapping(self.conn, key, MIN_POOL_KEY_CHARS, CANDIDATE_POOL * 3)
        pool = {r[0]: r for r in rows if compatible(r[2], kind)}
        if self.embed is not None and len(pool) < CANDIDATE_POOL:
            vector = np.asarray(self.embed([key])[0], dtype=np.float32)
            near = [rowid for rowid, distance in nearest_entities(self.conn, vector, CANDIDATE_POOL)
                # no distance to a zero vector (a name without words)
                if distance is not None and 1.0 - distance >= POOL_SIMILARITY and rowid not in pool]
            if near:
                for r in entities.active_entities_among(self.conn, near):
                    if compatible(r[2], kind):
                        pool.setdefault(r[0], r)
        return [{"id": r[0], "name": r[1], "entity_type": r[2], "aliases": json.loads(r[3])}
                for r in pool.values()][:CANDIDATE_POOL]

    def _disambiguate(self, name: str, kind: str, pool: list[dict]) -> Resolved | None:
        self.llm_calls += 1
        answer = self.llm.run(DISAMBIGUATE, {"mention": {"name": name, "entity_type": kind}, "candidates": pool})
        chosen = answer["entity_id"]
        if chosen is None or answer["confidence"] < MIN_DISAMBIGUATION_CONFIDENCE:
            return None
        match = next((c for c in pool if c["id"] == chosen), None)
        if match is None:
            raise LLMOutputInvalid(f"{DISAMBIGUATE.name}: entity_id {chosen} is not one of the candidates")
        return Resolved(match["id"], match["name"], match["entity_type"])
