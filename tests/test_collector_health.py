"""A collector's health, per source: collecting, idle, unavailable (with the reason and the fix) or failing (named
by its source) — completed by the writer with what was stored, saved in the memory so every process shows it."""

import threading

from magi_desktop.collectors import Supervisor
from magi_desktop.collectors.health import RunHealth, describe, state_of
from magi_desktop.plugin_api import Unavailable, activity

T0 = 1_700_000_000


class Repos:
    """Three "repositories": one with two new items, one read with nothing new, one missing, one git cannot read."""

    name = "repos"
    source_type = "notes"
    interval_seconds = 60
    settings_schema = {}
    privacy_note = "test"

    def collect(self, since, ctx):
        ctx.source("~/src/a")
        for i in range(2):
            yield activity("notes", "write_note", T0 + i, {"title": f"a {i}"}, item_id=f"a{i}")
        ctx.source("~/src/b")
        ctx.unavailable("~/src/x", "no such repository: ~/src/x", "check the path in Settings")
        ctx.failing("~/src/broken", "git cannot read it: fatal: bad object HEAD")


def run_once(sup, name):
    sup.status[name].next_run_at = 0
    assert name in sup.tick()
    assert sup.wait_idle()


def test_each_source_says_what_it_found_and_the_memory_keeps_it_for_every_process(memory):
    sup = Supervisor(memory, [Repos()])
    run_once(sup, "repos")
    health = sup.status["repos"].health
    assert health["state"] == "collecting"
    assert health["sources"] == {
        "~/src/a": {"state": "collecting", "stored": 2},
        "~/src/b": {"state": "idle"},
        "~/src/x": {"state": "unavailable", "reason": "no such repository: ~/src/x",
                    "fix": "check the path in Settings"},
        "~/src/broken": {"state": "failing", "reason": "git cannot read it: fatal: bad object HEAD"},
    }
    saved = memory.collector_statuses()["repos"]           # what `magi status` in another process reads
    assert saved["health"] == health
    lines = describe(saved)
    assert lines[0] == "collecting"
    assert "~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings" in lines
    assert "~/src/a: collecting (2 new)" in lines
    # Next run: nothing new anywhere — the repository with news goes idle, the missing one still says why.
    run_once(sup, "repos")
    health = sup.status["repos"].health
    assert health["sources"]["~/src/a"] == {"state": "idle"}
    assert health["state"] == "failing" and health["reason"].startswith("1 of 4 sources; ~/src/broken: git cannot")
    assert sup.status["repos"].failures == 0 and not sup.status["repos"].quarantined   # a source, not the run
    sup.stop()


class Missing:
    name = "music"
    source_type = "music"
    interval_seconds = 60
    settings_schema = {}
    privacy_note = "test"

    def __init__(self):
        self.runs = 0

    def collect(self, since, ctx):
        self.runs += 1
        raise Unavailable("playerctl not found", "install playerctl (apt install playerctl)")
        yield  # a generator, as collectors are


def test_a_collector_that_can_read_nothing_is_unavailable_with_its_fix_and_never_quarantined(memory):
    missing = Missing()
    sup = Supervisor(memory, [missing], quarantine_after=2)
    for _ in range(4):
        run_once(sup, "music")
    status = sup.status["music"]
    assert missing.runs == 4 and status.failures == 0 and not status.quarantined and status.last_error is None
    assert status.health["state"] == "unavailable"
    assert status.health["sources"] == {"music": {"state": "unavailable", "reason": "playerctl not found",
                                                  "fix": "install playerctl (apt install playerctl)"}}
    assert describe(memory.collector_statuses()["music"]) == [
        "unavailable: playerctl not found — install playerctl (apt install playerctl)"]
    sup.stop()


def test_a_run_that_raises_is_failing_with_its_error_and_one_that_reads_nothing_new_is_idle(memory):
    class Once:
        name, source_type, interval_seconds, settings_schema, privacy_note = "once", "notes", 60, {}, "test"
        fail = True

        def collect(self, since, ctx):
            if since is None:
                yield activity("notes", "write_note", T0, {"title": "first"}, item_id="o1")
            if self.fail:
                raise RuntimeError("disk on fire")

    once = Once()
    sup = Supervisor(memory, [once])
    run_once(sup, "once")
    assert sup.status["once"].health["state"] == "failing"
    assert sup.status["once"].health["reason"] == "RuntimeError: disk on fire"
    assert describe(memory.collector_statuses()["once"]) == ["failing: RuntimeError: disk on fire"]
    once.fail = False
    run_once(sup, "once")     # the item came again: a duplicate, nothing new
    assert sup.status["once"].health["state"] == "idle"
    assert sup.status["once"].health["sources"] == {"once": {"state": "idle"}}
    sup.stop()


def test_a_hung_run_shows_failing_and_what_it_yields_later_does_not_change_that(memory):
    release = threading.Event()

    class Hangs:
        name, source_type, interval_seconds, settings_schema, privacy_note = "hangs", "notes", 60, {}, "test"

        def collect(self, since, ctx):
            release.wait(30)
            yield activity("notes", "write_note", T0, {"title": "too late"}, item_id="late")

    sup = Supervisor(memory, [Hangs()], run_timeout=0.05)
    sup.tick()
    threading.Event().wait(0.2)
    sup.tick()                                   # abandons it
    assert sup.status["hangs"].quarantined
    release.set()
    threading.Event().wait(0.3)
    assert sup.status["hangs"].health["state"] == "failing"
    assert sup.status["hangs"].health["reason"].startswith("hung: no end after")
    assert state_of(memory.collector_statuses()["hangs"]) == "quarantined"
    sup.stop()


def test_sources_are_bounded_and_their_words_redacted():
    health = RunHealth("calendar")
    for i in range(100):
        health.read(f"calendar-{i}.ics")
    health.unavailable("secret.ics", "permission denied: token=ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    summary = health.summary({})
    assert len(summary["sources"]) == 65                                   # 64 named, the rest as one
    assert "(other sources)" in summary["sources"]
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in str(summary)


def test_the_source_being_read_when_the_run_broke_is_failing_not_idle(memory):
    class Breaks:
        name, source_type, interval_seconds, settings_schema, privacy_note = "breaks", "notes", 60, {}, "test"

        def collect(self, since, ctx):
            ctx.source("~/a.db")
            yield activity("notes", "write_note", T0, {"title": "a"}, item_id="a")
            ctx.source("~/b.db")
            raise RuntimeError("boom")

    sup = Supervisor(memory, [Breaks()])
    run_once(sup, "breaks")
    sources = sup.status["breaks"].health["sources"]
    assert sources == {"~/a.db": {"state": "collecting", "stored": 1},
                       "~/b.db": {"state": "failing", "reason": "RuntimeError: boom"}}
    sup.stop()
