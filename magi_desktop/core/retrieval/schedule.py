"""Scheduled events in recall (issue 17, architecture §16): the future has plans in it.

A plan (a payload that declared a ``schedule``) is visible from when it was collected, before it happens
(the paths hide what was *recorded* after ``now``). So a question may look ahead: "tomorrow", "next week",
"this weekend", "in 3 days", "upcoming", "when is my next X", 明天, 后天, 下周, 下个月, 周末, "下次…什么时候"
give a window after now (:func:`future_window`, kept by ``parse_temporal`` as ``Window.ahead``), listed by
the ``plans`` path in time order and answered soonest first. A question about what was *done* ("did I",
"what did I do", 我做了…) never sees a plan as done: a finding whose start is after the question's ``now``
is a plan (``status: "planned"`` and a hint), and such a question drops it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta

from ..contracts import MAX_TIMESTAMP
from ..store import l1
from ..store.connection import Connection
from .pack import Finding
from .temporal import WEEKDAYS, ZH_WEEKDAYS, Window
from .terms import stem

PLANNED = "planned"          # the status of an L1 finding about a time after the question's now
PATH = "plans"               # the recall path that lists an ahead window's events in time order
PATH_WEIGHTS = {PATH: 1.0}   # beside each mode's weights (modes.PATH_WEIGHTS): as strong as BM25

_NUMBER = r"(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few)"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
# "when is my next X", "the next X", "upcoming", "coming up", 下次/下一次/接下来: the plans after now.
_UPCOMING = re.compile(r"\b(?:my|the)\s+next\b|\bnext\s+(?:time|one)\b|\bupcoming\b|\bcoming\s+up\b|\bfuture\b"
                       r"|下次|下一次|接下来|即将", re.IGNORECASE)
# A question about what was done: a plan is not an answer to it.
_DONE = re.compile(r"\b(?:did|have|had|was|were)\s+(?:i|we)\b|\bwhat\s+did\b|\b(?:where|when|who|how)\s+did\b"
                   r"|\bi\s+(?:went|did|attended|visited|met|saw)\b|做了|做过|去了|去过|参加了|见了", re.IGNORECASE)
# Words that say *when*, not *what*: in an ahead window they are not searched for.
_TIME_WORDS = frozenset({
    "next", "upcoming", "coming", "tomorrow", "weekend", "week", "month", "day", "days", "weeks", "future",
    "schedule", "scheduled", "plan", "planned", "plans", "agenda", "calendar", "time", "soon", "later",
    "book", "booked", "arrange", "arranged", "organise", "organised", "organize", "organized", "anything",
    "something", "on", "up", "have", "event", "events", "appointment", "appointments", "happen", "happening",
    "日历", "有", "事",
    "下次", "下一次", "接下来", "明天", "后天", "下周", "周末", "安排", "日程", "计划", "什么时候", "即将",
})


# "What's on Friday?", "do I have anything on Friday?", "am I free this Friday?": a weekday still to come.
_FORWARD = re.compile(r"\bwhat(?:'s|’s| is| have i got| do i have)\s+(?:on|planned|happening|scheduled)\b"
                      r"|\b(?:do|will)\s+i\s+have\b|\bam\s+i\b|\bwill\b|\b(?:is|are)\s+there\b|\bhave\s+i\s+got\b"
                      r"|\bgoing\s+to\b|\bgonna\b|\bplanned\b|\bscheduled\b|\bbusy\b|\bfree\b|\bhappening\b"
                      r"|\bmy\s+plans?\b|\bdue\b|\bagenda\b|\bcalendar\b", re.IGNORECASE)
_WEEKDAY = re.compile(r"\b(this|next|coming|on)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
                      re.IGNORECASE)
# "周五有什么安排？", "这周五…", "星期三要做什么": the coming one (a past one says 了 / 过; 上周五 is temporal's)
_ZH_WEEKDAY = re.compile(r"(?<!上)(?<!上个)(?:这个?|本)?(?:周|星期|礼拜)([一二三四五六日天])")


# "What was on my calendar on Friday?", "what happened on Monday?": the weekday already passed.
_PAST = re.compile(r"\b(?:was|were|did|had|happened|went|been)\b", re.IGNORECASE)


def weekday_ahead(text: str) -> bool:
    """Does "on Friday" in this question mean the coming Friday ("what's on Friday?") rather than the last
    one ("what did I do on Friday?", "what was on Friday?")? A question in the past tense looks back."""
    return bool(_FORWARD.search(text)) and not _PAST.search(text)


def future_window(text: str, cal) -> Window | None:
    """The window after now a question names (``cal`` is temporal's day calendar), or None."""
    t = text.lower()
    today = cal.today
    m = _WEEKDAY.search(t)
    if m and (m.group(1) in ("next", "coming") or weekday_ahead(text) or m.group(1) == "this"
              and not _PAST.search(text)):
        weekday = WEEKDAYS[m.group(2)]
        if m.group(1) == "this" and weekday < today.weekday():
            return None     # "this Monday", asked on a Wednesday: the one two days ago (temporal.py)
        days = (weekday - today.weekday()) % 7
        if m.group(1) == "next" and days == 0:
            days = 7        # "next Friday", asked on a Friday
        return _ahead(cal.days(today + timedelta(days=days), 1, f"{m.group(1)} {m.group(2)}"))
    m = _ZH_WEEKDAY.search(text)
    if m and not re.search(r"了|过", text[m.end():]):
        days = (ZH_WEEKDAYS[m.group(1)] - today.weekday()) % 7
        return _ahead(cal.days(today + timedelta(days=days), 1, m.group(0)))
    if re.search(r"\bday after tomorrow\b", t) or "后天" in text:
        return _ahead(cal.days(today + timedelta(days=2), 1, "the day after tomorrow"))
    if re.search(r"\btomorrow\b", t) or "明天" in text or "明早" in text or "明晚" in text:
        return _ahead(cal.days(today + timedelta(days=1), 1, "tomorrow"))
    m = re.search(rf"\bin\s+{_NUMBER}\s+(day|week)s?\b", t)
    if m:
        n = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1)]
        days = n * (7 if m.group(2) == "week" else 1)
        return _ahead(cal.days(today + timedelta(days=days), 1, f"in {n} {m.group(2)}{'s' if n > 1 else ''}"))
    if re.search(r"\bnext weekend\b", t):
        return _ahead(cal.days(today + timedelta(days=12 - today.weekday()), 2, "next weekend"))
    if re.search(r"\bthis weekend\b|\bthe weekend\b", t) or re.search(r"(?:这个?|本)?周末", text):
        saturday = today + timedelta(days=(5 - today.weekday()) % 7 if today.weekday() < 5 else -(today.weekday() - 5))
        return _ahead(cal.days(saturday, 2, "this weekend"))
    if re.search(r"\bnext week\b", t) or re.search(r"下(?:个)?(?:周|星期|礼拜)", text):
        return _ahead(cal.week_of(-1, "next week"))
    if re.search(r"\bnext month\b", t) or re.search(r"下(?:个)?月", text):
        return _ahead(cal.months_back(-1, "next month"))
    if _UPCOMING.search(text) and not _DONE.search(text):
        return Window(cal.now, MAX_TIMESTAMP, "upcoming", ahead=True)
    return None


def _ahead(window: Window) -> Window:
    return Window(window.start, window.end, window.label, ahead=True)


# "What did I schedule / plan / book for tomorrow?": the asking is past, what is asked for is a plan.
_PLANNED = re.compile(r"\b(?:schedul|plan|book|arrang|organi[sz]|set\s+up|put\s+(?:in|on))\w*|安排|计划|预约|预订|约了",
                      re.IGNORECASE)


def asks_done(text: str) -> bool:
    """Does the question ask what was done ("did I", "what did I do")? Then a plan is no answer — unless what
    it asks is what was planned ("what did I schedule for tomorrow?")."""
    return bool(_DONE.search(text)) and not _PLANNED.search(text)


# The same words as stems, for sufficiency: a question asking only these ("what's on next week?") is answered by
# every plan in its window.
TIME_WORD_STEMS = frozenset(stem(w) for w in _TIME_WORDS)


def topical(terms: Sequence[str]) -> list[str]:
    """The words of a question that say *what* (in an ahead window the others only say when)."""
    return [t for t in terms if t.casefold() not in _TIME_WORDS]


def plans(conn: Connection, ctx) -> list[int]:
    """The events of an ahead window, soonest first: "what is on tomorrow" names no topic to search for."""
    window = ctx.window
    if window is None or not window.ahead:
        return []
    return l1.event_rowids_between(conn, ctx.scopes, ctx.now, max(window.start, ctx.now), window.end, ctx.fetch_k)


def screen(qualifying: list, kept: list, temporal, terms: Sequence[str], question: str, now: float,
           trace: dict) -> list:
    """The candidates a question may be answered from, as far as plans go.

    ``kept`` are the candidates inside the window, ``qualifying`` those the question's words tie to. An
    ahead window whose question names no topic ("what is on my calendar tomorrow?") lists the window; one
    with nothing scheduled in it keeps only what was *said* about that time (a chat turn), never another
    day's plans. A question about what was done drops the plans.
    """
    window = temporal.window
    if window is not None and window.ahead:
        if trace.get("window_fallback"):
            qualifying = [c for c in qualifying if c.source == "chat"]
        elif not topical(terms):
            qualifying = kept
    if asks_done(question):
        before = len(qualifying)
        qualifying = [c for c in qualifying if c.timestamp <= now]
        trace["plans_dropped"] = before - len(qualifying)
    return qualifying


def soonest_first(ranked: list[tuple[int, float]], timestamps: dict[int, float], temporal) -> list[tuple[int, float]]:
    """In an ahead window the next plan answers first ("when is my next X"): the window's events in time
    order, then what was kept from other times (words said about it) in its own order."""
    window = temporal.window
    if window is None or not window.ahead:
        return ranked
    inside = sorted((pair for pair in ranked if window.contains(timestamps[pair[0]])),
                    key=lambda pair: (timestamps[pair[0]], -pair[1]))
    return inside + [pair for pair in ranked if not window.contains(timestamps[pair[0]])]


def mark_plans(findings: list[Finding], now: float) -> int:
    """Say which L1 findings are plans (about a time after ``now``); how many."""
    count = 0
    for finding in findings:
        if finding.layer == "L1" and finding.occurred_at > now:
            finding.status = PLANNED
            count += 1
    return count


def hints(findings: list[Finding], temporal) -> list[str]:
    planned = sum(1 for f in findings if f.status == PLANNED)
    out = []
    if planned:
        out.append(f"{planned} finding(s) are plans (status 'planned': scheduled after the question's time): "
                   "they have not happened yet — do not report them as done.")
    window = temporal.window
    if window is not None and window.ahead and not findings:
        out.append(f"Nothing is scheduled in '{window.label}'.")
    return out
