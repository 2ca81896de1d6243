"""The rules extractor: the segment task answered without a model (the offline default).

It is deliberately narrow — it finds only what a pattern can vouch for:
- stated: an explicit "remember (that) …" / "记住…", or a standing instruction ("from now on …",
  "always …", "never …", "以后…"), quoted from the human's own message;
- accepted: the agent's message right before a human reply that is plainly an acceptance ("yes,
  let's do that", "sounds good", "好的") — the fact is the agent's conclusion, pointing at the
  human message that raised the matter and the one that accepted it;
- pending: the agent's last conclusion when the segment ends before the human answered;
- revision: "scratch that" / "never mind" / "算了" drops the latest candidate; a plain "no" after an
  agent's message drops what came from that message.
Everything else a conversation does goes into the episode only. A model does this better; the
rules never claim more than they saw.
"""

from __future__ import annotations

import re
from typing import Any

from ..instructions import is_standing_instruction
from ..remember import normalise

# The verb opens a sentence: "I don't remember that" is not a request.
# A sentence ends at . ! ? before a space or the end — not after "Dr", "Mr", "e.g" and their kind.
_ABBREVIATION = "".join(rf"(?<!\b{a}\.)"
                        for a in ("Mr", "Ms", "Dr", "St", "Jr", "Sr", "vs", "Mrs", "Prof", "e\\.g", "i\\.e"))
_SENTENCE = re.compile(_ABBREVIATION + r"(?<=[.!?。！？])\s+")
_REMEMBER = re.compile(r"(?:^|(?<=[.!?]\s))(?:(?:please|also|and|oh),?\s+)*(?:remember|keep in mind)(?:\s+that)?"
                       r"[:,]?\s+(?P<fact>.+)", re.IGNORECASE)
_REMEMBER_ZH = re.compile(r"^(?:请)?(?:记住|记一下)[：:，,]?\s*(?P<fact>[^。！？]+[。！？]?)")
_NOT_A_FACT = re.compile(r"^(?:when|if|how|what|why|who|where|me|us|it|this|that)\b|^[了吗没啦呢]", re.IGNORECASE)
_RETRACT = re.compile(r"\b(?:scratch that|never ?mind|forget (?:that|it)|ignore that|disregard that)\b|"
                      r"算了|不用记|忘了它", re.IGNORECASE)
# An acceptance IS the reply: it opens with the yes and adds little ("Yes, let's do that."), with no
# condition, deferral or objection after it ("Yeah, let me check with my team first", "Go ahead and
# explain why", "好，我再想想", "对，但是这样太慢了").
_ACCEPT = re.compile(r"^(?:yes|yep|yeah|yup|agreed|i agree|correct|exactly|that'?s right|sounds good|looks good|lgtm|"
                     r"perfect|do that|go ahead|let'?s do (?:that|it)|let'?s go with (?:that|it|this)|works for me|"
                     r"makes sense|confirmed)(?:[\s,.!]+(?:please|thanks|thank you|let'?s do (?:that|it)|"
                     r"do (?:that|it)|go ahead|sounds good|that works|ship it|agreed|perfect|great)?)*[\s.!]*$",
                     re.IGNORECASE)
_ACCEPT_ZH = re.compile(r"^(?:好的|好|对|对的|是的|可以|行|没问题|同意|就这样|就这么办)"
                        r"(?:[，,。!！\s]*(?:就这样|就这么办|谢谢|没问题|可以|好的|同意|照做|按你说的办)?)*[。!！\s]*$")
_REJECT = re.compile(r"^(?:no|nope|not really|that'?s wrong|wrong|不对|不是|不行)\b", re.IGNORECASE)
_PREFERENCE = re.compile(r"\b(?:prefer|like|love|hate|dislike|favou?rite|enjoy)\b|喜欢|讨厌|偏好", re.IGNORECASE)
_RELATION = re.compile(r"\bmy (?:wife|husband|partner|son|daughter|friend|boss|manager|colleague|mother|father|mom|"
                       r"dad|sister|brother|kid|kids|children)\b", re.IGNORECASE)
_PROFILE = re.compile(r"\b(?:i am|i'm|my name|i live|i work|call me)\b|我是|我叫|我住", re.IGNORECASE)
ACCEPT_MAX_CHARS = 80
PROPOSAL_MAX_CHARS = 300


def _category(text: str) -> str:
    for pattern, category in ((_RELATION, "relation"), (_PREFERENCE, "preference"), (_PROFILE, "profile")):
        if pattern.search(text):
            return category
    return "knowledge"


def _first_sentences(text: str, limit: int = PROPOSAL_MAX_CHARS) -> str:
    out = ""
    for sentence in _SENTENCE.split(normalise(text)):
        if out and len(out) + len(sentence) + 1 > limit:
            break
        out = f"{out} {sentence}".strip()
    return out if len(out) <= limit else out[:limit - 1] + "…"


def _human(message: dict) -> bool:
    return message["role"] == "user" and message["provenance"] in ("human_input", "interjection")


def _is_acceptance(text: str) -> bool:
    text = normalise(text)
    if not text or len(text) > ACCEPT_MAX_CHARS or "?" in text or "？" in text:
        return False
    return bool(_ACCEPT_ZH.match(text) or _ACCEPT.match(text))


def _stated(message: dict) -> dict[str, Any] | None:
    text = normalise(message["text"])
    if text.endswith(("?", "？")):
        return None                      # "Remember when we went to Paris?" asks, it does not state
    match = _REMEMBER.search(text) or _REMEMBER_ZH.search(text)
    if match:
        quote = _SENTENCE.split(match.group("fact").strip())[0]
        fact = quote.rstrip(".!。！")
        if _NOT_A_FACT.match(fact) or len(fact) < 4:
            return None
    elif is_standing_instruction(text):
        quote = fact = _SENTENCE.split(text)[0]
        return {"key": f"stated:{message['id']}", "content": fact, "category": "preference", "evidence": "stated",
                "quote": quote, "source_message_id": message["id"]}
    else:
        return None
    if not fact:
        return None
    return {"key": f"stated:{message['id']}", "content": fact[0].upper() + fact[1:], "category": _category(fact),
            "evidence": "stated", "quote": quote, "source_message_id": message["id"]}


def _proposal(agent: dict, raised_by: dict, evidence: str, accepted_by: dict | None = None) -> dict[str, Any]:
    return {"key": f"proposal:{agent['id']}", "content": _first_sentences(agent["text"]), "category": "knowledge",
            "evidence": evidence, "source_message_id": raised_by["id"], "proposal_message_id": agent["id"],
            "accepting_message_id": accepted_by["id"] if accepted_by else None}


def _raised_by(seen: list[dict], agent: dict) -> dict | None:
    """The human message the agent's message answers: the one right before it (tool output aside)."""
    before = seen[:len(seen) - 1 - seen[::-1].index(agent)]
    previous = next((m for m in reversed(before) if m["role"] != "tool"), None)
    return previous if previous is not None and _human(previous) else None


def _proposes(agent: dict) -> bool:
    """An agent's message that concludes something; a question ("shall I …?") proposes nothing to accept."""
    return not normalise(agent["text"]).endswith(("?", "？"))


def extract_segment(inputs: dict[str, Any]) -> dict[str, Any]:
    """The rules' answer to facts.extract_segment (task.py)."""
    candidates = [c for c in inputs.get("candidates", []) if c["evidence"] != "pending"]
    seen = list(inputs.get("context", []))
    for message in inputs["messages"]:
        agent = next((m for m in reversed(seen) if m["role"] != "tool"), None)
        agent = agent if agent is not None and agent["role"] == "assistant" else None
        if _human(message):
            text = normalise(message["text"])
            raised_by = _raised_by(seen, agent) if agent and _proposes(agent) else None
            if _RETRACT.search(text) and candidates:
                candidates.pop()
            elif agent and raised_by and _is_acceptance(text):   # raised_by: only with an agent
                key = f"proposal:{agent['id']}"
                candidates = [c for c in candidates if c["key"] != key] + [
                    _proposal(agent, raised_by, "accepted", message)]
            elif agent and _REJECT.match(text):
                candidates = [c for c in candidates if c.get("proposal_message_id") != agent["id"]]
            else:
                stated = _stated(message)
                if stated is not None:
                    candidates = [c for c in candidates if c["key"] != stated["key"]] + [stated]
        seen.append(message)
    last = seen[-1] if seen else None
    if last is not None and last["role"] == "assistant" and last in inputs["messages"] and _proposes(last):
        raised_by = _raised_by(seen, last)
        if raised_by is not None:
            candidates.append(_proposal(last, raised_by, "pending"))
    return {"candidates": candidates, "episode": _episode(inputs, seen, candidates)}


def _episode(inputs: dict[str, Any], seen: list[dict], candidates: list[dict]) -> str:
    humans = [normalise(m["text"]) for m in seen if _human(m)]
    opened = inputs.get("episode") or (f"The user: {_first_sentences(humans[0], 160)}" if humans else
                                       "A conversation without human messages")
    opened = opened.split(" | ")[0]
    accepted = [c["content"] for c in candidates if c["evidence"] == "accepted"]
    pending = [c["content"] for c in candidates if c["evidence"] == "pending"]
    parts = [opened, f"{len(seen)} messages"]
    if accepted:
        parts.append("accepted: " + "; ".join(a[:120] for a in accepted[:5]))
    if pending:
        parts.append("left open: " + "; ".join(p[:120] for p in pending[:3]))
    return " | ".join(parts)[:2000]


HANDLERS = {"facts.extract_segment": extract_segment}
