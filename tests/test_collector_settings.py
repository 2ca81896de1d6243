"""collectors.json, `magi collect`, and the worker ticking the supervisor."""

import json
import subprocess
import sys
import time

import git
import pytest

from magi_desktop.collectors import SettingsError, build_supervisor, check_settings, load_plugins, load_settings
from magi_desktop.workers import BackgroundWorker


def write(folder, data):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "collectors.json").write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_collectors_are_off_until_enabled(tmp_path):
    assert load_settings(tmp_path).enabled == {}
    write(tmp_path, {"paused": True, "exclusions": {"domains": ["bank.example"]},
                     "collectors": {"git": {"enabled": True, "settings": {"repositories": ["/x"]}},
                                    "browser": {"enabled": False}}})
    settings = load_settings(tmp_path)
    assert settings.paused and settings.enabled == {"git": {"repositories": ["/x"]}}
    assert settings.exclusions == {"domains": ["bank.example"]}


@pytest.mark.parametrize("data, where", [
    ("{not json", "file"), ([], "file"), ({"pause": True}, "pause"), ({"paused": "yes"}, "paused"),
    ({"exclusions": {"hosts": []}}, "exclusions.hosts"), ({"exclusions": {"apps": "x"}}, "exclusions.apps"),
    ({"collectors": {"git": {"enabled": "on"}}}, "collectors.git.enabled"),
    ({"collectors": {"git": {"enabled": True, "settings": []}}}, "collectors.git.settings"),
])
def test_a_malformed_file_names_its_bad_field(tmp_path, data, where):
    write(tmp_path, data)
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    assert caught.value.where == where


def repo_at(path):
    repo = git.Repo.init(path, initial_branch="main")
    (path / "a.txt").write_text("a\n")
    repo.index.add([str(path / "a.txt")])
    who = git.Actor("Ana", "ana@example.com")
    repo.index.commit("Initial import", author=who, committer=who)
    return repo


def test_magi_collect_runs_the_enabled_collectors_once(tmp_path):
    repo = repo_at(tmp_path / "proj")
    data = tmp_path / "data"
    write(data, {"collectors": {"git": {"enabled": True, "settings": {"repositories": [str(tmp_path / "proj")]}},
                                "nosuch": {"enabled": True}}})
    env = {"MAGI_DATA_DIR": str(data), "MAGI_LOAD_PLUGINS": "git", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "collect", "--json"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["collectors"]["git"]["counts"]["stored"] == 1
    assert "no plugin registers it" in report["errors"]["collector nosuch"]
    again = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "collect"], capture_output=True, text=True,
                           env=env, timeout=300)
    assert "git: stored 0, duplicates 0, rejected 0" in again.stdout     # this run's counts: nothing new
    (tmp_path / "proj" / "b.txt").write_text("b\n")
    repo.index.add([str(tmp_path / "proj" / "b.txt")])
    repo.index.commit("Second")
    third = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "collect"], capture_output=True, text=True,
                           env=env, timeout=300)
    assert "git: stored 1, duplicates 0, rejected 0" in third.stdout
    status = json.loads(subprocess.run([sys.executable, "-m", "magi_desktop.cli", "status", "--json"],
                                       capture_output=True, text=True, env=env, timeout=300).stdout)
    git_status = status["collectors"]["git"]
    assert git_status["runs"] == 3 and git_status["counts"]["stored"] == 2 and not git_status["quarantined"]
    human = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "status"], capture_output=True, text=True,
                           env=env, timeout=300).stdout
    assert "collectors" in human and "git" in human


def test_magi_collect_without_enabled_collectors_says_how(tmp_path):
    out = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "collect"], capture_output=True, text=True,
                         env={"MAGI_DATA_DIR": str(tmp_path / "d"), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert out.returncode == 1 and "collectors.json" in out.stderr


def test_the_background_worker_ticks_the_supervisor(tmp_path, memory):
    repo_at(tmp_path / "proj")
    write(memory.path.parent, {"collectors": {"git": {"enabled": True,
                                                      "settings": {"repositories": [str(tmp_path / "proj")]}}}})
    supervisor, _ = build_supervisor(memory, memory.path.parent, env={"MAGI_LOAD_PLUGINS": "git"})
    worker = BackgroundWorker(memory, idle_poll_seconds=0.05, tick=supervisor.tick)
    worker.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and supervisor.status["git"].counts["stored"] == 0:
        time.sleep(0.05)
    worker.stop()
    supervisor.stop()
    assert supervisor.status["git"].counts["stored"] == 1 and worker.last_error is None


@pytest.mark.parametrize("settings, where", [
    ({"paths": "~/cal"}, "collectors.calendar.settings.paths"),
    ({"paths": [1]}, "collectors.calendar.settings.paths"),
    ({"days_back": "30d"}, "collectors.calendar.settings.days_back"),
    ({"folder": "x"}, "collectors.calendar.settings.folder"),
])
def test_settings_are_checked_against_the_collectors_schema(tmp_path, memory, settings, where):
    """A collector with a bad setting is unavailable, naming it, and is never run; the others run (one plugin's
    stricter schema cannot turn every collector off)."""
    history = tmp_path / ".bash_history"
    history.write_text("make test\n")
    write(memory.path.parent, {"collectors": {"calendar": {"enabled": True, "settings": settings},
                                              "terminal": {"enabled": True, "settings": {"files": [str(history)]}}}})
    with pytest.raises(SettingsError) as caught:
        check_settings(memory.path.parent, load_plugins({"MAGI_LOAD_PLUGINS": "calendar"}).collectors()[0], settings)
    assert caught.value.where == where
    supervisor, errors = build_supervisor(memory, memory.path.parent, env={"MAGI_LOAD_PLUGINS": "calendar,terminal"})
    assert errors["collector calendar"].startswith(f"settings not valid: {where}: ")
    supervisor.tick()
    assert supervisor.wait_idle()
    supervisor.stop()
    health = supervisor.status["calendar"].health
    assert health["state"] == "unavailable" and health["reason"].startswith(f"settings not valid: {where}: ")
    assert health["fix"] == "fix them in Settings" and supervisor.status["calendar"].failures == 0
    assert supervisor.status["terminal"].counts["stored"] == 1


def test_a_watched_file_wakes_an_idle_worker(tmp_path, memory):
    """The app's path: build_supervisor(watch=True), the worker idling for a minute, a command typed."""
    history = tmp_path / ".zsh_history"
    history.write_text(": 1764000000:0;make test\n")
    write(memory.path.parent, {"collectors": {"terminal": {"enabled": True, "settings": {"files": [str(history)]}}}})
    supervisor, errors = build_supervisor(memory, memory.path.parent, env={"MAGI_LOAD_PLUGINS": "terminal"},
                                          watch=True)
    assert errors == {}
    worker = BackgroundWorker(memory, idle_poll_seconds=60, tick=supervisor.tick)
    supervisor.on_due = worker.wake
    worker.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and supervisor.status["terminal"].counts["stored"] < 1:
            time.sleep(0.05)
        with history.open("a") as f:
            f.write(": 1764000060:0;git push\n")
        while time.monotonic() < deadline and supervisor.status["terminal"].counts["stored"] < 2:
            time.sleep(0.05)
    finally:
        worker.stop()
        supervisor.stop()
    assert supervisor.status["terminal"].counts["stored"] == 2
