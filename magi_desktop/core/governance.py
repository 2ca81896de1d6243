"""Evidence governance at write time (architecture §4).

Every event gets exactly one evidence class from an ordered rule list (first
match wins, no LLM on the write path), and the class fixes what the event may
be used for: which retrieval scope sees it, and whether it may feed entities,
the knowledge graph, user assertions and the user snapshot.

What a human chat turn is doing (stating, asking, directing, supposing) is
decided by the narrow text heuristics in utterance.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Literal, NamedTuple

from .contracts import Payload
from .utterance import DIRECTIVE, HYPOTHETICAL, QUESTION, STATEMENT, text_kind


class EvidenceClass(str, Enum):
    USER_SELF_REPORT = "user_self_report"
    USER_QUESTION = "user_question"
    USER_DIRECTIVE = "user_directive"
    USER_HYPOTHETICAL = "user_hypothetical"
    ASSISTANT_RESPONSE = "assistant_response"
    TOOL_RESULT = "tool_result"
    EXTERNAL_OBSERVATION = "external_observation"
    SYSTEM_RUNTIME = "system_runtime"


class Scope(str, Enum):
    FACT_AUTHORITATIVE = "fact_authoritative"
    CONVERSATION_ONLY = "conversation_only"
    AUDIT_ONLY = "audit_only"
    EPHEMERAL = "ephemeral"  # L0 only; never stored in L1


GraphPermission = Literal["all", "behavioural", "none"]


@dataclass(frozen=True)
class Policy:
    """What events of one evidence class may be used for (architecture §4 table)."""

    scope: Scope
    entities: bool
    graph: GraphPermission
    user_assertions: bool
    snapshot: bool
    retention_class: str

    @property
    def cognition_eligible(self) -> bool:
        """May this event feed L2 at all?"""
        return self.entities or self.graph != "none" or self.user_assertions or self.snapshot


E = EvidenceClass
POLICIES: dict[EvidenceClass, Policy] = {
    E.USER_SELF_REPORT: Policy(Scope.FACT_AUTHORITATIVE, True, "all", True, True, "durable"),
    E.USER_QUESTION: Policy(Scope.CONVERSATION_ONLY, True, "none", False, False, "compressible"),
    E.USER_DIRECTIVE: Policy(Scope.CONVERSATION_ONLY, True, "none", False, False, "compressible"),
    E.USER_HYPOTHETICAL: Policy(Scope.CONVERSATION_ONLY, False, "none", False, False, "compressible"),
    E.ASSISTANT_RESPONSE: Policy(Scope.CONVERSATION_ONLY, True, "none", False, False, "compressible"),
    E.TOOL_RESULT: Policy(Scope.CONVERSATION_ONLY, True, "none", False, False, "compressible"),
    E.EXTERNAL_OBSERVATION: Policy(Scope.FACT_AUTHORITATIVE, True, "behavioural", False, False, "compressible"),
    E.SYSTEM_RUNTIME: Policy(Scope.AUDIT_ONLY, False, "none", False, False, "ephemeral"),
}
FALLBACK_CLASS = E.EXTERNAL_OBSERVATION


class Verdict(NamedTuple):
    evidence_class: EvidenceClass
    author_type: str
    content_type: str
    rule: str  # which rule decided, for explanations and tests

    @property
    def policy(self) -> Policy:
        return POLICIES[self.evidence_class]


# Sensor actions that describe the machine, not the user's world.
SYSTEM_ACTIONS = frozenset({"heartbeat", "timer", "task_status", "wake", "ping", "status", "startup", "shutdown"})

_HUMAN_TEXT_CLASS = {
    STATEMENT: (E.USER_SELF_REPORT, "statement"),
    QUESTION: (E.USER_QUESTION, "question"),
    DIRECTIVE: (E.USER_DIRECTIVE, "directive"),
    HYPOTHETICAL: (E.USER_HYPOTHETICAL, "hypothetical"),
}

# ---------------------------------------------------------------------- rules


def _rule_runtime_action(p: Payload) -> Verdict | None:
    if p.kind == "runtime":
        return Verdict(E.SYSTEM_RUNTIME, "tool", "trace", "runtime_action")
    return None


def _rule_system_activity(p: Payload) -> Verdict | None:
    if p.activity is not None and p.activity.action_code.lower() in SYSTEM_ACTIONS:
        return Verdict(E.SYSTEM_RUNTIME, "system", "trace", "system_activity")
    return None


def _rule_non_human_user_turn(p: Payload) -> Verdict | None:
    if p.chat is not None and p.chat.role == "user" and p.chat.provenance in ("timer", "wake", "template"):
        return Verdict(E.SYSTEM_RUNTIME, "system", "trace", "non_human_user_turn")
    return None


def _rule_recalled_turn(p: Payload) -> Verdict | None:
    # Recalled memory is the memory's own copy: kept for the audit, never evidence again.
    if p.chat is not None and p.chat.provenance == "recalled":
        return Verdict(E.SYSTEM_RUNTIME, "system", "trace", "recalled_turn")
    return None


def _rule_quarantined_turn(p: Payload) -> Verdict | None:
    if p.chat is not None and p.chat.provenance == "quarantined":
        return Verdict(E.SYSTEM_RUNTIME, "external", "trace", "quarantined_turn")
    return None


def _rule_task_result_turn(p: Payload) -> Verdict | None:
    if p.chat is not None and p.chat.role == "user" and p.chat.provenance == "task_result":
        return Verdict(E.TOOL_RESULT, "tool", "observation", "task_result_turn")
    return None


def _rule_tool_turn(p: Payload) -> Verdict | None:
    if p.chat is not None and p.chat.role == "tool":
        return Verdict(E.TOOL_RESULT, "tool", "observation", "tool_turn")
    return None


def _rule_assistant_turn(p: Payload) -> Verdict | None:
    if p.chat is not None and p.chat.role == "assistant":
        return Verdict(E.ASSISTANT_RESPONSE, "assistant", "answer", "assistant_turn")
    return None


def _rule_human_turn(p: Payload) -> Verdict | None:
    if p.chat is not None and p.chat.is_human_testimony:
        evidence_class, content_type = _HUMAN_TEXT_CLASS[text_kind(p.chat.text)]
        return Verdict(evidence_class, "user", content_type, "human_turn")
    return None


def _rule_sensor(p: Payload) -> Verdict | None:
    if p.kind == "sensor":
        return Verdict(E.EXTERNAL_OBSERVATION, "external", "observation", "sensor")
    return None


RULES: tuple[Callable[[Payload], Verdict | None], ...] = (
    _rule_runtime_action,
    _rule_system_activity,
    _rule_non_human_user_turn,
    _rule_recalled_turn,
    _rule_quarantined_turn,
    _rule_task_result_turn,
    _rule_tool_turn,
    _rule_assistant_turn,
    _rule_human_turn,
    _rule_sensor,
)


def classify(payload: Payload) -> Verdict:
    """The evidence class of a payload: the first rule that matches, else the fallback."""
    for rule in RULES:
        verdict = rule(payload)
        if verdict is not None:
            return verdict
    return Verdict(FALLBACK_CLASS, "external", "observation", "fallback")
