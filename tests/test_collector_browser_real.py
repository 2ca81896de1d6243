"""The browser collector on history files the real browsers wrote (tests/fixtures/browser: a Chromium History and a
Firefox places.sqlite, made by headless Chromium and Firefox visiting pages served from 127.0.0.1), what it
leaves out and why (counted by reason), and each reason a profile or the whole collector is unavailable."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from collecting import Ctx
from file_permissions import without_root_powers
from magi_plugins import browser as B

from magi_desktop.collectors import Supervisor
from magi_desktop.collectors.health import describe
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.plugin_api import Unavailable

FIXTURES = Path(__file__).parent / "fixtures" / "browser"
ALL_OF_IT = {"backfill_days": 36500}        # the fixtures' visits are as old as the day they were written
PAGES = ["/index.html", "/notes.html", "/redirect.html", "/index.html?from=redirect", "/script.html",
         "/notes.html?via=script", "/blob.html"]


def unpack(name, target):
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(FIXTURES / name) as packed, target.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return target


def where(payload):
    url = payload["provenance"]["url"]
    return url[url.index("/", len("http://")):]


def visit_rows(memory):
    """The stored visits (not the activity blocks they are folded into, test_aggregation.py)."""
    return [r for r in event_rows(memory.db.reader()) if r["metadata"]["timeline"]["activity"]["action_code"]
            == "visit_page"]


def run_once(sup):
    sup.status["browser"].next_run_at = 0
    assert sup.tick() == ["browser"]
    assert sup.wait_idle(60)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of its own: the collector discovers profiles there, as on a user's machine."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return folder


def test_a_history_chromium_wrote_is_found_read_and_what_is_left_out_is_counted_by_reason(home, memory):
    unpack("chromium_History.gz", home / ".config" / "chromium" / "Default" / "History")
    sup = Supervisor(memory, [B.BrowserHistory()], settings={"browser": ALL_OF_IT},
                     exclusions={"domains": ["localhost"]})
    run_once(sup)
    status = memory.collector_statuses()["browser"]            # what every process reads
    assert status["counts"]["stored"] == len(PAGES)
    # The file:// page, the data: and blob: pages and the excluded domain: left out, and said so.
    assert status["skipped"] == {"file_url": 1, "other_scheme": 2, "excluded_domain": 1}
    assert status["health"]["sources"] == {"Chromium Default": {"state": "collecting", "stored": len(PAGES)}}
    texts = [r["content"] for r in sorted(visit_rows(memory), key=lambda r: r["timestamp"])]
    assert texts[1] == "Chromium: Visited “Café notes — 笔记” (127.0.0.1)"
    assert not any("localhost" in t or "file:" in t or "blob:" in t or "Data page" in t for t in texts)
    assert status["last_skip"].startswith("other_scheme: Chromium Default: visit 11 (data:)")   # where, not what
    run_once(sup)                                              # nothing new: idle, and nothing counted twice
    status = memory.collector_statuses()["browser"]
    assert status["health"]["sources"] == {"Chromium Default": {"state": "idle"}}
    assert status["skipped"] == {"file_url": 1, "other_scheme": 2, "excluded_domain": 1}
    assert status["counts"]["stored"] == len(PAGES)
    sup.stop()


def test_the_visits_of_a_chromium_history_in_order_with_titles_and_times(tmp_path):
    history = unpack("chromium_History.gz", tmp_path / "chromium" / "Default" / "History")
    ctx = Ctx({"profiles": [str(history)], **ALL_OF_IT})
    payloads = list(B.BrowserHistory().collect(None, ctx))
    assert [where(p) for p in payloads] == [*PAGES, "/index.html"]           # the last from localhost: not excluded
    assert payloads[-1]["provenance"]["domain"] == "localhost"
    assert {p["source_type"] for p in payloads} == {"chromium"}
    assert [p["provenance"].get("title") for p in payloads][:2] == ["Magi fixture home", "Café notes — 笔记"]
    times = [p["occurred_at"] for p in payloads]
    assert times == sorted(times) and 1.7e9 < times[0] < 2.2e9             # Chromium's 1601 epoch undone
    assert ctx.skips == {"file_url": 1, "other_scheme": 2}
    assert [d for r, d in ctx.details if r == "other_scheme"] == ["Chromium Default: visit 8 (blob:)",
                                                                 "Chromium Default: visit 11 (data:)"]
    assert ctx.sources == {"Chromium Default": ("read", None, None)}


def test_a_places_sqlite_firefox_wrote(tmp_path):
    places = unpack("firefox_places.sqlite.gz", tmp_path / "fox" / "k3j4.default-release" / "places.sqlite")
    ctx = Ctx({"profiles": [str(places.parent)], **ALL_OF_IT}, {"domains": ["localhost"]})   # a profile folder
    payloads = list(B.BrowserHistory().collect(None, ctx))
    # Firefox's default bookmarks are places without visits: not visits, not read.
    assert [(where(p), p["provenance"]["title"]) for p in payloads] == [
        ("/index.html", "Magi fixture home"), ("/notes.html", "Café notes — 笔记"),
        ("/redirect.html", "Redirecting"), ("/index.html?from=redirect", "Magi fixture home")]
    assert {p["source_type"] for p in payloads} == {"firefox"} and payloads[0]["provenance"]["domain"] == "127.0.0.1"
    assert ctx.skips == {"excluded_domain": 1, "file_url": 1}
    assert ctx.sources == {"Firefox k3j4.default-release": ("read", None, None)}
    assert list(B.BrowserHistory().collect(ctx.cursor, ctx)) == []


def test_no_browser_history_at_all_is_unavailable_with_the_setting_to_fix_it(home, memory):
    with pytest.raises(Unavailable) as raised:
        list(B.BrowserHistory().collect(None, Ctx({})))
    assert raised.value.reason.startswith("no browser history found") and "Profiles" in raised.value.fix
    sup = Supervisor(memory, [B.BrowserHistory()], quarantine_after=2)
    for _ in range(3):
        run_once(sup)
    status = memory.collector_statuses()["browser"]
    assert status["health"]["state"] == "unavailable" and status["failures"] == 0 and not status["quarantined"]
    assert describe(status)[0].startswith("unavailable: no browser history found (looked for Chrome, Chromium, Brave")
    sup.stop()


def test_a_configured_path_with_no_history_is_unavailable_and_the_others_are_read(tmp_path):
    history = unpack("chromium_History.gz", tmp_path / "chromium" / "Default" / "History")
    (tmp_path / "empty").mkdir()
    ctx = Ctx({"profiles": [str(tmp_path / "gone" / "History"), str(tmp_path / "empty"), str(history)], **ALL_OF_IT})
    assert len(list(B.BrowserHistory().collect(None, ctx))) == len(PAGES) + 1
    assert ctx.sources == {
        str(tmp_path / "gone" / "History"): ("unavailable", f"no such file: {tmp_path / 'gone' / 'History'}",
                                             B.FIX_PROFILES),
        str(tmp_path / "empty"): ("unavailable", f"no History or places.sqlite in {tmp_path / 'empty'}",
                                  B.FIX_PROFILES),
        "Chromium Default": ("read", None, None)}
    only_missing = Ctx({"profiles": [str(tmp_path / "gone")]})    # configured, all missing: each says why, no raise
    assert list(B.BrowserHistory().collect(None, only_missing)) == []
    assert [state for state, _, _ in only_missing.sources.values()] == ["unavailable"]


_READ_AS_GIVEN = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from collecting import Ctx
    from magi_plugins.browser import BrowserHistory
    ctx = Ctx({"profiles": sys.argv[3:], "backfill_days": 36500}, temp_dir=sys.argv[2])
    stored = len(list(BrowserHistory().collect(None, ctx)))
    print(json.dumps({"stored": stored, "sources": ctx.sources, "skips": ctx.skips}))
""")


def test_a_history_this_user_may_not_read_is_unavailable_permission_denied(tmp_path):
    readable = unpack("chromium_History.gz", tmp_path / "chromium" / "Default" / "History")
    refused = unpack("chromium_History.gz", tmp_path / "chromium" / "Profile 1" / "History")
    refused.chmod(0o000)
    (tmp_path / "scratch").mkdir()
    done = subprocess.run([*without_root_powers(), sys.executable, "-c", _READ_AS_GIVEN, str(Path(__file__).parent),
                           str(tmp_path / "scratch"), str(readable), str(refused)],
                          capture_output=True, text=True, timeout=120)
    refused.chmod(0o600)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["stored"] == len(PAGES) + 1
    assert seen["sources"] == {
        "Chromium Default": ["read", None, None],
        "Chromium Profile 1": ["unavailable", f"permission denied: {refused}",
                               "let the user Magi runs as read it (macOS: Full Disk Access in Privacy & Security)"]}
    assert seen["skips"] == {"file_url": 1, "other_scheme": 2}                 # no "unreadable_history": not broken


def test_a_browser_folder_this_user_may_not_look_into_is_unavailable_not_silent(tmp_path):
    home = tmp_path / "home"
    unpack("chromium_History.gz", home / ".config" / "chromium" / "Default" / "History")
    refused = home / ".config" / "google-chrome"
    unpack("chromium_History.gz", refused / "Default" / "History")
    refused.chmod(0o000)
    (tmp_path / "scratch").mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop("XDG_CONFIG_HOME", None)
    done = subprocess.run([*without_root_powers(), sys.executable, "-c", _READ_AS_GIVEN, str(Path(__file__).parent),
                           str(tmp_path / "scratch")], capture_output=True, text=True, timeout=120, env=env)
    refused.chmod(0o700)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["sources"] == {
        "Chrome google-chrome": ["unavailable", f"permission denied: {refused / 'History'}",
                                 "let the user Magi runs as read it (macOS: Full Disk Access in Privacy & Security)"],
        "Chromium Default": ["read", None, None]}
    assert seen["stored"] == len(PAGES) + 1


# Another program's SQLite holding its database in an EXCLUSIVE transaction: a write lock on the file's "shared"
# byte range (os_unix.c: PENDING_BYTE 0x40000000, SHARED_FIRST two above it, SHARED_SIZE 510), so no reader gets in.
_BROWSER_HOLDING_ITS_HISTORY = textwrap.dedent("""
    import fcntl, sys
    history = open(sys.argv[1], "r+b")
    fcntl.lockf(history, fcntl.LOCK_EX, 510, 0x40000000 + 2)
    print("held", flush=True)
    sys.stdin.read()
""")


def test_a_history_the_browser_holds_locked_and_will_not_let_be_copied_is_unavailable(tmp_path, monkeypatch):
    """Windows, while the browser runs: SQLite's backup waits on the browser's lock, and the copy is refused
    too (a sharing violation). The lock here is real, held by another process as a browser's SQLite holds it;
    the refused copy is Windows' behaviour, which this machine's file system does not have, so it stands in."""
    pytest.importorskip("fcntl", reason="the lock is taken the POSIX way")
    history = unpack("chromium_History.gz", tmp_path / "chromium" / "Default" / "History")
    browser = subprocess.Popen([sys.executable, "-c", _BROWSER_HOLDING_ITS_HISTORY, str(history)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    real_copy = shutil.copy2

    def windows_copy(source, target, **kwargs):
        if Path(source) == history:
            raise PermissionError(13, "The process cannot access the file because it is being used by another "
                                      "process", str(source))
        return real_copy(source, target, **kwargs)

    monkeypatch.setattr(B.shutil, "copy2", windows_copy)
    ctx = Ctx({"profiles": [str(history)], **ALL_OF_IT}, temp_dir=tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    try:
        assert browser.stdout.readline() == "held\n"
        assert list(B.BrowserHistory().collect(None, ctx)) == []
    finally:
        browser.communicate("", timeout=30)                    # the browser closes
    assert ctx.sources == {"Chromium Default": ("unavailable", f"locked by Chromium: {history}",
                                                "close Chromium, or wait: it is read again at the next run")}
    assert ctx.cursor is None and not ctx.skips                # nothing read: the next run starts where this one did
    assert len(list(B.BrowserHistory().collect(None, ctx))) == len(PAGES) + 1          # closed: read


def test_a_damaged_history_is_failing_by_its_profile_name(tmp_path):
    good = unpack("chromium_History.gz", tmp_path / "chromium" / "Default" / "History")
    bad = unpack("chromium_History.gz", tmp_path / "chromium" / "Profile 1" / "History")
    bad.write_bytes(bad.read_bytes()[:3000])                   # cut short
    ctx = Ctx({"profiles": [str(tmp_path / "chromium")], **ALL_OF_IT})
    assert len(list(B.BrowserHistory().collect(None, ctx))) == len(PAGES) + 1
    state, reason, _ = ctx.sources["Chromium Profile 1"]
    assert state == "failing" and reason.startswith("unreadable History: DatabaseError")
    assert ctx.sources["Chromium Default"] == ("read", None, None) and ctx.skips["unreadable_history"] == 1
    assert set(ctx.cursor) == {str(good)}


def test_each_chromium_family_browser_names_its_visits(tmp_path, memory):
    """The same History in Opera GX's, Vivaldi's and Arc's folders: each visit says which browser it was."""
    folders = {"opera_gx": "Opera Software/Opera GX Stable", "vivaldi": ".config/vivaldi/Default",
               "arc": "Library/Application Support/Arc/User Data/Default"}
    for folder in folders.values():
        unpack("chromium_History.gz", tmp_path / folder / "History")
    sup = Supervisor(memory, [B.BrowserHistory()], settings={"browser": {
        "profiles": [str(tmp_path / f) for f in folders.values()], **ALL_OF_IT}})
    run_once(sup)
    sup.stop()
    first = {r["source"]: r["content"] for r in sorted(visit_rows(memory), key=lambda r: -r["timestamp"])}
    assert first == {"opera_gx": "Opera GX: Visited “Magi fixture home” (127.0.0.1)",
                     "vivaldi": "Vivaldi: Visited “Magi fixture home” (127.0.0.1)",
                     "arc": "Arc: Visited “Magi fixture home” (127.0.0.1)"}
    assert set(memory.collector_statuses()["browser"]["health"]["sources"]) == {
        "Opera GX Default", "Vivaldi Default", "Arc Default"}
