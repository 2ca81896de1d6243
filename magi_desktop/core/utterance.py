"""What a human chat message is doing: stating, asking, directing or supposing (architecture §4).

Narrow on purpose. A message is a question only when it is built as one — a
question mark, a wh-word followed by an auxiliary ("where did I park"), or an
inverted auxiliary and pronoun ("am I allergic to…") — never because it starts
with is/do/have, so "I have a cat" stays a statement. A message that mixes
testimony with a question ("I got a new pressure cooker, any soup recipes?")
is testimony: dropping it from fact scope would lose the fact. A supposition
("what if…", "imagine…", "假如…") frames what follows it, so "Imagine I'm a
millionaire. I own three yachts." is one hypothetical, not a fact.

Known limits, as in the design seed: irony, reported speech ("my friend likes
camping") and corrections are not recognised; they read as statements.
"""

from __future__ import annotations

import re

from .instructions import is_standing_instruction

STATEMENT, QUESTION, DIRECTIVE, HYPOTHETICAL, FILLER = (
    "statement", "question", "directive", "hypothetical", "filler")

# Frames a hypothetical sentence opens over the sentences after it.
FICTION, CONDITIONAL = "fiction", "conditional"

_LEAD = r"^(?:(?:so|and|but|well|hmm+|ok|okay|oh|um+|uh|hey|also|then|嗯|那|那么|所以|对了)[\s,，、]*){0,3}"

# Fiction frames everything after it ("Imagine I'm rich. I own a yacht.").
_FICTION_START = re.compile(
    _LEAD + r"(?:(?:imagine|(?:let'?s\s+)?pretend|(?:let'?s\s+)?role-?play(?:ing)?|let'?s\s+play)\b"
    r"|假装|想象|设想)",
    re.IGNORECASE,
)
_FICTION_ANYWHERE = re.compile(r"\brole-?play(?:ing)?\b|角色扮演", re.IGNORECASE)
# A condition frames only what continues it in the irrealis ("What if I lived in
# Paris? I'd eat croissants."), not a new plain fact after it.
_CONDITION_START = re.compile(
    _LEAD + r"(?:(?:what\s+if|if|suppose|supposing|hypothetically|let'?s\s+say|say\s+(?:that\s+)?(?:i|we|my)|"
    r"assume|assuming|in\s+case)\b|假如|如果|(?<![主只需重还])要是|假设|万一|倘若|假使)",
    re.IGNORECASE,
)
# A condition inside the sentence: "I would move to Berlin if I got the job", "我如果中了彩票就辞职".
_CONDITION_INSIDE = re.compile(
    r"\bif\b.{0,200}?\b(?:would|could|might|'d)\b|\b(?:would|could|might|'d)\b.{0,200}?\bif\b"
    r"|假如|如果|(?<![主只需重还])要是|假设|万一|倘若|假使",
    re.IGNORECASE,
)
_IRREALIS = re.compile(r"\b(?:would|could|might|'d)\b|会|就", re.IGNORECASE)
# Conditionals that are politeness or memory, not supposition.
_NOT_A_CONDITION = re.compile(
    _LEAD + r"if\s+i\s+(?:remember|recall)\b"
    r"|\b(?:appreciate\s+it|be\s+(?:great|nice|good|grateful|helpful|awesome)|mind)\s+if\b",
    re.IGNORECASE,
)
_FRAME_BREAK = re.compile(
    r"^(?:anyway|anyhow|btw|by\s+the\s+way|actually|in\s+reality|seriously|really\s*,|but\s+really|"
    r"back\s+to\s+reality|其实|不过|但是|对了|说真的|实际上)",
    re.IGNORECASE,
)

_DIRECTIVE = re.compile(
    _LEAD + r"(?:(?:please|pls|plz|can\s+you|could\s+you|would\s+you|will\s+you|can\s+u|"
    r"help\s+me|remind\s+me|tell\s+me|show\s+me|give\s+me|let\s+me\s+know|write|draft|create|generate|"
    r"find|search|look\s+up|summari[sz]e|translate|explain|list|recommend|suggest|fix|debug|open|"
    r"schedule|send|book|check|compare|calculate|convert|rewrite|review|set\s+(?:a|an|up))\b|"
    r"请|帮我|帮忙|给我|麻烦|告诉我|提醒我|你能|你可以|能不能帮|可以帮|推荐|翻译|总结|解释|列出|搜索|查一下|看看)",
    re.IGNORECASE,
)
# Directive-shaped openings whose content is testimony ("remember that I'm vegetarian").
_TESTIMONY_OPENING = re.compile(
    _LEAD + r"(?:(?:(?:please\s+)?(?:remember|note|keep\s+in\s+mind|be\s+aware)|heads\s+up|"
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
# "Am I allergic…", "Is it true that…": an auxiliary inverted before a pronoun asks.
_INVERTED = frozenset({"am", "is", "are", "was", "were", "do", "does", "did", "have", "has", "can", "could",
                       "will", "would", "should", "isn't", "aren't", "don't", "doesn't", "didn't"})
_INVERTED_SUBJECTS = frozenset({"i", "you", "we", "he", "she", "they", "it", "there", "my", "your"})
_LEAD_WORDS = frozenset({"so", "and", "but", "well", "hmm", "ok", "okay", "oh", "um", "also", "then"})
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
    r"(?:为什么|为啥|怎么|怎样|什么|啥|哪|谁|多少|是不是|有没有|能不能|会不会|要不要|可不可以|好不好|对不对)(?!都|也)")
# "几个" is also "a few" (我有几个朋友): a question only with a question mark.
_ZH_WEAK_INTERROGATIVE = re.compile(r"几点|几个|几号|几天|几次")
# "我不知道为什么…" reports a question; it does not ask one.
_ZH_EMBEDDED = re.compile(r"(?:不知道|知道|想知道|不明白|明白|记得|不记得|忘了|不清楚|好奇)")
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？…~]*|[.!?。！？]+")
_CLAUSE_SPLIT = re.compile(r"[,，;；:：、]")
_EN_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|'[a-z]+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})


def _en_tokens(clause: str) -> list[str]:
    tokens = []
    for tok in _EN_TOKEN.findall(clause.lower()):
        # "what's" -> "what", "'s" so the auxiliary is visible; also the unapostrophed "whats".
        if "'" in tok[1:] and tok.split("'")[0] in _INTERROGATIVES:
            head, tail = tok.split("'", 1)
            tokens.extend([head, "'" + tail])
        elif tok.endswith("s") and tok[:-1] in _INTERROGATIVES:
            tokens.extend([tok[:-1], "'s"])
        else:
            tokens.append(tok)
    return tokens


def _is_chinese_question(clause: str, ends_with_question_mark: bool) -> bool:
    if _ZH_QUESTION_END.search(clause.rstrip("。！!.~…")):
        return True
    strong = _ZH_INTERROGATIVE.search(clause)
    if strong and not _ZH_EMBEDDED.search(clause[: strong.start()]):
        return True
    return ends_with_question_mark and bool(_ZH_WEAK_INTERROGATIVE.search(clause))


def _is_interrogative_clause(clause: str, ends_with_question_mark: bool = False) -> bool:
    stripped = clause.strip()
    if _CJK.search(stripped):
        return _is_chinese_question(stripped, ends_with_question_mark)
    if stripped.endswith("!"):
        return False
    tokens = _en_tokens(stripped)
    start = 0
    while start < len(tokens) and tokens[start] in _LEAD_WORDS:
        start += 1
    first, second, rest = (tokens[start:start + 2] + ["", ""])[:2] + [tokens[start + 1:start + 4]]
    if not second:
        return False
    if first in _INVERTED and second in _INVERTED_SUBJECTS:
        return True
    if first not in _INTERROGATIVES:
        return False
    if first == "what" and second in {"a", "an"}:
        return False  # "what a day"
    if first == "which" and (second == "means" or rest[:2] in (["is", "why"], ["was", "why"])):
        return False  # "which is why I quit"
    if first in {"how", "what"} and second in _HOW_QUANTIFIERS:
        return True
    if second in _SUBJECTS:
        return False
    return any(tok in _AUXILIARIES for tok in rest)


def _is_first_person_statement(clause: str) -> bool:
    if _is_interrogative_clause(clause):
        return False
    if _CJK.search(clause):
        return "我" in clause
    return bool(_FIRST_PERSON_EN.search(clause))


def _word_count(text: str) -> int:
    return len(_EN_TOKEN.findall(text.lower())) + len(_CJK.findall(text)) // 2


def _hypothetical_frame(core: str) -> str | None:
    """FICTION or CONDITIONAL when the sentence opens a supposition, "" when it only contains one."""
    if _NOT_A_CONDITION.search(core):
        return None
    if _FICTION_START.match(core) or _FICTION_ANYWHERE.search(core):
        return FICTION
    if _CONDITION_START.match(core):
        return CONDITIONAL
    if _CONDITION_INSIDE.search(core):
        return ""
    return None


def sentence_kind(sentence: str) -> str:
    """One of statement / question / directive / hypothetical / filler."""
    return _sentence(sentence.translate(_QUOTES))[0]


def _sentence(sentence: str) -> tuple[str, str | None]:
    body = sentence.strip()
    core = body.rstrip(".!?。！？…~ \t")
    if not core:
        return FILLER, None
    frame = _hypothetical_frame(core)
    if frame is not None:
        return HYPOTHETICAL, frame or None
    if _TESTIMONY_OPENING.match(core):
        return STATEMENT, None
    ends_with_question_mark = body.rstrip(" \t…~").endswith(("?", "？"))
    clauses = [c for c in _CLAUSE_SPLIT.split(core) if c.strip()]
    last = len(clauses) - 1
    question_clauses = {i for i, c in enumerate(clauses)
                        if _is_interrogative_clause(c, ends_with_question_mark and i == last)}
    if ends_with_question_mark:
        question_clauses.add(last)
    if question_clauses:
        others = [c for i, c in enumerate(clauses) if i not in question_clauses]
        return (STATEMENT if any(_is_first_person_statement(c) for c in others) else QUESTION), None
    if _DIRECTIVE.match(core) or is_standing_instruction(core):
        return DIRECTIVE, None
    words = _word_count(core)
    if _FILLERS.match(core) and words <= 5 or words <= 2 and not _FIRST_PERSON_EN.search(core):
        return FILLER, None
    return STATEMENT, None


def text_kind(text: str) -> str:
    """Classify a human chat message as statement / question / directive / hypothetical.

    Any testimony sentence makes the message a statement; otherwise the
    strongest non-testimony kind wins. Greetings alone are statements.
    """
    kinds = set()
    frame = None
    for sentence in _SENTENCE.findall(text.translate(_QUOTES)):
        kind, opens = _sentence(sentence)
        if frame is not None and kind != HYPOTHETICAL:
            if _FRAME_BREAK.match(sentence.strip()):
                frame = None
            elif frame == FICTION or _IRREALIS.search(sentence):
                kind = HYPOTHETICAL
            else:
                frame = None  # a plain sentence after a condition is back in the real world
        if opens:
            frame = opens
        kinds.add(kind)
    for kind in (STATEMENT, HYPOTHETICAL, QUESTION, DIRECTIVE):
        if kind in kinds:
            return kind
    return STATEMENT
