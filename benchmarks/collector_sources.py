"""Real-format sources for the collectors, generated: what a machine would hold, at any size.

* ``chromium_history`` — a Chromium ``History`` file with Chromium's own tables and indexes (schema
  version 69: ``meta``, ``urls``, ``visits`` with every column, ``visit_source``, ``segments`` …);
* ``firefox_places`` — a Firefox ``places.sqlite`` (``moz_origins``, ``moz_places``,
  ``moz_historyvisits`` …, WAL, ``user_version`` 78);
* ``bash_history`` / ``zsh_history`` — bash with ``HISTTIMEFORMAT`` (``#<epoch>`` lines), zsh extended
  history (``: <epoch>:0;command``, multi-line commands continued with a backslash);
* ``git_repository`` — a repository written by ``git fast-import``: real commits that change real
  files in folders, by two authors (the repository's configured user and another person);
* ``calendar_file`` — an ``.ics`` file with a VTIMEZONE, single, all-day, cancelled and weekly
  recurring events, EXDATEs and moved occurrences (RECURRENCE-ID).

Everything is deterministic for a seed, and times are placed so that the collectors' first run reads
all of it (inside ``WINDOW_DAYS``). Each generator returns a ``Made``: what it wrote and how many
items a collector should store from it, so a test can check that a collector reads the files.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

WINDOW_DAYS = 60              # visits and commands lie in the last 60 days: inside the browser's 90-day back-fill
GIT_WINDOW_DAYS = 300         # commits: inside the Git collector's 365-day back-fill
CALENDAR_DAYS_BACK = 330      # occurrences: inside calendar_settings()'s window (365 back, 30 ahead)
CALENDAR_DAYS_AHEAD = 25
_CHROMIUM_EPOCH_OFFSET = 11_644_473_600      # Chromium counts microseconds since 1601-01-01
NOT_WEB_SHARE = 0.01          # file:// and chrome:// visits: in real histories, skipped by the browser collector

_SITES = ["github.com", "docs.python.org", "news.ycombinator.com", "stackoverflow.com", "arxiv.org",
          "en.wikipedia.org", "www.bilibili.com", "www.zhihu.com", "mail.google.com", "www.youtube.com",
          "developer.mozilla.org", "pypi.org", "www.sqlite.org", "doc.qt.io", "www.reddit.com"]
_WORDS = ["retrieval", "sqlite", "vector", "index", "memory", "calendar", "plugin", "schema", "parser", "queue",
          "timezone", "embedding", "collector", "browser", "history", "release", "benchmark", "layout", "cache",
          "thread", "signal", "tray", "summary", "entity", "graph", "redaction", "backup", "cursor", "watch"]
_TITLES_ZH = ["如何评价新款空气炸锅？", "哔哩哔哩 (゜-゜)つロ 干杯~", "向量数据库入门", "周末去哪儿玩"]


@dataclass(frozen=True)
class Made:
    """What a generator wrote: its files, the items in them, and how many a collector stores."""

    paths: list[Path]
    items: int           # visits, commands, commits, VEVENTs
    expected: int        # what a first back-fill stores (non-web visits, cancelled and removed ones left out)


def _chromium_time(seconds: float) -> int:
    return int((seconds + _CHROMIUM_EPOCH_OFFSET) * 1e6)


# Chromium's History, schema version 69 (components/history/core/browser: url_database.cc, visit_database.cc,
# visitsegment_database.cc, download_database.cc, history_database.cc), as a new profile lays it out.
CHROMIUM_SCHEMA = """
CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR);
CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT,url LONGVARCHAR,title LONGVARCHAR,
  visit_count INTEGER DEFAULT 0 NOT NULL,typed_count INTEGER DEFAULT 0 NOT NULL,last_visit_time INTEGER NOT NULL,
  hidden INTEGER DEFAULT 0 NOT NULL);
CREATE TABLE visits(id INTEGER PRIMARY KEY AUTOINCREMENT,url INTEGER NOT NULL,visit_time INTEGER NOT NULL,
  from_visit INTEGER,external_referrer_url TEXT,transition INTEGER DEFAULT 0 NOT NULL,segment_id INTEGER,
  visit_duration INTEGER DEFAULT 0 NOT NULL,incremented_omnibox_typed_score BOOLEAN DEFAULT FALSE NOT NULL,
  opener_visit INTEGER,originator_cache_guid TEXT,originator_visit_id INTEGER,originator_from_visit INTEGER,
  originator_opener_visit INTEGER,is_known_to_sync BOOLEAN DEFAULT FALSE NOT NULL,
  consider_for_ntp_most_visited BOOLEAN DEFAULT FALSE NOT NULL,visited_link_id INTEGER DEFAULT 0 NOT NULL,
  app_id TEXT);
CREATE TABLE visit_source(id INTEGER PRIMARY KEY,source INTEGER NOT NULL);
CREATE TABLE keyword_search_terms (keyword_id INTEGER NOT NULL,url_id INTEGER NOT NULL,term LONGVARCHAR NOT NULL,
  normalized_term LONGVARCHAR NOT NULL);
CREATE TABLE segments (id INTEGER PRIMARY KEY,name VARCHAR,url_id INTEGER NON NULL);
CREATE TABLE segment_usage (id INTEGER PRIMARY KEY,segment_id INTEGER NOT NULL,time_slot INTEGER NOT NULL,
  visit_count INTEGER DEFAULT 0 NOT NULL);
CREATE TABLE visited_links(id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,link_url_id INTEGER NOT NULL,
  top_level_url LONGVARCHAR NOT NULL,frame_url LONGVARCHAR NOT NULL,visit_count INTEGER DEFAULT 0 NOT NULL);
CREATE TABLE downloads (id INTEGER PRIMARY KEY,guid VARCHAR NOT NULL,current_path LONGVARCHAR NOT NULL,
  target_path LONGVARCHAR NOT NULL,start_time INTEGER NOT NULL,received_bytes INTEGER NOT NULL,
  total_bytes INTEGER NOT NULL,state INTEGER NOT NULL,danger_type INTEGER NOT NULL,interrupt_reason INTEGER NOT NULL,
  hash BLOB NOT NULL,end_time INTEGER NOT NULL,opened INTEGER NOT NULL,last_access_time INTEGER NOT NULL,
  transient INTEGER NOT NULL,referrer VARCHAR NOT NULL,site_url VARCHAR NOT NULL,
  embedder_download_data VARCHAR NOT NULL,tab_url VARCHAR NOT NULL,tab_referrer_url VARCHAR NOT NULL,
  http_method VARCHAR NOT NULL,by_ext_id VARCHAR NOT NULL,by_ext_name VARCHAR NOT NULL,
  by_web_app_id VARCHAR NOT NULL,etag VARCHAR NOT NULL,last_modified VARCHAR NOT NULL,
  mime_type VARCHAR(255) NOT NULL,original_mime_type VARCHAR(255) NOT NULL);
CREATE TABLE downloads_url_chains (id INTEGER NOT NULL,chain_index INTEGER NOT NULL,url LONGVARCHAR NOT NULL,
  PRIMARY KEY (id, chain_index) );
CREATE TABLE downloads_slices (download_id INTEGER NOT NULL,offset INTEGER NOT NULL,received_bytes INTEGER NOT NULL,
  finished INTEGER NOT NULL DEFAULT 0,PRIMARY KEY (download_id, offset) );
CREATE TABLE history_sync_metadata (storage_key INTEGER PRIMARY KEY NOT NULL,value BLOB);
CREATE INDEX urls_url_index ON urls (url);
CREATE INDEX visits_url_index ON visits (url);
CREATE INDEX visits_from_index ON visits (from_visit);
CREATE INDEX visits_time_index ON visits (visit_time);
CREATE INDEX visits_originator_id_index ON visits (originator_visit_id);
CREATE INDEX keyword_search_terms_index1 ON keyword_search_terms (keyword_id, normalized_term);
CREATE INDEX keyword_search_terms_index2 ON keyword_search_terms (url_id);
CREATE INDEX keyword_search_terms_index3 ON keyword_search_terms (term);
CREATE INDEX segments_name ON segments(name);
CREATE INDEX segments_url_id ON segments(url_id);
CREATE INDEX segment_usage_time_slot_segment_id ON segment_usage(time_slot, segment_id);
CREATE INDEX segments_usage_seg_id ON segment_usage(segment_id);
CREATE UNIQUE INDEX visited_links_index ON visited_links (link_url_id, top_level_url, frame_url);
INSERT INTO meta VALUES ('mmap_status', '-1'), ('version', '69'), ('last_compatible_version', '16'),
  ('early_expiration_threshold', '0');
"""

# Firefox's places.sqlite (toolkit/components/places/nsPlacesTables.h, schema 78), the tables history needs.
FIREFOX_SCHEMA = """
PRAGMA journal_mode = WAL;
CREATE TABLE moz_origins ( id INTEGER PRIMARY KEY, prefix TEXT NOT NULL, host TEXT NOT NULL,
  frecency INTEGER NOT NULL, recalc_frecency INTEGER NOT NULL DEFAULT 0, alt_frecency INTEGER,
  recalc_alt_frecency INTEGER NOT NULL DEFAULT 0, UNIQUE (prefix, host) );
CREATE TABLE moz_places ( id INTEGER PRIMARY KEY, url LONGVARCHAR, title LONGVARCHAR, rev_host LONGVARCHAR,
  visit_count INTEGER DEFAULT 0, hidden INTEGER DEFAULT 0 NOT NULL, typed INTEGER DEFAULT 0 NOT NULL,
  frecency INTEGER DEFAULT -1 NOT NULL, last_visit_date INTEGER , guid TEXT, foreign_count INTEGER DEFAULT 0 NOT NULL,
  url_hash INTEGER DEFAULT 0 NOT NULL , description TEXT, preview_image_url TEXT, site_name TEXT,
  origin_id INTEGER REFERENCES moz_origins(id), recalc_frecency INTEGER NOT NULL DEFAULT 0, alt_frecency INTEGER,
  recalc_alt_frecency INTEGER NOT NULL DEFAULT 0);
CREATE TABLE moz_historyvisits ( id INTEGER PRIMARY KEY, from_visit INTEGER, place_id INTEGER, visit_date INTEGER,
  visit_type INTEGER, session INTEGER, source INTEGER DEFAULT 0 NOT NULL, triggeringPlaceId INTEGER);
CREATE TABLE moz_inputhistory (place_id INTEGER NOT NULL, input LONGVARCHAR NOT NULL, use_count INTEGER,
  PRIMARY KEY (place_id, input));
CREATE TABLE moz_bookmarks ( id INTEGER PRIMARY KEY, type INTEGER, fk INTEGER DEFAULT NULL, parent INTEGER,
  position INTEGER, title LONGVARCHAR, keyword_id INTEGER, folder_type TEXT, dateAdded INTEGER,
  lastModified INTEGER, guid TEXT, syncStatus INTEGER NOT NULL DEFAULT 0, syncChangeCounter INTEGER NOT NULL DEFAULT 1);
CREATE TABLE moz_keywords ( id INTEGER PRIMARY KEY AUTOINCREMENT, keyword TEXT UNIQUE, place_id INTEGER,
  post_data TEXT);
CREATE TABLE moz_anno_attributes ( id INTEGER PRIMARY KEY, name VARCHAR(32) UNIQUE NOT NULL);
CREATE TABLE moz_annos ( id INTEGER PRIMARY KEY, place_id INTEGER NOT NULL, anno_attribute_id INTEGER,
  content LONGVARCHAR, flags INTEGER DEFAULT 0, expiration INTEGER DEFAULT 0, type INTEGER DEFAULT 0,
  dateAdded INTEGER DEFAULT 0, lastModified INTEGER DEFAULT 0);
CREATE TABLE moz_meta (key TEXT PRIMARY KEY, value NOT NULL) WITHOUT ROWID;
CREATE INDEX moz_places_url_hashindex ON moz_places (url_hash);
CREATE INDEX moz_places_hostindex ON moz_places (rev_host);
CREATE INDEX moz_places_visitcount ON moz_places (visit_count);
CREATE INDEX moz_places_frecencyindex ON moz_places (frecency);
CREATE INDEX moz_places_lastvisitdateindex ON moz_places (last_visit_date);
CREATE UNIQUE INDEX moz_places_guid_uniqueindex ON moz_places (guid);
CREATE INDEX moz_places_originidindex ON moz_places (origin_id);
CREATE INDEX moz_historyvisits_placedateindex ON moz_historyvisits (place_id, visit_date);
CREATE INDEX moz_historyvisits_fromindex ON moz_historyvisits (from_visit);
CREATE INDEX moz_historyvisits_dateindex ON moz_historyvisits (visit_date);
CREATE UNIQUE INDEX moz_bookmarks_guid_uniqueindex ON moz_bookmarks (guid);
CREATE UNIQUE INDEX moz_annos_placeattributeindex ON moz_annos (place_id, anno_attribute_id);
PRAGMA user_version = 78;
"""


def _pages(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """(url, title) of ``count`` distinct pages; about 1 % are not web pages (file://, chrome://)."""
    pages = []
    for number in range(count):
        if rng.random() < NOT_WEB_SHARE:
            pages.append((rng.choice([f"file:///home/ana/Downloads/report-{number}.pdf", "chrome://settings/",
                                      f"about:reader?url=https://example.org/{number}"]), "Local"))
            continue
        site = rng.choice(_SITES)
        words = rng.sample(_WORDS, 2)
        title = rng.choice(_TITLES_ZH) if rng.random() < 0.05 else f"{words[0].title()} {words[1]} — {site}"
        pages.append((f"https://{site}/{words[0]}/{words[1]}-{number}", title))
    return pages


def _visit_times(rng: random.Random, count: int, now: float) -> list[float]:
    start = now - WINDOW_DAYS * 86400
    return sorted(rng.uniform(start, now - 60) for _ in range(count))


def _picks(rng: random.Random, pages: int, count: int) -> list[int]:
    """Which page each visit is of: a few pages are visited often, most once or twice (Zipf-like)."""
    return [int(pages * rng.random() ** 3) if rng.random() < 0.5 else rng.randrange(pages) for _ in range(count)]


def _is_web(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def chromium_history(path: Path, visits: int, now: float, seed: int = 1) -> Made:
    """A Chromium ``History`` with ``visits`` visits of the last ``WINDOW_DAYS`` days."""
    rng = random.Random(seed)
    pages = _pages(rng, max(1, visits // 5))
    times = _visit_times(rng, visits, now)
    picks = _picks(rng, len(pages), visits)
    counts = Counter(picks)
    last: dict[int, int] = {}
    visit_rows = []
    for visit_id, (page, at) in enumerate(zip(picks, times, strict=True), start=1):
        raw = _chromium_time(at)
        last[page] = raw
        typed = rng.random() < 0.1
        # PAGE_TRANSITION_LINK or _TYPED, with CHAIN_START | CHAIN_END (0x30000000), as a plain navigation has.
        visit_rows.append((visit_id, page + 1, raw, 0, 0x30000001 if typed else 0x30000000,
                           rng.randrange(0, 600_000_000), int(typed)))
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(CHROMIUM_SCHEMA)
        conn.executemany("INSERT INTO urls (id, url, title, visit_count, typed_count, last_visit_time, hidden) "
                         "VALUES (?, ?, ?, ?, 0, ?, 0)",
                         [(page + 1, url, title, counts[page], last[page])
                          for page, (url, title) in enumerate(pages) if page in counts])
        conn.executemany("INSERT INTO visits (id, url, visit_time, from_visit, transition, visit_duration, "
                         "incremented_omnibox_typed_score) VALUES (?, ?, ?, ?, ?, ?, ?)", visit_rows)
        conn.commit()
    finally:
        conn.close()
    return Made([path], visits, sum(1 for page in picks if _is_web(pages[page][0])))


def _guid(rng: random.Random) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return "".join(rng.choice(alphabet) for _ in range(12))


def firefox_places(path: Path, visits: int, now: float, seed: int = 2) -> Made:
    """A Firefox ``places.sqlite`` with ``visits`` visits of the last ``WINDOW_DAYS`` days."""
    rng = random.Random(seed)
    pages = _pages(rng, max(1, visits // 5))
    times = _visit_times(rng, visits, now)
    picks = _picks(rng, len(pages), visits)
    origins: dict[tuple[str, str], int] = {}
    place_rows = []
    counts = Counter(picks)
    last = {page: int(at * 1e6) for page, at in zip(picks, times, strict=True)}
    for page, (url, title) in enumerate(pages):
        if page not in counts:
            continue
        prefix, _, rest = url.partition("//")
        host = rest.split("/", 1)[0]
        origin = origins.setdefault((prefix + "//", host), len(origins) + 1)
        # Firefox's url_hash is its own hash of the address; a CRC of it stands in (no reader here uses it).
        place_rows.append((page + 1, url, title, host[::-1] + ".", counts[page], 100 * counts[page], last[page],
                           _guid(rng), (zlib.crc32(prefix.encode()) & 0xFFFF) << 32 | zlib.crc32(url.encode()),
                           origin))
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(FIREFOX_SCHEMA)
        conn.executemany("INSERT INTO moz_origins (id, prefix, host, frecency) VALUES (?, ?, ?, 100)",
                         [(number, prefix, host) for (prefix, host), number in origins.items()])
        conn.executemany("INSERT INTO moz_places (id, url, title, rev_host, visit_count, frecency, last_visit_date, "
                         "guid, url_hash, origin_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", place_rows)
        conn.executemany("INSERT INTO moz_historyvisits (id, from_visit, place_id, visit_date, visit_type, session) "
                         "VALUES (?, 0, ?, ?, ?, 0)",
                         [(visit_id, page + 1, int(at * 1e6), 2 if rng.random() < 0.1 else 1)
                          for visit_id, (page, at) in enumerate(zip(picks, times, strict=True), start=1)])
        conn.commit()
    finally:
        conn.close()
    return Made([path], visits, sum(1 for page in picks if _is_web(pages[page][0])))


_COMMANDS = ["git status", "git diff --stat", "git commit -m 'fix {w} in {v}'", "git push origin {w}-{n}",
             "cd ~/src/{w}", "make test", "pytest tests/test_{w}.py -q", "docker compose up -d {w}",
             "ssh build-{n}.internal", "vim src/{w}/{v}.py", "ls -la", "grep -rn {w} src/", "htop",
             "curl -s https://api.example.com/{w}/{n}", "python -m {w}.{v} --verbose", "rg '{w}_{v}' -tpy",
             "journalctl --user -u {w} -n 50", "kubectl logs deploy/{w} --tail=100", "npm run build", "cargo test {w}",
             "mysql -u ana --password=hunter{n} shop", "tar czf {w}-{n}.tar.gz {v}/", "sqlite3 {w}.db '.tables'"]


def _step(days: float, count: int) -> int:
    """The largest gap of ``count`` random steps (1..step) that end well inside ``days``: on average they span
    80 % of it, so the last one is not in the future."""
    return max(1, int(0.8 * days * 86400 / max(count, 1) * 2) - 1)


def _commands(rng: random.Random, count: int, now: float) -> Iterator[tuple[int, str]]:
    """(epoch second, command): strictly later each time, so no two entries of one shell share an id."""
    at = int(now - WINDOW_DAYS * 86400)
    step = _step(WINDOW_DAYS, count)
    for _ in range(count):
        at += rng.randint(1, step)
        words = rng.sample(_WORDS, 2)
        yield at, rng.choice(_COMMANDS).format(w=words[0], v=words[1], n=rng.randrange(1000))


def bash_history(path: Path, commands: int, now: float, seed: int = 3) -> Made:
    """A bash history written with ``HISTTIMEFORMAT`` set: a ``#<epoch>`` line before each command."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for at, command in _commands(rng, commands, now):
            f.write(f"#{at}\n{command}\n")
    return Made([path], commands, commands)


def zsh_history(path: Path, commands: int, now: float, seed: int = 4) -> Made:
    """A zsh extended history; about 2 % of the commands span lines (a backslash continues them)."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for at, command in _commands(rng, commands, now):
            if rng.random() < 0.02:
                command = f"for f in *.{command.split()[0]}; do \\\n  wc -l $f \\\ndone"
            f.write(f": {at}:0;{command}\n")
    return Made([path], commands, commands)


def _fast_import_stream(commits: int, now: float, rng: random.Random) -> Iterator[bytes]:
    """``git fast-import`` commands for ``commits`` commits on main, each changing one to four files."""
    folders = ["src/magi/retrieval", "src/magi/store", "src/magi/ui", "src/magi/collectors", "docs", "tests"]
    files: dict[str, list[str]] = {}
    names: list[str] = []                   # the keys of ``files``, for picking one fast
    authors = [("Ana Lima", "ana@example.com"), ("Ben Okafor", "ben@example.org")]
    at = int(now - GIT_WINDOW_DAYS * 86400)
    step = _step(GIT_WINDOW_DAYS, commits)
    for mark in range(1, commits + 1):
        at += rng.randint(1, step)
        name, email = authors[0] if rng.random() < 0.6 else authors[1]
        changes: list[bytes] = []
        for _ in range(rng.randint(1, 4)):
            if not files or rng.random() < 0.08:      # a new file
                folder = rng.choice(folders)
                path = f"{folder}/{rng.choice(_WORDS)}_{len(files)}.{'md' if folder == 'docs' else 'py'}"
                if path not in files:
                    names.append(path)
                files[path] = [f"# {path}"]
            else:
                path = rng.choice(names)
            lines = files[path]
            for _ in range(rng.randint(1, 6)):
                word = rng.choice(_WORDS)
                if len(lines) > 3 and rng.random() < 0.4:
                    lines[rng.randrange(1, len(lines))] = f"{word} = compute_{word}({rng.randrange(100)})"
                else:
                    lines.append(f"def {word}_{rng.randrange(10_000)}(): return {rng.randrange(100)}")
            if len(lines) > 120:
                del lines[1:40]
            content = ("\n".join(lines) + "\n").encode()
            changes.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(content), content))
        if len(files) > 3 and rng.random() < 0.01:       # now and then a file goes
            gone = rng.choice(names)
            del files[gone]
            names.remove(gone)
            changes = [c for c in changes if not c.startswith(b"M 100644 inline %s\n" % gone.encode())]
            changes.append(b"D %s\n" % gone.encode())
        words = rng.sample(_WORDS, 2)
        message = rng.choice(["Fix {0} when the {1} is empty", "Add tests for the {0} {1}", "Refactor {0}: split {1}",
                              "Speed up {0} lookups in {1}", "Document the {0} {1}", "Handle a missing {0}"]
                             ).format(*words).encode()
        who = f"{name} <{email}> {at} +0100".encode()
        yield (b"commit refs/heads/main\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s\n" % (
            mark, who, who, len(message), message) + b"".join(changes) + b"\n")


def git_repository(path: Path, commits: int, now: float, seed: int = 5) -> Made:
    """A repository of ``commits`` commits by two authors (Ana, its configured user, 60 %; Ben) on main."""
    rng = random.Random(seed)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "config", "user.name", "Ana Lima"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "config", "user.email", "ana@example.com"], check=True, env=env)
    importer = subprocess.Popen(["git", "-C", str(path), "fast-import", "--quiet"], stdin=subprocess.PIPE, env=env)
    assert importer.stdin is not None
    for command in _fast_import_stream(commits, now, rng):
        importer.stdin.write(command)
    importer.stdin.close()
    if importer.wait() != 0:
        raise RuntimeError(f"git fast-import failed in {path}")
    subprocess.run(["git", "-C", str(path), "reset", "-q", "--hard", "main"], check=True, env=env)
    return Made([path], commits, commits)


_BERLIN = """BEGIN:VTIMEZONE
TZID:Europe/Berlin
BEGIN:DAYLIGHT
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
TZNAME:CEST
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
END:DAYLIGHT
BEGIN:STANDARD
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
TZNAME:CET
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
END:STANDARD
END:VTIMEZONE
"""
SERIES_SHARE = 10             # one VEVENT in ten is a weekly series' master
SERIES_LENGTH = 6             # occurrences of each series (COUNT)


def _utc(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ")


def _local(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%S")


def calendar_settings(path: Path) -> dict:
    """The calendar collector's settings whose window holds every occurrence ``calendar_file`` writes."""
    return {"paths": [str(path)], "days_back": 365, "days_ahead": 30}


def calendar_file(path: Path, events: int, now: float, seed: int = 6) -> Made:
    """An ``.ics`` of ``events`` VEVENTs: one in ten a weekly series of ``SERIES_LENGTH`` (a quarter of them with
    an EXDATE, a quarter with a moved occurrence, a VEVENT of its own), the rest single events (a tenth all-day,
    one in fifty cancelled, a third in Europe/Berlin time, the rest in UTC)."""
    rng = random.Random(seed)
    first = datetime.fromtimestamp(now, timezone.utc) - timedelta(days=CALENDAR_DAYS_BACK)
    span = (CALENDAR_DAYS_BACK + CALENDAR_DAYS_AHEAD) * 86400 - SERIES_LENGTH * 7 * 86400
    stamp = _utc(datetime.fromtimestamp(now, timezone.utc))
    series = max(1, events // SERIES_SHARE)
    moved = series // 4
    singles = max(0, events - series - moved)
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Magi benchmarks//collect.py//EN", _BERLIN.rstrip("\n")]
    expected = 0
    for number in range(singles):
        begins = (first + timedelta(seconds=rng.randrange(span))).replace(minute=rng.choice((0, 15, 30, 45)),
                                                                           second=0, microsecond=0)
        uid = f"single-{number}@bench.magi"
        summary = f"{rng.choice(_WORDS).title()} {rng.choice(['review', 'sync', 'call', 'lunch', 'planning'])}"
        event = ["BEGIN:VEVENT", f"UID:{uid}", f"DTSTAMP:{stamp}", f"SUMMARY:{summary}"]
        if number % 10 == 0:
            day = begins.date()
            event += [f"DTSTART;VALUE=DATE:{day:%Y%m%d}", f"DTEND;VALUE=DATE:{day + timedelta(days=1):%Y%m%d}"]
        elif number % 3 == 0:
            event += [f"DTSTART;TZID=Europe/Berlin:{_local(begins)}",
                      f"DTEND;TZID=Europe/Berlin:{_local(begins + timedelta(minutes=45))}",
                      f"LOCATION:Room {rng.randrange(1, 40)}"]
        else:
            event += [f"DTSTART:{_utc(begins)}", f"DTEND:{_utc(begins + timedelta(minutes=30))}"]
        if number % 50 == 7:
            event.append("STATUS:CANCELLED")
        else:
            expected += 1
        lines += [*event, "END:VEVENT"]
    for number in range(series):
        begins = (first + timedelta(seconds=rng.randrange(span))).replace(minute=0, second=0, microsecond=0)
        uid = f"series-{number}@bench.magi"
        event = ["BEGIN:VEVENT", f"UID:{uid}", f"DTSTAMP:{stamp}", f"SUMMARY:Weekly {rng.choice(_WORDS)}",
                 f"DTSTART;TZID=Europe/Berlin:{_local(begins)}",
                 f"DTEND;TZID=Europe/Berlin:{_local(begins + timedelta(hours=1))}",
                 f"RRULE:FREQ=WEEKLY;COUNT={SERIES_LENGTH}"]
        occurrences = SERIES_LENGTH
        if number % 4 == 1:
            event.append(f"EXDATE;TZID=Europe/Berlin:{_local(begins + timedelta(weeks=2))}")
            occurrences -= 1
        lines += [*event, "END:VEVENT"]
        if number % 4 == 2 and number // 4 < moved:
            original = begins + timedelta(weeks=1)
            lines += ["BEGIN:VEVENT", f"UID:{uid}", f"DTSTAMP:{stamp}", "SUMMARY:Weekly (moved)",
                      f"RECURRENCE-ID;TZID=Europe/Berlin:{_local(original)}",
                      f"DTSTART;TZID=Europe/Berlin:{_local(original + timedelta(hours=2))}",
                      f"DTEND;TZID=Europe/Berlin:{_local(original + timedelta(hours=3))}", "END:VEVENT"]
        expected += occurrences
    written = singles + series + sum(1 for n in range(series) if n % 4 == 2 and n // 4 < moved)
    lines.append("END:VCALENDAR")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return Made([path], written, expected)


def play_log(path: Path, plays: int, now: float, seed: int = 7) -> Made:
    """The music collector's JSON-lines play log: ``plays`` plays of the last ``WINDOW_DAYS`` days."""
    rng = random.Random(seed)
    tracks = [("So What", "Miles Davis"), ("晴天", "周杰伦"), ("Clair de Lune", "Claude Debussy"),
              ("Blinding Lights", "The Weeknd")]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for at in _visit_times(rng, plays, now):
            track, artist = rng.choice(tracks)
            f.write(json.dumps({"played_at": at, "track": track, "artist": artist,
                                "duration_sec": rng.randrange(120, 500), "player": "bench"}) + "\n")
    return Made([path], plays, plays)

