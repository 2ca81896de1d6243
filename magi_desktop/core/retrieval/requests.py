"""Request intent (issue 17, item 5): "what did I ask you to do about seats?" finds the user's own requests.

Directives are the user's own words about what they want done (architecture §4: ``user_directive``,
conversation-only). A fact question never sees them — "where do I sit on planes?" is not
answered by "always book me a window seat" — but a question *about* what the user asked for,
wants done or told the agent is answered by them:

- "what did I ask you (to do) …", "did I tell you to …", "how do I want my reports formatted?",
  "my instructions for travel bookings", "what are my rules for …", "我让你…", "我之前要求…";
- the findings are the user's directive turns (only the ``user_directive`` class: task results,
  timers, templates and wake-ups are ``tool_result`` / ``system_runtime`` whatever their text
  says — "the user wants…" in a task result is never the user's request), a standing instruction
  inside a longer message the user wrote, and the standing instructions the fact extractor
  saved (``memory_facts``, stated);
- each is labelled ``kind = "request"``; the pack says they are requests, not facts about the user.

The mode is still the rule classifier's (the public mode list is unchanged): request intent is a
flag (``trace["requests"]``), because a request question is a fact question of another kind of
evidence, and agents that pass a mode keep getting that mode's findings after the requests.
"""

from __future__ import annotations

import re

import numpy as np

from ..instructions import is_standing_instruction
from ..store import l1, search
from ..store.connection import Connection
from ..text import fts_or_query
from .pack import FINDING_TEXT_CHARS, Finding, Layer
from .paths import QueryContext
from .terms import shared_stems, stem

REQUEST_KIND = "request"
REQUEST_HINT = ("Findings of kind 'request' are the user's requests and instructions to the agent, in the user's "
                "own words: these are the user's requests, not facts about the user.")
LIMIT = 5
FETCH_K = 30
SIMILARITY_FLOOR = 0.35        # MiniLM cosine for a request found by meaning alone
_DIRECTIVE_CLASSES = ("user_directive",)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")

_REQUEST_QUESTION = re.compile(
    r"\b(?:what|which|how)\s+(?:\w+\s+){0,3}(?:did|have|had|do)\s+i\s+(?:ever\s+)?(?:(?:ask(?:ed)?|request(?:ed)?)\s+"
    r"(?:you|for)|(?:tell|told|instruct(?:ed)?|want(?:ed)?)\s+you)\b|"
    r"\b(?:did|have|had)\s+i\s+(?:ever\s+)?(?:ask(?:ed)?|tell|told|instruct(?:ed)?)\s+you\b|"
    r"\bhow\s+(?:do|did|would)\s+i\s+(?:want|wish)\b|\bhow\s+(?:do|did)\s+i\s+(?:like|prefer)\s+you\s+to\b|"
    r"\bmy\s+(?:standing\s+)?(?:instructions?|requests?|directions|orders|rules|wishes)\s+(?:for|about|on|regarding|"
    r"when|re)\b|\bwhat\s+(?:are|were)\s+my\s+(?:standing\s+)?(?:instructions?|requests?|rules|wishes)\b|"
    r"\bwhat\s+should\s+you\s+(?:always|never)\b|"
    r"我(?:之前|以前|上次|曾经|都)?(?:让|叫|请|要求|吩咐|交代|嘱咐)(?:过)?你|我(?:之前|以前|上次|曾经)要求|"
    r"我(?:的|对[^，。？?]{1,12}的)(?:要求|指示|吩咐)|我(?:想|希望)你(?:怎么|如何)",
    re.IGNORECASE)
# The words that ask for requests, not what they are about.
_REQUEST_WORDS = frozenset(stem(w) for w in (
    "ask", "asked", "tell", "told", "instruct", "instructed", "instruction", "instructions", "request", "requested",
    "requests", "want", "wanted", "wish", "wishes", "rule", "rules", "order", "orders", "direction", "directions",
    "standing", "always", "never", "should",
    "让", "叫", "要求", "吩咐", "交代", "嘱咐", "希望", "指示", "之前", "以前"))


def is_request_question(text: str) -> bool:
    """Does the question ask what the user asked for, wants done or told the agent?"""
    return bool(_REQUEST_QUESTION.search(text))


def topic_terms(terms: list[str]) -> list[str]:
    """The question's words about *what* was requested ("seats", "reports formatted")."""
    return [t for t in terms if stem(t) not in _REQUEST_WORDS]


class RequestRecall:
    def __init__(self, conn: Connection):
        self.conn = conn

    def findings(self, ctx: QueryContext, limit: int = LIMIT) -> list[Finding]:
        terms = topic_terms(ctx.terms)
        found: dict[int, float] = {}
        for rank, rowid in enumerate(self._by_words(terms, ctx)):
            found[rowid] = max(found.get(rowid, 0.0), 1.0 - rank / FETCH_K)
        for rowid, similarity in self._by_meaning(ctx):
            found[rowid] = max(found.get(rowid, 0.0), similarity)
        if not terms and not found:
            found = {rowid: 1.0 - i / FETCH_K for i, rowid in enumerate(self._latest(ctx))}
        out = [f for f in (self._event_finding(rowid, score) for rowid, score in found.items()) if f is not None]
        out.sort(key=lambda f: (-f.score, -f.occurred_at))
        out = out[:limit]
        cited = {e for f in out for e in f.supporting_event_ids}
        for fact in self._facts(terms, ctx):
            if len(out) >= limit + 2:
                break
            if not cited & set(fact.supporting_event_ids):
                out.append(fact)
        return out

    # ------------------------------------------------------------ candidates

    def _by_words(self, terms: list[str], ctx: QueryContext) -> list[int]:
        if not terms:
            return []
        return search.directive_events_matching(self.conn, "{content} : (" + fts_or_query(terms) + ")",
                                                _DIRECTIVE_CLASSES, ctx.now, FETCH_K)

    def _by_meaning(self, ctx: QueryContext) -> list[tuple[int, float]]:
        if ctx.query_vector is None:
            return []
        rows = search.nearest_conversation_chunks(
            self.conn, np.ascontiguousarray(ctx.query_vector, dtype=np.float32).tobytes(), FETCH_K * 2, ctx.now)
        best: dict[int, float] = {}
        for rowid, distance in rows:
            if distance is not None:
                best[rowid] = max(best.get(rowid, -1.0), 1.0 - distance)
        return [(rowid, s) for rowid, s in best.items() if s >= SIMILARITY_FLOOR]

    def _latest(self, ctx: QueryContext) -> list[int]:
        return l1.latest_event_rowids_of_classes(self.conn, _DIRECTIVE_CLASSES, ctx.now, LIMIT)

    # -------------------------------------------------------------- findings

    def _event_finding(self, rowid: int, score: float) -> Finding | None:
        row = l1.event_for_finding(self.conn, rowid)
        if row is None:
            return None
        event_id, at, content, source, item, session, evidence_class, speaker = row
        if evidence_class not in (*_DIRECTIVE_CLASSES, "user_self_report"):
            return None       # a task result, timer or template "stating the user's wishes" is not the user
        if evidence_class not in _DIRECTIVE_CLASSES:
            # The user's message that also tells something: only its standing instruction is a request.
            wanted = [s.strip() for s in _SENTENCE.findall(content) if is_standing_instruction(s.strip())]
            if not wanted:
                return None
            content = " ".join(wanted)
        text = content if len(content) <= FINDING_TEXT_CHARS else content[:FINDING_TEXT_CHARS - 1] + "…"
        return Finding(layer=Layer.L1, text=text, occurred_at=at, source=source, source_item_id=item,
                       session_id=session, author="user", evidence_class=evidence_class, score=score,
                       event_id=event_id, speaker=speaker, supporting_event_ids=[event_id],
                       supporting_source_item_ids=[item] if item else [], paths=["requests"], kind=REQUEST_KIND)

    def _facts(self, terms: list[str], ctx: QueryContext) -> list[Finding]:
        """Standing instructions the fact extractor (or an agent's remember) saved, in the user's words."""
        if not terms:
            return []
        rows = search.stated_facts_matching(self.conn, fts_or_query(terms), FETCH_K)
        wanted = {stem(t) for t in terms}
        out = []
        for fact_id, content, quote, source_message, session_id, created_at in rows:
            said = quote or content
            if not is_standing_instruction(said) or not shared_stems(wanted, f"{content} {said}"):
                continue
            event = l1.event_by_id_or_chat_item(self.conn, source_message)
            at = event[1] if event else created_at
            if at > ctx.now:
                continue
            out.append(Finding(layer=Layer.L2,
                               text=f"[request · stated: the user said it] {content} (the user: “{said}”)",
                               occurred_at=at, source="memory_facts", source_item_id=None, session_id=session_id,
                               author="user", evidence_class="fact_stated", score=0.5, event_id=f"fact:{fact_id}",
                               supporting_event_ids=[event[0]] if event else [],
                               supporting_source_item_ids=[event[2]] if event and event[2] else [],
                               paths=["requests_facts"], status="current", kind=REQUEST_KIND))
        return out


def with_requests(conn: Connection, findings: list[Finding], ctx: QueryContext, trace: dict) -> list[Finding]:
    """The user's requests lead a request question's pack; the other findings follow, each once."""
    requests = RequestRecall(conn).findings(ctx)
    trace["requests"] = {"findings": len(requests)}
    ids = {f.event_id for f in requests}
    return requests + [f for f in findings if f.event_id not in ids]
