"""Temporal intent of a question, evaluated as of ``now`` (DESIGN §5).

Relative times ("yesterday", "last week", "last Wednesday", "in March",
"3 days ago", "上周三", "最近") become a window [start, end); anchored ones
("before the air fryer", "买空气炸锅前") become an :class:`Anchor` the engine
resolves to an event's time. Weeks start on Monday; days follow the given
timezone (the machine's by default), because "yesterday" is the user's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    label: str

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
            {"start": self.window.start, "end": self.window.end, "label": self.window.label},
            "anchor": None if self.anchor is None else
            {"direction": self.anchor.direction, "phrase": self.anchor.phrase},
            "recent": self.recent,
        }


_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_WEEKDAYS = {d: i for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                           "sunday"])}
_ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
              "日": 7, "天": 7}
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_NAMES = "|".join(_WEEKDAYS)
_COUNT = r"(\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"

_EN_ANCHOR = re.compile(
    r"\b(before|after|prior\s+to|since|earlier\s+than|later\s+than)\s+(?!(?:today|yesterday|now|then|that|this|"
    r"last|next|the\s+(?:day|week|month|year)\b))((?:(?:the|my|our|a|an|i|we|he|she|they)\s+)?[^,.?!;]{2,60}"
    r"(?:,\s*\d{4}\b)?)",
    re.IGNORECASE,
)
_ZH_ANCHOR = re.compile(r"(?:在)([^，,。？?！!；;]{1,20}?)(之前|以前|之后|以后|前|后)"
                        r"|([^，,。？?！!；;在]{1,20}?)(之前|以前|之后|以后)")


def _midnight(day: date, tz: tzinfo) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=tz).timestamp()


def _day_window(day: date, tz: tzinfo, label: str, days: int = 1) -> Window:
    return Window(_midnight(day, tz), _midnight(day + timedelta(days=days), tz), label)


def _month_window(year: int, month: int, tz: tzinfo, label: str) -> Window:
    first = date(year, month, 1)
    following = date(year + (month == 12), month % 12 + 1, 1)
    return Window(_midnight(first, tz), _midnight(following, tz), label)


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word, 1)


def _most_recent_month(today: date, month: int, year: int | None) -> int:
    if year is not None:
        return year
    return today.year if month <= today.month else today.year - 1


def _english_window(text: str, today: date, tz: tzinfo) -> Window | None:
    t = text.lower()
    if re.search(r"\bday before yesterday\b", t):
        return _day_window(today - timedelta(days=2), tz, "the day before yesterday")
    if re.search(r"\byesterday\b", t):
        return _day_window(today - timedelta(days=1), tz, "yesterday")
    if re.search(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", t):
        return _day_window(today, tz, "today")
    m = re.search(rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b", t)
    if m:
        n, unit = _count(m.group(1)), m.group(2)
        if unit == "day":
            return _day_window(today - timedelta(days=n), tz, f"{n} days ago")
        if unit == "week":
            monday = today - timedelta(days=today.weekday() + 7 * n)
            return _day_window(monday, tz, f"{n} weeks ago", days=7)
        if unit == "month":
            month_index = today.year * 12 + today.month - 1 - n
            return _month_window(month_index // 12, month_index % 12 + 1, tz, f"{n} months ago")
        return Window(_midnight(date(today.year - n, 1, 1), tz), _midnight(date(today.year - n + 1, 1, 1), tz),
                      f"{n} years ago")
    m = re.search(rf"\b(?:in\s+the\s+)?(?:last|past)\s+{_COUNT}\s+(day|week|month)s?\b", t)
    if m:
        n, unit = _count(m.group(1)), m.group(2)
        days = {"day": 1, "week": 7, "month": 30}[unit] * n
        return Window(_midnight(today - timedelta(days=days - 1), tz),
                      _midnight(today + timedelta(days=1), tz), f"last {n} {unit}s")
    m = re.search(rf"\b(?:last|on|this past)\s+({_WEEKDAY_NAMES})\b", t)
    if m:
        back = (today.weekday() - _WEEKDAYS[m.group(1)]) % 7 or 7
        return _day_window(today - timedelta(days=back), tz, f"last {m.group(1)}")
    if re.search(r"\blast weekend\b", t):
        saturday = today - timedelta(days=today.weekday() + 2)
        return _day_window(saturday, tz, "last weekend", days=2)
    if re.search(r"\blast week\b", t):
        return _day_window(today - timedelta(days=today.weekday() + 7), tz, "last week", days=7)
    if re.search(r"\bthis week\b", t):
        return _day_window(today - timedelta(days=today.weekday()), tz, "this week", days=7)
    if re.search(r"\blast month\b", t):
        year, month = (today.year, today.month - 1) if today.month > 1 else (today.year - 1, 12)
        return _month_window(year, month, tz, "last month")
    if re.search(r"\bthis month\b", t):
        return _month_window(today.year, today.month, tz, "this month")
    if re.search(r"\blast year\b", t):
        return Window(_midnight(date(today.year - 1, 1, 1), tz), _midnight(date(today.year, 1, 1), tz), "last year")
    if re.search(r"\bthis year\b", t):
        return Window(_midnight(date(today.year, 1, 1), tz), _midnight(date(today.year + 1, 1, 1), tz), "this year")
    m = re.search(rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", t) or \
        re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\.?(?:,?\s+(\d{{4}}))?\b", t)
    if m:
        first, second, year = m.groups()
        month, day = (_MONTHS[first], int(second)) if first in _MONTHS else (_MONTHS[second], int(first))
        try:
            when = date(_most_recent_month(today, month, int(year) if year else None), month, day)
        except ValueError:
            when = None
        if when is not None:
            return _day_window(when, tz, when.isoformat())
    m = re.search(rf"\b(?:in|during|since)?\s*({_MONTH_NAMES})\b(?:\s+(\d{{4}}))?", t)
    if m and (m.group(1) != "may" or m.group(2) or re.search(r"\b(?:in|during)\s+may\b", t)):
        month = _MONTHS[m.group(1)]
        year = _most_recent_month(today, month, int(m.group(2)) if m.group(2) else None)
        return _month_window(year, month, tz, f"{year}-{month:02d}")
    m = re.search(r"\b(?:in|during)\s+((?:19|20)\d{2})\b", t)
    if m:
        year = int(m.group(1))
        return Window(_midnight(date(year, 1, 1), tz), _midnight(date(year + 1, 1, 1), tz), str(year))
    return None


def _chinese_window(text: str, today: date, tz: tzinfo) -> Window | None:
    if "前天" in text:
        return _day_window(today - timedelta(days=2), tz, "前天")
    if "昨天" in text or "昨晚" in text:
        return _day_window(today - timedelta(days=1), tz, "昨天")
    if "今天" in text or "今晚" in text:
        return _day_window(today, tz, "今天")
    m = re.search(r"(\d+|[一二两三四五六七八九十])\s*(天|周|个?星期|个月|年)前", text)
    if m:
        raw = m.group(1)
        n = int(raw) if raw.isdigit() else _ZH_DIGITS[raw]
        unit = m.group(2)
        if unit == "天":
            return _day_window(today - timedelta(days=n), tz, f"{n}天前")
        if unit in ("周", "星期", "个星期"):
            return _day_window(today - timedelta(days=today.weekday() + 7 * n), tz, f"{n}周前", days=7)
        if unit == "个月":
            index = today.year * 12 + today.month - 1 - n
            return _month_window(index // 12, index % 12 + 1, tz, f"{n}个月前")
        return Window(_midnight(date(today.year - n, 1, 1), tz), _midnight(date(today.year - n + 1, 1, 1), tz),
                      f"{n}年前")
    m = re.search(r"(上|这|本)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])", text)
    if m:
        target = _ZH_DIGITS[m.group(2)] - 1
        monday = today - timedelta(days=today.weekday() + (7 if m.group(1) == "上" else 0))
        return _day_window(monday + timedelta(days=target), tz, m.group(0))
    if re.search(r"上(?:个)?(?:周|星期|礼拜)", text):
        return _day_window(today - timedelta(days=today.weekday() + 7), tz, "上周", days=7)
    if re.search(r"(?:这|本)(?:个)?(?:周|星期|礼拜)", text):
        return _day_window(today - timedelta(days=today.weekday()), tz, "本周", days=7)
    if re.search(r"上(?:个)?月", text):
        year, month = (today.year, today.month - 1) if today.month > 1 else (today.year - 1, 12)
        return _month_window(year, month, tz, "上个月")
    if re.search(r"(?:这|本)(?:个)?月", text):
        return _month_window(today.year, today.month, tz, "本月")
    if "去年" in text:
        return Window(_midnight(date(today.year - 1, 1, 1), tz), _midnight(date(today.year, 1, 1), tz), "去年")
    if "今年" in text:
        return Window(_midnight(date(today.year, 1, 1), tz), _midnight(date(today.year + 1, 1, 1), tz), "今年")
    m = re.search(r"(?:(\d{4})\s*年)?\s*(\d{1,2}|十[一二]?|[一二三四五六七八九十])\s*月"
                  r"(?:\s*(\d{1,2})\s*[日号])?", text)
    if m:
        raw = m.group(2)
        month = int(raw) if raw.isdigit() else (10 + _ZH_DIGITS.get(raw[-1], 0) if raw.startswith("十") and
                                                len(raw) > 1 else _ZH_DIGITS[raw])
        if 1 <= month <= 12:
            year = _most_recent_month(today, month, int(m.group(1)) if m.group(1) else None)
            if m.group(3):
                try:
                    when = date(year, month, int(m.group(3)))
                    return _day_window(when, tz, when.isoformat())
                except ValueError:
                    pass
            return _month_window(year, month, tz, f"{year}-{month:02d}")
    m = re.search(r"((?:19|20)\d{2})\s*年", text)
    if m:
        year = int(m.group(1))
        return Window(_midnight(date(year, 1, 1), tz), _midnight(date(year + 1, 1, 1), tz), f"{year}年")
    return None


def _anchor(text: str) -> Anchor | None:
    m = _EN_ANCHOR.search(text)
    if m:
        word = m.group(1).lower()
        direction = "before" if word.startswith(("before", "prior", "earlier")) else "after"
        phrase = re.sub(r"^(?:the|my|our|a|an)\s+", "", m.group(2).strip(), flags=re.IGNORECASE)
        phrase = re.sub(r"\s+(?:did|do|was|were|have|had)\b.*$", "", phrase, flags=re.IGNORECASE)
        if phrase:
            return Anchor(direction, phrase)
    for m in _ZH_ANCHOR.finditer(text):
        phrase = (m.group(1) or m.group(3) or "").strip()
        marker = m.group(2) or m.group(4)
        if not phrase or re.fullmatch(r"[\d一二两三四五六七八九十几]+\s*(?:天|周|个?星期|个月|年)?", phrase):
            continue  # "三天前" is a window, not an anchor
        return Anchor("before" if marker in ("之前", "以前", "前") else "after", phrase)
    return None


def parse_temporal(text: str, now: float, tz: tzinfo | None = None) -> TemporalIntent:
    """The time window, anchor and recency a question asks about, as of ``now``."""
    tz = tz or datetime.now().astimezone().tzinfo or timezone.utc
    today = datetime.fromtimestamp(now, tz).date()
    anchor = _anchor(text)
    window = None
    if anchor is not None:
        # "before April 10, 2023" bounds time by a date, not by an event.
        date_window = _english_window(anchor.phrase, today, tz) or _chinese_window(anchor.phrase, today, tz)
        if date_window is not None:
            window = (Window(0.0, date_window.start, f"before {date_window.label}") if anchor.direction == "before"
                      else Window(date_window.end, now + 1, f"after {date_window.label}"))
            anchor = None
    window = window or _english_window(text, today, tz) or _chinese_window(text, today, tz)
    # "Recently" is a preference for newer evidence, not a cut-off: how recent is recent depends on the topic.
    recent = bool(re.search(r"\b(?:recently|lately|these days|latest|most recent)\b|最近|近来|这段时间", text,
                            re.IGNORECASE))
    if window is not None and window.start > now:
        window = None  # "in December" asked in March of the same year means last December; never the future
    return TemporalIntent(window=window, anchor=anchor, recent=recent)
