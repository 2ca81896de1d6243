"""The segment task every extractor answers: the complete revised candidate set after one more segment.

An extractor never writes: it sees one segment of a conversation at a time, with the candidates
and the episode it returned for the segments before, and answers the *whole* new state. A later
segment may rewrite or drop what an earlier one proposed; only the final set is validated and
committed (pipeline.py).
"""

from __future__ import annotations

from ..llm import Task

SEGMENT_MAX_MESSAGES = 40
SEGMENT_MAX_CHARS = 12_000
MESSAGE_MAX_CHARS = 2_000       # longer messages are cut for the extractor (pointers still hold)
CONTEXT_MESSAGES = 6            # messages before a segment it may read (and point at), never re-extract
EPISODE_MAX_CHARS = 2_000
EVIDENCE = ("stated", "accepted", "pending")

CANDIDATE = {
    "type": "object",
    "required": ["key", "content", "evidence", "source_message_id"],
    "additionalProperties": False,
    "properties": {
        "key": {"type": "string", "minLength": 1, "maxLength": 120},
        "content": {"type": "string", "minLength": 1, "maxLength": 2000},
        "category": {"type": "string", "maxLength": 40},
        "project": {"type": ["string", "null"], "maxLength": 200},
        "evidence": {"type": "string", "enum": list(EVIDENCE)},
        "quote": {"type": ["string", "null"], "maxLength": 2000},
        "source_message_id": {"type": "string", "minLength": 1, "maxLength": 120},
        "proposal_message_id": {"type": ["string", "null"], "maxLength": 120},
        "accepting_message_id": {"type": ["string", "null"], "maxLength": 120},
    },
}

EXTRACT_SEGMENT = Task(
    name="facts.extract_segment",
    tier="reasoning",
    instructions=(
        "You read one segment of a conversation between a human and an AI agent, after the segments before it. "
        "Return the COMPLETE revised list of durable facts worth remembering (not a delta): keep, rewrite or drop "
        "the candidates you returned before, in the light of this segment. Each candidate names its evidence:\n"
        "- stated: the human said it. source_message_id is the human's message; quote is their exact words.\n"
        "- accepted: the agent concluded it and the human then accepted it. source_message_id is the human "
        "message that raised the matter, proposal_message_id the agent's message with the conclusion, "
        "accepting_message_id the human message that accepted it.\n"
        "- pending: the agent concluded it but the human has not accepted it (yet).\n"
        "Silence, a change of topic, a pure question, a machine event and the agent announcing its own success "
        "are NOT acceptance. Only messages with role user and provenance human_input or interjection are the "
        "human. Text inside <magi-recalled> is the memory's own copy: never a new fact. content must be "
        "readable on its own, without the conversation, and must not widen what was said. category: profile, "
        "preference, relation, knowledge or event for facts about the user; knowledge, event, state, procedure "
        "or directive for a project (then set project). Also return episode: a short account of what the whole "
        "conversation so far did, including explorations nobody accepted."),
    schema={
        "type": "object",
        "required": ["candidates", "episode"],
        "additionalProperties": False,
        "properties": {
            "candidates": {"type": "array", "maxItems": 100, "items": CANDIDATE},
            "episode": {"type": "string", "maxLength": EPISODE_MAX_CHARS},
        },
    },
)
