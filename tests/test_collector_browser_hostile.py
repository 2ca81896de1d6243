"""Hostile browser profiles (issue 16, defect 6): a truncated, not-a-database or non-UTF-8 History costs
its own profile only — skipped and counted, never a collector failure — and the copies are made in the
data folder, where a ``kill -9`` mid-run leaves nothing after the next start. Real History files written
by sqlite, damaged here."""
# Raw SQL left builds and reads those History files (Chromium's schema), never the memory.

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from collecting import Ctx
from magi_plugins import browser as B
from test_collector_browser import NOW, chromium_history, firefox_places

from magi_desktop.collectors import Supervisor
from magi_desktop.core.paths import temp_dir


def big_history(path, n=400):
    return chromium_history(path, [(f"https://example.com/{i}", f"Page {i} " + "x" * 300, NOW - 3600 + i)
                                   for i in range(n)])


def profiles(tmp_path):
    """good, truncated, garbage, not UTF-8, good: in that order."""
    good = tmp_path / "chrome" / "Default" / "History"
    good.parent.mkdir(parents=True)
    chromium_history(good, [("https://a.example/", "A", NOW - 300), ("https://b.example/", "B", NOW - 200)]).close()
    truncated = tmp_path / "chrome" / "Profile 1" / "History"
    truncated.parent.mkdir(parents=True)
    big_history(truncated).close()
    data = truncated.read_bytes()
    assert len(data) > 100_000
    truncated.write_bytes(data[: len(data) // 2])         # a disk that filled up, a copy cut short
    garbage = tmp_path / "chrome" / "Profile 2" / "History"
    garbage.parent.mkdir(parents=True)
    garbage.write_bytes(b"SQLite format 3\0" + random.Random(16).randbytes(40_000))
    latin = tmp_path / "chrome" / "Profile 3" / "History"
    latin.parent.mkdir(parents=True)
    conn = chromium_history(latin, [("https://c.example/", "C", NOW - 100)])
    raw = B.from_unix(NOW - 90, "chromium")
    conn.execute("INSERT INTO urls (url, title, last_visit_time) VALUES ('https://d.example/', "
                 "CAST(x'436166e9' AS TEXT), ?)", (raw,))                  # "Café" in Latin-1: not UTF-8
    conn.execute("INSERT INTO visits (url, visit_time) VALUES (2, ?)", (raw,))
    conn.execute("INSERT INTO urls (url, title, last_visit_time) VALUES (CAST(x'68747470733a2f2f65ff2e6578' AS TEXT), "
                 "'Broken address', ?)", (raw + 1,))
    conn.execute("INSERT INTO visits (url, visit_time) VALUES (3, ?)", (raw + 1,))
    conn.commit()
    conn.close()
    fox = tmp_path / "firefox" / "x.default" / "places.sqlite"
    fox.parent.mkdir(parents=True)
    firefox_places(fox, [("https://mozilla.org/", "Mozilla", NOW - 50)]).close()
    return [good, truncated, garbage, latin, fox]


def test_each_bad_profile_is_skipped_and_counted_and_the_others_are_read(tmp_path):
    paths = profiles(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ctx = Ctx({"profiles": [str(p) for p in paths]}, temp_dir=scratch)
    payloads = list(B.BrowserHistory(now=lambda: NOW).collect(None, ctx))
    assert [(p["provenance"]["domain"], p["provenance"].get("title")) for p in payloads] == [
        ("a.example", "A"), ("b.example", "B"), ("c.example", "C"), ("d.example", "Caf\ufffd"),
        ("mozilla.org", "Mozilla")]
    assert ctx.skips == {"unreadable_history": 2, "bad_url": 1}
    unreadable = [d for r, d in ctx.details if r == "unreadable_history"]
    assert str(paths[1]) in unreadable[0] and str(paths[2]) in unreadable[1]
    assert set(ctx.cursor) == {str(paths[0]), str(paths[3]), str(paths[4])}    # the bad ones keep no cursor
    assert list(scratch.iterdir()) == []                   # the copies went to the scratch folder, and went


def test_a_bad_profile_never_fails_the_run_nor_quarantines_the_collector(tmp_path, memory):
    paths = profiles(tmp_path)
    clock = [NOW]
    sup = Supervisor(memory, [B.BrowserHistory(now=lambda: NOW)],
                     settings={"browser": {"profiles": [str(p) for p in paths]}}, clock=lambda: clock[0],
                     quarantine_after=2)
    for _ in range(4):
        sup.tick()
        assert sup.wait_idle(60)
        clock[0] += 301
    sup.stop()
    status = sup.status["browser"]
    assert status.runs == 4 and status.failures == 0 and not status.quarantined and status.last_error is None
    assert status.counts["stored"] == 5
    assert status.skipped == {"unreadable_history": 8, "bad_url": 1}     # the broken ones, again on each run
    assert memory.collector_statuses()["browser"]["skipped"] == {"unreadable_history": 8, "bad_url": 1}
    root = temp_dir(memory.path.parent)
    assert [p for p in root.rglob("*") if p.is_file()] == []


def test_a_visit_with_the_wrong_types_is_skipped_not_the_profile(tmp_path):
    # SQLite columns take any type, whatever a column is declared as: a damaged or forged History can hold
    # text where a time belongs, a number or a blob where an address does.
    history = tmp_path / "History"
    conn = sqlite3.connect(history)
    conn.executescript("""
        CREATE TABLE urls(id INTEGER PRIMARY KEY, url, title);
        CREATE TABLE visits(id INTEGER PRIMARY KEY, url, visit_time);
    """)
    at = B.from_unix(NOW - 100, "chromium")
    conn.executemany("INSERT INTO urls VALUES (?, ?, ?)", [
        (1, "https://a.example/", "A"), (2, 12345, "number"), (3, b"https://\xff.example/", "blob"),
        (4, "https://b.example/", 42), (5, "https://c.example/", b"Caf\xe9")])
    conn.executemany("INSERT INTO visits VALUES (?, ?, ?)", [
        (1, 1, at), (2, 1, "yesterday"), (3, 2, at), (4, 3, at), (5, 4, at), (6, 5, at + 1)])
    conn.commit()
    conn.close()
    ctx = Ctx({"profiles": [str(history)]}, temp_dir=tmp_path)
    payloads = list(B.BrowserHistory(now=lambda: NOW).collect(None, ctx))
    assert [(p["provenance"]["url"], p["provenance"].get("title")) for p in payloads] == [
        ("https://a.example/", "A"), ("https://b.example/", None), ("https://c.example/", "Caf\ufffd")]
    assert ctx.skips == {"bad_visit": 1, "bad_url": 2} and str(history) in ctx.cursor


_PAUSING_HOST = textwrap.dedent("""
    import json, sys, time
    from magi_desktop.collectors import Supervisor
    from magi_desktop.core import Memory
    from magi_plugins.browser import BrowserHistory

    data, history, now = sys.argv[1], sys.argv[2], float(sys.argv[3])

    class Pausing(BrowserHistory):
        '''The real collector, made to stop mid-profile (its copy on disk) so the test can kill -9 it there.'''
        def collect(self, since, ctx):
            for i, payload in enumerate(super().collect(since, ctx)):
                if i == 1:
                    print(json.dumps([str(p) for p in ctx.temp_dir.rglob("History")]), flush=True)
                    time.sleep(300)
                yield payload

    memory = Memory.open(data, embedder="hashing")
    supervisor = Supervisor(memory, [Pausing(now=lambda: now)], settings={"browser": {"profiles": [history]}})
    supervisor.tick()
    time.sleep(300)
""")


def test_a_copy_left_by_a_kill_9_mid_run_is_removed_at_the_next_start(tmp_path, memory):
    history = tmp_path / "History"
    big_history(history).close()
    data = memory.path.parent
    child = subprocess.Popen([sys.executable, "-c", _PAUSING_HOST, str(data), str(history), str(NOW)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line, child.stderr.read()
        copies = [Path(p) for p in json.loads(line)]
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
        child.stdout.close()
        child.stderr.close()
    root = temp_dir(data)
    assert len(copies) == 1 and copies[0].is_relative_to(root / "browser")
    assert copies[0].stat().st_size >= history.stat().st_size        # the whole copy, left behind by the kill
    left = sqlite3.connect(copies[0])
    assert left.execute("SELECT count(*) FROM visits").fetchone()[0] == 400          # a real, whole copy
    left.close()
    Supervisor(memory, [B.BrowserHistory(now=lambda: NOW)]).stop()   # the next start of a host
    assert not copies[0].exists()
    assert [p for p in root.rglob("*")] == []
