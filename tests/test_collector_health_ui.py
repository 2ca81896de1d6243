"""Each collector's health in the windows (pytest-qt, offscreen): Settings' collectors page (state, each source,
the fix, the items left out by reason, a Release button for a quarantined collector) and the status window (a
row per enabled collector) — from the statuses the memory keeps, written here by a real supervisor."""

import json

import pytest

from magi_desktop.collectors import Supervisor
from magi_desktop.core import Memory
from magi_desktop.plugin_api import Unavailable, activity

pytest.importorskip("pytestqt")

from magi_desktop.ui.app import DesktopApp
from magi_desktop.ui.collector_health import STATE_COLOURS
from magi_desktop.ui.qt import QApplication, Qt
from magi_desktop.ui.settings_dialog import SettingsDialog
from magi_desktop.ui.status_window import StatusWindow

T0 = 1_700_000_000


class Repos:
    name, source_type, interval_seconds, settings_schema, privacy_note = "repos", "notes", 600, {}, "Reads notes."

    def collect(self, since, ctx):
        ctx.source("~/src/a")
        yield activity("notes", "write_note", T0, {"title": "a"}, item_id="a")
        ctx.skipped("binary_line", "~/src/a/notes line 3")
        ctx.unavailable("~/src/x", "no such repository: ~/src/x", "check the path in Settings")
        ctx.failing("~/src/broken", "git cannot read it: fatal: bad object HEAD")


class Player:
    name, source_type, interval_seconds, settings_schema, privacy_note = "player", "music", 30, {}, "Reads music."

    def collect(self, since, ctx):
        raise Unavailable("no D-Bus session bus", "start Magi inside your desktop session")
        yield


class Flaky:
    name, source_type, interval_seconds, settings_schema, privacy_note = "flaky", "notes", 60, {}, "Fails."

    def collect(self, since, ctx):
        raise RuntimeError("disk on fire <b>bold</b>")     # a plugin's words are shown as typed, never as markup
        yield


@pytest.fixture
def memory(tmp_path):
    mem = Memory.open(tmp_path / "data", embedder="hashing")
    supervisor = Supervisor(mem, [Repos(), Player(), Flaky()], quarantine_after=1)
    supervisor.tick()
    assert supervisor.wait_idle()
    supervisor.stop()
    yield mem
    mem.close()


def enable(memory, *names):
    (memory.path.parent / "collectors.json").write_text(json.dumps(
        {"collectors": {name: {"enabled": True} for name in names}}))


def test_settings_show_each_collectors_health_and_release_a_quarantined_one(qtbot, memory):
    dialog = SettingsDialog(memory.path.parent, [Repos(), Player(), Flaky()], memory=memory)
    qtbot.addWidget(dialog)
    repos, player, flaky = (dialog.boxes[name].health for name in ("repos", "player", "flaky"))
    assert repos.state.text() == "collecting"
    assert repos.details.text().splitlines() == [
        "~/src/a: collecting (1 new)",
        "~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings",
        "~/src/broken: failing: git cannot read it: fatal: bad object HEAD",
        "skipped (not failures): binary_line 1; last: binary_line: ~/src/a/notes line 3"]
    assert player.state.text() == "unavailable: no D-Bus session bus — start Magi inside your desktop session"
    assert STATE_COLOURS["unavailable"] in player.state.styleSheet()
    assert not player.details.isVisibleTo(dialog) and not player.release_button.isVisibleTo(dialog)
    assert flaky.state.text() == ("quarantined after 1 failure: RuntimeError: disk on fire <b>bold</b> — press "
                                  "Release to run it again")
    assert flaky.state.textFormat() == Qt.TextFormat.PlainText
    assert flaky.release_button.isVisibleTo(dialog) and not repos.release_button.isVisibleTo(dialog)
    assert not flaky.release_button.isEnabled()            # the collector is off: turned on first, then released
    dialog.boxes["flaky"].setChecked(True)
    flaky.release_button.click()
    assert not memory.collector_statuses()["flaky"]["quarantined"]          # for every process
    assert flaky.state.text() == "failing: RuntimeError: disk on fire <b>bold</b>"
    assert not flaky.release_button.isVisibleTo(dialog)
    assert dialog.release_collector("flaky") is False                       # nothing left to release


def test_without_the_memory_settings_show_no_health(qtbot, tmp_path):
    dialog = SettingsDialog(tmp_path / "data", [Player()])
    qtbot.addWidget(dialog)
    assert dialog.boxes["player"].health is None


def test_the_status_window_has_a_row_per_enabled_collector_with_its_reason(qtbot, memory):
    enable(memory, "repos", "flaky", "player")
    window = StatusWindow(memory, hide_on_close=False)
    qtbot.addWidget(window)
    rows = window.collector_health
    assert list(rows) == ["flaky", "player", "repos"]
    assert rows["flaky"].state.text().startswith("quarantined after 1 failure: RuntimeError: disk on fire")
    assert rows["flaky"].state.text().endswith("release it in Settings… → Collectors")
    assert not rows["flaky"].release_button.isVisibleTo(window)                 # released in Settings
    assert rows["player"].state.text() == "unavailable: no D-Bus session bus — start Magi inside your desktop " \
                                          "session"
    assert "~/src/broken: failing: git cannot read it: fatal: bad object HEAD" in rows["repos"].details.text()
    enable(memory, "player")                   # the others turned off: their rows go at the next refresh
    window.refresh()
    assert list(window.collector_health) == ["player"]
    assert window.collector_rows.rowCount() == 1
    (memory.path.parent / "collectors.json").write_text("{not json")
    window.refresh()
    assert window.collector_health == {} and "none runs" in window.fields["collectors"].text()


def test_the_apps_release_frees_the_collector_in_the_memory_and_its_running_supervisor(qtbot, memory):
    app = DesktopApp(QApplication.instance(), memory)
    qtbot.addWidget(app.window)
    app.supervisor = Supervisor(memory, [Flaky()], quarantine_after=1)
    app.supervisor.tick()
    assert app.supervisor.wait_idle() and app.supervisor.status["flaky"].quarantined
    enable(memory, "flaky")
    assert "needs you: flaky (quarantined)" in app.collectors_status()
    assert app.release_collector("flaky") is True
    assert not app.supervisor.status["flaky"].quarantined and not memory.collector_statuses()["flaky"]["quarantined"]
    assert "flaky" in app.supervisor.tick()              # due again at once
    assert app.supervisor.wait_idle()
    app.shutdown()
