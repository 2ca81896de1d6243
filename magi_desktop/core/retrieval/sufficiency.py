"""Sufficiency as a decision (architecture §16): does a finding *answer* the question, or is it only related?

A finding answers when four things hold, each checked here without an LLM:

* **whose** — the question's subject. A question that names a person is answered by what that person
  said (the turn's speaker, or a "Name:" label the client wrote) or by a turn that speaks *of* them; a
  turn that only addresses them ("Thanks, Caroline!") is the other speaker talking about themselves, and so
  is what the person says only of "you" ("Glad your son is okay, Mel"). A question that names no one and
  does not speak as the user ("what did the charity race raise money for?") may be told by anyone.
* **what** — the asked attribute or relation: the question's content words, names and words that
  name no attribute ("name", "called") set aside, must be said by the finding (a sister is not a cat),
  or the finding's meaning must be close to the question's. Only what a turn *tells* counts: a question
  it asks ("Got any fave styles?") says nothing, though it echoes the asked words.
* **when** — inside the question's window (the engine drops the rest; a pack kept from other times
  because the window held nothing answers only where the finding itself names a date).
* **which source** — a sensor answers only the kind of question it can: a commit answers "what did I
  commit", not "where do I live" ("index_text lives in core.text"); a visited page is at most
  indirect evidence of a fact about the user.

Across the pack, whose evidence once more: when the question names a person, a finding about them answers
only if it matches nearly as well as the best finding about anyone; when what matches best is someone
else's, the question has put it on the wrong person.

The thresholds were calibrated on the LoCoMo dev split (conversations 0–4) with
``benchmarks/answerability.py --dump``; see that file and benchmarks/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ..speakers import prefixed_name
from ..store.entities import name_key
from .pack import Finding
from .schedule import TIME_WORD_STEMS
from .temporal import TemporalIntent
from .terms import content_terms, shared_stems, stem, stems

# Calibrated on LoCoMo dev (benchmarks/answerability.py --dump): the share of the asked words a finding must
# say, or the cosine similarity (MiniLM) to the question that stands in for saying them.
ATTRIBUTE_COVERAGE = 0.34    # a third of the asked words (1 of 1, 1 of 2, 2 of 3 …)
MEANING_SIMILARITY = 0.5
SUBJECT_MARGIN = 0.16        # the subject's best match may trail the best match about anyone by this much
COVERAGE_WEIGHT = 0.5        # in that comparison: similarity + this × coverage

# Words that ask for a value without naming what it is of: "what is my sister's *name*".
_GENERIC = frozenset(stem(w) for w in """
name names called call thing things stuff kind type way time times much many long often one ones lot lots
favorite favourite something anything everything someone anyone people person place places day days
happen happened happening likely would might probably go going went gone get got make made take took come came
""".split())
# "Would Caroline likely …", "What might Melanie …": an inference asked of what is known about the person,
# answered (indirectly) by what they said that bears on it (LoCoMo category 3 asks only these).
_INFERENCE = re.compile(r"\b(?:likely|would|might|probably)\b", re.IGNORECASE)
INFERENCE_SIMILARITY = 0.25   # calibrated on LoCoMo dev like the ones above
MIN_SHORT_NAME = 3            # "Mel" may stand for the speaker "Melanie"; "Me" may not

# The questions a sensor can answer: its own activity words. A source not listed answers questions that
# name it or use these generic activity words.
_ACTIVITY = ("do", "did", "done", "use", "used", "open", "opened", "last")
_SOURCE_CUES: dict[str, tuple[str, ...]] = {
    "git": ("commit", "committed", "commits", "repo", "repository", "branch", "code", "coding", "merge", "merged",
            "push", "pushed", "project", "work", "worked", "working", "programming", "wrote", "fix", "fixed",
            "提交", "代码", "仓库", "分支", "项目"),
    "browser": ("visit", "visited", "browse", "browsed", "page", "pages", "site", "sites", "website", "read",
                "article", "search", "searched", "look", "looked", "watch", "watched", "video", "link", "url",
                "online", "web", "网页", "网站", "浏览", "看"),
    "calendar": ("meeting", "meetings", "meet", "calendar", "event", "events", "appointment", "schedule",
                 "scheduled", "call", "plan", "planned", "agenda", "when", "next", "upcoming", "coming", "tomorrow",
                 "week", "weekend", "会议", "日程", "日历", "约", "开会", "安排", "明天", "下周", "下次", "什么时候"),
    "terminal": ("command", "commands", "run", "ran", "terminal", "shell", "install", "installed", "script",
                 "命令", "终端", "运行"),
    "music": ("listen", "listened", "song", "songs", "music", "play", "played", "track", "album", "artist",
              "歌", "音乐", "听"),
    "app_usage": ("app", "apps", "application", "use", "used", "spend", "spent", "open", "opened", "应用", "软件"),
}
_SOURCE_CUE_STEMS = {source: frozenset(stem(w) for w in (*words, source, *_ACTIVITY))
                     for source, words in _SOURCE_CUES.items()}

# The browser collector names each event's source by its browser.
BROWSERS = frozenset({"browser", "chrome", "chromium", "brave", "edge", "firefox", "safari", "vivaldi", "opera",
                      "opera_gx", "arc"})


def source_kind(source: str) -> str:
    """The kind of sensor a source is: "browser" for every browser, else the source itself."""
    return "browser" if source in BROWSERS else source


# A "Name:" label at the start of a turn (the transcript convention); only compared with the question's names.
_LABEL = re.compile(r"^\s*([^\W\d_][\w'.-]{0,40}(?:\s[^\W\d_][\w'.-]{0,40})?)\s*:\s+")
_NAME_WORD = re.compile(r"\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)?\b")
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|our|ours|us|ourselves)\b|我", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves|y'all)\b|你|您", re.IGNORECASE)
# A question about the user speaks as them ("where do I live?", "我住在哪") or of them ("the user's job").
_OF_USER = re.compile(r"\b(?:i|me|my|mine|myself|we|our|ours|us|ourselves|user'?s?)\b|我", re.IGNORECASE)
_PHATIC = re.compile(r"\b(?:thank\s+you|see\s+you|you\s+know|love\s+you|miss\s+you)\b", re.IGNORECASE)
_GREETING = r"(?:hi|hey|hello|thanks|thank\s+you|thx|bye|wow|oh|yay|congrats|congratulations|dear|good\s+\w+)"
_DATE_WORDS = re.compile(
    r"\b(?:19|20)\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\bago\b|\bsince\b|"
    r"\b(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten|few|several)\s+(?:days?|weeks?|months?|years?)\b|"
    r"\b(?:last|this|next|that)\s+(?:week|month|year|summer|winter|spring|fall|autumn|weekend)\b|"
    r"\b(?:yesterday|when\s+i\s+was)\b|\d+\s*年|\d+\s*月|年前|去年", re.IGNORECASE)


# MiniLM (English only) puts unrelated Chinese sentences at 0.55–0.7 of each other: its similarity stands in
# for the asked words only far above that (a directive asked back in other words: 0.84).
CJK_MEANING_SIMILARITY = 0.8
_CJK = re.compile(r"[\u3400-\u9fff]")
_ZH_GENERIC = frozenset("名字 叫 什么 哪里 哪儿 哪 怎么 怎样 现在 以前 之前 东西 时候 谁".split())

# "my son", "我妹妹": a question about one of the user's people, answered only by what names them that way
# ("the user studies at …" says nothing of a son's school).
_RELATIVE_EN = re.compile(
    r"\bmy\s+(son|daughter|sister|brother|mother|mom|mum|father|dad|wife|husband|partner|girlfriend|boyfriend|"
    r"kids?|children|child|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|nephew|boss|"
    r"colleague|roommate|neighbou?r|parents?|friend)s?\b", re.IGNORECASE)
_RELATIVE_ZH = re.compile(r"我的?(妹妹|姐姐|哥哥|弟弟|妈妈|母亲|爸爸|父亲|妻子|老婆|丈夫|老公|儿子|女儿|"
                          r"男朋友|女朋友|孩子|父母|爷爷|奶奶|外婆|外公|老板|同事|室友|邻居)")
_RELATIVE_WORDS = {"mom": ("mom", "mother", "mum"), "mum": ("mum", "mother", "mom"),
                   "mother": ("mother", "mom", "mum"), "dad": ("dad", "father"), "father": ("father", "dad"),
                   "kid": ("kid", "child", "son", "daughter"),
                   "kids": ("kids", "children", "son", "daughter"), "wife": ("wife", "spouse"),
                   "husband": ("husband", "spouse")}
# A kind the question names ("my cat") that an L2 fact of the asked relation must say too: the user's pet
# Biscuit, a puppy, is not their cat.
_KINDS = {"cat": ("cat", "kitten", "kitty"), "dog": ("dog", "puppy", "pup"), "kitten": ("cat", "kitten", "kitty"),
          "puppy": ("dog", "puppy", "pup"), "猫": ("猫",), "狗": ("狗",)}


# "When is …?" and "upcoming / next": a calendar entry answers with its time (the plan words: schedule.py).
_WHEN = re.compile(r"^\s*when\b|\bwhen (?:is|are|was|'s|do|does|will)\b|什么时候|几点|哪天|哪一天", re.IGNORECASE)
_UPCOMING = re.compile(r"\b(?:upcoming|coming up|next)\b|下次|下一次|接下来", re.IGNORECASE)


def relatives_of(question: str) -> frozenset[str]:
    """The user's people a question asks about: "my son's school" → {"son"}."""
    found = {m.group(1).casefold() for m in _RELATIVE_EN.finditer(question)}
    return frozenset(found | {m.group(1) for m in _RELATIVE_ZH.finditer(question)})


def names_relative(finding: Finding, relatives: frozenset[str]) -> bool:
    """Does the finding speak of the user's own son / 妹妹 ("my son", "我的妹妹", an L2 fact about them), not of
    someone else's ("Anna's son", "我朋友的妹妹")?"""
    text = finding.text.casefold()
    for relative in relatives:
        for word in _RELATIVE_WORDS.get(relative, (relative,)):
            if _CJK.search(word):
                if re.search(rf"我们?(?:的)?{word}", text) or finding.layer == "L2" and word in text:
                    return True
            elif re.search(rf"\b(?:my|our|the user's|user has (?:a |an )?)\s*(?:\w+\s+)?{re.escape(word)}s?\b", text) \
                    or finding.layer == "L2" and re.search(rf"\b{re.escape(word)}s?\b", text):
                return True
    return False


@dataclass(frozen=True)
class Asked:
    """What a question asks, for judging findings: whose, which attribute, when, and which sources fit."""
    persons: frozenset[str]           # name keys of the people the question is about; empty: the user
    attribute: frozenset[str]         # stems of the asked attribute or relation
    question_stems: frozenset[str]
    window_fallback: bool = False
    relations: frozenset[str] = frozenset()   # L2 predicates and traits the question asks for ("has pet")
    inference: bool = False                   # "would X likely …": what bears on it answers, indirectly
    relatives: frozenset[str] = frozenset()   # "my son": the user's people it asks about
    chinese: bool = False                     # the question is in Chinese: MiniLM's similarity means little
    ahead: bool = False                       # a window still to come ("tomorrow", "next week", "upcoming")
    when: bool = False                        # "when is …": a calendar entry answers with its time
    current: bool = False                     # a current-state question: what was replaced is history, related
    request: bool = False                     # "what did I ask you …": only the user's requests answer
    user_names: frozenset[str] = frozenset()  # the names the user goes by (a "Sam:" turn speaks for them)
    of_user: bool = True                      # it asks about the user ("where do *I* live?"), not about no one

    @classmethod
    def of(cls, question: str, named: Iterable[tuple[int, str, str]], temporal: TemporalIntent,
           window_fallback: bool = False, relations: Iterable[str] = (), current: bool = False,
           request: bool = False, user_names: Iterable[str] = ()) -> Asked:
        persons = frozenset(key for _, kind, key in named if kind == "person")
        name_stems = {stem(word) for key in persons for word in key.split()}
        anchor = stems(temporal.anchor.phrase) if temporal.anchor else frozenset()
        words = {stem(t) for t in content_terms(question)}
        # "in 2023" is a time, not an asked word
        asked_for = {w for w in words if not w.isdigit()} - name_stems - _GENERIC - _ZH_GENERIC - anchor
        return cls(persons=persons, attribute=frozenset(asked_for), inference=bool(_INFERENCE.search(question)),
                   question_stems=frozenset(words), window_fallback=window_fallback,
                   relations=frozenset(r.casefold().replace("_", " ") for r in relations),
                   relatives=relatives_of(question), chinese=bool(_CJK.search(question)),
                   ahead=bool(temporal.window is not None and getattr(temporal.window, "ahead", False)
                              or _UPCOMING.search(question)),
                   when=bool(_WHEN.search(question)), current=current, request=request,
                   user_names=frozenset(user_names), of_user=bool(_OF_USER.search(question)))


def speaker_of(finding: Finding) -> tuple[str | None, str]:
    """(who said it, the words said): the speaker field, else a leading "Name:" label, else no one."""
    text = finding.text
    if finding.speaker:
        label = _LABEL.match(text)      # a speaker read from the "Name:" prefix: the words are what follows
        if label and name_key(label.group(1)) == name_key(finding.speaker):
            text = text[label.end():]
        return name_key(finding.speaker), text
    label = _LABEL.match(text)
    if label:
        return name_key(label.group(1)), text[label.end():]
    return None, text


def speaks_of(text: str, name: str) -> bool:
    """Does the text mention ``name`` other than by addressing them ("Thanks, Caroline!", "Caroline, look")?"""
    for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE):
        before, after = text[:match.start()], text[match.end():]
        addressed_before = re.search(rf"(?:^|[,;:!?.(]|\b{_GREETING}|(?:^|[.!?]\s)\s*[^\W\d_]+)\s*$", before,
                                     re.IGNORECASE)     # "Thanks, Caroline!", "Woohoo Melanie!" (one word first)
        addressed_after = re.match(r"\s*(?:[!,.?;:)]|$)", after) and not re.match(r"'s\b|’s\b", after)
        if not (addressed_before and addressed_after):
            return True
    return False


def addressed(text: str, name: str) -> bool:
    """Is ``name`` spoken to ("Thanks, Caroline!", "Caroline, look") somewhere in the text?"""
    return bool(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE)) and not speaks_of(text, name)


def whose_ok(finding: Finding, asked: Asked) -> bool:
    """Is the finding about the person the question names: their own words about themselves, words spoken to
    them about them ("Caroline, you're so brave"), or words that speak of them?"""
    if asked.relatives and not asked.persons:
        return names_relative(finding, asked.relatives)
    if not asked.persons:
        # "Anna: I live in Oslo" is Anna's, not the user's; "what did the charity race raise money for?" asks
        # about no one, and anyone's words may tell it.
        return not asked.of_user or not speaks_for_another(finding, asked.user_names)
    speaker, said = speaker_of(finding)
    first, second = bool(_FIRST_PERSON.search(said)), bool(_SECOND_PERSON.search(_PHATIC.sub(" ", said)))
    if speaker in asked.persons and (first or not second) and not of_addressee(said, asked):
        return True     # a reply only about "you" ("That race sounds great, Mel!") is about the other person
    return any(speaks_of(said, name) or (second and not first and addressed(said, name)) for name in asked.persons)


def of_addressee(said: str, asked: Asked) -> bool:
    """Does the speaker tell the asked words only in sentences about "you" ("Glad your son is okay, Mel. Life's
    unpredictable, but moments like these remind us …" says nothing of the speaker's son)?"""
    telling = [s for s in _SENTENCE.findall(told(said)) if shared_stems(asked.attribute, s)]
    return bool(telling) and all(_SECOND_PERSON.search(_PHATIC.sub(" ", s)) and not _FIRST_PERSON.search(s)
                                 for s in telling)


def speaks_for_another(finding: Finding, user_names: frozenset[str]) -> bool:
    """Is the finding labelled with the name of a speaker the user is not known to be ("Anna: I live in Oslo",
    relayed), or someone else's activity a sensor saw ("Git: Ana committed …", its actor)? Their "I" is theirs,
    and their doing is not the user's, so it does not answer a question about the user."""
    if finding.layer == "L1" and finding.author == "external" and finding.speaker:
        return name_key(finding.speaker) not in user_names
    if finding.layer == "L2" and finding.source == "l2" and finding.speaker:     # an edge of someone else's
        return name_key(finding.speaker) not in user_names
    if finding.layer != "L1" or finding.source != "chat" or not finding.speaker:
        return False    # "Calendar: …" is how a sensor's event reads; "Dinner: I cooked…" names no speaker
    name = prefixed_name(finding.text)
    key = None if name is None else name_key(name)
    # Only a settled speaker (the name recurs, speakers.py) or one given in chat.speaker is someone else.
    return key is not None and key == name_key(finding.speaker) and key not in user_names


# Sentences, and the ones that ask (a question mark may be followed by a closing quote, bracket or emoji).
_SENTENCE = re.compile(r"[^.!?。！？\n]*(?:[.!?。！？]+|\n|$)")
_ASKING = re.compile(r"[?？]+\W*$")
# "…, right?", "…, isn't it?": a tag question tells what it asks to be agreed with.
_TAG_QUESTION = re.compile(r"[,，]\s*(?:right|huh|eh|no|yeah|ok(?:ay)?|you know|(?:is|are|was|were|do|does|did|have|"
                           r"has|can|could|would|will|should)n[’']?t\s+\w+(?:\s+\w+)?|对吧|是吧|对不对)\s*[?？]+\W*$",
                           re.IGNORECASE)


def told(text: str) -> str:
    """The text without its questions: what a turn tells, not what it asks ("How did the kids handle it?")."""
    return " ".join(s.strip() for s in _SENTENCE.findall(text)
                    if s.strip() and (not _ASKING.search(s) or _TAG_QUESTION.search(s)))


def coverage(finding: Finding, asked: Asked, text: str | None = None) -> float:
    """The share of the asked attribute's words the finding says (1.0 when nothing specific is asked); ``text``:
    only these words of it count (what it tells)."""
    if not asked.attribute:
        return 1.0
    text = (finding.text if text is None else text).casefold()
    if finding.layer == "L2" and any(f" {relation} " in text for relation in asked.relations):
        kinds = [_KINDS[word] for word in asked.attribute if word in _KINDS]
        if all(any(re.search(rf"(?<!\w){re.escape(k)}s?(?!\w)", text) for k in kind) for kind in kinds):
            return 1.0  # a derived fact of the asked relation: "the user has pet Miso" for "my pet"
    return len(shared_stems(asked.attribute, text + " " + (finding.speaker or ""))) / len(asked.attribute)


def source_plausible(finding: Finding, asked: Asked) -> bool:
    """A sensor answers only questions about its own kind of activity; people's words and L2–L4 may answer any."""
    if finding.layer != "L1" or finding.author != "external":
        return True
    if source_kind(finding.source) == "calendar" and (asked.when or asked.ahead):
        return True     # "when is the project review?", "what's on tomorrow?": the calendar's own questions
    cues = _SOURCE_CUE_STEMS.get(source_kind(finding.source)) or \
        frozenset({stem(finding.source), *map(stem, _ACTIVITY)})
    return bool(asked.question_stems & cues)


def window_ok(finding: Finding, asked: Asked) -> bool:
    """Kept from outside an empty window, a finding answers only when it names a time itself."""
    return not asked.window_fallback or bool(_DATE_WORDS.search(finding.text))


def relevance(checks: dict) -> float:
    """How well a finding matches the asked attribute, whoever it is about: similarity plus half its coverage."""
    return COVERAGE_WEIGHT * checks["coverage"] + (checks["similarity"] or 0.0)


def verdict(finding: Finding, asked: Asked, similarity: float | None, coverage_min: float = ATTRIBUTE_COVERAGE,
            similarity_min: float = MEANING_SIMILARITY, inference_min: float = INFERENCE_SIMILARITY) -> dict:
    """The checks for one finding, and whether it says the asked thing of its subject (``said``); the pack's
    margin check comes on top (:func:`judge`). The thresholds are arguments only for calibration."""
    # What a turn only asks ("Got any fave styles?") says nothing of anyone: the asked words count where it
    # tells, and a turn that has them only in a question does not answer by its (whole turn's) similarity.
    tells = coverage(finding, asked, told(finding.text))
    asking_only = tells == 0 < coverage(finding, asked)
    cover = round(tells, 3)
    checks = {"whose": whose_ok(finding, asked), "source": source_plausible(finding, asked),
              "window": window_ok(finding, asked), "coverage": cover,
              "similarity": None if similarity is None else round(similarity, 3)}
    if asked.chinese or _CJK.search(finding.text):
        similarity_min = max(similarity_min, CJK_MEANING_SIMILARITY)
    if finding.kind == "request":
        said = True     # the engine adds the user's requests only to a question asking for them
    elif asked.request:
        said = False    # a calendar title "Always book me an aisle seat" is no request of the user's
    elif finding.status == "planned" and asked.ahead and asked.attribute <= TIME_WORD_STEMS:
        said = True     # "what's on next week?": every plan in the window is what is asked
    elif asked.inference:
        said = cover > 0 or (similarity or 0.0) >= inference_min
    else:
        said = cover >= coverage_min or (similarity or 0.0) >= similarity_min and not asking_only
    if asked.current and finding.status == "history":
        said = False    # "where do I live now?": the home the user left is only related
    checks["answers"] = checks["whose"] and checks["source"] and checks["window"] and said
    return checks


def with_labelled_speakers(asked: Asked, question: str, findings: list[Finding]) -> Asked:
    """A name the question uses that labels turns of the pack ("Caroline: …") is a person the question is
    about, even before the catalog knows it as one (a transcript logged without ``chat.speaker``)."""
    labels = {speaker for speaker, _ in map(speaker_of, findings) if speaker}
    words = {w.casefold() for name in _NAME_WORD.findall(question) for w in (name, *name.split())}
    # "Mel" for the speaker "Melanie": a short form the catalog does not know, said as a name in the question
    named = {label for label in labels for word in words
             if word == label or len(word) >= MIN_SHORT_NAME and label.startswith(word)}
    if not named:
        return asked
    said = {stem(word) for word in words if any(label.startswith(word) for label in named)}
    return replace(asked, persons=asked.persons | named, attribute=asked.attribute - said)


def judge(findings: list[Finding], asked: Asked, similarity: Mapping[str, float], question: str = "",
          margin: float = SUBJECT_MARGIN) -> dict:
    """Set each finding's ``answers`` (similarity: the question's cosine to an L1 event, by event id); returns
    the trace entry: the subject read from the question and each finding's checks.

    Whose evidence, across the pack: when the question names a person, a finding about them answers only if it
    matches the asked thing nearly as well as the best finding about anyone (within ``margin``). When what
    matches best was said by or of someone else, the question has put it on the wrong person (LoCoMo's
    adversarial questions do exactly this) and the person's weaker, looser matches are only related.
    """
    asked = with_labelled_speakers(asked, question, findings)
    checks = [verdict(finding, asked, similarity.get(finding.event_id)) for finding in findings]
    eligible = [relevance(c) for c in checks if c["source"] and c["window"]]
    best = max(eligible, default=0.0)
    for finding, checked in zip(findings, checks, strict=True):
        if checked["answers"] and asked.persons and not asked.inference and relevance(checked) < best - margin:
            checked["answers"] = False
            checked["margin"] = round(best - relevance(checked), 3)
        finding.answers = checked["answers"]
    # The user's own words an answering fact was derived from ("I moved to Hangzhou last week" under "the user
    # lives in Hangzhou") say the answer too, though in other words than the question's.
    cited = {event_id for f in findings if f.answers and f.layer == "L2" and f.status != "history"
             for event_id in f.supporting_event_ids}
    for finding, checked in zip(findings, checks, strict=True):
        if not finding.answers and finding.layer == "L1" and finding.event_id in cited and finding.status != "history" \
                and checked["whose"] and checked["source"] and checked["window"]:
            finding.answers = checked["answers"] = True
            checked["supports_answer"] = True
    # The asked words themselves stay out: they are the question's words, which a pack never echoes.
    return {"persons": sorted(asked.persons), "attribute_words": len(asked.attribute), "inference": asked.inference,
            "answering": sum(c["answers"] for c in checks), "findings": checks}
