"""A collector's settings_schema (a dict of properties) becomes a JSON Schema checked by a real validator; the host
honours its default, required, title and description."""

import pytest

from magi_desktop.collectors import Supervisor
from magi_desktop.collectors.settings import SettingsError, check_settings, json_schema, title_of, with_defaults
from magi_desktop.plugin_api import activity


class Bookmarks:
    """The docs' example plugin: a required file, a default, constraints only a JSON Schema validator checks."""

    name = "bookmarks"
    source_type = "bookmarks"
    interval_seconds = 3600
    settings_schema = {
        "file": {"type": "string", "title": "Bookmarks file", "description": "bookmarks.html to read",
                 "required": True},
        "max_items": {"type": "integer", "default": 500, "minimum": 1, "description": "Most bookmarks per run"},
        "order": {"type": "string", "enum": ["newest", "oldest"], "default": "newest"},
        "folders": {"type": "array", "items": {"type": "string"}},
        "legacy": {"type": "path", "description": "a plugin's own type word: kept, not checked"},
        "server": {"type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]},
    }
    privacy_note = "test"

    def __init__(self):
        self.seen = []

    def collect(self, since, ctx):
        self.seen.append(dict(ctx.settings))
        yield activity("bookmarks", "add_bookmark", 1_700_000_000, {"url": "https://example.org", "title": "x"},
                       item_id="b1")


def test_the_schema_is_json_schema_with_required_titles_and_descriptions_kept():
    schema = json_schema(Bookmarks())
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["file"]
    assert schema["properties"]["file"] == {"type": "string", "title": "Bookmarks file",
                                            "description": "bookmarks.html to read"}
    assert schema["properties"]["legacy"] == {"description": "a plugin's own type word: kept, not checked"}
    assert title_of(Bookmarks(), "file") == "Bookmarks file"
    assert title_of(Bookmarks(), "max_items") == "Max items"


@pytest.mark.parametrize("values, where, words", [
    ({"max_items": 0}, "max_items", "less than the minimum"),
    ({"order": "random"}, "order", "is not one of"),
    ({"folders": ["a", 3]}, "folders", "list of strings"),
    ({"file": 7}, "file", "must be a string"),
    ({"max_items": True}, "max_items", "must be an integer"),
    ({"max_items": 3.0}, "max_items", "must be an integer"),      # JSON Schema would take it; a plugin would not
    ({"max_items": float("nan")}, "max_items", "finite"),
    ({"file": "a\x00b"}, "file", "NUL"),
    ({"colour": "red"}, "colour", "unknown setting"),
    ({"server": {}}, "server", "'host' is a required property"),    # an object's own required list holds
])
def test_a_bad_setting_is_named_with_the_validators_reason(tmp_path, values, where, words):
    with pytest.raises(SettingsError) as caught:
        check_settings(tmp_path, Bookmarks(), {"file": "b.html", **values})
    assert caught.value.where == f"collectors.bookmarks.settings.{where}"
    assert words in str(caught.value)


def test_good_settings_pass_and_a_plugins_unknown_type_word_is_not_checked(tmp_path):
    check_settings(tmp_path, Bookmarks(), {"file": "b.html", "max_items": 3, "order": "oldest", "legacy": 12})
    check_settings(tmp_path, Bookmarks(), {})       # a required setting unset: the run says so (below), not here


def test_a_run_sees_the_defaults_under_the_users_settings(memory):
    bookmarks = Bookmarks()
    sup = Supervisor(memory, [bookmarks], settings={"bookmarks": {"file": "b.html", "order": "oldest"}})
    sup.tick()
    assert sup.wait_idle()
    assert bookmarks.seen == [{"file": "b.html", "max_items": 500, "order": "oldest"}]
    assert with_defaults(bookmarks, {}) == {"max_items": 500, "order": "newest"}
    sup.stop()


def test_a_required_setting_left_unset_makes_the_collector_unavailable_by_its_title_not_a_key_error(memory):
    bookmarks = Bookmarks()
    sup = Supervisor(memory, [bookmarks], quarantine_after=1)
    sup.tick()
    assert sup.wait_idle()
    status = sup.status["bookmarks"]
    assert bookmarks.seen == [] and status.last_error is None and not status.quarantined
    assert status.health["state"] == "unavailable"
    assert status.health["reason"] == "Bookmarks file not set"
    assert status.health["fix"] == "set it in Settings (collectors.json: collectors.bookmarks.settings.file)"
    sup.stop()
