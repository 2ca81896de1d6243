"""Failures and quarantine are kept in the memory (a collector's guard), so every process honours them: a hang in
one process quarantines the collector for the others, a release from another process lifts it, a new version of
the plugin lifts it by itself — and what the host refuses is counted by reason."""

import threading
import time

import pytest

from magi_desktop.collectors import Supervisor
from magi_desktop.core import Memory
from magi_desktop.plugin_api import activity

T0 = 1_700_000_000


class Base:
    source_type = "notes"
    interval_seconds = 60
    settings_schema = {}
    privacy_note = "test"


class Hangs(Base):
    name = "hangs"

    def __init__(self):
        self.release = threading.Event()
        self.runs = 0

    def collect(self, since, ctx):
        self.runs += 1
        self.release.wait(30)
        yield activity("notes", "write_note", T0, {"title": "late"}, item_id="late")


class Raises(Base):
    name = "crash"

    def __init__(self):
        self.runs = 0

    def collect(self, since, ctx):
        self.runs += 1
        raise RuntimeError("disk on fire")
        yield


@pytest.fixture
def other(memory):
    """The same memory opened again, as `magi collect` or a second app would."""
    mem = Memory.open(memory.path.parent, embedder="hashing")
    yield mem
    mem.close()


def hang_until_quarantined(sup, hangs):
    sup.tick()
    deadline = time.monotonic() + 30
    while hangs.runs == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    sup.tick()                      # past its timeout: abandoned, quarantined


def test_a_hang_in_one_process_quarantines_the_collector_for_every_other(memory, other):
    hangs = Hangs()
    first = Supervisor(memory, [hangs], run_timeout=0.1)
    hang_until_quarantined(first, hangs)
    assert first.status["hangs"].quarantined
    # Another process (magi collect) starts later: it never runs the hanging collector, and says why.
    again = Hangs()
    second = Supervisor(other, [again], run_timeout=0.1)
    assert second.status["hangs"].quarantined and "hung" in second.status["hangs"].last_error
    assert second.tick() == [] and again.runs == 0
    saved = other.collector_statuses()["hangs"]
    assert saved["quarantined"] and saved["failures"] == 1 and "hung" in saved["last_error"]
    hangs.release.set()
    again.release.set()
    first.stop()
    second.stop()


def test_a_release_from_another_process_lifts_the_quarantine_of_a_running_app(memory, other):
    crash = Raises()
    app = Supervisor(memory, [crash], quarantine_after=2)
    for _ in range(2):
        app.status["crash"].next_run_at = 0
        app.tick()
        assert app.wait_idle()
    assert app.status["crash"].quarantined and crash.runs == 2
    app.status["crash"].next_run_at = 0
    assert app.tick() == []
    assert other.release_collector("crash") is True            # `magi plugins --release crash`
    assert other.release_collector("crash") is False           # nothing left to release
    assert app.tick() == ["crash"]                             # the app takes the memory's word at its next tick
    assert app.wait_idle()
    assert crash.runs == 3 and app.status["crash"].failures == 1 and not app.status["crash"].quarantined
    app.stop()


def test_failures_in_a_row_add_up_across_processes_and_a_success_starts_them_again(memory, other):
    first = Supervisor(memory, [Raises()], quarantine_after=3)
    for _ in range(2):
        first.status["crash"].next_run_at = 0
        first.tick()
        assert first.wait_idle()
    first.stop()
    second = Supervisor(other, [Raises()], quarantine_after=3)
    assert second.status["crash"].failures == 2 and not second.status["crash"].quarantined
    second.tick()
    assert second.wait_idle()
    assert second.status["crash"].quarantined and memory.collector_statuses()["crash"]["quarantined"]
    second.stop()

    class Recovers(Raises):
        def collect(self, since, ctx):
            yield activity("notes", "write_note", T0, {"title": "fine"}, item_id="ok")

    memory.release_collector("crash")
    fine = Supervisor(memory, [Recovers()], quarantine_after=3)
    fine.tick()
    assert fine.wait_idle()
    fine.stop()
    crashing = Supervisor(other, [Raises()], quarantine_after=3)
    crashing.tick()
    assert crashing.wait_idle()
    assert crashing.status["crash"].failures == 1 and not crashing.status["crash"].quarantined
    crashing.stop()


def test_a_new_version_of_the_plugin_lifts_its_quarantine_and_the_same_version_does_not(memory, other):
    crash = Raises()
    sup = Supervisor(memory, [crash], quarantine_after=1, versions={"crash": "1.0"})
    sup.tick()
    assert sup.wait_idle() and sup.status["crash"].quarantined
    sup.stop()
    assert memory.collector_statuses()["crash"]["version"] == "1.0"
    same = Supervisor(other, [Raises()], quarantine_after=1, versions={"crash": "1.0"})
    assert same.status["crash"].quarantined and same.tick() == []
    same.stop()
    fixed = Raises()
    upgraded = Supervisor(other, [fixed], quarantine_after=1, versions={"crash": "1.1"})
    assert not upgraded.status["crash"].quarantined
    assert upgraded.tick() == ["crash"]
    assert upgraded.wait_idle() and fixed.runs == 1
    upgraded.stop()


def test_what_the_host_refuses_is_counted_by_the_bad_field(memory):
    class Sloppy(Base):
        name = "sloppy"
        source_types = ("notes",)

        def collect(self, since, ctx):
            yield activity("notes", "write_note", "not a time", {"title": "a"}, item_id="a")
            yield activity("notes", "write_note", "yesterday-ish", {"title": "b"}, item_id="b")
            yield activity("calendar", "attend_meeting", T0, {"title": "a meeting it may not write"}, item_id="c")
            yield {"source_type": "notes", "chat": {"role": "user", "content": "I love it"}, "occurred_at": T0}
            yield activity("notes", "write_note", T0, {"title": "fine"}, item_id="d")

    sup = Supervisor(memory, [Sloppy()])
    sup.tick()
    assert sup.wait_idle()
    status = sup.status["sloppy"]
    assert status.counts["rejected"] == 4 and status.counts["stored"] == 1
    assert status.rejected == {"occurred_at": 2, "foreign_source_type": 1, "speaks": 1}
    assert memory.collector_statuses()["sloppy"]["rejected"] == {"occurred_at": 2, "foreign_source_type": 1,
                                                                 "speaks": 1}
    sup.stop()


def test_the_app_knows_each_collectors_plugin_version(memory):
    from importlib import metadata

    from magi_desktop.collectors import build_supervisor

    (memory.path.parent / "collectors.json").write_text('{"collectors": {"git": {"enabled": true}}}')
    sup, errors = build_supervisor(memory, memory.path.parent, env={"MAGI_LOAD_PLUGINS": "git"})
    assert errors == {} and sup.versions == {"git": metadata.version("magi-desktop")}   # a built-in's is ours
    sup.stop()


def test_two_processes_running_two_versions_of_a_hanging_plugin_do_not_release_each_other(memory, other):
    """After `pip install -U`, `magi collect` loads 1.0.1 while the app still runs 1.0.0: each version that hung
    stays held, so neither process keeps starting it again (every hang costs a stuck thread)."""
    app_hangs, cli_hangs = Hangs(), Hangs()
    app = Supervisor(memory, [app_hangs], run_timeout=0.1, versions={"hangs": "1.0.0"})
    hang_until_quarantined(app, app_hangs)
    cli = Supervisor(other, [cli_hangs], run_timeout=0.1, versions={"hangs": "1.0.1"})
    assert not cli.status["hangs"].quarantined            # a new version is tried once
    hang_until_quarantined(cli, cli_hangs)
    assert cli.status["hangs"].quarantined
    for _ in range(6):
        for sup in (app, cli):
            sup.status["hangs"].next_run_at = 0
            sup.tick()
    assert (app_hangs.runs, cli_hangs.runs) == (1, 1)
    assert memory.collector_statuses()["hangs"]["quarantined"]
    assert other.release_collector("hangs")                # the user's release lifts it for both versions
    assert "hangs" in app.tick()
    for hangs in (app_hangs, cli_hangs):
        hangs.release.set()
    app.stop()
    cli.stop()
