"""Assertion traits: long-term facts about an entity versus short-lived states (architecture §6).

A long-term trait (lives_in, works_at) keeps its history: a different value
supersedes the old row, which stays queryable with a pointer to what replaced
it. A short-term state (mood, emotion, stress) is simply overwritten by a new
value and expires after its TTL, so "stressed last week" never reads as the
user's current state — yet stays as history.
"""

from __future__ import annotations

from dataclasses import dataclass

HOUR = 3600.0


@dataclass(frozen=True)
class Trait:
    name: str
    term: str                   # "long" | "short"
    single_valued: bool
    ttl_seconds: float | None = None


TRAITS: dict[str, Trait] = {t.name: t for t in (
    Trait("lives_in", "long", True),
    Trait("from", "long", True),
    Trait("works_at", "long", True),
    Trait("works_as", "long", True),
    Trait("studies_at", "long", True),
    Trait("education", "long", True),
    Trait("relationship_status", "long", True),
    Trait("married_to", "long", True),
    Trait("name", "long", True),
    Trait("age", "long", True),
    Trait("likes", "long", False),
    Trait("dislikes", "long", False),
    Trait("interested_in", "long", False),
    Trait("prefers", "long", False),
    Trait("owns", "long", False),
    Trait("has_pet", "long", False),
    Trait("goal", "long", False),
    Trait("mood", "short", True, 2 * HOUR),
    Trait("emotion", "short", True, 12 * HOUR),
    Trait("stress", "short", True, 24 * HOUR),
    Trait("energy", "short", True, 12 * HOUR),
)}

# Words for a state, and the short-term trait (and value) each one sets.
STATE_WORDS: dict[str, tuple[str, str]] = {
    "stressed": ("stress", "high"), "stressed out": ("stress", "high"), "overwhelmed": ("stress", "high"),
    "under pressure": ("stress", "high"), "relaxed": ("stress", "low"), "calm": ("stress", "low"),
    "anxious": ("emotion", "anxious"), "worried": ("emotion", "anxious"), "nervous": ("emotion", "anxious"),
    "happy": ("emotion", "happy"), "excited": ("emotion", "excited"), "thrilled": ("emotion", "excited"),
    "sad": ("emotion", "sad"), "upset": ("emotion", "sad"), "depressed": ("emotion", "sad"),
    "angry": ("emotion", "angry"), "annoyed": ("mood", "annoyed"), "frustrated": ("mood", "frustrated"),
    "bored": ("mood", "bored"), "grumpy": ("mood", "grumpy"), "cheerful": ("mood", "cheerful"),
    "tired": ("energy", "low"), "exhausted": ("energy", "low"), "sleepy": ("energy", "low"),
    "energetic": ("energy", "high"),
    "压力很大": ("stress", "high"), "压力大": ("stress", "high"), "有压力": ("stress", "high"),
    "焦虑": ("emotion", "anxious"),
    "紧张": ("emotion", "anxious"), "开心": ("emotion", "happy"), "高兴": ("emotion", "happy"),
    "难过": ("emotion", "sad"), "伤心": ("emotion", "sad"), "生气": ("emotion", "angry"),
    "烦": ("mood", "annoyed"), "烦躁": ("mood", "annoyed"), "无聊": ("mood", "bored"), "累": ("energy", "low"),
    "疲惫": ("energy", "low"), "放松": ("stress", "low"),
}


def trait_for_state(word: str) -> tuple[str, str] | None:
    return STATE_WORDS.get(" ".join(word.casefold().split()))
