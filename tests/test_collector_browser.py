"""The browser-history collector against real-format history files built here."""
# Raw SQL left builds those files (Chromium's and Firefox's History schemas) and holds their locks.

import sqlite3

from collecting import Ctx
from magi_plugins import browser as B

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.l1 import event_rows

NOW = 1_764_000_000.0        # 2025-11-24



def chromium_history(path, visits):
    """A Chrome/Chromium ``History`` file: the urls and visits tables as Chromium lays them out."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT, url LONGVARCHAR, title LONGVARCHAR,
                          visit_count INTEGER DEFAULT 0 NOT NULL, typed_count INTEGER DEFAULT 0 NOT NULL,
                          last_visit_time INTEGER NOT NULL, hidden INTEGER DEFAULT 0 NOT NULL);
        CREATE TABLE visits(id INTEGER PRIMARY KEY, url INTEGER NOT NULL, visit_time INTEGER NOT NULL,
                            from_visit INTEGER, transition INTEGER DEFAULT 0 NOT NULL,
                            segment_id INTEGER, visit_duration INTEGER DEFAULT 0 NOT NULL);
    """)
    for url, title, at in visits:
        raw = B.from_unix(at, "chromium")
        row = conn.execute("SELECT id FROM urls WHERE url = ?", (url,)).fetchone()
        url_id = row[0] if row else conn.execute(
            "INSERT INTO urls (url, title, visit_count, last_visit_time) VALUES (?, ?, 1, ?)",
            (url, title, raw)).lastrowid
        conn.execute("INSERT INTO visits (url, visit_time, transition) VALUES (?, ?, 805306368)", (url_id, raw))
    conn.commit()
    return conn


def firefox_places(path, visits):
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url LONGVARCHAR, title LONGVARCHAR, rev_host LONGVARCHAR,
                                 visit_count INTEGER DEFAULT 0, hidden INTEGER DEFAULT 0 NOT NULL,
                                 typed INTEGER DEFAULT 0 NOT NULL, frecency INTEGER DEFAULT -1 NOT NULL,
                                 last_visit_date INTEGER, guid TEXT, url_hash INTEGER DEFAULT 0 NOT NULL);
        CREATE TABLE moz_historyvisits (id INTEGER PRIMARY KEY, from_visit INTEGER, place_id INTEGER,
                                        visit_date INTEGER, visit_type INTEGER, session INTEGER);
    """)
    for url, title, at in visits:
        raw = B.from_unix(at, "firefox")
        row = conn.execute("SELECT id FROM moz_places WHERE url = ?", (url,)).fetchone()
        place = row[0] if row else conn.execute(
            "INSERT INTO moz_places (url, title, last_visit_date) VALUES (?, ?, ?)", (url, title, raw)).lastrowid
        conn.execute("INSERT INTO moz_historyvisits (place_id, visit_date, visit_type) VALUES (?, ?, 1)", (place, raw))
    conn.commit()
    return conn


def test_chromium_history_is_read_from_a_copy_incrementally(tmp_path):
    history = tmp_path / ".config" / "google-chrome" / "Default" / "History"
    history.parent.mkdir(parents=True)
    live = chromium_history(history, [
        ("https://www.example.com/a", "Page A", NOW - 3600),
        ("https://bank.example.org/login", "Bank", NOW - 1800),
        ("chrome://settings/", "Settings", NOW - 1700),
        ("https://docs.python.org/3/", "Python docs", NOW - 600),
        ("https://old.example.com/", "Too old", NOW - 200 * 86400),
    ])
    live.execute("BEGIN EXCLUSIVE")              # the browser holds its database: we read a copy
    collector = B.BrowserHistory(now=lambda: NOW)
    ctx = Ctx({"profiles": [str(history)], "backfill_days": 90}, {"domains": ["bank.example.org"]})
    payloads = list(collector.collect(None, ctx))
    assert [p["provenance"]["url"] for p in payloads] == ["https://www.example.com/a", "https://docs.python.org/3/"]
    first = payloads[0]
    assert first["source_type"] == "chrome" and first["activity"]["action_code"] == "visit_page"
    assert first["provenance"] == {"url": "https://www.example.com/a", "domain": "example.com", "browser": "chrome",
                                   "title": "Page A"}
    assert abs(first["occurred_at"] - (NOW - 3600)) < 1e-3
    live.rollback()
    # The cursor moves past everything read (excluded and non-web visits too); the next run is empty.
    assert list(collector.collect(ctx.cursor, ctx)) == []
    chromium_history_add(live, "https://news.example.net/x", "News", NOW - 60)
    again = list(collector.collect(ctx.cursor, ctx))
    assert [p["provenance"]["title"] for p in again] == ["News"]
    live.close()


def chromium_history_add(conn, url, title, at):
    raw = B.from_unix(at, "chromium")
    url_id = conn.execute("INSERT INTO urls (url, title, visit_count, last_visit_time) VALUES (?, ?, 1, ?)",
                          (url, title, raw)).lastrowid
    conn.execute("INSERT INTO visits (url, visit_time, transition) VALUES (?, ?, 0)", (url_id, raw))
    conn.commit()


def test_firefox_places_and_both_profiles_at_once(tmp_path):
    places = tmp_path / "firefox" / "abcd.default-release" / "places.sqlite"
    places.parent.mkdir(parents=True)
    firefox_places(places, [("https://mozilla.org/", "Mozilla", NOW - 100),
                            ("https://mozilla.org/", "Mozilla", NOW - 50)])
    history = tmp_path / "chromium" / "Default" / "History"
    history.parent.mkdir(parents=True)
    chromium_history(history, [("https://a.example/", "A", NOW - 70)]).close()
    collector = B.BrowserHistory(now=lambda: NOW)
    ctx = Ctx({"profiles": [str(places), str(history)]})
    payloads = list(collector.collect(None, ctx))
    assert [(p["source_type"], p["provenance"]["domain"]) for p in payloads] == [
        ("firefox", "mozilla.org"), ("firefox", "mozilla.org"), ("chromium", "a.example")]
    assert len({p["source_item_id"] for p in payloads}) == 3          # two visits of one page are two events
    assert set(ctx.cursor) == {str(places), str(history)}
    assert ctx.progressed[-1] == (2, 2)


def _touch(root, *paths):
    for path in paths:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"")


def _found(profiles, home):
    return [(p.browser.code, p.source, p.history.relative_to(home).as_posix()) for p in profiles]


def test_profiles_of_every_browser_are_discovered_in_their_linux_places(tmp_path):
    _touch(tmp_path, ".config/google-chrome/Default/History", ".config/google-chrome/Profile 1/History",
           ".config/google-chrome/Guest Profile/History", ".config/google-chrome/System Profile/History",
           ".var/app/com.google.Chrome/config/google-chrome/Default/History",
           "snap/chromium/common/chromium/Default/History", "xdg/BraveSoftware/Brave-Browser/Default/History",
           "xdg/vivaldi/Default/History", "xdg/opera/History", "xdg/microsoft-edge/Profile 2/History",
           ".mozilla/firefox/x1.default-release/places.sqlite", "snap/firefox/common/.mozilla/firefox/y2.default/"
           "places.sqlite", ".config/vivaldi/Default/History")      # not read: $XDG_CONFIG_HOME moved it
    found = _found(B.discover_profiles("linux", tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}), tmp_path)
    assert found == [
        ("chrome", "Chrome Default", ".var/app/com.google.Chrome/config/google-chrome/Default/History"),
        ("chromium", "Chromium Default", "snap/chromium/common/chromium/Default/History"),
        ("brave", "Brave Default", "xdg/BraveSoftware/Brave-Browser/Default/History"),
        ("edge", "Edge Profile 2", "xdg/microsoft-edge/Profile 2/History"),
        ("vivaldi", "Vivaldi Default", "xdg/vivaldi/Default/History"),
        ("opera", "Opera Default", "xdg/opera/History"),                # Opera: the user data folder is the profile
        ("firefox", "Firefox x1.default-release", ".mozilla/firefox/x1.default-release/places.sqlite"),
        ("firefox", "Firefox y2.default", "snap/firefox/common/.mozilla/firefox/y2.default/places.sqlite")]
    found = _found(B.discover_profiles("linux", tmp_path, {}), tmp_path)       # no XDG_CONFIG_HOME: ~/.config
    assert [f for f in found if f[0] in ("chrome", "vivaldi")] == [
        ("chrome", "Chrome Default", ".config/google-chrome/Default/History"),
        ("chrome", "Chrome Profile 1", ".config/google-chrome/Profile 1/History"),     # no guest, no picker
        ("chrome", "Chrome Default", ".var/app/com.google.Chrome/config/google-chrome/Default/History"),
        ("vivaldi", "Vivaldi Default", ".config/vivaldi/Default/History")]
    # The same browser installed twice (natively and as a Flatpak): two sources, told apart by their folder.
    names = B.source_names(B.discover_profiles("linux", tmp_path, {}))
    assert names[0] == f"Chrome Default ({tmp_path}/.config/google-chrome/Default)" and names[1] == "Chrome Profile 1"


def test_profiles_are_discovered_in_their_macos_and_windows_places(tmp_path):
    mac = tmp_path / "mac"
    _touch(mac, "Library/Application Support/Google/Chrome/Default/History",
           "Library/Application Support/Arc/User Data/Default/History",
           "Library/Application Support/com.operasoftware.OperaGX/History",
           "Library/Application Support/Vivaldi/Profile 3/History",
           "Library/Application Support/Firefox/Profiles/z9.default-release/places.sqlite")
    assert [(code, source) for code, source, _ in _found(B.discover_profiles("darwin", mac, {}), mac)] == [
        ("chrome", "Chrome Default"), ("vivaldi", "Vivaldi Profile 3"), ("opera_gx", "Opera GX Default"),
        ("arc", "Arc Default"), ("firefox", "Firefox z9.default-release")]
    win = tmp_path / "win"
    local, roaming = win / "AppData/Local", win / "AppData/Roaming"
    _touch(win, "AppData/Local/Microsoft/Edge/User Data/Default/History",
           "AppData/Local/Packages/TheBrowserCompany.Arc_ttt1ap7aakyb4/LocalCache/Local/Arc/User Data/Default/History",
           "AppData/Roaming/Opera Software/Opera Stable/Default/History",
           "AppData/Roaming/Opera Software/Opera GX Stable/History",
           "AppData/Roaming/Mozilla/Firefox/Profiles/w1.default/places.sqlite")
    found = _found(B.discover_profiles("win32", win, {"LOCALAPPDATA": str(local), "APPDATA": str(roaming)}), win)
    assert [(code, source) for code, source, _ in found] == [
        ("edge", "Edge Default"), ("opera", "Opera Default"), ("opera_gx", "Opera GX Default"),
        ("arc", "Arc Default"), ("firefox", "Firefox w1.default")]


def test_a_configured_path_is_a_file_a_profile_folder_or_a_folder_of_profiles_and_knows_its_browser(tmp_path):
    _touch(tmp_path, ".config/vivaldi/Default/History", ".config/vivaldi/Profile 1/History",
           "Opera Software/Opera GX Stable/History", "backup/History", "fox/a.default/places.sqlite")
    config = tmp_path / ".config"
    at = {str(p.relative_to(tmp_path)): [(q.browser.code, q.name) for q in B.profiles_at(p)] for p in (
        config / "vivaldi/Default/History", config / "vivaldi/Default", config / "vivaldi",
        tmp_path / "Opera Software/Opera GX Stable", tmp_path / "backup/History", tmp_path / "fox",
        tmp_path / "nothing")}
    assert at == {".config/vivaldi/Default/History": [("vivaldi", "Default")],
                  ".config/vivaldi/Default": [("vivaldi", "Default")],
                  ".config/vivaldi": [("vivaldi", "Default"), ("vivaldi", "Profile 1")],
                  "Opera Software/Opera GX Stable": [("opera_gx", "Default")],
                  "backup/History": [("chrome", "backup")],          # in no browser's folder: taken for Chrome's
                  "fox": [("firefox", "a.default")],
                  "nothing": []}


def test_the_browser_collector_runs_under_the_supervisor_into_memory(tmp_path, memory):
    history = tmp_path / "History"
    chromium_history(history, [("https://www.example.com/a", "Page A", NOW - 3600),
                               ("https://www.example.com/b", "Page B", NOW - 1800)]).close()
    clock = [NOW]
    sup = Supervisor(memory, [B.BrowserHistory(now=lambda: NOW)], settings={"browser": {"profiles": [str(history)]}},
                     clock=lambda: clock[0])
    sup.tick()
    assert sup.wait_idle()
    assert sup.status["browser"].counts["stored"] == 2
    texts = [r["content"] for r in sorted(event_rows(memory.db.reader()), key=lambda r: r["timestamp"])
             if r["natural_key"] is None]          # the visits, not the activity block they make (test_aggregation)
    assert texts == ["Chrome: Visited “Page A” (example.com)", "Chrome: Visited “Page B” (example.com)"]
    clock[0] += 301
    sup.tick()
    assert sup.wait_idle()
    assert sup.status["browser"].counts["stored"] == 2 and sup.status["browser"].counts["duplicates"] == 0
    sup.stop()


def test_a_visit_synced_from_another_device_with_an_old_time_is_still_read(tmp_path):
    history = tmp_path / "History"
    live = chromium_history(history, [("https://a.example/", "A", NOW - 600)])
    collector, ctx = B.BrowserHistory(now=lambda: NOW), Ctx({"profiles": [str(history)]})
    assert len(list(collector.collect(None, ctx))) == 1
    chromium_history_add(live, "https://phone.example/", "Read on the phone", NOW - 3 * 86400)   # new id, old time
    assert [p["provenance"]["title"] for p in collector.collect(ctx.cursor, ctx)] == ["Read on the phone"]
    assert list(collector.collect(ctx.cursor, ctx)) == []
    live.close()


def test_a_live_database_in_wal_mode_is_snapshotted_with_its_recent_visits(tmp_path):
    """The browser's newest visits sit in the write-ahead log until a checkpoint: they are read too."""
    history = tmp_path / "History"
    live = chromium_history(history, [("https://a.example/", "A", NOW - 600)])
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("PRAGMA wal_autocheckpoint=0")
    chromium_history_add(live, "https://b.example/", "B only in the log", NOW - 60)
    assert (tmp_path / "History-wal").stat().st_size > 0
    payloads = list(B.BrowserHistory(now=lambda: NOW).collect(None, Ctx({"profiles": [str(history)]})))
    assert [p["provenance"]["title"] for p in payloads] == ["A", "B only in the log"]
    live.close()
