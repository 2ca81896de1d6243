"""A collector's health as the user sees it — `magi collect`, `magi status`, `magi plugins`, `magi doctor` — and
`magi plugins --release`: real `magi` processes, a real third-party plugin package (entry point), the statuses the
memory keeps, so every process says the same."""

import json
import os
import subprocess
import sys

import pytest
from test_plugins import distribution

from magi_desktop.collectors import Supervisor
from magi_desktop.core import Memory
from magi_desktop.doctor import collector_checks

pytestmark = pytest.mark.slow

PLUGIN = '''
    from magi_desktop.plugin_api import Unavailable, activity, hookimpl

    class Repos:
        """Reads three "repositories": one with news, one missing, one it cannot read."""
        name, source_type, interval_seconds, privacy_note = "repos", "notes", 600, "Reads note titles."
        settings_schema = {}

        def collect(self, since, ctx):
            ctx.source("~/src/a")
            for i in range(2):
                yield activity("notes", "write_note", 1_700_000_000 + i, {"title": f"a {i}"}, item_id=f"a{i}")
            ctx.unavailable("~/src/x", "no such repository: ~/src/x", "check the path in Settings")
            ctx.failing("~/src/broken", "git cannot read it: fatal: bad object HEAD")

    class Player:
        name, source_type, interval_seconds, privacy_note = "player", "music", 30, "Reads what plays."
        settings_schema = {}

        def collect(self, since, ctx):
            raise Unavailable("no D-Bus session bus", "start Magi inside your desktop session")
            yield

    class Flaky:
        name, source_type, interval_seconds, privacy_note = "flaky", "notes", 60, "Fails."
        settings_schema = {}

        def collect(self, since, ctx):
            raise RuntimeError("disk on fire")
            yield

    @hookimpl
    def register_collectors(register):
        for collector in (Repos(), Player(), Flaky()):
            register(collector)
'''


@pytest.fixture
def world(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    distribution(site, "magi-test-health", "1.0", {"health": "magi_test_health"}, {"magi_test_health": PLUGIN})
    monkeypatch.syspath_prepend(str(site))
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "collectors.json").write_text(json.dumps({"collectors": {
        name: {"enabled": True} for name in ("repos", "player", "flaky")}}))
    os.chmod(data / "collectors.json", 0o600)
    env = {**os.environ, "PYTHONPATH": str(site), "MAGI_DATA_DIR": str(data), "MAGI_LOAD_PLUGINS": "health"}
    monkeypatch.setenv("MAGI_LOAD_PLUGINS", "health")
    yield data, env
    for name in [m for m in sys.modules if m.startswith("magi_test_")]:
        del sys.modules[name]


def magi(env, *args):
    return subprocess.run([sys.executable, "-m", "magi_desktop.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_every_command_says_what_each_collector_found_in_the_same_words(world):
    data, env = world
    collect = magi(env, "collect")
    assert collect.returncode == 1, collect.stderr            # flaky failed; being unavailable is no failure
    out = collect.stdout
    assert "repos: stored 2, duplicates 0, rejected 0\n  collecting\n    ~/src/a: collecting (2 new)\n" \
           "    ~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings\n" \
           "    ~/src/broken: failing: git cannot read it: fatal: bad object HEAD\n" in out
    assert "player: stored 0, duplicates 0, rejected 0\n  unavailable: no D-Bus session bus — start Magi inside " \
           "your desktop session\n" in out
    assert "flaky: stored 0, duplicates 0, rejected 0\n  failing: RuntimeError: disk on fire\n" in out

    status = magi(env, "status").stdout        # another process, from what the memory keeps
    assert "  player         1       0           0         0        0  unavailable\n" \
           "    unavailable: no D-Bus session bus — start Magi inside your desktop session\n" in status
    assert "    ~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings\n" in status
    assert "  flaky          1       0           0         0        0  failing\n" \
           "    failing: RuntimeError: disk on fire\n" in status
    assert "last error" not in status          # said once, by the health

    plugins = magi(env, "plugins")
    assert plugins.returncode == 0, plugins.stderr
    assert "    health: unavailable: no D-Bus session bus — start Magi inside your desktop session\n" in plugins.stdout
    assert "    health: collecting\n      ~/src/a: collecting (2 new)\n" in plugins.stdout
    listed = {c["name"]: c for c in json.loads(magi(env, "plugins", "--json").stdout)["collectors"]}
    assert listed["player"]["status"]["health"]["state"] == "unavailable"

    checks = {c.name: c for c in collector_checks(data)}
    assert (checks["collector player"].status, checks["collector player"].detail) == (
        "WARN", "unavailable: no D-Bus session bus — start Magi inside your desktop session")
    assert checks["collector repos"].detail == (
        "~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings; "
        "~/src/broken: failing: git cannot read it: fatal: bad object HEAD")
    assert checks["collector flaky"].status == "WARN"


def test_a_collector_turned_off_shows_as_disabled_with_its_last_run_and_nothing_to_fix(world):
    data, env = world
    magi(env, "collect")
    settings = json.loads((data / "collectors.json").read_text())
    settings["collectors"]["repos"]["enabled"] = False
    (data / "collectors.json").write_text(json.dumps(settings))
    status = magi(env, "status").stdout
    assert "  repos          1       2           0         0        0  disabled\n" \
           "    disabled (its last run: collecting)\n" in status
    assert "~/src/x" not in status and "check the path" not in status
    plugins = magi(env, "plugins").stdout
    assert "    health: disabled (its last run: collecting)\n" in plugins and "~/src/x" not in plugins
    assert "collector repos" not in {c.name for c in collector_checks(data)}


def test_release_with_a_mistyped_data_folder_makes_no_new_memory(world, tmp_path):
    data, env = world
    typo = tmp_path / "dta"
    done = magi({**env, "MAGI_DATA_DIR": str(typo)}, "plugins", "--release", "flaky")
    assert done.returncode == 2 and "no memory in" in done.stderr and not typo.exists()


def test_a_quarantine_is_shown_everywhere_and_magi_plugins_release_ends_it(world):
    from magi_test_health import Flaky

    data, env = world
    with Memory.open(data, embedder="hashing") as memory:
        supervisor = Supervisor(memory, [Flaky()], quarantine_after=1)
        supervisor.tick()
        assert supervisor.wait_idle()
        supervisor.stop()
        assert memory.collector_statuses()["flaky"]["quarantined"]
    status = magi(env, "status").stdout
    assert "  flaky          1       0           0         0        0  quarantined\n" \
           "    quarantined after 1 failure: RuntimeError: disk on fire — release it with " \
           "`magi plugins --release flaky`\n" in status
    doctor = {c.name: c for c in collector_checks(data)}["collector flaky"]
    assert doctor.status == "WARN" and doctor.detail.startswith("quarantined after 1 failure: RuntimeError")

    released = magi(env, "plugins", "--release", "flaky")
    assert released.returncode == 0, released.stderr
    assert released.stdout == "flaky: released from quarantine; it runs again at its next interval\n"
    saved = json.loads(magi(env, "status", "--json").stdout)["collectors"]["flaky"]
    assert not saved["quarantined"] and not saved["failures"]
    assert magi(env, "plugins", "--release", "flaky").stdout == "flaky: not quarantined; nothing to release\n"
    unknown = magi(env, "plugins", "--release", "nosuch")
    assert unknown.returncode == 2 and "no collector named 'nosuch'" in unknown.stderr


def test_the_doctor_names_what_keeps_a_collector_from_running(world, tmp_path):
    data, _env = world
    (data / "collectors.json").write_text(json.dumps({"collectors": {"player": {"enabled": True},
                                                                     "nosuch": {"enabled": True}}}))
    checks = {c.name: c for c in collector_checks(data)}
    assert checks["collector player"].status == "OK" and checks["collector player"].detail == "not run yet"
    assert checks["collector nosuch"].status == "WARN" and "no plugin registers it" in checks["collector nosuch"].detail
    assert {c.name for c in collector_checks(data, database_sound=False)} >= {"collectors", "collector nosuch"}
    (data / "collectors.json").write_text('{"collectors": {"player": {"enabled": "yes"}}}')
    [check] = collector_checks(data)
    assert check.status == "WARN" and "collectors.player.enabled" in check.detail
    (data / "collectors.json").unlink()
    assert [(c.name, c.status) for c in collector_checks(data)] == [("collectors", "OK")]
