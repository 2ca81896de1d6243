"""The ``rules`` provider's answers to the L2 tasks: deterministic, offline, English + Chinese.

Phase 1 reads only what an event states plainly — "I bought / I live in /
I moved from A to B / I like / my name is / I'm stressed because …",
我买了 / 我住在 / 我从A搬到B / 我喜欢 / 我叫 / 我压力很大 — plus the
entity hints plugins declare; a sensor event becomes one behavioural claim
(a visit, a play, a commit) about the object it names. Phase 2 labels claims
by comparing keys; arbitration lets the newer statement of a single-valued
fact win. It misses a lot that a model would catch; it never invents.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..contracts import actor_of
from ..render import hostname
from ..store.entities import name_key
from ..utterance import DIRECTIVE, HYPOTHETICAL, QUESTION, sentence_kind
from . import predicates as P
from .endings import ANY
from .phrases import ADV as _ADV
from .phrases import OBJ as _OBJ
from .phrases import PREV as _PREV
from .phrases import STOP as _STOP
from .phrases import ZH_END as _ZH_END
from .phrases import ZH_OBJ as _ZH_OBJ
from .phrases import ZH_TIME as _ZH_TIME
from .phrases import I as _I
from .tasks import ARBITRATE, DISAMBIGUATE, PHASE1, PHASE2, SELF
from .traits import STATE_WORDS
from .updates import (
    CHINESE_ENDING_PATTERNS,
    CHINESE_OBJECT_PATTERNS,
    ENDING_PATTERNS,
    OBJECT_PATTERNS,
    STATUS_PATTERNS,
    move_continued,
)

# ------------------------------------------------------------------ English

_DETERMINERS = re.compile(r"^(?:(?i:a|an|the|my|our|some|this|that|these|those|another)|new|brand new)\s+")
_STATES_EN = sorted((w for w in STATE_WORDS if w.isascii()), key=len, reverse=True)

_ENGLISH: list[tuple[str, re.Pattern, str | None]] = [
    # (predicate, pattern, extra predicate for the same object)
    ("LIVES_IN", re.compile(_I + r"(?:'ve| have)? " + _ADV + r"moved (?:back )?(?:from " + _PREV
                            + r" )?(?:back )?(?:to|into) " + _OBJ, re.IGNORECASE), None),
    ("LIVES_IN", re.compile(_I + r"(?: " + _ADV + r"live| am living|'m living| am based|'m based|'ve been living)"
                            r" in " + _OBJ, re.IGNORECASE), None),
    ("FROM", re.compile(_I + r"(?:'m| am) (?:originally )?from " + _OBJ, re.IGNORECASE), None),
    ("WORKS_AT", re.compile(_I + r" " + _ADV + r"(?:work|am working|'m working) (?:at|for) " + _OBJ,
                            re.IGNORECASE), None),
    ("WORKS_AT", re.compile(_I + r"(?:'ve| have)? " + _ADV + r"(?:joined|started (?:a new job |working )?at) " + _OBJ,
                            re.IGNORECASE), None),
    ("WORKS_AS", re.compile(_I + r" " + _ADV + r"work as (?:an? )?" + _OBJ, re.IGNORECASE), None),
    ("BOUGHT", re.compile(_I + r" " + _ADV + r"(?:bought|purchased|ordered|got myself) " + _OBJ, re.IGNORECASE),
     "OWNS"),
    ("OWNS", re.compile(_I + r" " + _ADV + r"own " + _OBJ, re.IGNORECASE), None),
    ("HAS_PET", re.compile(_I + r" " + _ADV + r"(?:have|adopted|got) (?P<obj>(?:a|an|two|three|\d+) (?:\w+ )?"
                           r"(?:dog|cat|puppy|kitten|hamster|parrot|rabbit|bunny|turtle|horse|guinea pig)s?)"
                           r"(?: (?:named|called) (?P<name>[A-Z]\w+))?(?=\s*(?:[,.;:!?]|$)|\s+(?:and|who|that|which|"
                           r"at|in|from|last|this|yesterday|today|recently|named|called|too)\b)", re.IGNORECASE), None),
    ("DISLIKES", re.compile(_I + r" (?:really |just |still )?(?:don't|do not|dont|no longer) (?:really )?"
                            r"(?:like|enjoy|love) " + _OBJ, re.IGNORECASE), None),
    ("DISLIKES", re.compile(_I + r" " + _ADV + r"(?:hate|dislike|can't stand|cannot stand|detest) " + _OBJ,
                            re.IGNORECASE), None),
    ("LIKES", re.compile(_I + r" " + _ADV + r"(?:like|love|enjoy|adore) " + _OBJ, re.IGNORECASE), None),
    ("LIKES", re.compile(r"\bmy (?:absolute )?favou?rite (?:\w+ ){0,2}(?:is|are) " + _OBJ, re.IGNORECASE), None),
    ("LIKES", re.compile(_I + r"(?:'m| am) (?:a )?(?:big |huge )?fan of " + _OBJ, re.IGNORECASE), None),
    ("INTERESTED_IN", re.compile(_I + r"(?:'m| am) " + _ADV + r"(?:very |so )?interested in " + _OBJ,
                                 re.IGNORECASE), None),
    ("USES", re.compile(_I + r"(?: " + _ADV + r"use|'m using| am using|'ve switched to| switched to) " + _OBJ,
                        re.IGNORECASE), None),
    ("WORKS_ON", re.compile(_I + r"(?:'m| am) " + _ADV + r"working on " + _OBJ, re.IGNORECASE), None),
    ("NAMED", re.compile(r"\b(?i:my name is) (?P<obj>[A-Z][\w'-]*(?: [A-Z][\w'-]*)?)"), None),
]
_STATE_EN = re.compile(
    _I + r"(?:'m| am| feel| felt| was|'ve been| have been)(?: feeling)? (?:so |really |very |quite |a bit |"
    r"a little |super |pretty |kind of |kinda |totally |extremely )*(?P<state>" + "|".join(map(re.escape, _STATES_EN))
    + r")\b(?: (?:today|tonight|this week|right now|lately))?(?:,? because (?:of )?" + _OBJ[:-len(_STOP)].replace(
        "obj", "cause") + r"(?=[,.;!?]|$))?", re.IGNORECASE)
_NEGATED = re.compile(r"(?:\bnot|n't|\bnever|\bno longer|\bno)\b", re.IGNORECASE)
# Someone else's words or a belief, not a statement: "she said I like sushi", "I don't think I like it".
_REPORTED = re.compile(r"\b(?:said|says|say|told|tells|think|thinks|thought|believes?|claims?|claimed|heard|reckons?|"
                       r"assumes?|assumed|guess|guessed|wonder|doubt|pretend(?:ed)?|joke[sd]?|joking)\b|"
                       r"说|认为|觉得|以为|听说|假装", re.IGNORECASE)
# Objects that name nothing: "I like it", "I live in the moment".
_EMPTY_OBJECTS = frozenset({
    "it", "that", "this", "them", "you", "him", "her", "those", "these", "one", "something", "anything",
    "everything", "nothing", "stuff", "things", "moment", "present", "past", "future", "fear", "hope", "denial",
    "peace", "the moment", "a dream", "what", "which", "too", "so", "lot", "a lot",
    "什么", "吗", "它", "这个", "那个", "这", "那", "啥", "什么的",
    "家", "家里", "这里", "那里", "外面", "公司", "单位",
})
# Where an English object must be a proper name (a place, a company): "I work at night" is not an employer.
_PROPER_OBJECT = frozenset({"LIVES_IN", "FROM", "WORKS_AT", "STUDIES_AT"})
_HEDGED = re.compile(r"\b(?:if|would|might|maybe|perhaps|wish|whether|should|could)\b[^.!?]*$", re.IGNORECASE)

# ------------------------------------------------------------------ Chinese

_ZH_MEASURE = re.compile(r"^(?:一|两|几)?(?:个|台|只|辆|本|部|件|双|套|条|款|些)")
_CHINESE: list[tuple[str, re.Pattern, str | None]] = [
    ("BOUGHT", re.compile(r"我" + _ZH_TIME + r"(?:买了|入手了|购买了|买到了|下单了)" + _ZH_OBJ + _ZH_END), "OWNS"),
    ("LIVES_IN", re.compile(
        r"我" + _ZH_TIME + r"(?:从(?P<prev>[^，。！？；,.!?\s]{1,12}?))?搬(?:到|去)了?" + _ZH_OBJ + _ZH_END), None),
    ("LIVES_IN", re.compile(r"我" + _ZH_TIME + r"(?:住在|定居在|生活在)" + _ZH_OBJ + _ZH_END), None),
    ("WORKS_AT", re.compile(r"我" + _ZH_TIME + r"在(?P<obj>[^，。！？；,.!?\s]{1,20}?)(?:工作|上班)"), None),
    ("DISLIKES", re.compile(r"我(?:不|不太|一点也不|再也不)(?:喜欢|爱)" + _ZH_OBJ + _ZH_END), None),
    ("DISLIKES", re.compile(r"我(?:很|非常|特别)?(?:讨厌|受不了)" + _ZH_OBJ + _ZH_END), None),
    ("LIKES", re.compile(
        r"我" + _ZH_TIME + r"(?:很|非常|特别|最|超|挺|真的)?(?:喜欢|热爱|爱吃|爱喝|爱看)" + _ZH_OBJ + _ZH_END), None),
    ("INTERESTED_IN", re.compile(r"我对(?P<obj>[^，。！？；,.!?\s]{1,20}?)(?:很|非常|特别|挺)?感兴趣"), None),
    ("HAS_PET", re.compile(r"我" + _ZH_TIME + r"养了" + _ZH_OBJ + _ZH_END), None),
    ("USES", re.compile(r"我" + _ZH_TIME + r"(?:在用|一直用|改用|换成了|换用)" + _ZH_OBJ + _ZH_END), None),
    ("NAMED", re.compile(r"(?:我的名字是|我叫)(?P<obj>[^，。！？；,.!?\s了]{1,6}?)(?=[，。！？；,.!?\s]|$)"), None),
]
_STATES_ZH = sorted((w for w in STATE_WORDS if not w.isascii()), key=len, reverse=True)
_STATE_ZH = re.compile(r"(?:因为(?P<cause>[^，。！？；,.!?]{1,30}?)[，,]?)?我" + _ZH_TIME
                       + r"(?:有点|有些|很|非常|特别|好|太|真的|感觉|觉得)*(?P<state>"
                       + "|".join(map(re.escape, _STATES_ZH)) + ")")
_ZH_NEGATED = re.compile(r"不|没|没有|别")
_ZH_HEDGED = re.compile(r"(?:如果|要是|假如|也许|可能|想不想|会不会|是不是)")


def _clean_object(raw: str) -> str:
    text = raw.strip(" \t'\"“”‘’")
    for _ in range(2):
        text = _DETERMINERS.sub("", text)
    text = _ZH_MEASURE.sub("", text)
    text = re.sub(r"(?:了|的|啊|呢|吧|呀)+$", "", text)
    return text.strip()


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?。！？；;\n])\s*", text) if s.strip()]


def _add(claims: list, taken: list, sentence: str, predicate: str, match: re.Match, obj: str, **extra: Any) -> None:
    start, end = match.span()
    if any(start < b and a < end for a, b in taken):
        return  # an earlier, more specific pattern already read this span
    head = sentence[:start]
    if _HEDGED.search(head) or _ZH_HEDGED.search(head) or _REPORTED.search(head) or (
            predicate != "DISLIKES" and (_NEGATED.search(head) or _ZH_NEGATED.search(head))):
        return
    obj = _clean_object(obj)
    if (not obj or len(obj.split()) > 8 or obj.casefold() in _EMPTY_OBJECTS or obj[0] in "的了得着"
            or obj.casefold().startswith("to ")):
        return
    if predicate in _PROPER_OBJECT and obj.isascii() and not obj[0].isupper() and obj != ANY:
        return
    taken.append((start, end))
    claims.append({"subject": SELF, "predicate": predicate, "object": obj, "evidence_text": sentence.strip()[:2000],
                   **extra})


def _text_claims(text: str) -> list[dict[str, Any]]:
    """Claims an utterance states plainly, with their evidence sentence."""
    claims: list[dict[str, Any]] = []
    previous = None
    for sentence in _sentences(text):
        if sentence_kind(sentence) in (QUESTION, HYPOTHETICAL, DIRECTIVE):
            previous = None
            continue  # a question, a supposition or a request in the same message states nothing
        sentence, previous = move_continued(previous, sentence) or sentence, sentence
        taken: list[tuple[int, int]] = []

        for predicate, pattern, also in [*_ENGLISH, *OBJECT_PATTERNS, *_CHINESE, *CHINESE_OBJECT_PATTERNS]:
            for match in pattern.finditer(sentence):
                prev = match.groupdict().get("prev")
                extra = {"previous_object": _clean_object(prev)} if prev else {}
                _add(claims, taken, sentence, predicate, match, match.group("obj"), **extra)
                if also and claims and claims[-1]["predicate"] == predicate:
                    claims.append({**claims[-1], "predicate": also})
                name = match.groupdict().get("name")
                if name and claims and claims[-1]["predicate"] == "HAS_PET":
                    claims.append({**claims[-1], "object": name, "object_type": "animal"})
        for predicate, pattern in [*ENDING_PATTERNS, *CHINESE_ENDING_PATTERNS]:
            for match in pattern.finditer(sentence):
                _add(claims, taken, sentence, predicate, match, match.groupdict().get("obj") or ANY, ended=True)
        status_taken: list[tuple[int, int]] = []   # "I started grad school at MIT" is a school and a stage
        for predicate, pattern, value in STATUS_PATTERNS:
            for match in pattern.finditer(sentence):
                _add(claims, status_taken, sentence, predicate, match, value, object_type="state")
        for pattern in (_STATE_EN, _STATE_ZH):
            for match in pattern.finditer(sentence):
                state = " ".join(match.group("state").casefold().split())
                _add(claims, taken, sentence, "HAS_STATE", match, state, object_type="state")
                cause = match.groupdict().get("cause")
                if cause and _clean_object(cause):
                    claims.append({"subject": _clean_object(cause), "predicate": "CAUSED", "object": state,
                                   "object_type": "state", "evidence_text": sentence.strip()[:2000],
                                   "strength": 0.9})
    return claims


# ------------------------------------------------------------------ sensors

_BEHAVIOUR_VERBS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"visit|brows|open_page|page_view|navigat"), "VISITED"),
    (re.compile(r"listen|play_track|scrobble|song"), "LISTENED_TO"),
    (re.compile(r"watch|view_video|stream"), "WATCHED"),
    (re.compile(r"commit|push|merge"), "COMMITTED_TO"),
    (re.compile(r"command|shell|exec|run_cmd|terminal"), "RAN_COMMAND"),
    (re.compile(r"calendar|meeting|event|schedul|appointment"), "SCHEDULED"),
    (re.compile(r"app|focus|window|use"), "USED_APP"),
)
# Provenance fields that name the object of each behaviour, best first.
_OBJECT_FIELDS = {
    "VISITED": ("url", "domain", "site", "title"),
    "LISTENED_TO": ("artist_name", "artist", "track_name", "track", "title", "album"),
    "WATCHED": ("title", "show", "channel", "url"),
    "COMMITTED_TO": ("repo", "repository", "project", "repo_name"),
    "RAN_COMMAND": ("program", "command", "cmd"),
    "SCHEDULED": ("summary", "title", "subject"),
    "USED_APP": ("app_name", "app", "application", "process", "window_title"),
    "INTERACTED_WITH": ("title", "name", "object", "url"),
}
_OBJECT_TYPE = {"VISITED": "website", "LISTENED_TO": "media", "WATCHED": "media", "COMMITTED_TO": "project",
                "RAN_COMMAND": "software", "SCHEDULED": "event", "USED_APP": "software", "INTERACTED_WITH": "thing"}
_HINT_TYPE_FOR = {"LISTENED_TO": ("person", "creator", "artist", "media"), "COMMITTED_TO": ("project",)}


def _sensor_claims(event: dict[str, Any]) -> list[dict[str, Any]]:
    activity = event.get("activity") or {}
    verb = " ".join(str(activity.get(k) or "") for k in ("action_code", "source_code")).casefold()
    predicate = next((p for pattern, p in _BEHAVIOUR_VERBS if pattern.search(verb)), "INTERACTED_WITH")
    provenance = event.get("provenance") or {}
    obj, kind = None, _OBJECT_TYPE[predicate]
    for hint in event.get("hints") or ():
        if hint.get("entity_type") in _HINT_TYPE_FOR.get(predicate, ()):
            obj, kind = hint["mention_text"], hint["entity_type"]
            break
    if obj is None:
        for field in _OBJECT_FIELDS[predicate]:
            value = provenance.get(field)
            if isinstance(value, str) and value.strip():
                obj = value.strip()
                if field == "url":
                    obj = (hostname(obj) or obj).removeprefix("www.")   # also "https://u:[REDACTED]@host/"
                elif field in ("command", "cmd"):
                    obj = obj.split()[0].rsplit("/", 1)[-1]
                break
    if obj is None and event.get("hints"):
        obj, kind = event["hints"][0]["mention_text"], event["hints"][0]["entity_type"]
    if not obj:
        return []
    claim = {"subject": SELF, "predicate": predicate, "object": obj[:200], "object_type": kind,
             "evidence_text": (event.get("text") or obj)[:2000]}
    actor = actor_of(provenance)
    if actor is not None:       # someone else did it (a colleague's commit): their activity, not the user's
        claim.update(subject=actor[:200], subject_type="person")
    return [claim]


# ------------------------------------------------------------------ handlers


def phase1(inputs: dict[str, Any]) -> dict[str, Any]:
    entities: list[dict[str, Any]] = []
    claims: list[dict[str, Any]] = []
    for event in inputs.get("events", ()):
        index = event["index"]
        for hint in event.get("hints") or ():
            entities.append({"event_index": index, "name": hint["mention_text"], "entity_type": hint["entity_type"],
                             "confidence": 1.0})
        graph = event.get("graph", "none")
        found: list[dict[str, Any]] = []
        if graph == "all":
            found = _text_claims(event.get("text") or "")
        elif graph == "behavioural":
            found = _sensor_claims(event)
        for claim in found:
            claims.append({"event_index": index, **claim})
            if claim.get("object_type"):
                # Only a type the text shows; an object's usual type is a guess the projection makes
                # itself, so "jazz" liked and "jazz" studied stay one entity.
                entities.append({"event_index": index, "name": claim["object"], "entity_type": claim["object_type"],
                                 "confidence": 0.8})
            if claim["subject"] != SELF:
                entities.append({"event_index": index, "name": claim["subject"],
                                 "entity_type": claim.get("subject_type", "thing"), "confidence": 0.6})
    return {"entities": entities, "fact_claims": claims, "resolved_refs": []}


def disambiguate(inputs: dict[str, Any]) -> dict[str, Any]:
    mention = name_key(inputs["mention"]["name"])
    for candidate in inputs.get("candidates", ()):
        names = {name_key(candidate["name"]), *(name_key(a) for a in candidate.get("aliases", ()))}
        if mention in names:
            return {"entity_id": candidate["id"], "confidence": 0.9}
    return {"entity_id": None, "confidence": 0.9}


def phase2(inputs: dict[str, Any]) -> dict[str, Any]:
    labels = []
    existing = inputs.get("existing", ())
    for claim in inputs.get("claims", ()):
        predicate = claim["predicate"]
        spec = P.spec(predicate)
        same_subject = [e for e in existing if e["subject_id"] == claim["subject_id"] and e["status"] == "active"]
        label: dict[str, Any] = {"claim_index": claim["index"], "label": "new"}
        for item in same_subject:
            if P.family(item["predicate"]) == P.family(predicate) and item["object_id"] == claim["object_id"]:
                label = {"claim_index": claim["index"], "label": "corroborates", "conflict_with": item["ref"]}
                break
            if spec and spec.antonym == item["predicate"] and item["object_id"] == claim["object_id"]:
                label = {"claim_index": claim["index"], "label": "contradicts", "conflict_with": item["ref"],
                         "conflict_type": "antonym"}
                break
            if (spec and spec.single_valued and item["predicate"] == predicate
                    and item["object_id"] != claim["object_id"]):
                previous = claim.get("previous_object")
                moved = bool(previous) and name_key(previous) == name_key(item["object"])
                label = {"claim_index": claim["index"], "label": "evolves" if moved else "contradicts",
                         "conflict_with": item["ref"], "conflict_type": "state_reversal"}
                break
        labels.append(label)
    return {"labels": labels}


def arbitrate(inputs: dict[str, Any]) -> dict[str, Any]:
    newer = inputs["new"]["observed_at"] >= inputs["old"]["last_observed_at"]
    if newer:
        return {"decision": "evolve", "reason": "the newer statement of a single-valued fact replaces the older"}
    return {"decision": "keep_old", "reason": "the new claim is older than the current fact"}


HANDLERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    PHASE1.name: phase1, DISAMBIGUATE.name: disambiguate, PHASE2.name: phase2, ARBITRATE.name: arbitrate,
}
