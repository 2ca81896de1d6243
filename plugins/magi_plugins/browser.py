"""Browser history: the Chromium family (Chrome, Chromium, Brave, Edge, Vivaldi, Opera, Opera GX, Arc) and Firefox.

Reads each profile's history database from a snapshot (the browser keeps the live file locked), only visits
added since the profile's cursor, and yields one ``visit_page`` payload per visit with its url, title and
domain. The first run back-fills ``backfill_days`` of history and reports progress. Private and incognito
windows are never written to these files, so they are never read. Where each browser keeps its profiles, on
each platform, is the table in ``browser_profiles``.

The cursor is the highest visit id and visit time read: a visit synced from another device arrives with a new
id but an old time, and is still found.

Each profile is a source of its own (``ctx.source("Chrome Default")``) and is read alone (issue 16):

* a profile that cannot be read here is *unavailable* with the fix — permission denied; locked by the browser
  and not copyable (Windows, while it runs: read again at the next run); a configured path with nothing there;
* a History that is truncated, not a database or otherwise unreadable is *failing* (and counted,
  ``ctx.skipped("unreadable_history")``); its cursor stays where it was, so it is read once it is whole again;
* with no profile at all — none configured, none in the usual places — the collector is unavailable:
  "no browser history found", fix: set Profiles in Settings.

Visits that are not web pages are left out and counted by reason (``magi status`` shows the counts):
``file_url`` (a local file opened in the browser: a path on this machine, not a page), ``other_scheme``
(``chrome://``, ``about:``, ``data:``, ``javascript:``, ``blob:``, ``edge://``, extensions — the detail names
the scheme), ``excluded_domain`` (a domain the user excluded). Text is decoded per visit: a title that is not
UTF-8 is kept with replacement characters, an address that is not is skipped (``bad_url``), a visit whose id
or time is not a number too (``bad_visit``). A skip's detail names the profile and the visit id, never the
address. The snapshots are made in the host's scratch folder (``ctx.temp_dir``, in the data folder), never
the system's temp folder.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from magi_desktop.plugin_api import Unavailable, activity, hookimpl

from .browser_profiles import BROWSERS, FIREFOX, Profile, discover_profiles, profiles_at

# Chromium counts microseconds since 1601-01-01; Firefox microseconds since 1970.
_CHROMIUM_EPOCH_OFFSET = 11_644_473_600
_SCHEMES = ("http", "https")
BATCH = 1000
LOCK_WAIT_SECONDS = 1.0
_NO_ID = 2**62          # "no id bound yet": only the time bounds the first run
_WINDOWS_SHARING_VIOLATIONS = (32, 33)     # ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION: another process holds it

FIX_PROFILES = "set Profiles in the browser collector's Settings to a History or places.sqlite file or a profile folder"
_LABELS = ", ".join(browser.label for browser in BROWSERS)


class HistoryLocked(OSError):
    """The browser holds its History locked against reading and copying (Windows, while it runs)."""


def _copy(path: Path, folder: Path) -> Path:
    """A consistent snapshot of the database, the browser untouched.

    SQLite's online backup reads the live file as one transaction, write-ahead log included. When the browser
    holds a lock that forbids even that (Windows), the files are copied instead, with their log or journal,
    which SQLite replays or rolls back when the copy is opened. When the copy is refused too, because the
    browser holds the file, :class:`HistoryLocked`; refused for want of permission, ``PermissionError``.
    """
    target = folder / path.name
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    locked = False

    def give_up_when_locked(status, remaining, total):
        # sqlite3's backup retries a busy database for ever; this bounds the wait.
        if status in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) and time.monotonic() > deadline:
            raise TimeoutError("the browser holds its history locked")

    try:
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=LOCK_WAIT_SECONDS)
        snapshot = sqlite3.connect(target)
        try:
            source.backup(snapshot, pages=1024, progress=give_up_when_locked)
            return target
        finally:
            snapshot.close()
            source.close()
    except (sqlite3.Error, TimeoutError) as exc:
        locked = isinstance(exc, TimeoutError) or "locked" in str(exc)
        target.unlink(missing_ok=True)
    try:
        shutil.copy2(path, target)
    except PermissionError as exc:
        if locked or getattr(exc, "winerror", None) in _WINDOWS_SHARING_VIOLATIONS:
            raise HistoryLocked(f"locked by the browser: {path}") from exc
        raise
    for suffix in ("-wal", "-journal"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            shutil.copy2(side, folder / side.name)
    return target


def _visits(db: Path, kind: str, after_id: int | None, after: int) -> Iterator[tuple[int, int, str, str | None]]:
    """(visit id, raw visit time, url, title) of visits with an id above ``after_id`` or a time above
    ``after`` (raw). The first run (no id yet) goes in time order, later ones in id order, so that
    a cursor saved part-way is exact either way."""
    table, time_column = ("moz_historyvisits", "visit_date") if kind == FIREFOX else ("visits", "visit_time")
    order = f"v.{time_column}, v.id" if after_id is None else "v.id"
    join = "moz_places p ON p.id = v.place_id" if kind == FIREFOX else "urls p ON p.id = v.url"
    sql = (f"SELECT v.id, v.{time_column}, p.url, p.title FROM {table} v JOIN {join} "
           f"WHERE v.id > ? OR v.{time_column} > ? ORDER BY {order}")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.text_factory = bytes        # decoded per visit: one row that is not UTF-8 must not end the profile
    try:
        cursor = conn.execute(sql, (_NO_ID if after_id is None else after_id, after))
        while rows := cursor.fetchmany(BATCH):
            yield from rows
    finally:
        conn.close()


def to_unix(raw: int, kind: str) -> float:
    return raw / 1e6 if kind == FIREFOX else raw / 1e6 - _CHROMIUM_EPOCH_OFFSET


def from_unix(seconds: float, kind: str) -> int:
    return int(seconds * 1e6) if kind == FIREFOX else int((seconds + _CHROMIUM_EPOCH_OFFSET) * 1e6)


def left_out(scheme: str, url: str, excluded: Callable[[str, str], bool]) -> str | None:
    """Why a visit is not stored as a page visit — a skip reason — or None when it is."""
    if scheme == "file":
        return "file_url"
    if scheme not in _SCHEMES:
        return "other_scheme"
    if excluded("domains", url):
        return "excluded_domain"
    return None


def source_names(profiles: list[Profile]) -> list[str]:
    """Each profile's name in health; two of the same name (a browser installed natively and as a Flatpak)
    are told apart by their folder."""
    counts = Counter(profile.source for profile in profiles)
    return [profile.source if counts[profile.source] == 1 else f"{profile.source} ({_home_relative(profile.history)})"
            for profile in profiles]


def _home_relative(path: Path) -> str:
    try:
        return "~/" + path.parent.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path.parent)


class BrowserHistory:
    name = "browser"
    source_type = "browser"
    source_types = tuple(browser.code for browser in BROWSERS)     # each visit names its browser
    interval_seconds = 300
    settings_schema = {
        "profiles": {"type": "array", "items": {"type": "string"}, "title": "Profiles",
                     "description": "History or places.sqlite files, profile folders or folders of profiles to read; "
                                    f"empty: every profile found in the usual places of {_LABELS}"},
        "backfill_days": {"type": "number", "default": 90, "title": "Back-fill (days)",
                          "description": "How many days of history the first run reads; later runs read only "
                                         "what is new"},
    }
    privacy_note = (f"Reads the addresses, titles and times of pages you visited in {_LABELS}, from a copy of "
                    "their history. Private/incognito windows and guest sessions are never stored by the browser, "
                    "so never read; local files (file://), browser pages (chrome://, about:) and excluded domains "
                    "are skipped. Nothing leaves this machine.")

    def __init__(self, now: Callable[[], float] | None = None):
        self._now = now or time.time

    def profiles(self, settings: Any, ctx: Any = None) -> list[Profile]:
        """The configured profiles (each path that names none is unavailable, said to ``ctx``), else every profile
        found in the usual places."""
        explicit = settings.get("profiles") or []
        if not explicit:
            return discover_profiles()
        found = []
        for item in explicit:
            path = Path(item).expanduser()
            here = profiles_at(path)
            if not here and ctx is not None:
                reason = (f"no History or places.sqlite in {path}" if path.is_dir() else f"no such file: {path}")
                ctx.unavailable(str(item), reason, FIX_PROFILES)
            found += here
        return found

    def collect(self, since, ctx):
        cursors = dict(since or {})
        backfill = float(ctx.settings.get("backfill_days", 90)) * 86400
        profiles = self.profiles(ctx.settings, ctx)
        if not profiles and not ctx.settings.get("profiles"):
            raise Unavailable(f"no browser history found (looked for {_LABELS} in their usual places)", FIX_PROFILES)
        scratch = getattr(ctx, "temp_dir", None)     # a host without one: the system's temp folder
        for number, (profile, source) in enumerate(zip(profiles, source_names(profiles), strict=True)):
            if ctx.stopping:
                return
            ctx.source(source)
            path, kind = profile.history, profile.browser.family
            key = str(path)
            state = cursors.get(key, {"id": None, "time": from_unix(self._now() - backfill, kind)})
            if not isinstance(state, dict):
                state = {"id": None, "time": state}      # a cursor from before ids were kept: a time
            try:
                with tempfile.TemporaryDirectory(prefix="magi-browser-", dir=scratch) as tmp:
                    newest = yield from self._profile(profile, source, state, Path(tmp), cursors, ctx)
            except HistoryLocked:
                ctx.unavailable(source, f"locked by {profile.browser.label}: {path}",
                                f"close {profile.browser.label}, or wait: it is read again at the next run")
                continue
            except PermissionError:
                ctx.unavailable(source, f"permission denied: {path}",
                                "let the user Magi runs as read it (macOS: Full Disk Access in Privacy & Security)")
                continue
            except FileNotFoundError:
                ctx.unavailable(source, f"no such file: {path}", "it was removed while being read: read again next run")
                continue
            except (sqlite3.Error, OSError, TimeoutError, ValueError) as exc:
                # This profile only; its cursor stays, so what it holds is read once it is whole again.
                # (ValueError: sqlite3 fails to decode the error message of a damaged schema, for one.)
                ctx.skipped("unreadable_history", f"{profile.browser.code} {path}: {type(exc).__name__}: {exc}")
                ctx.failing(source, f"unreadable History: {type(exc).__name__}: {exc}")
                continue
            if newest is None:
                return                        # stopping
            cursors[key] = dict(newest)
            ctx.save_cursor(dict(cursors))   # kept once this profile's visits are stored
            ctx.progress(number + 1, len(profiles))

    def _profile(self, profile: Profile, source: str, state: dict[str, Any], tmp: Path, cursors: dict[str, Any],
                 ctx: Any):
        """Yield one profile's new visits from a snapshot; returns its new cursor (None when stopped)."""
        path, kind, key = profile.history, profile.browser.family, str(profile.history)
        copy = _copy(path, tmp)
        newest = dict(state)
        for count, (visit_id, raw, url, title) in enumerate(_visits(copy, kind, state["id"], state["time"]),
                                                            start=1):
            if ctx.stopping:
                return None
            if not isinstance(visit_id, int) or not isinstance(raw, int):
                # SQLite columns take any type: a damaged or forged file can hold text where a time belongs.
                ctx.skipped("bad_visit", f"{source}: a visit with id {visit_id!r:.40} and time {raw!r:.40}")
                continue
            newest["time"] = max(newest["time"], raw)
            if state["id"] is not None:
                newest["id"] = max(newest["id"], visit_id)
            payload = self._payload(profile, source, visit_id, raw, url, title, ctx)
            if payload is not None:
                yield payload
            if count % BATCH == 0:
                ctx.progress(count)
                cursors[key] = dict(newest)
                ctx.save_cursor(dict(cursors))   # a long back-fill resumes where it stopped
        if newest["id"] is None:      # after the first run, whatever is in the file now is behind us
            newest["id"] = _last_id(copy, kind)
        return newest

    @staticmethod
    def _payload(profile: Profile, source: str, visit_id: int, raw: int, url: Any, title: Any, ctx: Any):
        where = f"{source}: visit {visit_id}"          # never the address: it may be what the user keeps private
        try:
            url = url.decode("utf-8") if isinstance(url, bytes) else "" if url is None else url
            if not isinstance(url, str):
                raise TypeError(f"the address is a {type(url).__name__}")
            parts = urlsplit(url)
            hostname = parts.hostname
        except (TypeError, ValueError) as exc:      # UnicodeDecodeError is a ValueError
            # A malformed address in the history: skip it, keep reading.
            ctx.skipped("bad_url", f"{where}: {type(exc).__name__}")
            return None
        reason = left_out(parts.scheme, url, ctx.excluded)
        if reason is not None:
            # Not a web page, or the user excluded it: by choice, not broken — counted, so it is not silence.
            ctx.skipped(reason, f"{where} ({parts.scheme[:20] or 'no scheme'}:)" if reason == "other_scheme" else where)
            return None
        if isinstance(title, bytes):
            title = title.decode("utf-8", "replace")
        elif not isinstance(title, str):
            title = None                  # a number where the title belongs: the visit is still a visit
        browser = profile.browser.code
        domain = (hostname or "").removeprefix("www.")
        provenance = {"url": url, "domain": domain, "browser": browser}
        if title:
            provenance["title"] = title
        return activity(browser, "visit_page", to_unix(raw, profile.browser.family), provenance,
                        item_id=f"{browser}:{_profile_id(profile.history)}:{visit_id}")


def _last_id(db: Path, kind: str) -> int:
    table = "moz_historyvisits" if kind == FIREFOX else "visits"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def _profile_id(path: Path) -> str:
    """A short stable id of a profile file, so two profiles' visit ids never collide."""
    return hashlib.sha1(str(path).encode("utf-8")).hexdigest()[:8]


@hookimpl
def register_collectors(register):
    register(BrowserHistory())
