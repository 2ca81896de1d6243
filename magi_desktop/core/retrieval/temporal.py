"""Temporal intent of a question, evaluated as of ``now`` (architecture §5).

Relative times ("yesterday", "last week", "last Wednesday", "in March",
"3 days ago", "上周三") become a window [start, end); a boundary ("before last
week", "since March", "after 2020", "before April 10, 2023") becomes an
open-ended window; an event boundary ("before the air fryer", "买空气炸锅前")
becomes an :class:`Anchor` that the engine resolves to the event's time.
"Recently" / "最近" prefer newer evidence without cutting any off.

Days follow the given timezone, or the machine's local time (with its DST
rules) when none is given, because "yesterday" is the user's yesterday.
Weeks start on Monday.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

EPOCH = 0.0


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    label: str
    ahead: bool = False     # a window after now, where only plans live (schedule.py)

    def contains(self, ts: float) -> bool:
        return self.start <= ts < self.end


@dataclass(frozen=True)
class Anchor:
    direction: str  # "before" | "after"
    phrase: str


@dataclass(frozen=True)
class TemporalIntent:
    window: Window | None = None
    anchor: Anchor | None = None
    recent: bool = False

    @property
    def present(self) -> bool:
        return self.window is not None or self.anchor is not None

    def to_dict(self) -> dict:
        return {
            "window": None if self.window is None else
            {"start": self.window.start, "end": self.window.end, "label": self.window.label,
             **({"ahead": True} if self.window.ahead else {})},
            "anchor": None if self.anchor is None else
            {"direction": self.anchor.direction, "phrase": self.anchor.phrase},
            "recent": self.recent,
        }


_FULL_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december"]
_MONTHS = {m: i for i, m in enumerate(_FULL_MONTHS, start=1)}
_ABBREVIATIONS = {m[:3]: i for m, i in _MONTHS.items() if m != "may"} | {"sept": 9}
_ALL_MONTHS = _MONTHS | _ABBREVIATIONS
_WEEKDAYS = {d: i for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                           "sunday"])}
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "few": 3, "several": 3}
_ANY_MONTH = "|".join(sorted(_ALL_MONTHS, key=len, reverse=True))
_FULL_MONTH = "|".join(_FULL_MONTHS)
_WEEKDAY_NAMES = "|".join(_WEEKDAYS)
_COUNT = r"(\d+|a couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
# Bounded, and digits only from the start of a run: "\d+" tried at every digit of a long run of digits is
# quadratic (a 20,000-digit question took 25 s); a count of more than nine digits is no time anyway.
_ZH_NUMBER = r"((?<!\d)\d{1,9}|[零一二两三四五六七八九十百]{1,12}|几)"
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
WEEKDAYS, ZH_WEEKDAYS = _WEEKDAYS, _ZH_WEEKDAY      # for schedule.py's days still to come

_EN_BOUNDARY = re.compile(
    r"\b(before|(?<!day )after|prior\s+to|since|earlier\s+than|later\s+than|until|till)\s+"
    r"((?:(?:the|my|our|a|an|i|we|he|she|they)\s+)?[^,.?!;]{2,60}(?:,\s*\d{4}\b)?)",
    re.IGNORECASE,
)
# 在X前 / X之前 / X以后 … ; a bare "X前" only where 前 is not part of a word.
_ZH_BOUNDARY = re.compile(
    r"(?:在)?([^，,。？?！!；;在]{1,20}?)(之前|以前|之后|以后)"
    r"|(?:在)?([^，,。？?！!；;在]{2,20}?)(?<![目提从眼当面空生以之然最随背落向往跟])(前|后)(?![面天年途景后来])"
)
# Words that cannot be an event to anchor on.
_NOT_AN_EVENT = re.compile(
    r"^(?:i|we|you|he|she|they|it|me|us|them|when|what|then|that|this|那|这|我|你|他|她|它|我们|你们|他们|谁|什么)$",
    re.IGNORECASE,
)
_RECENT = re.compile(r"\b(?:recently|lately|these days|latest|most recent)\b|最近|近来|这段时间", re.IGNORECASE)


# Parts of a day, local hours: "this morning", "this afternoon", "this evening" / "tonight", 今天上午 …
_DAY_PARTS = {"morning": (5, 12), "afternoon": (12, 18), "evening": (18, 24)}


class _Calendar:
    """Day arithmetic in one timezone (or local time)."""

    def __init__(self, now: float, tz: tzinfo | None):
        self.tz = tz
        self.now = now
        self.today = (datetime.fromtimestamp(now, tz) if tz else datetime.fromtimestamp(now)).date()

    def midnight(self, day: date) -> float:
        # A naive datetime's .timestamp() uses the local zone's rules for that day (DST included).
        return datetime(day.year, day.month, day.day, tzinfo=self.tz).timestamp()

    def days(self, first: date, count: int, label: str) -> Window:
        return Window(self.midnight(first), self.midnight(first + timedelta(days=count)), label)

    def month(self, year: int, month: int, label: str) -> Window:
        following = date(year + (month == 12), month % 12 + 1, 1)
        return Window(self.midnight(date(year, month, 1)), self.midnight(following), label)

    def year(self, year: int, label: str) -> Window:
        return Window(self.midnight(date(year, 1, 1)), self.midnight(date(year + 1, 1, 1)), label)

    def part_of(self, day: date, hours: tuple[int, int], label: str) -> Window:
        """A part of a day ("this morning": 05:00–12:00 local time)."""
        start = self.midnight(day)
        return Window(start + hours[0] * 3600, start + hours[1] * 3600, label)

    def months_back(self, n: int, label: str) -> Window:
        index = self.today.year * 12 + self.today.month - 1 - n
        return self.month(index // 12, index % 12 + 1, label)

    def week_of(self, weeks_back: int, label: str) -> Window:
        monday = self.today - timedelta(days=self.today.weekday() + 7 * weeks_back)
        return self.days(monday, 7, label)

    def past(self, days: int, label: str) -> Window:
        """The last ``days`` days, today included."""
        return Window(self.midnight(self.today - timedelta(days=days - 1)), self.midnight(self.today + timedelta(1)),
                      label)

    def latest_year_for(self, month: int, day: int = 1) -> int:
        """The year of the most recent <month> (<day>) not after today."""
        return self.today.year if (month, day) <= (self.today.month, self.today.day) else self.today.year - 1


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word, 1)


def chinese_number(text: str) -> int | None:
    """十五 -> 15, 二十 -> 20, 两 -> 2, 3 -> 3; None for anything else (几 included)."""
    if text.isdigit():
        return int(text)
    digits = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
    total, current = 0, 0
    for ch in text:
        if ch in digits:
            current = digits[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        else:
            return None
    return total + current or None


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _english_window(text: str, cal: _Calendar) -> Window | None:
    t = text.lower()
    today = cal.today
    if re.search(r"\bday before yesterday\b", t):
        return cal.days(today - timedelta(days=2), 1, "the day before yesterday")
    if re.search(r"\byesterday\b", t):
        return cal.days(today - timedelta(days=1), 1, "yesterday")
    part = re.search(r"\b(?:this (morning|afternoon|evening)|(tonight))\b", t)
    if part:
        name = part.group(1) or "evening"
        return cal.part_of(today, _DAY_PARTS[name], part.group(0))
    if re.search(r"\btoday\b", t):
        return cal.days(today, 1, "today")
    m = re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", t) or re.search(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b", t)
    if m:
        parts = [int(g) for g in m.groups()]
        when = _safe_date(*parts) if len(m.group(1)) == 4 else _safe_date(parts[2], parts[0], parts[1])
        if when:
            return cal.days(when, 1, when.isoformat())
    m = re.search(rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b", t)
    if m:
        n, unit = _count(m.group(1)), m.group(2)
        if unit == "day":
            return cal.days(today - timedelta(days=n), 1, f"{n} days ago")
        if unit == "week":
            return cal.week_of(n, f"{n} weeks ago")
        if unit == "month":
            return cal.months_back(n, f"{n} months ago")
        return cal.year(today.year - n, f"{n} years ago")
    m = re.search(rf"\b(?:in\s+the\s+)?(?:last|past)\s+(?:{_COUNT}\s+)?(day|week|month|year)s?\b", t)
    if m and (m.group(1) or not re.search(r"\blast\s+(?:week|month|year)\b", t)):
        n = _count(m.group(1)) if m.group(1) else 1
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[m.group(2)] * n
        return cal.past(days, f"the past {n} {m.group(2)}{'s' if n > 1 else ''}")
    m = re.search(rf"\bthis\s+({_WEEKDAY_NAMES})\b", t)
    if m and (_WEEKDAYS[m.group(1)] < today.weekday() or _WEEKDAYS[m.group(1)] == today.weekday()
              and not _weekday_ahead(text) and re.search(r"\b(?:did|was|were|happened)\b", t)):
        # "this Monday" asked on a Wednesday: this week's, two days ago (a day still to come: schedule.py)
        return cal.days(today - timedelta(days=today.weekday() - _WEEKDAYS[m.group(1)]), 1, f"this {m.group(1)}")
    m = re.search(rf"\b(last|on|this past)\s+({_WEEKDAY_NAMES})\b", t)
    if m and m.group(1) == "on" and _weekday_ahead(text):
        m = None        # "what's on Friday?": the coming one (schedule.future_window)
    if m:
        back = (today.weekday() - _WEEKDAYS[m.group(2)]) % 7 or 7
        return cal.days(today - timedelta(days=back), 1, f"last {m.group(2)}")
    if re.search(r"\blast weekend\b", t):
        return cal.days(today - timedelta(days=today.weekday() + 2), 2, "last weekend")
    if re.search(r"\bweek before last\b", t):
        return cal.week_of(2, "the week before last")
    if re.search(r"\blast week\b", t):
        return cal.week_of(1, "last week")
    if re.search(r"\bthis week\b", t):
        return cal.week_of(0, "this week")
    if re.search(r"\blast month\b", t):
        return cal.months_back(1, "last month")
    if re.search(r"\bthis month\b", t):
        return cal.months_back(0, "this month")
    if re.search(r"\blast year\b", t):
        return cal.year(today.year - 1, "last year")
    if re.search(r"\bthis year\b", t):
        return cal.year(today.year, "this year")
    m = re.search(rf"\b({_ANY_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", t) or \
        re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_ANY_MONTH})\.?(?:,?\s+(\d{{4}}))?\b", t)
    if m:
        first, second, year = m.groups()
        month, day = (_ALL_MONTHS[first], int(second)) if first in _ALL_MONTHS else (_ALL_MONTHS[second], int(first))
        when = _safe_date(int(year) if year else cal.latest_year_for(month, day), month, day)
        if when:
            return cal.days(when, 1, when.isoformat())
    # A month: full names need no context except "may"; abbreviations ("Jan") need "in"/"since" or a year.
    m = re.search(rf"\b(?:in|during|since|by)\s+({_ANY_MONTH})\b(?:\s+(\d{{4}}))?", t) or \
        re.search(rf"\b({_ANY_MONTH})\s+(\d{{4}})\b", t) or \
        re.search(rf"\b({_FULL_MONTH.replace('may|', '')})\b(?:\s+(\d{{4}}))?", t)
    if m:
        month = _ALL_MONTHS[m.group(1)]
        year = int(m.group(2)) if m.group(2) else cal.latest_year_for(month)
        return cal.month(year, month, f"{year}-{month:02d}")
    m = re.search(r"\b(?:in|during)\s+((?:19|20)\d{2})\b", t) or re.fullmatch(r"\s*((?:19|20)\d{2})\s*", t)
    if m:
        return cal.year(int(m.group(1)), m.group(1))
    return None


def _chinese_window(text: str, cal: _Calendar) -> Window | None:
    today = cal.today
    if "大前天" in text:
        return cal.days(today - timedelta(days=3), 1, "大前天")
    if "前天" in text:
        return cal.days(today - timedelta(days=2), 1, "前天")
    if "昨天" in text or "昨晚" in text:
        return cal.days(today - timedelta(days=1), 1, "昨天")
    part = re.search(r"(?:今天)?(上午|早上|早晨|下午|晚上)|(今晚)", text)
    if part and ("今天" in text or part.group(2)):
        name = {"上午": "morning", "早上": "morning", "早晨": "morning", "下午": "afternoon"}.get(part.group(1),
                                                                                            "evening")
        return cal.part_of(today, _DAY_PARTS[name], part.group(0))
    if "今天" in text:
        return cal.days(today, 1, "今天")
    m = re.search(rf"(?:过去|最近|近){_ZH_NUMBER}?\s*(天|周|个?星期|个月|年)", text)
    if m:
        n = chinese_number(m.group(1)) if m.group(1) else 1
        if n:
            days = {"天": 1, "周": 7, "星期": 7, "个星期": 7, "个月": 30, "年": 365}[m.group(2)] * n
            return cal.past(days, m.group(0))
    if "半年前" in text:
        return cal.months_back(6, "半年前")
    m = re.search(rf"{_ZH_NUMBER}\s*(天|周|个?星期|个月|年)(?:之)?前", text)
    if m:
        n = chinese_number(m.group(1))
        if n:
            unit = m.group(2)
            if unit == "天":
                return cal.days(today - timedelta(days=n), 1, m.group(0))
            if unit in ("周", "星期", "个星期"):
                return cal.week_of(n, m.group(0))
            if unit == "个月":
                return cal.months_back(n, m.group(0))
            return cal.year(today.year - n, m.group(0))
    m = re.search(r"(上上|上|这|本)?(?:个)?(?:周|星期|礼拜)([一二三四五六日天])", text)
    if m and m.group(1) is None and not re.search(r"了|过", text[m.end():]):
        m = None        # "周五有什么安排？": the coming one (schedule.future_window); "周一做了什么": this week's
    if m:
        weeks = {"上上": 2, "上": 1}.get(m.group(1), 0)
        monday = today - timedelta(days=today.weekday() + 7 * weeks)
        return cal.days(monday + timedelta(days=_ZH_WEEKDAY[m.group(2)]), 1, m.group(0))
    if re.search(r"上上(?:个)?(?:周|星期|礼拜)", text):
        return cal.week_of(2, "上上周")
    if re.search(r"上(?:个)?(?:周|星期|礼拜)", text):
        return cal.week_of(1, "上周")
    if re.search(r"(?:这|本)(?:个)?(?:周|星期|礼拜)(?!末)", text):     # 这个周末 is the weekend (schedule.py)
        return cal.week_of(0, "本周")
    if re.search(r"上(?:个)?月", text):
        return cal.months_back(1, "上个月")
    if re.search(r"(?:这|本)(?:个)?月", text):
        return cal.months_back(0, "本月")
    if "前年" in text:
        return cal.year(today.year - 2, "前年")
    if "去年" in text:
        return cal.year(today.year - 1, "去年")
    if "今年" in text:
        return cal.year(today.year, "今年")
    m = re.search(r"(?:(\d{4})\s*年\s*)?(\d{1,2}|十[一二]?|[一二三四五六七八九十])\s*月"
                  r"(?:\s*(\d{1,2})\s*[日号])?", text)
    if m:
        month = chinese_number(m.group(2))
        if month and 1 <= month <= 12:
            day = int(m.group(3)) if m.group(3) else 1
            year = int(m.group(1)) if m.group(1) else cal.latest_year_for(month, day)
            if m.group(3):
                when = _safe_date(year, month, day)
                if when:
                    return cal.days(when, 1, when.isoformat())
            return cal.month(year, month, f"{year}-{month:02d}")
    m = re.search(r"((?:19|20)\d{2})\s*年", text)
    if m:
        return cal.year(int(m.group(1)), m.group(0))
    return None


def _window_of(text: str, cal: _Calendar) -> Window | None:
    try:
        return _english_window(text, cal) or _chinese_window(text, cal)
    except (OverflowError, ValueError):
        return None     # "1234567890 天前", "the last 99999999999 days": no calendar holds that time


def _boundary(text: str, cal: _Calendar) -> tuple[Window | None, Anchor | None]:
    """A "before/after/since …" boundary: an open-ended window when it names a time, else an event anchor."""
    m = _EN_BOUNDARY.search(text)
    if m:
        word = m.group(1).lower()
        direction = "before" if word.startswith(("before", "prior", "earlier", "until", "till")) else "after"
        phrase = re.sub(r"^(?:the|my|our|a|an)\s+", "", m.group(2).strip(), flags=re.IGNORECASE)
        phrase = re.sub(r"\s+(?:did|do|does|was|were|have|had|is|are)\b.*$", "", phrase, flags=re.IGNORECASE)
        period = _window_of(phrase, cal) or _window_of(f"on {phrase}", cal)
        if period is not None:
            if direction == "before":
                return Window(EPOCH, period.start, f"before {period.label}"), None
            start = period.start if word == "since" else period.end
            return Window(start, cal.now + 1, f"{word} {period.label}"), None
        if phrase and not _NOT_AN_EVENT.match(phrase):
            return None, Anchor(direction, phrase)
    for m in _ZH_BOUNDARY.finditer(text):
        phrase = (m.group(1) or m.group(3) or "").strip()
        marker = m.group(2) or m.group(4)
        direction = "before" if marker in ("之前", "以前", "前") else "after"
        period = _window_of(phrase, cal)
        if period is not None:
            if direction == "before":
                return Window(EPOCH, period.start, f"{period.label}{marker}"), None
            return Window(period.end, cal.now + 1, f"{period.label}{marker}"), None
        if not phrase or _NOT_AN_EVENT.match(phrase) or re.fullmatch(
                rf"{_ZH_NUMBER}\s*(?:天|周|个?星期|个月|年)?|半年|几天", phrase):
            continue  # "三天前" is a window (parsed below), "我之前" is just "before"
        return None, Anchor(direction, phrase)
    return None, None


def _weekday_ahead(text: str) -> bool:
    from .schedule import weekday_ahead

    return weekday_ahead(text)


def _future_window(text: str, cal: _Calendar) -> Window | None:
    from .schedule import future_window  # schedule.py builds on this module's Window

    try:
        return future_window(text, cal)
    except (OverflowError, ValueError):
        return None


def parse_temporal(text: str, now: float, tz: tzinfo | None = None) -> TemporalIntent:
    """The time window, anchor and recency a question asks about, as of ``now``."""
    cal = _Calendar(now, tz)
    window, anchor = _boundary(text, cal)
    if window is None and anchor is None:
        window = _window_of(text, cal) or _future_window(text, cal)
    elif window is None and anchor is not None:
        window = _window_of(text.replace(anchor.phrase, " "), cal)
    recent = bool(_RECENT.search(text))
    if window is not None and window.start > now and not window.ahead:
        # A time still to come read as a past window ("这周五", asked on a Wednesday): the plans in it, if the
        # question names one as ahead; else nothing (it holds no memories yet).
        window = _future_window(text, cal)
    return TemporalIntent(window=window, anchor=anchor, recent=recent)
