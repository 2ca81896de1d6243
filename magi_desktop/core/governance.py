"""Evidence governance at write time (DESIGN §4).

Every event gets exactly one evidence class from an ordered rule list (first
match wins, no LLM on the write path), and the class fixes what the event may
be used for: which retrieval scope sees it, and whether it may feed entities,
the knowledge graph, user assertions and the user snapshot.

The text heuristics for human chat turns are narrow on purpose. A message is a
question only when it is built as one (a question mark, or a leading
interrogative followed by an auxiliary: "where did I park") — never because it
starts with is/do/have, so "I have a cat" stays a statement. A message that
mixes testimony with a question ("I got a new pressure cooker, any soup
recipes?") is testimony: dropping it from fact scope would lose the fact.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Literal, NamedTuple

from .contracts import Payload


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
    """What events of one evidence class may be used for (DESIGN §4 table)."""

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

# ----------------------------------------------------------------- text kinds

STATEMENT, QUESTION, DIRECTIVE, HYPOTHETICAL, FILLER = (
    "statement", "question", "directive", "hypothetical", "filler")

_LEAD_FILLER = r"(?:(?:so|and|but|well|hmm+|ok|okay|oh|um+|uh|hey|also|then|嗯|那|那么|所以|对了)[\s,，、]*)*"

_HYPOTHETICAL = re.compile(
    r"^" + _LEAD_FILLER + r"(?:(?:what\s+if|if|suppose|supposing|imagine|hypothetically|let'?s\s+say|"
    r"say\s+that|assuming|in\s+case|(?:let'?s\s+)?(?:pretend|role-?play(?:ing)?))\b|假如|如果|要是|假设|万一|倘若|设想|"
    r"假使|假装|想象一下)",
    re.IGNORECASE,
)
# A conditional inside the sentence: "I would move to Berlin if I got the job", "我如果中了彩票就辞职".
_IRREALIS_CONDITIONAL = re.compile(
    r"\bif\b.*\b(?:would|could|might|'d)\b|\b(?:would|could|might|'d)\b.*\bif\b|假如|如果|要是|假设|万一|倘若|假使",
    re.IGNORECASE,
)
# After a hypothetical sentence the rest of the message stays inside the
# frame ("What if I lived in Paris? I'd eat croissants.") unless it breaks out.
_FRAME_BREAK = re.compile(
    r"^" + r"(?:anyway|anyhow|btw|by\s+the\s+way|actually|in\s+reality|seriously|really\s*,|but\s+really|"
    r"back\s+to\s+reality|其实|不过|但是|对了|说真的|实际上)",
    re.IGNORECASE,
)
# Conditionals that introduce testimony rather than a hypothetical.
_NOT_HYPOTHETICAL = re.compile(r"^" + _LEAD_FILLER + r"if\s+i\s+(?:remember|recall)\b", re.IGNORECASE)

_DIRECTIVE = re.compile(
    r"^" + _LEAD_FILLER + r"(?:(?:please|pls|plz|can\s+you|could\s+you|would\s+you|will\s+you|can\s+u|"
    r"help\s+me|remind\s+me|tell\s+me|show\s+me|give\s+me|let\s+me\s+know|write|draft|create|generate|"
    r"find|search|look\s+up|summari[sz]e|translate|explain|list|recommend|suggest|fix|debug|open|"
    r"schedule|send|book|check|compare|calculate|convert|rewrite|review|set\s+(?:a|an|up))\b|"
    r"请|帮我|帮忙|给我|麻烦|告诉我|提醒我|你能|你可以|能不能帮|可以帮|推荐|翻译|总结|解释|列出|搜索|查一下|看看)",
    re.IGNORECASE,
)
# Directive-shaped openings whose content is testimony ("remember that I'm vegetarian").
_TESTIMONY_OPENING = re.compile(
    r"^" + _LEAD_FILLER + r"(?:(?:(?:please\s+)?(?:remember|note|keep\s+in\s+mind)|"
    r"for\s+the\s+record|fyi|just\s+so\s+you\s+know)\b|(?:请)?记住|记一下|顺便说一下)",
    re.IGNORECASE,
)

_INTERROGATIVES = frozenset({"what", "where", "when", "why", "how", "which", "who", "whom", "whose"})
_AUXILIARIES = frozenset({
    "is", "are", "was", "were", "am", "do", "does", "did", "can", "could", "would", "will", "should",
    "shall", "may", "might", "must", "have", "has", "had", "'s", "'re", "'d", "'ll", "'ve", "isn't",
    "aren't", "wasn't", "weren't", "don't", "doesn't", "didn't", "can't", "couldn't", "won't",
    "wouldn't", "shouldn't", "haven't", "hasn't",
})
_HOW_QUANTIFIERS = frozenset({"much", "many", "long", "often", "far", "old", "come", "about"})
# "when I was young", "what I want": a subject right after the wh-word is a clause, not a question.
_SUBJECTS = frozenset({"i", "we", "you", "he", "she", "they", "it", "my", "our", "your", "his", "her",
                       "their", "this", "that", "there", "i'm", "we're", "you're"})
_FILLERS = re.compile(
    r"^(?:hi|hello|hey|yo|thanks|thank\s+you|thx|ok|okay|cool|great|nice|wow|awesome|lol|haha+|bye|"
    r"good\s+(?:morning|night|evening|luck)|nice\s+to\s+(?:meet|see)\s+you|good\s+to\s+(?:see|hear\s+from)\s+you|"
    r"long\s+time\s+no\s+see|congrats|congratulations|sounds\s+good|that'?s\s+(?:great|awesome|cool|amazing)|"
    r"你好|您好|谢谢|好的|嗯+|哈哈+|再见|晚安|早安)\b",
    re.IGNORECASE,
)
_FIRST_PERSON_EN = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|my|we|we're|we've|our|me)\b", re.IGNORECASE)
_ZH_QUESTION_END = re.compile(r"(?:吗|呢|么|嘛)\s*$")
_ZH_INTERROGATIVE = re.compile(
    r"(?:为什么|为啥|怎么|怎样|什么|啥|哪|多少|几点|几个|几号|是不是|有没有|能不能|会不会|要不要|可不可以|好不好|对不对)"
    r"(?!都|也)"
)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？…~]*|[.!?。！？]+")
_CLAUSE_SPLIT = re.compile(r"[,，;；:：、]")
_EN_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|'[a-z]+")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _en_tokens(clause: str) -> list[str]:
    tokens = []
    for tok in _EN_TOKEN.findall(clause.lower().replace("’", "'")):
        # "what's" -> "what", "'s" so the auxiliary is visible; also the unapostrophed "whats".
        if "'" in tok[1:] and tok.split("'")[0] in _INTERROGATIVES:
            head, tail = tok.split("'", 1)
            tokens.extend([head, "'" + tail])
        elif tok.endswith("s") and tok[:-1] in _INTERROGATIVES:
            tokens.extend([tok[:-1], "'s"])
        else:
            tokens.append(tok)
    return tokens


def _is_interrogative_clause(clause: str) -> bool:
    stripped = clause.strip()
    if _CJK.search(stripped):
        return bool(_ZH_QUESTION_END.search(stripped.rstrip("。！!.~…")) or _ZH_INTERROGATIVE.search(stripped))
    if stripped.endswith("!"):
        return False
    tokens = _en_tokens(stripped)
    while tokens and tokens[0] in {"so", "and", "but", "well", "hmm", "ok", "okay", "oh", "um", "also", "then"}:
        tokens = tokens[1:]
    if len(tokens) < 2 or tokens[0] not in _INTERROGATIVES:
        return False
    second = tokens[1]
    if tokens[0] == "what" and second in {"a", "an"}:
        return False  # "what a day"
    if tokens[0] in {"how", "what"} and second in _HOW_QUANTIFIERS:
        return True
    if second in _SUBJECTS:
        return False
    return any(tok in _AUXILIARIES for tok in tokens[1:4])


def _is_first_person_statement(clause: str) -> bool:
    if _is_interrogative_clause(clause):
        return False
    if _CJK.search(clause):
        return "我" in clause
    return bool(_FIRST_PERSON_EN.search(clause))


def _word_count(text: str) -> int:
    return len(_EN_TOKEN.findall(text.lower())) + len(_CJK.findall(text)) // 2


def sentence_kind(sentence: str) -> str:
    """One of statement / question / directive / hypothetical / filler."""
    body = sentence.strip()
    core = body.rstrip(".!?。！？…~ \t")
    if not core:
        return FILLER
    ends_with_question_mark = body.rstrip(" \t…~").endswith(("?", "？"))
    if (_HYPOTHETICAL.match(core) or _IRREALIS_CONDITIONAL.search(core)) and not _NOT_HYPOTHETICAL.match(core):
        return HYPOTHETICAL
    if _TESTIMONY_OPENING.match(core):
        return STATEMENT
    clauses = [c for c in _CLAUSE_SPLIT.split(core) if c.strip()]
    question_clauses = {i for i, c in enumerate(clauses) if _is_interrogative_clause(c)}
    if ends_with_question_mark:
        question_clauses.add(len(clauses) - 1)
    if question_clauses:
        others = [c for i, c in enumerate(clauses) if i not in question_clauses]
        return STATEMENT if any(_is_first_person_statement(c) for c in others) else QUESTION
    if _DIRECTIVE.match(core):
        return DIRECTIVE
    if _FILLERS.match(core) and _word_count(core) <= 5 or _word_count(core) <= 2 and not _FIRST_PERSON_EN.search(core):
        return FILLER
    return STATEMENT


def text_kind(text: str) -> str:
    """Classify a human chat message as statement / question / directive / hypothetical.

    Any testimony sentence makes the message a statement; otherwise the
    strongest non-testimony kind wins. Greetings alone are statements.
    """
    kinds = set()
    in_frame = False
    for sentence in _SENTENCE.findall(text):
        kind = sentence_kind(sentence)
        if in_frame and kind != HYPOTHETICAL:
            if _FRAME_BREAK.match(sentence.strip()):
                in_frame = False
            else:
                kind = HYPOTHETICAL
        in_frame = in_frame or kind == HYPOTHETICAL
        kinds.add(kind)
    for kind in (STATEMENT, HYPOTHETICAL, QUESTION, DIRECTIVE):
        if kind in kinds:
            return kind
    return STATEMENT


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
    if p.kind == "sensor" and p.activity.action_code.lower() in SYSTEM_ACTIONS:
        return Verdict(E.SYSTEM_RUNTIME, "system", "trace", "system_activity")
    return None


def _rule_non_human_user_turn(p: Payload) -> Verdict | None:
    if p.kind == "chat" and p.chat.role == "user" and p.chat.provenance in ("timer", "wake", "template"):
        return Verdict(E.SYSTEM_RUNTIME, "system", "trace", "non_human_user_turn")
    return None


def _rule_quarantined_turn(p: Payload) -> Verdict | None:
    if p.kind == "chat" and p.chat.provenance == "quarantined":
        return Verdict(E.SYSTEM_RUNTIME, "external", "trace", "quarantined_turn")
    return None


def _rule_task_result_turn(p: Payload) -> Verdict | None:
    if p.kind == "chat" and p.chat.role == "user" and p.chat.provenance == "task_result":
        return Verdict(E.TOOL_RESULT, "tool", "observation", "task_result_turn")
    return None


def _rule_tool_turn(p: Payload) -> Verdict | None:
    if p.kind == "chat" and p.chat.role == "tool":
        return Verdict(E.TOOL_RESULT, "tool", "observation", "tool_turn")
    return None


def _rule_assistant_turn(p: Payload) -> Verdict | None:
    if p.kind == "chat" and p.chat.role == "assistant":
        return Verdict(E.ASSISTANT_RESPONSE, "assistant", "answer", "assistant_turn")
    return None


def _rule_human_turn(p: Payload) -> Verdict | None:
    if p.kind == "chat" and p.chat.is_human_testimony:
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
