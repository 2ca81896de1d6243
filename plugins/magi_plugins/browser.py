"""Browser history: Chromium-family (Chrome, Chromium, Edge, Brave) and Firefox.

Reads each profile's history database from a snapshot (the browser keeps the
live file locked), only visits added since the profile's cursor, and yields one
``visit_page`` payload per visit with its url, title and domain. The first run
back-fills ``backfill_days`` of history and reports progress. Private and
incognito windows are never written to these files, so they are never read.

The cursor is the highest visit id and visit time read: a visit synced from
another device arrives with a new id but an old time, and is still found.

Each profile is read alone (issue 16): a History that is truncated, not a
database or otherwise unreadable is skipped and counted for that profile
(``ctx.skipped("unreadable_history")``) and the other profiles are still read;
its cursor stays where it was, so it is read once it is whole again. Text is
decoded per visit: a title that is not UTF-8 is kept with replacement
characters, an address that is not is skipped and counted (``bad_url``). The
snapshots are made in the host's scratch folder (``ctx.temp_dir``, in the data
folder), never the system's temp folder.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from magi_desktop.plugin_api import activity, hookimpl

# Chromium counts microseconds since 1601-01-01; Firefox microseconds since 1970.
_CHROMIUM_EPOCH_OFFSET = 11_644_473_600
_SCHEMES = ("http", "https")
BATCH = 1000
LOCK_WAIT_SECONDS = 1.0
_NO_ID = 2**62          # "no id bound yet": only the time bounds the first run

_HOME = Path.home()
_CHROMIUM_ROOTS = {
    "linux": [("chrome", ".config/google-chrome"), ("chromium", ".config/chromium"),
              ("brave", ".config/BraveSoftware/Brave-Browser"), ("edge", ".config/microsoft-edge")],
    "darwin": [("chrome", "Library/Application Support/Google/Chrome"),
               ("chromium", "Library/Application Support/Chromium"),
               ("brave", "Library/Application Support/BraveSoftware/Brave-Browser"),
               ("edge", "Library/Application Support/Microsoft Edge")],
    "win32": [("chrome", "Google/Chrome/User Data"), ("edge", "Microsoft/Edge/User Data"),
              ("brave", "BraveSoftware/Brave-Browser/User Data")],
}
_FIREFOX_ROOTS = {
    "linux": [".mozilla/firefox", "snap/firefox/common/.mozilla/firefox"],
    "darwin": ["Library/Application Support/Firefox/Profiles"],
    "win32": ["Mozilla/Firefox/Profiles"],
}


def discover_profiles() -> list[tuple[str, Path]]:
    """(browser, history file) for every profile found in this user's standard locations."""
    platform = "win32" if sys.platform.startswith("win") else "darwin" if sys.platform == "darwin" else "linux"
    local = Path(os.environ.get("LOCALAPPDATA", _HOME)) if platform == "win32" else _HOME
    roaming = Path(os.environ.get("APPDATA", _HOME)) if platform == "win32" else _HOME
    found = []
    for browser, root in _CHROMIUM_ROOTS[platform]:
        found += [(browser, p) for p in sorted((local / root).glob("*/History")) if p.is_file()]
    for root in _FIREFOX_ROOTS[platform]:
        found += [("firefox", p) for p in sorted((roaming / root).glob("*/places.sqlite")) if p.is_file()]
    return found


def kind_of(path: Path) -> str:
    return "firefox" if path.name == "places.sqlite" else "chromium"


def _copy(path: Path, folder: Path) -> Path:
    """A consistent snapshot of the database, the browser untouched.

    SQLite's online backup reads the live file as one transaction, write-ahead log included. When
    the browser holds a lock that forbids even that (Windows), the files are copied instead, with
    their log or journal, which SQLite replays or rolls back when the copy is opened.
    """
    import time

    target = folder / path.name
    deadline = time.monotonic() + LOCK_WAIT_SECONDS

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
    except (sqlite3.Error, TimeoutError):
        target.unlink(missing_ok=True)
    shutil.copy2(path, target)
    for suffix in ("-wal", "-journal"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            shutil.copy2(side, folder / side.name)
    return target


def _visits(db: Path, kind: str, after_id: int | None, after: int) -> Iterator[tuple[int, int, str, str | None]]:
    """(visit id, raw visit time, url, title) of visits with an id above ``after_id`` or a time above
    ``after`` (raw). The first run (no id yet) goes in time order, later ones in id order, so that
    a cursor saved part-way is exact either way."""
    table, time_column = ("moz_historyvisits", "visit_date") if kind == "firefox" else ("visits", "visit_time")
    order = f"v.{time_column}, v.id" if after_id is None else "v.id"
    join = "moz_places p ON p.id = v.place_id" if kind == "firefox" else "urls p ON p.id = v.url"
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
    return raw / 1e6 if kind == "firefox" else raw / 1e6 - _CHROMIUM_EPOCH_OFFSET


def from_unix(seconds: float, kind: str) -> int:
    return int(seconds * 1e6) if kind == "firefox" else int((seconds + _CHROMIUM_EPOCH_OFFSET) * 1e6)


class BrowserHistory:
    name = "browser"
    source_type = "browser"
    source_types = ("chrome", "chromium", "brave", "edge", "firefox")   # each visit names its browser
    interval_seconds = 300
    settings_schema = {
        "profiles": {"type": "array", "items": {"type": "string"},
                     "description": "History / places.sqlite files to read; empty: every profile found"},
        "backfill_days": {"type": "number", "default": 90, "description": "How far back the first run reads"},
    }
    privacy_note = ("Reads the addresses, titles and times of pages you visited in Chrome, Chromium, Edge, Brave "
                    "and Firefox, from a copy of their history. Private/incognito windows are never stored by the "
                    "browser, so never read. Excluded domains are skipped. Nothing leaves this machine.")

    def __init__(self, now=None):
        import time

        self._now = now or time.time

    def profiles(self, settings) -> list[tuple[str, Path]]:
        explicit = settings.get("profiles") or []
        if explicit:
            out = []
            for item in explicit:
                path = Path(item).expanduser()
                out.append(("firefox" if kind_of(path) == "firefox" else _browser_of(path), path))
            return out
        return discover_profiles()

    def collect(self, since, ctx):
        cursors = dict(since or {})
        backfill = float(ctx.settings.get("backfill_days", 90)) * 86400
        profiles = [(b, p) for b, p in self.profiles(ctx.settings) if p.is_file()]
        scratch = getattr(ctx, "temp_dir", None)     # a host without one: the system's temp folder
        for number, (browser, path) in enumerate(profiles):
            if ctx.stopping:
                return
            kind = kind_of(path)
            key = str(path)
            state = cursors.get(key, {"id": None, "time": from_unix(self._now() - backfill, kind)})
            if not isinstance(state, dict):
                state = {"id": None, "time": state}      # a cursor from before ids were kept: a time
            try:
                with tempfile.TemporaryDirectory(prefix="magi-browser-", dir=scratch) as tmp:
                    newest = yield from self._profile(browser, path, kind, state, Path(tmp), key, cursors, ctx)
            except (sqlite3.Error, OSError, TimeoutError, ValueError) as exc:
                # This profile only; its cursor stays, so what it holds is read once it is whole again.
                # (ValueError: sqlite3 fails to decode the error message of a damaged schema, for one.)
                ctx.skipped("unreadable_history", f"{browser} {path}: {type(exc).__name__}: {exc}")
                continue
            if newest is None:
                return                        # stopping
            cursors[key] = dict(newest)
            ctx.save_cursor(dict(cursors))   # kept once this profile's visits are stored
            ctx.progress(number + 1, len(profiles))

    def _profile(self, browser, path, kind, state, tmp, key, cursors, ctx):
        """Yield one profile's new visits from a snapshot; returns its new cursor (None when stopped)."""
        copy = _copy(path, tmp)
        newest = dict(state)
        for count, (visit_id, raw, url, title) in enumerate(_visits(copy, kind, state["id"], state["time"]),
                                                            start=1):
            if ctx.stopping:
                return None
            if not isinstance(visit_id, int) or not isinstance(raw, int):
                # SQLite columns take any type: a damaged or forged file can hold text where a time belongs.
                ctx.skipped("bad_visit", f"{browser} {path}: a visit with id {visit_id!r:.40} and time {raw!r:.40}")
                continue
            newest["time"] = max(newest["time"], raw)
            if state["id"] is not None:
                newest["id"] = max(newest["id"], visit_id)
            payload = self._payload(browser, path, kind, visit_id, raw, url, title, ctx)
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
    def _payload(browser, path, kind, visit_id, raw, url, title, ctx):
        try:
            url = url.decode("utf-8") if isinstance(url, bytes) else "" if url is None else url
            if not isinstance(url, str):
                raise TypeError(f"the address is a {type(url).__name__}")
            parts = urlsplit(url)
            hostname = parts.hostname
        except (TypeError, ValueError) as exc:      # UnicodeDecodeError is a ValueError
            # A malformed address in the history: skip it, keep reading.
            ctx.skipped("bad_url", f"{browser} {path}: visit {visit_id}: {type(exc).__name__}")
            return None
        if parts.scheme not in _SCHEMES or ctx.excluded("domains", url):
            return None                   # not a web page, or the user excluded it: by choice, not broken
        if isinstance(title, bytes):
            title = title.decode("utf-8", "replace")
        elif not isinstance(title, str):
            title = None                  # a number where the title belongs: the visit is still a visit
        domain = (hostname or "").removeprefix("www.")
        provenance = {"url": url, "domain": domain, "browser": browser}
        if title:
            provenance["title"] = title
        return activity(browser, "visit_page", to_unix(raw, kind), provenance,
                        item_id=f"{browser}:{_profile_id(path)}:{visit_id}")


def _last_id(db: Path, kind: str) -> int:
    table = "moz_historyvisits" if kind == "firefox" else "visits"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def _browser_of(path: Path) -> str:
    """Which Chromium-family browser owns a History file, from the folders just above it."""
    folders = " ".join(part.casefold() for part in path.parts[-4:-1])
    for browser, marks in (("brave", ("brave",)), ("edge", ("edge",)), ("chromium", ("chromium",))):
        if any(mark in folders for mark in marks):
            return browser
    return "chrome"


def _profile_id(path: Path) -> str:
    """A short stable id of a profile file, so two profiles' visit ids never collide."""
    import hashlib

    return hashlib.sha1(str(path).encode("utf-8")).hexdigest()[:8]


@hookimpl
def register_collectors(register):
    register(BrowserHistory())
