"""A third-party plugin package as its author makes one (issue 19, items 6 and 7): built in a temporary folder —
pyproject.toml and a module — and installed as ``pip install -e`` would install it, with real entry-point metadata
(a ``<name>.dist-info`` with its ``entry_points.txt``, made from the pyproject) on ``sys.path``; then found by
``importlib.metadata`` and run through ``collectors.build_supervisor`` from a data folder's collectors.json.

``write_plugin(site, collector)`` builds a package around any collector body, so a test of another promise of the
plugin host (a hang, a version change) builds its plugin the same way; ``install`` makes any package folder loadable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

from magi_desktop.collectors import DEFAULT_PLUGINS, build_supervisor

ROOT = Path(__file__).resolve().parent.parent
PLUGINS_GUIDE = ROOT / "docs" / "plugins.md"
# Only the plugin under test loads: the first-party plugins are entry points of Magi Desktop itself.
ONLY_THIRD_PARTY = {"MAGI_LOAD_PLUGINS": ",".join(f"-{path.rsplit('.', 1)[-1]}" for path in DEFAULT_PLUGINS)}
T0 = 1_600_000_000

MODULE = '''\
"""{dist}: a Magi Desktop plugin package built by a test."""

from magi_desktop.plugin_api import Unavailable, activity, entity, hookimpl  # noqa: F401 - for the collector body

__version__ = "{version}"

{collector}


@hookimpl
def register_collectors(register):
    register(Collector())


@hookimpl
def register_templates(register):
    for source_type, action_code, *forms in {templates!r}:
        register(source_type, action_code, *forms)
'''

PYPROJECT = '''\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "{version}"
dependencies = ["magi-desktop"]

[project.entry-points."magi_desktop.plugins"]
{name} = "{module}"
'''


def install(site: Path, package: Path) -> str:
    """Install the package in folder ``package`` as ``pip install -e`` does, without pip: its dist-info (METADATA
    and entry_points.txt, from its pyproject.toml) in ``site``, and the folder itself on the path (an editable
    install's .pth line). ``site`` must be on ``sys.path``. Returns the distribution's name."""
    project = tomllib.loads((package / "pyproject.toml").read_text("utf-8"))["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = project.get("entry-points", {})
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items()) + "\n"
        for group, points in groups.items()))
    sys.path.insert(0, str(package))
    return project["name"]


def write_plugin(site: Path, collector: str, *, name: str = "ledger", version: str = "1.0.0",
                 templates: tuple[tuple[str, ...], ...] = ()) -> Path:
    """A plugin package named ``magi-test-<name>`` whose module ``magi_test_<name>`` holds ``collector`` — source
    defining ``class Collector`` (``activity``, ``entity``, ``Unavailable`` and ``hookimpl`` are imported) —
    registered by ``register_collectors``, and ``templates`` ((source_type, action_code, *forms), …) by
    ``register_templates``; installed with ``install``. Returns the package folder."""
    module = f"magi_test_{name}"
    package = site.parent / f"magi-test-{name}"
    (package / module).mkdir(parents=True)
    (package / "pyproject.toml").write_text(PYPROJECT.format(dist=f"magi-test-{name}", version=version, name=name,
                                                             module=module))
    (package / module / "__init__.py").write_text(MODULE.format(dist=f"magi-test-{name}", version=version,
                                                                collector=textwrap.dedent(collector).strip(),
                                                                templates=templates))
    install(site, package)
    return package


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A site folder on ``sys.path`` for installed distributions; what the test installs is gone afterwards."""
    path = tmp_path / "site-packages"
    path.mkdir()
    monkeypatch.setattr(sys, "path", [str(path), *sys.path])
    before = set(sys.modules)
    yield path
    for module in set(sys.modules) - before:
        if module.startswith(("magi_test_", "magi_bookmarks")):
            del sys.modules[module]


def enable(folder: Path, collectors: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "collectors.json").write_text(json.dumps({"collectors": collectors}))
    return folder


def run_once(supervisor, name: str) -> None:
    supervisor.status[name].next_run_at = 0
    assert name in supervisor.tick()
    assert supervisor.wait_idle(timeout=900)


def stored_contents(memory, text: str) -> list[str]:
    return sorted(memory.get_event(f.event_id)["content"] for f in memory.query(text, mode="event_stream").findings)


# ------------------------------------------------------------------ the package docs/plugins.md walks through

_FILE_BLOCK = re.compile(r"^`([\w./-]+)`:\n\n```\w+\n(.*?)^```", re.MULTILINE | re.DOTALL)


def documented_package(folder: Path) -> Path:
    """The package docs/plugins.md walks through, written out file by file (each block introduced by "`path`:")."""
    files = dict(_FILE_BLOCK.findall(PLUGINS_GUIDE.read_text("utf-8")))
    assert {"pyproject.toml", "magi_bookmarks/__init__.py", "tests/test_bookmarks.py"} <= set(files)
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, "utf-8")
    return folder


def documented_settings() -> dict:
    """The collectors.json of the guide's "Turning it on" step."""
    step = PLUGINS_GUIDE.read_text("utf-8").split("### 6. Turning it on", 1)[1]
    return json.loads(step.split("```json\n", 1)[1].split("```", 1)[0])


@pytest.mark.slow
def test_the_documented_package_passes_its_own_tests(site, tmp_path):
    package = documented_package(tmp_path / "magi-bookmarks")
    install(site, package)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(site)])}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                          "tests"], cwd=package, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4 passed" in out.stdout


def test_the_documented_package_loads_through_its_entry_point_renders_with_its_template_and_says_its_health(
        site, tmp_path, memory):
    package = documented_package(tmp_path / "magi-bookmarks")
    assert install(site, package) == "magi-bookmarks"
    export, missing = tmp_path / "bookmarks.html", tmp_path / "old.html"
    export.write_text('<DT><A HREF="https://a.example/" ADD_DATE="1700000000">A &amp; B</A>\n'
                      '<DT><A HREF="https://b.example/" ADD_DATE="1700000100"></A>\n'
                      '<DT><A HREF="https://c.example/">no date</A>\n', "utf-8")
    settings = documented_settings()
    assert list(settings["collectors"]) == ["bookmarks"] and settings["collectors"]["bookmarks"]["enabled"]
    settings["collectors"]["bookmarks"]["settings"]["files"] = [str(export), str(missing)]
    folder = enable(tmp_path / "host", settings["collectors"])
    supervisor, errors = build_supervisor(memory, folder, env=ONLY_THIRD_PARTY)
    assert errors == {} and supervisor is not None
    try:
        run_once(supervisor, "bookmarks")
    finally:
        supervisor.stop()
    # Its own template words its events (the untitled one takes its second form).
    assert stored_contents(memory, "bookmarked") == ["Bookmarks: Bookmarked A & B (https://a.example/)",
                                                     "Bookmarks: Bookmarked https://b.example/"]
    status = memory.collector_statuses()["bookmarks"]      # what `magi status` in another process reads
    assert status["skipped"] == {"no_add_date": 1}
    assert status["health"]["state"] == "collecting"
    assert status["health"]["sources"] == {
        str(export): {"state": "collecting", "stored": 2},
        str(missing): {"state": "unavailable", "reason": f"no such file: {missing}",
                       "fix": "export your bookmarks there or fix the path in Settings"}}


def test_a_plugins_template_words_its_events_in_magi_ingest_and_magi_import_too(site, tmp_path):
    """Not only where its collector runs: a payload of the plugin's fed to `magi ingest`, and an export re-rendered
    by `magi import`, read as the plugin's template says."""
    package = documented_package(tmp_path / "magi-bookmarks")
    install(site, package)
    env = {**os.environ, **ONLY_THIRD_PARTY, "PYTHONPATH": os.pathsep.join([str(site), str(package)])}

    def magi(data, *args, stdin=None):
        done = subprocess.run([sys.executable, "-m", "magi_desktop.cli", *args, "--data-dir", str(data)], env=env,
                              input=stdin, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    payload = {"source_type": "bookmarks", "occurred_at": T0, "source_item_id": "b1",
               "activity": {"source_code": "bookmarks", "action_code": "add_bookmark"},
               "provenance": {"url": "https://a.example/", "title": "A & B"}}
    magi(tmp_path / "one", "ingest", "-", stdin=json.dumps(payload) + "\n")
    magi(tmp_path / "one", "export", "--out", str(tmp_path / "export.jsonl"))
    magi(tmp_path / "two", "import", str(tmp_path / "export.jsonl"), "--no-embed")
    for data in ("one", "two"):
        answer = magi(tmp_path / data, "query", "bookmarked", "--json")
        assert "Bookmarks: Bookmarked A & B (https://a.example/)" in answer, (data, answer)


# ------------------------------------------------------------------ a back-fill longer than a run

LEDGER = '''
    class Collector:
        """A ledger's entries, oldest first; it keeps no cursor of its own: the host resumes it by time."""

        name = "ledger"
        source_type = "ledger"
        interval_seconds = 3600
        settings_schema = {"entries": {"type": "integer", "description": "How many entries the ledger holds"}}
        privacy_note = "Reads a generated ledger."

        def collect(self, since, ctx):
            ctx.source("ledger.db")
            for i in range(ctx.settings["entries"]):
                at = %d + i
                if since is None or at > since:
                    yield activity("ledger", "record_entry", at, {"entry": f"entry {i}", "amount": i %% 97},
                                   item_id=f"e{i}")
''' % T0


@pytest.mark.slow
def test_a_plugins_back_fill_of_120000_items_completes_across_runs(site, tmp_path, memory):
    """The host cuts a run at 50,000 payloads (MAX_PER_RUN); the next run goes on from there, so 120,000 items
    take three runs, and a fourth finds nothing new — instead of the first 50,000 forever (issue 19, item 6)."""
    entries = 120_000
    write_plugin(site, LEDGER, templates=(("ledger", "record_entry", "Recorded {entry} of {amount} coins"),))
    folder = enable(tmp_path / "host", {"ledger": {"enabled": True, "settings": {"entries": entries}}})
    supervisor, errors = build_supervisor(memory, folder, env=ONLY_THIRD_PARTY)
    assert errors == {} and supervisor is not None and supervisor.max_per_run == 50_000
    status = supervisor.status["ledger"]
    try:
        stored_after = []
        for _ in range(4):
            run_once(supervisor, "ledger")
            stored_after.append(status.counts["stored"])
    finally:
        supervisor.stop()
    # A resumed run starts again at the last time the cut one read: that item comes again and dedupes.
    assert stored_after == [50_000, 99_999, entries, entries]
    assert status.counts["duplicates"] == 2
    assert status.counts["throttled"] == 2 and status.failures == 0 and not status.quarantined
    assert memory.stats().events["by_source"]["ledger"] == entries
    assert status.health["sources"] == {"ledger.db": {"state": "idle"}}
    assert f"Ledger: Recorded entry 119999 of {119_999 % 97} coins" in stored_contents(memory, "entry 119999")


# ------------------------------------------------------------------ a hang is quarantined for every process

STUCK = '''
class Collector:
    """Hangs until a file says otherwise, ignoring ``ctx.stopping`` as a real hang would; notes each start."""

    name = "stuck"
    source_type = "stuck"
    interval_seconds = 60
    settings_schema = {"marker": {"type": "string", "required": True}, "unstuck": {"type": "string", "required": True}}
    privacy_note = "Reads nothing."

    def collect(self, since, ctx):
        import time
        from pathlib import Path

        with open(ctx.settings["marker"], "a") as marker:
            marker.write("started\\n")
        while not Path(ctx.settings["unstuck"]).exists():
            time.sleep(0.05)
        yield activity("stuck", "write_note", 1_600_000_000, {"title": "at last"}, item_id="last")
'''


def test_a_hanging_plugin_is_quarantined_for_every_process_until_released_or_upgraded(site, tmp_path):
    from magi_desktop.core import Memory

    package = write_plugin(site, STUCK, name="stuck", version="1.0.0")
    marker, unstuck = tmp_path / "started", tmp_path / "unstuck"
    data = enable(tmp_path / "data", {"stuck": {"enabled": True,
                                                "settings": {"marker": str(marker), "unstuck": str(unstuck)}}})
    env = {**os.environ, **ONLY_THIRD_PARTY, "MAGI_DATA_DIR": str(data),
           "PYTHONPATH": os.pathsep.join([str(site), str(package)])}

    def magi(*args):
        return subprocess.run([sys.executable, "-m", "magi_desktop.cli", *args], capture_output=True, text=True,
                              env=env, timeout=600)

    def starts():
        return marker.read_text().count("started") if marker.exists() else 0

    with Memory.open(data, embedder="hashing") as memory:
        app, errors = build_supervisor(memory, data, env=ONLY_THIRD_PARTY)        # the app's supervisor
        assert errors == {} and app.versions == {"stuck": "1.0.0"}
        app.run_timeout = 0.5
        app.tick()
        while starts() == 0:
            app.wait_idle(timeout=0.05)
        deadline = time.monotonic() + 30
        while not app.status["stuck"].quarantined and time.monotonic() < deadline:
            app.wait_idle(timeout=0.2)
            app.tick()                                  # past its timeout: abandoned and quarantined
        assert app.status["stuck"].quarantined

        # `magi collect` in another process neither runs it (it would block for five minutes) nor says "ok".
        collected = magi("collect", "--json")
        assert starts() == 1, collected.stderr
        assert json.loads(collected.stdout)["collectors"]["stuck"]["quarantined"] is True
        status = magi("status")
        assert "quarantined" in status.stdout and "magi plugins --release stuck" in status.stdout, status.stdout

        # Released from another process: the app takes the memory's word at its next tick and runs it again.
        released = magi("plugins", "--release", "stuck")
        assert released.returncode == 0, released.stderr
        assert app.tick() == ["stuck"]
        while starts() < 2:
            app.wait_idle(timeout=0.05)
        unstuck.touch()
        assert app.wait_idle(timeout=60) and not app.status["stuck"].quarantined
        unstuck.unlink()
        app.stop()

        # Quarantined again; the author ships 1.0.1: its first run under the new version is tried at once.
        memory.collector_state.record_failure("stuck", "hung: no end after 300 s", quarantine_after=5, hung=True,
                                              version="1.0.0")
        still = magi("collect", "--json")
        assert starts() == 2 and json.loads(still.stdout)["collectors"]["stuck"]["quarantined"] is True   # same version
        old = next(site.glob("magi_test_stuck-1.0.0.dist-info"))
        (old / "METADATA").write_text((old / "METADATA").read_text().replace("1.0.0", "1.0.1"))
        old.rename(site / "magi_test_stuck-1.0.1.dist-info")
        unstuck.touch()
        upgraded = magi("collect", "--json")
        assert starts() == 3, upgraded.stderr
        assert json.loads(upgraded.stdout)["collectors"]["stuck"]["quarantined"] is False
        assert memory.collector_statuses()["stuck"]["quarantined"] is False
