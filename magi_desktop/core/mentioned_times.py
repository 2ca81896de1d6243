"""Times an event is *about*, read from its own words (issue 17, item 7).

"Last month I got hurt", said on 20 April, is about March: the phrase is resolved against the turn's own
date (the question parser of ``retrieval/temporal.py`` with ``now`` = the turn's time) and kept in
``event_mentioned_times`` (migration 0021), so a question about March finds the April turn. Only
explicit calendar phrases are read — "yesterday", "last night", "last week / month / year / weekend /
Friday", "N days / weeks / months / years ago", "in March (2023)", "March 2023", "May 7, 2023", "in 2022",
"the week before last", and their Chinese forms (昨天, 上周, 上个月, 去年, 三天前 …) — never a bare month
word ("the march"), and a window that holds the turn itself ("today", "this week") says nothing new
and is not kept. A scheduled time (a calendar event's start) is the *sched* part's field, not this.

Windows follow the machine's local time, like the question parser without a timezone. Rows follow
their event on delete (a foreign key), so forget leaves none. Retrieval reads them through
``store/mentions.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from .hyperscan_match import AsciiGate
from .retrieval.temporal import _Calendar, _window_of
from .store.mentions import add_mentioned_times

MAX_MENTIONS = 8                 # per event; a pasted diary should not become a calendar
LONGEST_DAYS = 366               # a mentioned window longer than a year ("in the 2010s") is not kept

_MONTH = ("january|february|march|april|may|june|july|august|september|october|november|december|"
          "jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec")
_COUNT = r"(?:\d{1,3}|a couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_WEEKDAY = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_EN_PHRASE = re.compile(
    r"\b(?:the\s+day\s+before\s+yesterday|yesterday|last\s+night|the\s+week\s+before\s+last|"
    rf"last\s+(?:week|weekend|month|year|{_WEEKDAY})|this\s+past\s+(?:{_WEEKDAY})|"
    rf"{_COUNT}\s+(?:day|week|month|year)s?\s+ago|"
    rf"(?:in|during|since)\s+(?:{_MONTH})\b(?:\s+(?:19|20)\d{{2}})?|(?:{_MONTH})\s+(?:19|20)\d{{2}}|"
    rf"(?:{_MONTH})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?:19|20)\d{{2}}|"
    r"(?:in|during)\s+(?:19|20)\d{2})\b", re.IGNORECASE)
_ZH_PHRASE = re.compile(
    r"大前天|前天|昨天|昨晚|上上?(?:个)?(?:周|星期|礼拜)[一二三四五六日天]?|上个?月|去年|前年|"
    r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3})\s*(?:天|周|个?星期|个月|年)(?:之)?前|"
    r"(?:(?:19|20)\d{2}\s*年\s*)?(?:1[0-2]|[1-9]|十[一二]?|[一二三四五六七八九])\s*月(?:份)?")
# Nearly no turn names a time: an ASCII one is asked of hyperscan first (every Chinese phrase needs a CJK
# character, so only the English one can match there), and re reads only those that hold a phrase.
_EN_GATE = AsciiGate(_EN_PHRASE.pattern, ignore_case=True)


def mentioned_windows(text: str, at: float, tz: tzinfo | None = None) -> list[tuple[float, float]]:
    """The [start, end) windows ``text`` mentions, resolved as of ``at`` (the turn's own time)."""
    if not text or not _EN_GATE.may_match(text):
        return []
    cal = _Calendar(at, tz)
    found: list[tuple[float, float]] = []
    phrases = [m.group(0) for m in _EN_PHRASE.finditer(text)] + [m.group(0) for m in _ZH_PHRASE.finditer(text)]
    for phrase in phrases:
        phrase = re.sub(r"(?i)^last\s+night$", "yesterday", phrase)
        try:
            window = _window_of(phrase, cal)
        except (OverflowError, ValueError):
            window = None
        if window is None or window.contains(at) or window.start > at:
            continue       # not a time, the turn's own day / week, or still to come
        if window.end - window.start > LONGEST_DAYS * 86400:
            continue
        pair = (window.start, window.end)
        if pair not in found:
            found.append(pair)
        if len(found) == MAX_MENTIONS:
            break
    return found


def index_mentioned_times(conn: Any, inserted: Sequence[tuple[int, Any]], tz: tzinfo | None = None) -> int:
    """Write the mentioned windows of just inserted events (``(rowid, event)``); inside the write transaction."""
    rows = [(rowid, start, end) for rowid, event in inserted if event.event_type == "CHAT_MESSAGE"
            for start, end in mentioned_windows(event.content, event.timestamp, tz)]
    if rows:
        add_mentioned_times(conn, rows)
    return len(rows)
