"""collectors.json, `magi collect`, and the worker ticking the supervisor."""

import json
import subprocess
import sys
import time

import git
import pytest

from magi_desktop.collectors import SettingsError, build_supervisor, load_settings
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
    repo_at(tmp_path / "proj")
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
    assert "git: stored 0, duplicates 1, rejected 0" in again.stdout


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
    write(memory.path.parent, {"collectors": {"calendar": {"enabled": True, "settings": settings}}})
    with pytest.raises(SettingsError) as caught:
        build_supervisor(memory, memory.path.parent, env={"MAGI_LOAD_PLUGINS": "calendar"})
    assert caught.value.where == where
