"""Plugin discovery: the plugin API, entry points of a real (test) distribution, allow/deny, broken plugins."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from magi_desktop.collectors import DEFAULT_PLUGINS, load_plugins
from magi_desktop.core.contracts import validate_payload
from magi_desktop.plugin_api import Collector, activity, entity

# The first-party plugins are installed entry points of Magi Desktop itself.
FIRST_PARTY = {path.rsplit(".", 1)[-1] for path in DEFAULT_PLUGINS}
FIRST_PARTY_OFF = ",".join(f"-{name}" for name in sorted(FIRST_PARTY))

GOOD = '''
    from magi_desktop.plugin_api import activity, hookimpl

    __version__ = "0.1"

    class Notes:
        name = "notes"
        source_type = "notes"
        interval_seconds = 60
        settings_schema = {}
        privacy_note = "Reads note titles."

        def collect(self, since, ctx):
            for i in range(3):
                if since is None or i > since:
                    yield activity("notes", "write_note", 1_700_000_000 + i, {"title": f"note {i}"},
                                   item_id=f"n{i}")

    @hookimpl
    def register_collectors(register):
        register(Notes())

    @hookimpl
    def register_templates(register):
        register("notes", "write_note", "Wrote the note {title}")
'''


def distribution(site, dist, version, entry_points, modules):
    """A real installed distribution on a path: module files plus dist-info with entry_points.txt."""
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = "\n".join(f"{name} = {target}" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[magi_desktop.plugins]\n{lines}\n")
    for module, source in modules.items():
        (site / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def site(tmp_path, monkeypatch):
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in [m for m in sys.modules if m.startswith("magi_test_")]:
        del sys.modules[name]


def test_activity_builds_a_payload_the_core_accepts():
    payload = activity("chrome", "visit_page", 1_700_000_000, {"url": "https://a.example", "title": "A"},
                       item_id="v1", entities=[entity("A Corp", "organization")], tags=["work"])
    parsed = validate_payload(payload)
    assert parsed.source_type == "chrome" and parsed.source_item_id == "v1"
    assert payload["entities"] == [{"mention_text": "A Corp", "entity_type": "organization"}]


def test_a_third_party_plugin_is_discovered_through_its_entry_point_and_runs(site, memory):
    distribution(site, "magi-test-notes", "1.2.3", {"notes": "magi_test_notes"}, {"magi_test_notes": GOOD})
    plugins = load_plugins({"MAGI_LOAD_PLUGINS": FIRST_PARTY_OFF}, defaults=())
    info = {p.name: p for p in plugins.info}
    assert info["notes"].version == "1.2.3" and info["notes"].source == "entry point magi-test-notes"
    assert info["notes"].hooks == ["register_collectors", "register_templates"]
    (collector,) = plugins.collectors()
    assert isinstance(collector, Collector) and collector.name == "notes"
    assert plugins.templates() == [("notes", "write_note", ("Wrote the note {title}",))]
    payloads = list(collector.collect(None, ctx=None))
    results = memory.ingest_many(payloads)
    assert [r.duplicate for r in results] == [False, False, False]
    assert [r.duplicate for r in memory.ingest_many(list(collector.collect(None, ctx=None)))] == [True] * 3


def test_a_plugins_template_renders_what_its_collector_stores(site, tmp_path, memory):
    """register_templates takes effect where the collectors run (issue 19): the host registers the templates
    with the memory it stores into."""
    from magi_desktop.collectors import build_supervisor

    distribution(site, "magi-test-notes", "1.2.3", {"notes": "magi_test_notes"}, {"magi_test_notes": GOOD})
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "collectors.json").write_text(json.dumps({"collectors": {"notes": {"enabled": True}}}))
    supervisor, errors = build_supervisor(memory, folder, env={"MAGI_LOAD_PLUGINS": FIRST_PARTY_OFF})
    assert supervisor is not None and errors == {}
    supervisor.paused = False
    supervisor.tick()
    while not supervisor.wait_idle(timeout=1.0):
        supervisor.tick()
    supervisor.stop()
    stored = sorted(memory.get_event(f.event_id)["content"] for f in memory.query("note", mode="event_stream").findings)
    assert stored == ["Notes: Wrote the note note 0", "Notes: Wrote the note note 1", "Notes: Wrote the note note 2"]


def test_broken_plugins_are_reported_and_the_others_load(site):
    distribution(site, "magi-test-mixed", "1.0", {
        "notes": "magi_test_notes", "crashes": "magi_test_crashes", "typo": "magi_test_typo",
        "raises": "magi_test_raises"}, {
        "magi_test_notes": GOOD,
        "magi_test_crashes": "raise RuntimeError('boom at import')\n",
        "magi_test_typo": '''
            from magi_desktop.plugin_api import hookimpl

            @hookimpl
            def register_colectors(register):
                pass
        ''',
        "magi_test_raises": '''
            from magi_desktop.plugin_api import hookimpl

            @hookimpl
            def register_collectors(register):
                raise ValueError("bad settings")
        ''',
    })
    plugins = load_plugins({"MAGI_LOAD_PLUGINS": FIRST_PARTY_OFF}, defaults=())
    assert {p.name for p in plugins.info} == {"notes", "raises"}
    assert "boom at import" in plugins.errors["crashes"]
    assert "rejected" in plugins.errors["typo"] and "register_colectors" in plugins.errors["typo"]
    assert [c.name for c in plugins.collectors()] == ["notes"]
    assert "bad settings" in plugins.errors["raises"]


def test_collectors_missing_parts_or_registered_twice_are_refused(site):
    distribution(site, "magi-test-dupe", "1.0", {"dupe": "magi_test_dupe"}, {"magi_test_dupe": '''
        from magi_desktop.plugin_api import hookimpl

        class Half:
            name = "half"

        class One:
            name = "one"; source_type = "one"; interval_seconds = 1; settings_schema = {}; privacy_note = ""
            def collect(self, since, ctx):
                return []

        @hookimpl
        def register_collectors(register):
            register(Half())
            register(One())
            register(One())
    '''})
    plugins = load_plugins({"MAGI_LOAD_PLUGINS": FIRST_PARTY_OFF}, defaults=())
    assert [c.name for c in plugins.collectors()] == ["one"]
    assert "has no source_type" in plugins.errors["collector half"]
    assert "registered twice" in plugins.errors["collector one"]


@pytest.mark.parametrize("rule, loaded", [
    (None, {"notes", "other"}), ("notes", {"notes"}), ("-notes", {"other"}), ("none", set()), ("", {"notes", "other"}),
])
def test_magi_load_plugins_allows_and_denies(site, rule, loaded):
    distribution(site, "magi-test-two", "1.0", {"notes": "magi_test_notes", "other": "magi_test_other"},
                 {"magi_test_notes": GOOD, "magi_test_other": "x = 1\n"})
    env = {} if rule is None else {"MAGI_LOAD_PLUGINS": rule}
    first_party = FIRST_PARTY if rule in (None, "", "-notes") else set()
    assert {p.name for p in load_plugins(env, defaults=()).info} == loaded | first_party


def test_magi_plugins_lists_them(site, tmp_path):
    distribution(site, "magi-test-cli", "2.0", {"notes": "magi_test_notes"}, {"magi_test_notes": GOOD})
    env = {**os.environ, "PYTHONPATH": str(site), "MAGI_DATA_DIR": str(tmp_path / "d"),
           "MAGI_LOAD_PLUGINS": "notes"}
    out = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "plugins", "--json"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["plugins"][0]["name"] == "notes" and data["plugins"][0]["version"] == "2.0"
    assert data["collectors"][0]["name"] == "notes" and data["collectors"][0]["privacy_note"] == "Reads note titles."
    text = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "plugins"], capture_output=True, text=True,
                          env=env, timeout=120).stdout
    assert "notes 2.0" in text and "register_collectors" in text


# The package docs/plugins.md walks through is built, tested and run in test_third_party_plugin.py.
