"""Sufficiency as a decision (DESIGN §16): does a finding *answer* the question, or is it only related?

A finding answers when four things hold, each checked here without an LLM:

* **whose** — the question's subject. A question that names a person is answered by what that person
  said (the turn's speaker, or a "Name:" label the client wrote) or by a turn that speaks *of* them; a
  turn that only addresses them ("Thanks, Caroline!") is the other speaker talking about themselves.
* **what** — the asked attribute or relation: the question's content words, names and words that
  name no attribute ("name", "called") set aside, must be said by the finding (a sister is not a cat),
  or the finding's meaning must be close to the question's.
* **when** — inside the question's window (the engine drops the rest; a pack kept from other times
  because the window held nothing answers only where the finding itself names a date).
* **which source** — a sensor answers only the kind of question it can: a commit answers "what did I
  commit", not "where do I live" ("index_text lives in core.text"); a visited page is at most
  indirect evidence of a fact about the user.

The thresholds were calibrated on the LoCoMo dev split (conversations 0–4) with
``benchmarks/answerability.py --dump``; see that file and benchmarks/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .pack import Finding
from .temporal import TemporalIntent
from .terms import content_terms, stem, stems

# Calibrated on LoCoMo dev (benchmarks/answerability.py --dump): the share of the asked words a finding must
# say, or the cosine similarity (MiniLM) to the question that stands in for saying them.
ATTRIBUTE_COVERAGE = 0.5
MEANING_SIMILARITY = 0.55

# Words that ask for a value without naming what it is of: "what is my sister's *name*".
_GENERIC = frozenset(stem(w) for w in """
name names called call thing things stuff kind type way time times much many long often one ones lot lots
favorite favourite something anything everything someone anyone people person place places day days
happen happened happening
""".split())

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
                 "scheduled", "call", "plan", "planned", "agenda", "会议", "日程", "日历", "约", "开会"),
    "terminal": ("command", "commands", "run", "ran", "terminal", "shell", "install", "installed", "script",
                 "命令", "终端", "运行"),
    "music": ("listen", "listened", "song", "songs", "music", "play", "played", "track", "album", "artist",
              "歌", "音乐", "听"),
    "app_usage": ("app", "apps", "application", "use", "used", "spend", "spent", "open", "opened", "应用", "软件"),
}
_SOURCE_CUE_STEMS = {source: frozenset(stem(w) for w in (*words, source, *_ACTIVITY))
                     for source, words in _SOURCE_CUES.items()}

# The browser collector names each event's source by its browser.
BROWSERS = frozenset({"browser", "chrome", "chromium", "brave", "edge", "firefox", "safari", "vivaldi", "opera"})


def source_kind(source: str) -> str:
    """The kind of sensor a source is: "browser" for every browser, else the source itself."""
    return "browser" if source in BROWSERS else source


# A "Name:" label at the start of a turn (the transcript convention); only compared with the question's names.
_LABEL = re.compile(r"^\s*([^\W\d_][\w'.-]{0,40}(?:\s[^\W\d_][\w'.-]{0,40})?)\s*:\s+")
_GREETING = r"(?:hi|hey|hello|thanks|thank\s+you|thx|bye|wow|oh|yay|congrats|congratulations|dear|good\s+\w+)"
_DATE_WORDS = re.compile(r"\b(?:19|20)\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|"
                         r"\b\d+\s+(?:days?|weeks?|months?|years?)\s+ago\b|\d+\s*年|\d+\s*月", re.IGNORECASE)


@dataclass(frozen=True)
class Asked:
    """What a question asks, for judging findings: whose, which attribute, when, and which sources fit."""
    persons: frozenset[str]           # name keys of the people the question is about; empty: the user
    attribute: frozenset[str]         # stems of the asked attribute or relation
    question_stems: frozenset[str]
    window_fallback: bool = False

    @classmethod
    def of(cls, question: str, named: Iterable[tuple[int, str, str]], temporal: TemporalIntent,
           window_fallback: bool = False) -> Asked:
        persons = frozenset(key for _, kind, key in named if kind == "person")
        name_stems = {stem(word) for key in persons for word in key.split()}
        anchor = stems(temporal.anchor.phrase) if temporal.anchor else frozenset()
        words = {stem(t) for t in content_terms(question)}
        return cls(persons=persons, attribute=frozenset(words - name_stems - _GENERIC - anchor),
                   question_stems=frozenset(words), window_fallback=window_fallback)


def speaker_of(finding: Finding) -> tuple[str | None, str]:
    """(who said it, the words said): the speaker field, else a leading "Name:" label, else no one."""
    text = finding.text
    if finding.speaker:
        return " ".join(finding.speaker.casefold().split()), text
    label = _LABEL.match(text)
    if label:
        return " ".join(label.group(1).casefold().split()), text[label.end():]
    return None, text


def speaks_of(text: str, name: str) -> bool:
    """Does the text mention ``name`` other than by addressing them ("Thanks, Caroline!", "Caroline, look")?"""
    for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE):
        before, after = text[:match.start()], text[match.end():]
        addressed_before = re.search(rf"(?:^|[,;:!?.(]|\b{_GREETING})\s*$", before, re.IGNORECASE)
        addressed_after = re.match(r"\s*(?:[!,.?;:)]|$)", after) and not re.match(r"'s\b|’s\b", after)
        if not (addressed_before and addressed_after):
            return True
    return False


def whose_ok(finding: Finding, asked: Asked) -> bool:
    if not asked.persons:
        return True
    speaker, said = speaker_of(finding)
    if speaker in asked.persons:
        return True
    return any(speaks_of(said, name) for name in asked.persons)


def coverage(finding: Finding, asked: Asked) -> float:
    """The share of the asked attribute's words the finding says (1.0 when nothing specific is asked)."""
    if not asked.attribute:
        return 1.0
    said = stems(finding.text + " " + (finding.speaker or ""))
    return len(asked.attribute & said) / len(asked.attribute)


def source_plausible(finding: Finding, asked: Asked) -> bool:
    """A sensor answers only questions about its own kind of activity; people's words and L2–L4 may answer any."""
    if finding.layer != "L1" or finding.author != "external":
        return True
    cues = _SOURCE_CUE_STEMS.get(source_kind(finding.source)) or frozenset({stem(finding.source), *map(stem, _ACTIVITY)})
    return bool(asked.question_stems & cues)


def window_ok(finding: Finding, asked: Asked) -> bool:
    """Kept from outside an empty window, a finding answers only when it names a time itself."""
    return not asked.window_fallback or bool(_DATE_WORDS.search(finding.text))


def verdict(finding: Finding, asked: Asked, similarity: float | None) -> dict:
    """The four checks for one finding, and whether it answers (kept in the pack's trace: why it did not)."""
    checks = {"whose": whose_ok(finding, asked), "source": source_plausible(finding, asked),
              "window": window_ok(finding, asked), "coverage": round(coverage(finding, asked), 3),
              "similarity": None if similarity is None else round(similarity, 3)}
    said = checks["coverage"] >= ATTRIBUTE_COVERAGE or (similarity or 0.0) >= MEANING_SIMILARITY
    checks["answers"] = checks["whose"] and checks["source"] and checks["window"] and said
    return checks


def judge(findings: list[Finding], asked: Asked, similarity: Mapping[str, float]) -> dict:
    """Set each finding's ``answers`` (similarity: the question's cosine to an L1 event, by event id); returns
    the trace entry: the subject and attribute read from the question and each finding's checks."""
    checks = []
    for finding in findings:
        checked = verdict(finding, asked, similarity.get(finding.event_id))
        finding.answers = checked["answers"]
        checks.append(checked)
    return {"persons": sorted(asked.persons), "attribute": sorted(asked.attribute),
            "answering": sum(c["answers"] for c in checks), "findings": checks}
