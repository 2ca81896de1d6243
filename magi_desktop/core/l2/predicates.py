"""The predicate registry (architecture §6): core predicates, synonyms, families, the low-value blacklist.

Models name relations loosely (LIKE, LOVES, ENJOYS); edges are written under
one canonical name so that repeats merge. A family (preference: LIKES /
INTERESTED_IN …) reuses the predicate an existing edge between the same pair
already has. Open predicates are allowed when UPPER_SNAKE_CASE and not a
description of the conversation itself (ASKED_ABOUT, MENTIONED). Behavioural
predicates describe observed activity and may only come from sensor events;
a sensor event may produce nothing else — visiting a page 50 times is a visit,
never a preference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Predicate:
    name: str
    family: str
    object_type: str           # the entity type its object gets when nothing better is known
    single_valued: bool = False  # one current object per subject (LIVES_IN): a new one conflicts
    behavioural: bool = False    # observed activity: sensor events only
    trait: str | None = None     # the assertion (tom_trait_assertions) it also states about the subject
    antonym: str | None = None


_CORE = (
    Predicate("LIKES", "preference", "thing", trait="likes", antonym="DISLIKES"),
    Predicate("DISLIKES", "aversion", "thing", trait="dislikes", antonym="LIKES"),
    Predicate("INTERESTED_IN", "preference", "topic", trait="interested_in"),
    Predicate("PREFERS", "preference", "thing", trait="prefers"),
    Predicate("OWNS", "possession", "product", trait="owns"),
    Predicate("BOUGHT", "acquisition", "product"),
    Predicate("SOLD", "disposal", "product"),
    Predicate("USES", "usage", "software"),
    Predicate("LIVES_IN", "residence", "place", single_valued=True, trait="lives_in"),
    Predicate("FROM", "origin", "place", single_valued=True, trait="from"),
    Predicate("WORKS_AT", "employment", "organization", single_valued=True, trait="works_at"),
    Predicate("WORKS_AS", "employment_role", "role", single_valued=True, trait="works_as"),
    Predicate("WORKS_ON", "project", "project"),
    Predicate("STUDIES_AT", "education", "organization", single_valued=True, trait="studies_at"),
    Predicate("STUDIES", "education_subject", "topic"),
    # A stage, not a school: "我开始读研了" names none ("graduate school", "PhD", "graduated").
    Predicate("EDUCATION", "education_stage", "state", single_valued=True, trait="education"),
    Predicate("RELATIONSHIP_STATUS", "relationship", "state", single_valued=True, trait="relationship_status"),
    Predicate("KNOWS", "social", "person"),
    Predicate("FRIEND_OF", "friendship", "person"),
    Predicate("FAMILY_OF", "family", "person"),
    Predicate("MARRIED_TO", "marriage", "person", single_valued=True, trait="married_to"),
    Predicate("HAS_PET", "possession", "animal", trait="has_pet"),
    Predicate("PLAYS", "activity", "activity"),
    Predicate("PRACTICES", "practice", "activity"),
    Predicate("MEMBER_OF", "membership", "organization"),
    Predicate("ATTENDED", "participation", "event"),
    Predicate("PLANS", "plan", "activity"),
    Predicate("GOAL", "intention", "activity", trait="goal"),
    Predicate("TRAVELED_TO", "travel", "place"),
    Predicate("NAMED", "identity", "name", single_valued=True, trait="name"),
    Predicate("AGE", "identity", "quantity", single_valued=True, trait="age"),
    Predicate("HAS_STATE", "state", "state"),
    Predicate("CAUSED", "causal", "thing"),
    Predicate("LED_TO", "causal", "thing"),
    # Observed activity (sensor events only).
    Predicate("VISITED", "visit", "website", behavioural=True),
    Predicate("LISTENED_TO", "media", "media", behavioural=True),
    Predicate("WATCHED", "video", "media", behavioural=True),
    Predicate("USED_APP", "app_usage", "software", behavioural=True),
    Predicate("COMMITTED_TO", "code", "project", behavioural=True),
    Predicate("RAN_COMMAND", "shell", "software", behavioural=True),
    Predicate("SCHEDULED", "calendar", "event", behavioural=True),
    Predicate("INTERACTED_WITH", "activity_generic", "thing", behavioural=True),
)
CORE: dict[str, Predicate] = {p.name: p for p in _CORE}

SYNONYMS: dict[str, str] = {
    "LIKE": "LIKES", "LOVES": "LIKES", "LOVE": "LIKES", "ENJOYS": "LIKES", "ENJOY": "LIKES", "FAN_OF": "LIKES",
    "DISLIKE": "DISLIKES", "HATES": "DISLIKES", "HATE": "DISLIKES",
    "INTERESTED": "INTERESTED_IN", "CURIOUS_ABOUT": "INTERESTED_IN",
    "OWN": "OWNS", "HAS": "OWNS", "HAVE": "OWNS", "POSSESSES": "OWNS",
    "BUY": "BOUGHT", "BUYS": "BOUGHT", "PURCHASED": "BOUGHT", "PURCHASE": "BOUGHT", "ACQUIRED": "BOUGHT",
    "USE": "USES", "USING": "USES", "USED": "USES",
    "LIVE_IN": "LIVES_IN", "LIVING_IN": "LIVES_IN", "RESIDES_IN": "LIVES_IN", "MOVED_TO": "LIVES_IN",
    "WORK_AT": "WORKS_AT", "WORKS_FOR": "WORKS_AT", "WORK_FOR": "WORKS_AT", "EMPLOYED_BY": "WORKS_AT",
    "EMPLOYED_AT": "WORKS_AT",
    "WORK_ON": "WORKS_ON", "WORKING_ON": "WORKS_ON",
    "STUDY_AT": "STUDIES_AT", "ATTENDS": "STUDIES_AT",
    "LISTENS_TO": "LISTENED_TO", "LISTEN_TO": "LISTENED_TO", "LISTENED": "LISTENED_TO",
    "VISITS": "VISITED", "VISIT": "VISITED", "BROWSED": "VISITED",
    "WATCH": "WATCHED", "WATCHES": "WATCHED",
    "FRIENDS_WITH": "FRIEND_OF", "KNOW": "KNOWS",
    "TRAVELLED_TO": "TRAVELED_TO", "WENT_TO": "TRAVELED_TO",
    "CAUSES": "CAUSED", "CAUSE": "CAUSED", "RESULTED_IN": "LED_TO", "LEADS_TO": "LED_TO",
    "IS_NAMED": "NAMED", "NAME": "NAMED", "CALLED": "NAMED",
    "FEELS": "HAS_STATE", "FEELING": "HAS_STATE", "IS_FEELING": "HAS_STATE",
}

# Describe the conversation, not the world: never an edge.
LOW_VALUE = frozenset({
    "ASKED_ABOUT", "MENTIONED", "TALKED_ABOUT", "SAID", "ASKED", "DISCUSSED", "REPLIED", "TOLD", "RELATED_TO",
    "ASSOCIATED_WITH", "IS", "IS_A", "HAS_PROPERTY", "THINKS_ABOUT", "WANTS_TO_KNOW",
})
_OPEN = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
MAX_PREDICATE_CHARS = 40


class PredicateRejected(ValueError):
    """A predicate that may not become an edge (low value, or not UPPER_SNAKE_CASE)."""


def canonical(raw: str) -> str:
    """The registry name of a predicate; open predicates pass through. Raises :class:`PredicateRejected`."""
    name = re.sub(r"[\s\-]+", "_", (raw or "").strip()).upper()
    name = SYNONYMS.get(name, name)
    if name in CORE:
        return name
    if name in LOW_VALUE:
        raise PredicateRejected(f"{raw!r} describes the conversation, not a fact")
    if not _OPEN.match(name) or len(name) > MAX_PREDICATE_CHARS or not _OPEN.match((raw or "").strip()):
        raise PredicateRejected(f"{raw!r} is not a core predicate and not UPPER_SNAKE_CASE")
    return name


def spec(name: str) -> Predicate | None:
    return CORE.get(name)


# Families whose members say the same thing in other words, so a pair keeps one edge
# ("likes jazz", then "interested in jazz"). Other families group related but distinct relations.
REUSABLE_FAMILIES = frozenset({"preference"})


def family(name: str) -> str:
    p = CORE.get(name)
    return p.family if p else f"open:{name}"


def is_behavioural(name: str) -> bool:
    p = CORE.get(name)
    return bool(p and p.behavioural)
