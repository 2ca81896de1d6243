"""The L2 LLM tasks and the schemas their answers must match (architecture §6).

Phase 1 (fast tier) reads a micro-batch of events and names entities and
fact claims; disambiguation (fast) picks among candidate entities; Phase 2
(fast) labels each claim against what is already known; arbitration
(reasoning) decides a semantic reversal. The ``rules`` provider answers the
same tasks deterministically (:mod:`.rules`).
"""

from __future__ import annotations

from ..llm.base import Task

ENTITY_TYPES = (
    "person", "place", "organization", "product", "software", "website", "media", "creator", "food", "animal",
    "event", "activity", "topic", "project", "role", "state", "name", "quantity", "device", "thing",
)
LABELS = ("new", "corroborates", "refines", "contradicts", "evolves")
CONFLICT_TYPES = ("state_reversal", "preference_reversal", "negation", "antonym")
SELF = "USER"   # a claim's subject meaning "the person speaking" (the user, or the chat speaker)

_TEXT = {"type": "string", "minLength": 1, "maxLength": 500}
_INDEX = {"type": "integer", "minimum": 0}

PHASE1 = Task(
    name="l2.phase1",
    tier="fast",
    instructions=(
        "You extract structured memory from events. For each event (by index) list the entities it names "
        f"(entity_type from: {', '.join(ENTITY_TYPES)}; resolved_id when it is one of known_entities) and the "
        "fact claims it states as subject / predicate / object with the exact evidence_text. Use subject "
        f"\"{SELF}\" for the person speaking; a sensor event whose provenance names an actor is that person's "
        f"doing (their name as subject, never \"{SELF}\"). Prefer core_predicates (UPPER_SNAKE_CASE). Only state "
        "what the event itself says: no guesses, nothing from questions, hypotheticals or the assistant's words. "
        "previous_object is the object a claim replaces (\"moved from A to B\": A). ended: true when the event "
        "says a fact stopped without a new value (\"I quit my job at Acme\": WORKS_AT Acme; object \"*\" when "
        "it names none, \"I quit my job\"). resolved_refs maps "
        "pronouns or nicknames to the entity they refer to."
    ),
    schema={
        "type": "object",
        "required": ["entities", "fact_claims"],
        "properties": {
            "entities": {"type": "array", "maxItems": 200, "items": {
                "type": "object", "required": ["event_index", "name", "entity_type"],
                "properties": {
                    "event_index": _INDEX, "name": _TEXT, "entity_type": {"type": ["string", "null"]},
                    "resolved_id": {"type": ["integer", "null"]},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                }}},
            "fact_claims": {"type": "array", "maxItems": 200, "items": {
                "type": "object", "required": ["event_index", "subject", "predicate", "object", "evidence_text"],
                "properties": {
                    "event_index": _INDEX, "subject": _TEXT, "predicate": {"type": "string", "minLength": 1,
                                                                           "maxLength": 60},
                    "object": _TEXT, "evidence_text": {"type": "string", "minLength": 1, "maxLength": 2000},
                    "object_type": {"type": ["string", "null"]},
                    "previous_object": {"type": ["string", "null"], "maxLength": 500},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "strength": {"type": "number", "minimum": 0, "maximum": 1},
                    "ended": {"type": "boolean"},
                }}},
            "resolved_refs": {"type": "array", "maxItems": 200, "items": {
                "type": "object", "required": ["event_index", "mention", "refers_to"],
                "properties": {"event_index": _INDEX, "mention": _TEXT, "refers_to": _TEXT}}},
        },
    },
)

DISAMBIGUATE = Task(
    name="l2.disambiguate",
    tier="fast",
    instructions=(
        "Decide whether the mention refers to one of the candidate entities. Answer its entity_id, or null "
        "if it is a different thing; confidence 0..1. Identity needs more than a similar name."
    ),
    schema={
        "type": "object", "required": ["entity_id", "confidence"],
        "properties": {"entity_id": {"type": ["integer", "null"]},
                       "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
    },
)

PHASE2 = Task(
    name="l2.phase2",
    tier="fast",
    instructions=(
        f"Label each new claim against the existing facts: {', '.join(LABELS)}. corroborates = the same fact "
        "again; refines = more detail on an existing fact; contradicts = cannot both hold; evolves = replaces "
        "an older state (the older one was true before). For contradicts / evolves give conflict_with (the "
        f"existing ref) and conflict_type ({', '.join(CONFLICT_TYPES)})."
    ),
    schema={
        "type": "object", "required": ["labels"],
        "properties": {"labels": {"type": "array", "maxItems": 200, "items": {
            "type": "object", "required": ["claim_index", "label"],
            "properties": {
                "claim_index": _INDEX, "label": {"enum": list(LABELS)},
                "conflict_with": {"type": ["string", "null"]},
                "conflict_type": {"enum": [*CONFLICT_TYPES, None]},
            }}}},
    },
)

ARBITRATE = Task(
    name="l2.arbitrate",
    tier="reasoning",
    instructions=(
        "Two facts about the same subject conflict. Decide: keep_old (the new claim does not really replace "
        "the old, e.g. a temporary visit) or evolve (the old was true and is now replaced; it stays as history)."
    ),
    schema={
        "type": "object", "required": ["decision", "reason"],
        "properties": {"decision": {"enum": ["keep_old", "evolve"]},
                       "reason": {"type": "string", "maxLength": 500}},
    },
)

TASKS = {task.name: task for task in (PHASE1, DISAMBIGUATE, PHASE2, ARBITRATE)}
