"""A month of one person's life, built from real-format sources by the first-party collectors (issue 17).

The sources are what the collectors read on a real machine: an ``.ics`` file (a weekly series with an
exception, a past lunch, future appointments, then a second version of the file in which one meeting moved and
one class was cancelled), a Chromium ``History`` database, a Git repository and a zsh history, plus chat turns
through ``ingest``: the user's statements (two of them updated later in other words), requests, an assistant
recommendation, and turns from a task, a timer and a template that *claim* the user's wishes.

Times are relative to the real clock so the memory is asked as a user asks it, with ``now`` left out. The
questions are asked in a time zone whose local time is about 14:00, so "today" has a morning behind it and an
evening ahead whatever the hour the tests run.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path

import git
from magi_plugins.browser import BrowserHistory
from magi_plugins.calendar import CalendarFiles
from magi_plugins.git import GitActivity
from magi_plugins.terminal import TerminalHistory
from payloads import chat
from test_collector_browser import chromium_history as browser_history

from magi_desktop.collectors import Supervisor


def afternoon_zone(now: float) -> tzinfo:
    """A fixed-offset zone in which ``now`` is between 14:00 and 15:00."""
    hour = datetime.fromtimestamp(now, timezone.utc).hour
    return timezone(timedelta(hours=14 - hour))


@dataclass
class World:
    """The built memory's clock and what the tests need to name."""

    now: float
    tz: tzinfo
    forgotten: list[str] = field(default_factory=list)      # event ids forgotten by the user

    def at(self, day: int, hour: int, minute: int = 0) -> float:
        """UNIX seconds of ``hour:minute`` local time, ``day`` days from today."""
        local = datetime.fromtimestamp(self.now, self.tz)
        midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
        return (midnight + timedelta(days=day, hours=hour, minutes=minute)).timestamp()

    def ics_time(self, day: int, hour: int, minute: int = 0) -> str:
        return datetime.fromtimestamp(self.at(day, hour, minute), timezone.utc).strftime("%Y%m%dT%H%M%SZ")


# ------------------------------------------------------------------------------------------------ chat


def chat_turns(w: World) -> list[dict]:
    """(the payloads in time order) What the user and the agents said over the month."""
    turns = [
        (-20, 9, 0, "s-intro", "user", None, "I work at Acme Corp as a data engineer."),
        (-20, 9, 1, "s-intro", "user", None, "I live in Berlin, in a flat in Kreuzberg."),
        (-20, 9, 2, "s-intro", "user", None, "My cat Miso loves sleeping on my keyboard."),
        (-20, 9, 3, "s-intro", "user", None, "我在清华大学读本科。"),
        (-19, 20, 0, "s-lunch", "user", None, "Any lunch recommendations near the office?"),
        (-19, 20, 1, "s-lunch", "assistant", None,
         "I recommend trying Ichiran, the ramen place two blocks from the office."),
        (-15, 10, 0, "s-prefs", "user", None, "Always book me a window seat when I fly."),
        (-15, 10, 1, "s-prefs", "user", None, "Always send me reports as PDF, never as Word documents."),
        (-15, 10, 2, "s-prefs", "user", None, "以后开会请都安排在下午。"),
        (-14, 8, 0, "s-task", "user", "task_result",
         "Task finished: flights booked. The user wants aisle seats on all flights."),
        (-14, 8, 5, "s-task", "user", "timer", "Reminder: the user prefers aisle seats."),
        (-14, 8, 6, "s-task", "user", "template", "Template: the user always wants Word documents."),
        (-5, 19, 0, "s-job", "user", None,
         "Big news: I accepted the offer from Stripe, my first day there was Monday!"),
        (-4, 19, 0, "s-school", "user", None, "我开始读研了，在浙江大学。"),
        (-3, 18, 0, "s-move", "user", None, "We finally moved! Loving Lisbon so far, the light here is amazing."),
        (-2, 11, 0, "s-pet", "user", None, "We adopted a puppy called Biscuit last weekend."),
        (0, 10, 30, "s-today", "user", None, "Finished the quarterly report draft this morning."),
        # Words of unsupported questions, in what does not answer them:
        (-6, 20, 0, "s-friend", "user", None, "我朋友的妹妹在上海工作。"),
        (-6, 20, 1, "s-friend", "user", None, "Anna's wife gave us a lift to the station."),
    ]
    return [chat(text, role=role, session=session, at=w.at(day, hour, minute), provenance=provenance,
                 item=f"turn-{day}-{hour}-{minute}")
            for day, hour, minute, session, role, provenance, text in turns]


CAT_TURN = "My cat Miso loves sleeping on my keyboard."


# -------------------------------------------------------------------------------------------- calendar


def calendar_file(w: World, version: int) -> str:
    """The user's calendar; version 2 moved the project review a day later and cancelled the yoga class."""
    first_thursday = next(day for day in range(-42, -35) if datetime.fromtimestamp(w.at(day, 12), w.tz).weekday() == 3)
    skipped = first_thursday + 14
    review = (w.ics_time(3, 15), w.ics_time(3, 16)) if version == 1 else (w.ics_time(4, 11), w.ics_time(4, 12))
    events = [
        ("openlab@example.org", w.ics_time(first_thursday, 18), w.ics_time(first_thursday, 20), "OpenLab meetup",
         "Makerspace, Hall B", ["RRULE:FREQ=WEEKLY;COUNT=10", f"EXDATE:{w.ics_time(skipped, 18)}"]),
        ("lunch-marco@example.org", w.ics_time(-1, 12, 30), w.ics_time(-1, 13, 30), "Lunch with Marco",
         "Café Central", []),
        ("planning@example.org", w.ics_time(-7, 10), w.ics_time(-7, 12), "Quarterly planning", "Room 2", []),
        ("dentist@example.org", w.ics_time(1, 10), w.ics_time(1, 11), "Dentist appointment",
         "Dr. Weber's practice", []),
        ("porto@example.org", w.ics_time(7, 8), w.ics_time(7, 10), "Flight to Porto", "Lisbon airport", []),
        ("parents@example.org", w.ics_time(-9, 18), w.ics_time(-9, 19), "Parent evening at Anna's son's school",
         "Hillside School", []),
        ("review@example.org", *review, "Project review", "Room 5", [f"SEQUENCE:{version - 1}"]),
        ("yoga@example.org", w.ics_time(2, 18), w.ics_time(2, 19), "Yoga class", "Studio Sol",
         ["SEQUENCE:1", "STATUS:CANCELLED"] if version == 2 else ["SEQUENCE:0", "STATUS:CONFIRMED"]),
    ]
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//magi real-life tests//EN"]
    for uid, start, end, summary, location, extra in events:
        lines += ["BEGIN:VEVENT", f"UID:{uid}", f"DTSTAMP:{w.ics_time(-30, 9)}", f"DTSTART:{start}", f"DTEND:{end}",
                  f"SUMMARY:{summary}", f"LOCATION:{location}", *extra, "END:VEVENT"]
    lines.append("END:VCALENDAR")
    return "\r\n".join(lines) + "\r\n"


# ----------------------------------------------------------------------------------- browser, git, shell


def visits(w: World) -> list[tuple[str, str, float]]:
    return [
        ("https://www.bbcgoodfood.com/recipes/thai-green-curry", "Thai green curry recipe - BBC Good Food",
         w.at(0, 12, 10)),
        ("https://github.com/acme/falcon/pulls", "Pull requests · acme/falcon", w.at(-2, 9)),
        ("https://www.idealista.pt/en/arrendar-casas/lisboa/", "Apartments for rent in Lisbon - idealista",
         w.at(-1, 21)),
        ("https://www.tripadvisor.com/Restaurants-g189180-Porto.html", "THE 10 BEST Restaurants in Porto",
         w.at(-1, 21, 5)),
        ("https://www.caranddriver.com/tesla/model-3", "Tesla Model 3 Review, Pricing, and Specs", w.at(-7, 20)),
        ("https://www.imdb.com/title/tt0105417/", "Sister Act (1992) - IMDb", w.at(-4, 22)),
    ]


def chromium_history(path: Path, rows: list[tuple[str, str, float]]) -> None:
    """A Chromium ``History`` file (the layout tests/test_collector_browser.py writes)."""
    browser_history(path, rows).close()


def commits(w: World) -> list[tuple[str, float]]:
    return [
        ("Parser: handle cat > redirects in shell lines", w.at(-7, 15)),
        ("Add phone number validation to the signup form", w.at(-7, 16)),
        ("Remove the old migration scripts", w.at(-3, 10)),
        ("Fix the retry of LLM endpoint faults", w.at(-1, 16)),
        ("Add CSV export to the report builder", w.at(0, 9, 15)),
        ("index_text lives in core.text now", w.at(0, 11, 40)),
    ]


def git_repository(path: Path, rows: list[tuple[str, float]]) -> None:
    repo = git.Repo.init(path, initial_branch="main")
    me = git.Actor("Sam Doe", "sam@example.com")
    with repo.config_writer() as config:          # whose commits they are: the user's, as git config says
        config.set_value("user", "name", me.name)
        config.set_value("user", "email", me.email)
    for number, (message, at) in enumerate(rows):
        file = path / f"change_{number}.txt"
        file.write_text(f"{message}\n")
        repo.index.add([str(file)])
        date = f"{int(at)} +0000"
        repo.index.commit(message, author=me, committer=me, author_date=date, commit_date=date)


def shell_commands(w: World) -> list[tuple[float, str]]:
    return [
        (w.at(-7, 11), "ssh deploy@staging.example.com"),
        (w.at(-1, 15, 30), "docker compose up -d postgres"),
        (w.at(-1, 15, 45), "cargo build --release"),
        (w.at(0, 9, 5), "pytest -q tests/test_export.py"),
        (w.at(0, 13), "make release"),
    ]


# ----------------------------------------------------------------------------------------------- build


def _collect(collector, settings: dict, memory) -> None:
    """One run of ``collector`` the way the app runs it: under the Supervisor (its source-type and exclusion
    checks, its single writer, the cursor it keeps in the memory)."""
    sup = Supervisor(memory, [collector], settings={collector.name: settings})
    try:
        sup.wake(collector.name)
        assert sup.tick() == [collector.name]
        assert sup.wait_idle(timeout=120)
        status = sup.status[collector.name]
        # A well-formed source skips nothing, and a first-party collector's payloads are all accepted.
        assert not status.skipped and not status.counts["rejected"] and not status.last_error, status.to_dict()
    finally:
        sup.stop()


def build(memory, folder: Path) -> World:
    """Fill ``memory`` the way the app does over a month; returns its clock."""
    now = time.time()
    w = World(now=now, tz=afternoon_zone(now))
    folder.mkdir(parents=True, exist_ok=True)

    ics = folder / "personal.ics"
    ics.write_text(calendar_file(w, 1))
    calendar = CalendarFiles(clock=lambda: w.now - 3 * 86400)    # first read three days ago
    _collect(calendar, {"paths": [str(ics)]}, memory)

    history = folder / "History"
    chromium_history(history, visits(w))
    _collect(BrowserHistory(now=lambda: w.now), {"profiles": [str(history)], "backfill_days": 40}, memory)

    repository = folder / "falcon"
    git_repository(repository, commits(w))
    _collect(GitActivity(), {"repositories": [str(repository)], "backfill_days": 40}, memory)

    zsh = folder / ".zsh_history"
    zsh.write_text("".join(f": {int(at)}:0;{command}\n" for at, command in shell_commands(w)))
    _collect(TerminalHistory(), {"files": [str(zsh)]}, memory)

    results = memory.ingest_many(chat_turns(w))
    memory.process_pending()

    # Today the calendar changed: the review moved a day later, the yoga class was cancelled.
    ics.write_text(calendar_file(w, 2))
    os.utime(ics, (w.now, w.now))
    calendar.clock = lambda: w.now
    _collect(calendar, {"paths": [str(ics)]}, memory)     # from the cursor the first run left

    # And the user asked the memory to forget the cat.
    turns = chat_turns(w)
    cat = next(r.event_id for r, p in zip(results, turns, strict=True) if p["chat"]["text"] == CAT_TURN)
    memory.forget(event_ids=[cat])
    w.forgotten.append(cat)
    memory.process_pending()
    memory.run_due()
    return w
