"""Fusion and reranking: pure functions over ranked id lists (architecture §5)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .modes import RRF_K
from .terms import content_word_count, shared_stems

RERANK_TOP = 20
# Rerank adjustments (architecture §5), added to the RRF score normalised to 0..1.
USER_BONUS = 0.35
ASSISTANT_PENALTY = -0.10
QUOTE_BONUS = {"user": 0.45, "assistant": 0.15}
LONG_ASSISTANT_CHARS = 240
LONG_ASSISTANT_MAX_PENALTY = 0.25
LONG_ASSISTANT_FULL_PENALTY_CHARS = 1240  # the penalty grows linearly to its maximum here
RECENCY_BONUS = 0.05          # "small recency bonus"
ENTITY_BONUS = 0.3            # said by or about someone the question names (tuned on LoCoMo dev)
RECENCY_HALF_LIFE_DAYS = 30.0
# A short turn that shares no word with the question ("Caroline: Thanks, Mel!") came in by its speaker, its
# vector or as a neighbour; on LoCoMo dev such turns held 6% of the top-10 places (issue 17, item 7).
SHORT_TURN_WORDS = 4
SHORT_UNMATCHED_PENALTY = 0.2


def weighted_rrf(rankings: Mapping[str, Sequence[int]], weights: Mapping[str, float],
                 k: int = RRF_K) -> list[tuple[int, float]]:
    """Sum of weight / (k + rank) over the paths that ranked each id; best first, ties by id."""
    scores: dict[int, float] = {}
    for path, ranked in rankings.items():
        weight = weights.get(path, 0.0)
        if weight <= 0:
            continue
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


@dataclass(frozen=True)
class RerankFeatures:
    """What the reranker looks at for one candidate."""

    author: str
    text: str
    occurred_at: float
    about_named_entity: bool = False
    short_unmatched: bool = False


def short_unmatched(text: str, asked_stems: set[str], speaker: str | None = None) -> bool:
    """At most ``SHORT_TURN_WORDS`` content words besides the speaker's "Name:" prefix, none a question word."""
    if speaker and text.startswith((f"{speaker}:", f"{speaker}：")):
        text = text[len(speaker) + 1:]
    return content_word_count(text, asked_stems) <= SHORT_TURN_WORDS and not shared_stems(asked_stems, text)


def normalise(scores: Sequence[float]) -> list[float]:
    """Scale to 0..1 by the best score.

    Not min-max: with few candidates min-max stretches a hair's difference
    in RRF into the whole 0..1 range, and the rerank bonuses could never
    overturn it ("now" questions must be able to prefer the newer statement).
    """
    if not scores:
        return []
    high = max(scores)
    return [s / high if high > 0 else 1.0 for s in scores]


def rerank_adjustment(features: RerankFeatures, quoted: Sequence[str], now: float,
                      recency_weight: float = RECENCY_BONUS) -> float:
    """The architecture §5 bonus or penalty for one candidate."""
    adjust = 0.0
    if features.author == "user":
        adjust += USER_BONUS
    elif features.author == "assistant":
        adjust += ASSISTANT_PENALTY
    lowered = features.text.casefold()
    hits = sum(1 for phrase in quoted if phrase.casefold() in lowered)
    adjust += hits * QUOTE_BONUS.get(features.author, QUOTE_BONUS["assistant"])
    if features.author == "assistant" and len(features.text) > LONG_ASSISTANT_CHARS:
        span = LONG_ASSISTANT_FULL_PENALTY_CHARS - LONG_ASSISTANT_CHARS
        excess = (len(features.text) - LONG_ASSISTANT_CHARS) / span
        adjust -= LONG_ASSISTANT_MAX_PENALTY * min(1.0, excess)
    if features.about_named_entity:
        adjust += ENTITY_BONUS
    if features.short_unmatched:
        adjust -= SHORT_UNMATCHED_PENALTY
    age_days = max(0.0, (now - features.occurred_at) / 86400)
    adjust += recency_weight * math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
    return adjust


def rerank(fused: Sequence[tuple[int, float]], features: Mapping[int, RerankFeatures], quoted: Sequence[str],
           now: float, *, top: int = RERANK_TOP, recency_weight: float = RECENCY_BONUS) -> list[tuple[int, float]]:
    """Rerank the first ``top`` fused candidates; the rest keep their order below them."""
    head = [(item, score) for item, score in fused[:top] if item in features]
    tail = [(item, score) for item, score in fused[top:] if item in features]
    normalised = normalise([score for _, score in head])
    reranked = [
        (item, base + rerank_adjustment(features[item], quoted, now, recency_weight))
        for (item, _), base in zip(head, normalised, strict=True)
    ]
    reranked.sort(key=lambda pair: (-pair[1], pair[0]))
    floor = min((score for _, score in reranked), default=0.0)
    return reranked + [(item, floor - 1.0 - rank * 1e-6) for rank, (item, _) in enumerate(tail)]



def diversify(ranked: Sequence[tuple[int, float]], group_of: Mapping[int, str | None],
              penalty: float) -> list[tuple[int, float]]:
    """Greedy re-order: each item's score drops by ``penalty`` per better item already taken from its group.

    Neighbouring turns of one conversation tend to fill a pack; an answer spread over
    several sessions then loses the parts that sit elsewhere. Items without a group
    are never penalised. Returns (item, adjusted score), best first.
    """
    if penalty <= 0:
        return list(ranked)
    remaining = list(ranked)
    taken: dict[str, int] = {}
    out: list[tuple[int, float]] = []
    while remaining:
        def adjusted(pair: tuple[int, float]) -> float:
            group = group_of.get(pair[0])
            return pair[1] - penalty * taken.get(group, 0) if group is not None else pair[1]
        best = max(range(len(remaining)), key=lambda i: (adjusted(remaining[i]), -i))
        item, score = remaining.pop(best)
        out.append((item, adjusted((item, score))))
        group = group_of.get(item)
        if group is not None:
            taken[group] = taken.get(group, 0) + 1
    return out
