"""Query modes (architecture §5): which evidence a question may trust, and how much each recall path counts.

The caller (an agent) may pass a mode; otherwise :func:`classify_mode` picks
one with narrow English and Chinese rules. A mode fixes the retrieval scopes
(fact modes see only ``fact_authoritative`` events) and the per-path weights
that weighted RRF uses. All the numbers live here so they can be tuned in one
place.
"""

from __future__ import annotations

import re
from enum import StrEnum


class QueryMode(StrEnum):
    """The nine query modes: which evidence a question may trust and which recall paths lead (the README's mode
    table). A member is its string (``QueryMode.SUMMARY == "summary"``, and JSON writes it as ``"summary"``), so
    ``Memory.query(mode=...)`` takes either."""

    EXACT_FACT = "exact_fact"                #: "What is my cat called?" — the default
    CURRENT_STATE = "current_state"          #: "Where do I live now?" — newer evidence wins
    TEMPORAL_COMPARE = "temporal_compare"    #: "What did I buy before the air fryer?" — anchored in time
    EPISODE_RECALL = "episode_recall"        #: "What did you recommend last time?" — conversation turns too
    CROSS_SESSION = "cross_session"          #: "Across our chats, what recipes came up?" — conversation turns too
    EVENT_STREAM = "event_stream"            #: "What happened recently?" — conversation turns too
    SUMMARY = "summary"                      #: "Summarise my week" — L3 summaries of the window lead
    ACTIVITY_SUMMARY = "activity_summary"    #: "What was I busy with last week?" — L3 summaries lead
    STRATEGY = "strategy"                    #: "How did we handle web search last time?" — L4 experience leads


MODES = tuple(mode.value for mode in QueryMode)     # as plain strings, in this order
FACT_MODES = frozenset({"exact_fact", "current_state", "temporal_compare", "summary", "activity_summary", "strategy"})

FACT_SCOPES = ("fact_authoritative",)
CONVERSATION_SCOPES = ("fact_authoritative", "conversation_only")

PATHS = ("bm25", "vector", "keyword", "temporal_bm25", "entity", "graph", "neighbors")

# Weighted RRF path weights per mode. The design's starting point (exact_fact entity
# 1.2 / vector 1.0 / BM25 0.8; episode_recall vector 1.2 / entity 0.6; event_stream
# no structured paths) was tuned on the LoCoMo dev split (conversations 0–4 only):
# there the MiniLM vector path is the weaker ranker and the neighbouring turns of a
# hit carry much of the evidence, so BM25 leads and "neighbors" counts (0.8).
# Graph spreading (L2 edges) counts 0.3: with the rules extractor's graph it moved dev
# all@10 by -0.5 (weight 1.0), -0.3 (0.3) against 0 — within noise, kept low and alive
# for graphs an LLM builds. benchmarks/locomo.py measures the effect; see benchmarks/README.md.
PATH_WEIGHTS: dict[str, dict[str, float]] = {
    "exact_fact":       {"bm25": 1.0, "vector": 0.6, "keyword": 0.4, "temporal_bm25": 1.0, "entity": 1.2, "graph": 0.3,
                         "neighbors": 0.8},
    "current_state":    {"bm25": 1.0, "vector": 0.6, "keyword": 0.4, "temporal_bm25": 1.0, "entity": 1.0, "graph": 0.3,
                         "neighbors": 0.6},
    "temporal_compare": {"bm25": 1.0, "vector": 0.6, "keyword": 0.4, "temporal_bm25": 1.2, "entity": 0.8, "graph": 0.3,
                         "neighbors": 0.6},
    "episode_recall":   {"bm25": 0.8, "vector": 1.2, "keyword": 0.4, "temporal_bm25": 1.0, "entity": 0.6, "graph": 0.3,
                         "neighbors": 0.8},
    "cross_session":    {"bm25": 1.0, "vector": 0.8, "keyword": 0.4, "temporal_bm25": 1.0, "entity": 0.8, "graph": 0.3,
                         "neighbors": 0.6},
    "event_stream":     {"bm25": 1.0, "vector": 0.8, "keyword": 0.6, "temporal_bm25": 1.2, "entity": 0.0, "graph": 0.0,
                         "neighbors": 0.0},
    "summary":          {"bm25": 1.0, "vector": 0.8, "keyword": 0.4, "temporal_bm25": 1.2, "entity": 0.8, "graph": 0.3,
                         "neighbors": 0.3},
    "activity_summary": {"bm25": 1.0, "vector": 0.8, "keyword": 0.4, "temporal_bm25": 1.2, "entity": 0.6, "graph": 0.3,
                         "neighbors": 0.0},
    "strategy":         {"bm25": 1.0, "vector": 0.8, "keyword": 0.5, "temporal_bm25": 1.0, "entity": 0.6, "graph": 0.3,
                         "neighbors": 0.3},
}
RRF_K = 60

# How far a pack is spread over sessions (fusion.diversify): the score a finding loses
# for each better finding already taken from its session. Questions across
# conversations and summaries want breadth; a fact is usually told in one place and
# its neighbouring turns carry it (on the LoCoMo dev split a spread of 0.1 for every
# mode raised session recall by 4.5 points but cost 1.2 points of evidence recall).
SESSION_SPREAD: dict[str, float] = {"cross_session": 0.1, "summary": 0.1, "activity_summary": 0.1}


def scopes_for(mode: str) -> tuple[str, ...]:
    return FACT_SCOPES if mode in FACT_MODES else CONVERSATION_SCOPES


# Ordered: the first rule that matches picks the mode.
_RULES: tuple[tuple[str, re.Pattern], ...] = (
    ("episode_recall", re.compile(
        r"\byou\s+(?:told|said|recommended|suggested|mentioned|advised|promised|answered|wrote|replied)\b|"
        r"\bdid\s+you\s+(?:say|tell|recommend|suggest|mention)\b|\bwhat\s+did\s+you\b|\byour\s+(?:advice|answer|"
        r"suggestion|recommendation)\b|\bwe\s+(?:talked|discussed|chatted|spoke)\b|\blast\s+time\s+we\b|"
        r"你(?:之前|上次|以前|刚才)?(?:说|讲|推荐|建议|提到|回答|告诉)|我们(?:之前|上次)?(?:聊|谈|讨论)",
        re.IGNORECASE)),
    ("cross_session", re.compile(
        r"\b(?:other|previous|earlier|past|all\s+(?:our|my))\s+(?:conversations?|chats?|sessions?)\b|"
        r"\bacross\s+(?:conversations|sessions|chats)\b|(?:其他|之前的|以前的|所有)(?:对话|会话|聊天)",
        re.IGNORECASE)),
    ("strategy", re.compile(
        r"\bhow\s+did\s+(?:we|i)\s+(?:handle|fix|solve|deal\s+with|approach)\b|\bwhat\s+worked\b|"
        r"\bbest\s+way\s+to\b|\bwhich\s+tool\b|\blast\s+time\s+(?:i|we)\s+(?:fixed|solved|handled)\b|"
        r"上次(?:是)?怎么(?:处理|解决|做)|怎么(?:处理|解决)这(?:类|种)|用什么工具",
        re.IGNORECASE)),
    ("activity_summary", re.compile(
        r"\bwhat\s+(?:was|have)\s+i\s+(?:been\s+)?(?:busy|working|doing|up\s+to)\b|\bhow\s+did\s+i\s+spend\b|"
        r"\bwhat\s+did\s+i\s+(?:do|work\s+on)\s+(?:last|this|yesterday|today|in)\b|\bmy\s+(?:activity|activities)\b|"
        r"(?:我)?(?:上周|最近|昨天|今天|这周|本周|上个月|这个月)?(?:在|都)?忙(?:什么|些什么|啥)|我(?:上周|最近|昨天)(?:都)?做了(?:什么|啥)",
        re.IGNORECASE)),
    ("summary", re.compile(
        r"\bsummar(?:y|ise|ize)\b|\boverview\b|\brecap\b|\bin\s+short\b|总结|概括|回顾|汇总", re.IGNORECASE)),
    ("temporal_compare", re.compile(
        r"\b(?:before|after|prior\s+to|since|earlier\s+than|later\s+than|until)\b|\bfirst\b|\bchanged?\b|"
        r"\bcompared?\b|\bused\s+to\b|之前|之后|以前|以后|前后|变化|改变|比较|原来|当初",
        re.IGNORECASE)),
    ("current_state", re.compile(
        r"\b(?:now|currently|current|at\s+the\s+moment|these\s+days|nowadays|still|anymore|latest)\b|"
        r"现在|目前|如今|当前|还在|仍然|最新",
        re.IGNORECASE)),
    ("event_stream", re.compile(
        r"\bwhat\s+(?:happened|has\s+happened|'s\s+happened)\b|\brecent\s+(?:events|activity|happenings)\b|"
        r"\bwhat'?s\s+new\b|发生了什么|最近(?:发生|有什么)|翻翻",
        re.IGNORECASE)),
)


def classify_mode(text: str) -> tuple[str, str]:
    """(mode, rule) for a question; ``exact_fact`` when nothing more specific applies."""
    for mode, pattern in _RULES:
        if pattern.search(text):
            return mode, mode
    return "exact_fact", "default"
