"""Reading one iCalendar file defensively: each event alone, every expansion bounded.

A calendar file is many independent events; one of them being broken (an impossible DTSTART, a
negative COUNT, a rule that does not parse, a TZID nobody defines) must cost that event only. So the
file is parsed once, its VEVENTs are grouped into series (a UID's master and its moved occurrences),
each series is checked and then expanded on its own by ``recurring_ical_events``; a series that fails
is reported through ``skip(reason, detail)`` and the others are read.

Expansion is bounded three ways, because a recurrence rule is a tiny program:

* **occurrences** — at most ``per_event`` per series in the window, ``per_file`` per file;
* **rule steps** — dateutil walks a rule from its DTSTART, so ``FREQ=SECONDLY`` from 2000 takes ~820M
  steps to reach 2026. Before expanding, each rule is walked lazily here (no cache, nothing kept)
  up to the window's end, at most ``steps_per_event`` steps and ``steps_per_file`` per file: a rule
  that reaches its cap in the window is expanded only up to its last allowed occurrence; one that
  cannot reach the window is not expanded. The library then walks the same, bounded, distance;
* **time** — a rule whose days never match (February 30th, every second) makes dateutil search day
  by day to year 9999 without yielding (~6 s). A yearly probe of the same day filters finds that in
  ~0.2 s and the rule is dropped (the event keeps its DTSTART occurrence, as the library gives it);
  what no probe sees is caught by ``seconds_per_file``, after which the remaining recurring series
  are skipped. A rule found to have no occurrence at all is dropped before the library walks it again.

Time zones: a TZID comes from the file's VTIMEZONE whatever it is called, or the tz database (icalendar);
one nobody defines is skipped (``unknown_timezone``), never read as UTC. A calendar's X-WR-TIMEZONE (Google)
goes with each of its series into the expansion, which applies it. Floating times and all-day dates are read
in the machine's zone (:func:`epoch`).

Events without a rule cost nothing to expand: they are read first and never refused for time or steps,
so hostile neighbours cannot crowd them out. Everything cut is counted as ``expansion_capped``, once per
series.
"""

from __future__ import annotations

import threading
import time
import zoneinfo
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone, tzinfo

import icalendar
import recurring_ical_events
from dateutil.rrule import DAILY, rrulestr
from recurring_ical_events.errors import BadRuleStringFormat, PeriodEndBeforeStart

# Bounds of one file's expansion (issue 16). A calendar's events recur at most hourly in practice: the
# per-event cap lets an hourly event fill the window (1,100 for the default 44 days), at least 1,000.
PER_EVENT_PER_DAY = 25
MIN_PER_EVENT = 1000
MAX_OCCURRENCES_PER_FILE = 10_000
MAX_STEPS_PER_EVENT = 200_000          # a daily rule from 1500 is ~192k steps; hourly from 2004 ~193k
MAX_STEPS_PER_FILE = 1_000_000
MAX_SECONDS_PER_FILE = 20.0
MAX_FILE_BYTES = 25 * 1024 * 1024      # icalendar holds the parsed file at ~10-25× its size (15 MB: 333 MB)
_DATE_PROPERTIES = ("DTSTART", "DTEND", "DUE", "RECURRENCE-ID", "EXDATE", "RDATE")

Skip = Callable[[str, str], None]
_PARSING = threading.Lock()      # icalendar's time-zone cache is one per process (see parse())


@dataclass
class Bounds:
    per_event: int
    per_file: int = MAX_OCCURRENCES_PER_FILE
    steps_per_event: int = MAX_STEPS_PER_EVENT
    steps_per_file: int = MAX_STEPS_PER_FILE
    seconds_per_file: float = MAX_SECONDS_PER_FILE

    @classmethod
    def for_window(cls, days: float, **overrides) -> Bounds:
        return cls(per_event=max(MIN_PER_EVENT, int(days * PER_EVENT_PER_DAY)), **overrides)


@dataclass
class FileReading:
    """What reading one file cost: the occurrences yielded and the rule steps walked."""

    occurrences: int = 0
    steps: int = 0
    started: float = field(default_factory=time.monotonic)


class Unreadable(Exception):
    """The file is not an iCalendar file at all (or not yet: being written); nothing in it was read."""


def parse(data: bytes) -> list[icalendar.Calendar]:
    """The calendars of a file (a file may hold several)."""
    if len(data) > MAX_FILE_BYTES:
        raise Unreadable(f"larger than {MAX_FILE_BYTES // 2**20} MB")
    if not data.rstrip().upper().endswith(b"END:VCALENDAR"):
        # icalendar returns no calendar at all for a file cut short, without a word.
        raise Unreadable("does not end with END:VCALENDAR: cut short, or still being written")
    try:
        with _PARSING:
            # icalendar keeps every VTIMEZONE it parses for the rest of the process, by TZID, the first one
            # winning — and Outlook calls each zone of its own "Customized Time Zone". Forgotten before each file,
            # a TZID means what this file's VTIMEZONE says (or the tz database), never what another file said.
            icalendar.use_zoneinfo()
            calendars = list(icalendar.Calendar.from_ical(data, multiple=True))
    except Exception as exc:  # noqa: BLE001 - icalendar raises ValueError, IndexError, KeyError …
        raise Unreadable(f"{type(exc).__name__}: {str(exc)[:120]}") from None
    if not calendars:
        raise Unreadable("no VCALENDAR in it")
    return calendars


@dataclass
class Series:
    """A UID's VEVENTs — its master and its RECURRENCE-ID overrides — and the X-WR-TIMEZONE of its calendar."""

    components: list[icalendar.Component]
    x_wr_timezone: str | None = None


def series_of(calendars: Iterable[icalendar.Component]) -> tuple[list[Series], list]:
    """(each series of the file, the file's VTIMEZONEs)."""
    groups: dict[str, Series] = {}
    timezones = []
    for calendar in calendars:
        # Google and others declare the zone of the calendar's floating and UTC times here, not in a VTIMEZONE;
        # one that names no zone is left out, and its floating times are the machine's (see epoch()).
        zone = _known_zone(calendar.get("X-WR-TIMEZONE"))
        for component in calendar.subcomponents:
            if component.name == "VTIMEZONE":
                timezones.append(component)
            elif component.name == "VEVENT":
                uid = str(component.get("UID") or f"\0no-uid-{len(groups)}")
                groups.setdefault(uid, Series([], zone)).components.append(component)
    return list(groups.values()), timezones


def _known_zone(name) -> str | None:
    if name is None:
        return None
    try:
        zoneinfo.ZoneInfo(str(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):     # OSError: "America", a folder
        return None
    return str(name)


def problem(component: icalendar.Component) -> tuple[str, str] | None:
    """(reason, what) when a VEVENT cannot be expanded as written."""
    broken = dict(component.errors)
    if "DTSTART" not in component:
        return "missing_dtstart", "no DTSTART"
    if "DTSTART" in broken:
        return "bad_dtstart", f"DTSTART: {broken['DTSTART']}"
    if not isinstance(getattr(component["DTSTART"], "dt", None), date):    # datetime is a date too
        return "bad_dtstart", "DTSTART is not a date or a date-time"
    for name, error in broken.items():
        if name in _DATE_PROPERTIES:
            return "bad_date", f"{name}: {error}"
        if name in ("RRULE", "EXRULE"):
            return "bad_rrule", f"{name}: {error}"
    for name in _DATE_PROPERTIES:
        for prop in _as_list(component.get(name)):
            tzid = getattr(prop, "params", {}).get("TZID")
            if tzid and any(_naive(value) for value in _values(prop)):
                # icalendar resolves a TZID from the file's VTIMEZONE or the tz database; what is left naive
                # is a zone nobody defines. Reading it as UTC would move the event by hours, silently.
                return "unknown_timezone", f"{name};TZID={tzid}"
    end = getattr(component.get("DTEND"), "dt", None)
    if isinstance(end, date) and _utc_naive(end) < _utc_naive(_start(component)):
        return "bad_date", "DTEND before DTSTART"
    for rule in _as_list(component.get("RRULE")):
        for part in ("COUNT", "INTERVAL"):
            values = rule.get(part) or []
            if any(not isinstance(v, int) or v <= 0 for v in values):
                return "bad_rrule", f"RRULE {part}={','.join(map(str, values))}"
    return None


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _values(prop) -> list:
    if hasattr(prop, "dts"):
        return [getattr(item, "dt", item) for item in prop.dts]
    value = getattr(prop, "dt", None)
    return [value[0] if isinstance(value, tuple) else value]


def _start(component: icalendar.Component) -> date:
    """DTSTART's value: a date or a date-time (problem() refuses a VEVENT whose DTSTART is neither)."""
    return getattr(component["DTSTART"], "dt")  # noqa: B009 - icalendar types a property as any of 30 kinds


def _naive(value) -> bool:
    return isinstance(value, datetime) and value.tzinfo is None


def _utc_naive(value) -> datetime:
    """A date or date-time on one comparable scale: naive UTC (floating times and dates as UTC)."""
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value
    return datetime(value.year, value.month, value.day)


_DAY_FILTERS = ("BYMONTH", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO", "BYDAY")
_EVERY_WEEKDAY = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]


def _days_never_match(rule: icalendar.vRecur, parsed, dtstart: datetime) -> bool:
    """True when a daily-or-finer rule's day filters match no day at all: the same filters as a yearly
    rule (whose days are the whole year) that finds no first occurrence. Every weekday is allowed when
    the rule names none, so the yearly rule does not default to DTSTART's day of the month."""
    if parsed._freq < DAILY or not any(rule.get(part) for part in _DAY_FILTERS):
        return False
    probe = icalendar.vRecur({part: rule[part] for part in _DAY_FILTERS if rule.get(part)})
    probe.setdefault("BYDAY", _EVERY_WEEKDAY)
    probe["FREQ"], probe["COUNT"] = ["YEARLY"], [1]
    return next(iter(rrulestr(probe.to_ical().decode(), dtstart=dtstart, cache=False)), None) is None


@dataclass
class Reach:
    cutoff: datetime | None = None      # expand only up to here (naive UTC); None: the whole window
    steps: int = 0
    capped: str | None = None           # why the series was cut, when it was
    unreachable: bool = False           # the cap was hit before the window: nothing to expand
    empty_rules: list[int] = field(default_factory=list)   # rules with no occurrence at all


def reach(master: icalendar.Component, start: datetime, end: datetime, bounds: Bounds, steps_left: int,
          deadline: float) -> Reach:
    """Walk the master's rules lazily up to the window's end within the bounds (see the module doc)."""
    result = Reach()
    dtstart = _utc_naive(_start(master))
    window_start, window_end = _utc_naive(start), _utc_naive(end)
    budget = min(bounds.steps_per_event, steps_left)
    for index, rule in enumerate(_as_list(master.get("RRULE"))):
        walked, in_window = 0, 0
        seen: datetime | None = None
        last_allowed: datetime | None = None
        # Naive UTC throughout (UNTIL read without its zone): a bound, not the expansion itself.
        parsed = rrulestr(rule.to_ical().decode(), dtstart=dtstart, ignoretz=True, cache=False)
        if _days_never_match(rule, parsed, dtstart):
            result.empty_rules.append(index)
            continue
        for occurrence in parsed:
            walked += 1
            seen = occurrence
            if occurrence > window_end:
                break
            if occurrence >= window_start:
                in_window += 1
                if in_window > bounds.per_event:
                    result.capped = f"more than {bounds.per_event} occurrences in the window"
                    _lower(result, last_allowed)
                    break
                last_allowed = occurrence
            if result.steps + walked >= budget or (walked % 1000 == 0 and time.monotonic() > deadline):
                result.capped = (f"more than {budget} rule steps" if result.steps + walked >= budget
                                 else "the file's time budget ran out")
                if occurrence < window_start:
                    result.unreachable = True
                else:
                    _lower(result, occurrence)
                break
        else:
            if seen is None:
                result.empty_rules.append(index)
        result.steps += walked
        if result.unreachable:
            break
    return result


def _lower(result: Reach, cutoff: datetime | None) -> None:
    if cutoff is not None:      # None: no occurrence was allowed before the cap, so none to cut at
        result.cutoff = cutoff if result.cutoff is None else min(result.cutoff, cutoff)


def occurrences(path_name: str, data: bytes, start: datetime, end: datetime, bounds: Bounds, skip: Skip,
                reading: FileReading | None = None) -> Iterator[icalendar.Component]:
    """Every occurrence of every readable series of a file in [start, end], within the bounds; each series
    left out or cut is reported to ``skip``. Raises :class:`Unreadable` when the file cannot be parsed."""
    reading = reading or FileReading()
    deadline = reading.started + bounds.seconds_per_file
    everything, timezones = series_of(parse(data))
    everything.sort(key=lambda s: _recurs(s.components))   # events without a rule first (stable: file order otherwise)
    for each in everything:
        group = each.components
        master = next((c for c in group if "RECURRENCE-ID" not in c), group[0])
        where = f"{path_name}: {str(master.get('UID', '(no UID)'))[:80]}"
        if reading.occurrences >= bounds.per_file or (_recurs(group) and (
                reading.steps >= bounds.steps_per_file or time.monotonic() > deadline)):
            skip("expansion_capped", f"{where}: the file's budget is spent")
            continue
        found = next((p for p in map(problem, group) if p), None)
        if found:
            skip(found[0], f"{where}: {found[1]}")
            continue
        try:
            walked = reach(master, start, end, bounds, bounds.steps_per_file - reading.steps, deadline)
        except Exception as exc:  # noqa: BLE001 - dateutil refuses the rule (BYSECOND=61, an empty rule …)
            skip("bad_rrule", f"{where}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        reading.steps += walked.steps
        if walked.empty_rules:
            skip("bad_rrule", f"{where}: a rule with no occurrence at all (kept: DTSTART alone)")
        if walked.unreachable:
            skip("expansion_capped", f"{where}: {walked.capped} before the window")
            continue
        stop = end if walked.cutoff is None else min(end, walked.cutoff.replace(tzinfo=timezone.utc)
                                                     + timedelta(seconds=1))
        try:
            found_here = _expand(each, timezones, walked.empty_rules, master, start, stop)
        except Exception as exc:  # noqa: BLE001 - whatever the library trips on costs this series only
            skip(_reason_of(exc), f"{where}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        room = min(bounds.per_event, bounds.per_file - reading.occurrences)
        if walked.capped or len(found_here) > room:
            skip("expansion_capped", f"{where}: {walked.capped or f'more than {room} occurrences'}")
        series = _recurs(group) or len(group) > 1 or any("RDATE" in component for component in group)
        for occurrence in found_here[:room]:
            reading.occurrences += 1
            if not series:
                # The expansion gives every occurrence a RECURRENCE-ID, a single event's too; its identity is
                # its UID alone, so a changed start is the same event moved (calendar.py's natural key).
                occurrence.pop("RECURRENCE-ID", None)
            else:
                _give_the_rules_start(occurrence, group)
            yield occurrence


def _recurs(group: list[icalendar.Component]) -> bool:
    return any("RRULE" in component for component in group)


def _give_the_rules_start(occurrence: icalendar.Component, group: list[icalendar.Component]) -> None:
    """An occurrence that a ``RECURRENCE-ID;RANGE=THISANDFUTURE`` override moved comes out of the expansion with
    that override's RECURRENCE-ID, as every later one does: give it back the start its rule gave it (its own
    RECURRENCE-ID), so each keeps its own natural key instead of all superseding one another."""
    recurrence = occurrence.get("RECURRENCE-ID")
    if recurrence is None or str(recurrence.params.get("RANGE", "")).upper() != "THISANDFUTURE":
        return
    moved_from = getattr(recurrence, "dt", None)
    override = next((c for c in group if getattr(c.get("RECURRENCE-ID"), "dt", None) == moved_from), None)
    if override is None or "DTSTART" not in override or not isinstance(moved_from, date):
        return
    # The expansion moved each later occurrence by the override's own shift (RFC 5545 §3.8.4.4): undo it.
    moved_by = _difference(_start(override), moved_from)
    occurrence["RECURRENCE-ID"] = icalendar.vDDDTypes(_start(occurrence) - moved_by)


def _difference(later: date, earlier: date) -> timedelta:
    """``later - earlier``, also between a date and a date-time, or an aware and a floating one (as naive UTC)."""
    times = (isinstance(later, datetime), isinstance(earlier, datetime))
    if times == (False, False) or (times == (True, True) and _naive(later) == _naive(earlier)):
        return later - earlier
    return _utc_naive(later) - _utc_naive(earlier)


def _expand(series: Series, timezones, empty_rules, master, start, stop) -> list:
    calendar = icalendar.Calendar()
    if series.x_wr_timezone:
        calendar.add("X-WR-TIMEZONE", series.x_wr_timezone)      # the library applies it (x_wr_timezone)
    for component in timezones:
        calendar.add_component(component)
    for component in series.components:
        if component is master and empty_rules:
            # A rule without any occurrence would send dateutil to year 9999 a second time.
            component = component.copy()
            kept = [r for i, r in enumerate(_as_list(master.get("RRULE"))) if i not in empty_rules]
            component.pop("RRULE")
            for rule in kept:
                component.add("RRULE", rule)
        calendar.add_component(component)
    found = recurring_ical_events.of(calendar).between(start, stop)
    return sorted(found, key=lambda c: _utc_naive(c["DTSTART"].dt))


def _reason_of(exc: Exception) -> str:
    if isinstance(exc, BadRuleStringFormat):
        return "bad_rrule"
    if isinstance(exc, PeriodEndBeforeStart):
        return "bad_date"
    return "bad_event"


def epoch(value, local: tzinfo | None = None) -> tuple[float, bool]:
    """(UNIX seconds, all-day?) of an iCalendar date or date-time.

    A floating time (no zone, no TZID, no X-WR-TIMEZONE) and an all-day date mean the same wall-clock time
    wherever the user is (RFC 5545 §3.3.5, §3.3.4): they are read in ``local``, the machine's zone when None
    (DST-aware), so "tomorrow" asked on this machine finds tomorrow's all-day trip, not the evening before."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=local) if local is not None else value.astimezone()
        return value.timestamp(), False
    if isinstance(value, date):
        midnight = datetime(value.year, value.month, value.day)
        return (midnight.replace(tzinfo=local) if local is not None else midnight.astimezone()).timestamp(), True
    raise ValueError(f"not a date: {value!r}")
