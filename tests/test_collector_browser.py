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


def test_profiles_are_discovered_in_the_standard_places(tmp_path, monkeypatch):
    monkeypatch.setattr(B, "_HOME", tmp_path)
    monkeypatch.setattr(B.sys, "platform", "linux")
    for path in ("google-chrome/Default/History", "google-chrome/Profile 1/History",
                 "BraveSoftware/Brave-Browser/Default/History"):
        target = tmp_path / ".config" / path
        target.parent.mkdir(parents=True)
        target.write_bytes(b"")
    firefox = tmp_path / ".mozilla/firefox/x1.default/places.sqlite"
    firefox.parent.mkdir(parents=True)
    firefox.write_bytes(b"")
    found = [(b, p.relative_to(tmp_path).as_posix()) for b, p in B.discover_profiles()]
    assert found == [("chrome", ".config/google-chrome/Default/History"),
                     ("chrome", ".config/google-chrome/Profile 1/History"),
                     ("brave", ".config/BraveSoftware/Brave-Browser/Default/History"),
                     ("firefox", ".mozilla/firefox/x1.default/places.sqlite")]


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
    texts = [r["content"] for r in sorted(event_rows(memory.db.reader()), key=lambda r: r["timestamp"])]
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
