"""Fuzzing the settings files and the plugin settings check (architecture §10, README "Configuration").

``collectors.json`` (load_settings), each first-party collector's settings (check_settings against its
declared schema) and the app's ``settings.json`` (load_app_settings), from arbitrary JSON — and bytes
that are not JSON or not UTF-8. Properties: the only exception is the file's own error naming the bad
setting; what is accepted has the declared types (numbers finite), and settings.json survives a
save and load unchanged.
"""

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magi_desktop.app_settings import AppSettingsError, load_app_settings, save_app_settings
from magi_desktop.collectors import SettingsError, check_settings, load_plugins, load_settings
from magi_desktop.collectors.settings import setting_name

from .fuzzing import count, json_values, nasty_text, rarely

pytestmark = pytest.mark.fuzz

COLLECTORS = {c.name: c for c in load_plugins({}).collectors()}
_TYPES = {"string": str, "array": list, "number": (int, float), "integer": int, "boolean": bool, "object": dict}


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory() as path:
        yield Path(path)


def _write(folder: Path, name: str, document) -> None:
    if isinstance(document, bytes):
        (folder / name).write_bytes(document)
    else:
        (folder / name).write_text(json.dumps(document, allow_nan=True), "utf-8", errors="surrogatepass")


# Values shaped like each collector's settings: the declared key with a value of any type.
def _setting_value(schema: dict):
    kind = schema.get("type")
    typical = {"string": nasty_text, "array": st.lists(st.one_of(nasty_text, json_values), max_size=3),
               "number": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers()),
               "integer": st.one_of(st.integers(), st.floats()), "boolean": st.booleans()}.get(kind, json_values)
    return typical


@st.composite
def collector_settings(draw):
    name = draw(st.sampled_from(sorted(COLLECTORS)))
    schema = COLLECTORS[name].settings_schema
    values = {key: draw(_setting_value(spec) if not rarely(draw, 5) else json_values)
              for key, spec in schema.items() if draw(st.booleans())}
    if rarely(draw, 5):
        values[draw(nasty_text)] = draw(json_values)
    return name, values


@st.composite
def collectors_documents(draw):
    name, values = draw(collector_settings())
    document = {"paused": draw(st.booleans() if not rarely(draw, 5) else json_values),
                "exclusions": {kind: draw(st.lists(nasty_text, max_size=3) if not rarely(draw, 5) else json_values)
                               for kind in draw(st.lists(st.sampled_from(["domains", "apps", "repositories", "paths",
                                                                          "hosts"]), max_size=3))},
                "collectors": {name: {"enabled": draw(st.booleans() if not rarely(draw, 5) else json_values),
                                      "settings": values if not rarely(draw, 5) else draw(json_values)}}}
    for key in draw(st.lists(st.sampled_from(["paused", "exclusions", "collectors"]), max_size=2)):
        document[key] = draw(json_values)          # a whole section of the wrong shape
    if rarely(draw, 8):
        return draw(st.one_of(json_values, st.binary(max_size=30), st.just(b"\xff\xfe{"), st.just(b"{not json")))
    return document


@given(collectors_documents())
def test_collectors_json_loads_or_names_the_bad_setting(folder, document):
    count("collectors.json (load_settings)")
    _write(folder, "collectors.json", document)
    try:
        settings = load_settings(folder)
    except SettingsError as error:
        assert error.where and str(error).startswith(str(folder / "collectors.json"))
        return
    assert isinstance(settings.paused, bool)
    assert all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in settings.exclusions.values())
    assert all(isinstance(v, dict) for v in settings.enabled.values())


@given(collector_settings())
def test_plugin_settings_are_checked_against_the_declared_schema(folder, case):
    count("plugin settings (check_settings)")
    name, values = case
    collector = COLLECTORS[name]
    try:
        check_settings(folder, collector, values)
    except SettingsError as error:
        assert error.where.startswith(f"collectors.{name}.settings.")
        named = error.where.split(".", 3)[3]
        assert named in values or named in {setting_name(key) for key in values}
        return
    for key, value in values.items():
        spec = collector.settings_schema[key]
        expected = _TYPES[spec["type"]]
        assert isinstance(value, expected) and not (isinstance(value, bool) and spec["type"] in ("number", "integer"))
        if spec["type"] in ("number", "integer"):
            assert math.isfinite(value)
        if spec["type"] == "array":
            assert all(isinstance(item, _TYPES[spec["items"]["type"]]) for item in value)


_TIERS = st.sampled_from(["fast", "reasoning", "summarizer", "compact", "slow"])
_URLS = st.sampled_from(["http://localhost:11434/v1", "https://api.example.com/v1", "localhost:1234", "", "ftp://x"])


@st.composite
def app_documents(draw):
    llm = {"base_url": draw(_URLS if not rarely(draw, 5) else json_values),
           "model": draw(st.sampled_from(["qwen2.5:7b", ""]) if not rarely(draw, 5) else json_values)}
    if draw(st.booleans()):
        llm["tier_models"] = draw(st.dictionaries(_TIERS, st.one_of(nasty_text, json_values), max_size=3))
    document = {"llm": llm if not rarely(draw, 8) else draw(json_values),
                "autostart": draw(st.booleans() if not rarely(draw, 5) else json_values)}
    if rarely(draw, 8):
        document[draw(nasty_text)] = draw(json_values)
    if rarely(draw, 8):
        return draw(st.one_of(json_values, st.binary(max_size=30)))
    return document


@given(app_documents())
def test_settings_json_loads_or_names_the_bad_setting_and_round_trips(folder, document):
    count("settings.json (load_app_settings)")
    _write(folder, "settings.json", document)
    try:
        settings = load_app_settings(folder)
    except AppSettingsError as error:
        assert error.where and str(error).startswith(str(folder / "settings.json"))
        return
    save_app_settings(folder, settings)
    again = load_app_settings(folder)          # the same endpoint and choices (a model without a URL is moot)
    assert again.llm_settings() == settings.llm_settings() and again.autostart == settings.autostart
