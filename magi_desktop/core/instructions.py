"""Standing instructions: the user telling the agent what to do every time (architecture §4 user_directive, §9).

"Always book me a window seat when I fly", "never call me before 9", "from now on, answer in
French", "I want you to format reports as bullet points", "以后请用中文回答", "永远不要在周末打电话".
One pattern serves three readers, so they cannot drift apart: the governance classifier
(utterance.py: such a sentence is a directive — the user's words about what they want, not a
fact about them), the rules fact extractor (it saves them as stated facts) and recall (a request
question finds them; a fact question does not present them as facts).

The instruction opens the sentence and names what to do: "Always the same problem", "Never
thought about that", "I always use 8080" (a habit, told as a fact) and "以后再说吧" are not
instructions.
"""

from __future__ import annotations

import re

_VERBS = (
    "use", "do", "call", "write", "answer", "reply", "respond", "put", "add", "run", "ask", "make", "keep", "send",
    "include", "mention", "say", "give", "show", "commit", "push", "deploy", "delete", "format", "book", "reserve",
    "schedule", "order", "pick", "choose", "get", "buy", "cc", "bcc", "email", "text", "message", "remind", "check",
    "sign", "list", "sort", "round", "convert", "translate", "summari[sz]e", "spell", "address", "refer", "start",
    "end", "open", "close", "set", "bring", "tell", "let", "leave", "skip", "avoid", "wake", "contact", "notify",
    "ping", "copy", "attach", "save", "store", "quote", "cite", "confirm", "assume", "treat", "speak", "talk",
    "greet", "double-check", "go", "prefer", "book", "request", "pay", "charge", "share", "post", "publish",
    "reformat", "label", "name", "tag", "file", "forward", "route", "plan", "arrange", "seat",
)
_VERB = r"(?:" + "|".join(sorted(set(_VERBS), key=len, reverse=True)) + r")"
_LEAD = r"^(?:(?:ok(?:ay)?|so|and|also|oh|hey|btw|one more thing)[,:]?\s+)*"
_WANT = r"(?:i (?:want|need|would like|'d like|wish) you to|(?:please )?make sure (?:you |to )?)"
# "From now on I'll walk to work" is the user's plan, not an instruction.
_SUBJECT = r"(?:i|i'\w+|we|we'\w+|my|our|it|it's|that|this|he|she|they|there|his|her|their)\b"
_NOT_ABOUT_DOING = r"(?!(?:know|remember|understand|meet|see|be aware|imagine|guess)\b)"
STANDING = re.compile(
    _LEAD + r"(?:"
    r"(?:from now on|going forward|in (?:the )?future|for (?:all )?future \w+),?\s+(?!" + _SUBJECT + r")\w|"
    r"(?:next time|every time|whenever [^,]{1,60}),?\s+(?:please\s+)?(?:always\s+)?" + _VERB + r"\b|"
    r"(?:please\s+)?(?:always|never|don'?t ever|do not ever)\s+" + _VERB + r"\b|"
    + _WANT + r"\s*(?:always |never )?" + _NOT_ABOUT_DOING + r"\w|"
    r"(?:以后|今后|从现在起|从今以后)(?!我|咱)[^，。！？,.!?我]{0,12}?(?:都|请|要|别|不要|记得|帮我|给我|一律)|"
    r"(?:下次|每次)[^，。！？,.!?我]{0,12}?(?:请|记得|帮我|给我)|(?:请)?(?:永远|千万)(?:不要|别)|不要再|"
    r"我(?:想|希望|要)你(?:以后|每次|总是|一直)?(?:都)?(?:帮我|给我|用|把|按|别|不要)"
    r")", re.IGNORECASE)


def is_standing_instruction(text: str) -> bool:
    """Does this sentence (or message) open with a standing instruction to the agent?"""
    return bool(STANDING.match(" ".join(text.split()).translate(_QUOTES)))


_QUOTES = str.maketrans({"’": "'", "‘": "'"})
