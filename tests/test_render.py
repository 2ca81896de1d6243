"""Content is rendered by the core from per-(source, action) templates."""

import pytest
from payloads import chat, sensor

from magi_desktop.core.contracts import validate_payload
from magi_desktop.core.render import Template, TemplateRegistry, format_duration


def render(payload, registry=None):
    return (registry or TemplateRegistry()).render(validate_payload(payload))


def test_music_template_picks_the_richest_form_it_can_fill():
    full = sensor("listen_music", {"track_name": "End Of An Era", "artist_name": "Dua Lipa",
                                   "album_name": "Radical Optimism", "play_duration_sec": 206},
                  source="netease_music")
    assert render(full) == ("NetEase Music: Listened to “End Of An Era” by Dua Lipa from “Radical Optimism” "
                            "for 3 min 26 s")
    short = sensor("listen_music", {"track_name": "End Of An Era", "artist_name": ""}, source="netease_music")
    assert render(short) == "NetEase Music: Listened to “End Of An Era”"


def test_browser_visit_derives_the_domain():
    payload = sensor("visit_page", {"url": "https://docs.python.org/3/library/re.html", "title": "re — Regex"},
                     source="chrome")
    assert render(payload) == "Chrome: Visited “re — Regex” (docs.python.org)"


def test_unknown_action_gets_the_generic_form_with_every_field():
    payload = sensor("water_plants", {"plant": "fern", "ml": 250, "notes": None}, source="smart_home")
    assert render(payload) == "Smart home: water plants — plant: fern; ml: 250"


def test_generic_form_truncates_huge_values():
    text = render(sensor("dump", {"blob": "x" * 1000}, source="s"))
    assert len(text) < 260 and text.endswith("…")


def test_plugins_register_templates_and_labels():
    registry = TemplateRegistry()
    registry.register("kindle", "read_book", "Read “{title}” for {minutes} minutes", "Read “{title}”")
    registry.register_source_label("kindle", "Kindle")
    assert render(sensor("read_book", {"title": "Dune", "minutes": 40}, source="kindle"), registry) == \
        "Kindle: Read “Dune” for 40 minutes"
    assert render(sensor("read_book", {"title": "Dune"}, source="kindle"), registry) == "Kindle: Read “Dune”"


def test_template_with_unknown_format_is_refused():
    with pytest.raises(ValueError, match="unknown format"):
        Template(("{x:shout}",))


def test_chat_content_is_the_text_and_tool_runs_read_as_sentences():
    assert render(chat("I bought an air fryer")) == "I bought an air fryer"
    ok = {"source_type": "runtime", "occurred_at": 1.7e9,
          "action": {"tool": "web_search", "category": "search", "ok": True, "duration_ms": 420}}
    failed = {"source_type": "runtime", "occurred_at": 1.7e9,
              "action": {"tool": "web_search", "ok": False, "duration_ms": 2500, "error": "timeout"}}
    assert render(ok) == "Tool web_search (search) succeeded in 420 ms"
    assert render(failed) == "Tool web_search (general) failed in 2 s: timeout"


@pytest.mark.parametrize("seconds, text", [(5, "5 s"), (60, "1 min"), (206, "3 min 26 s"), (3600, "1 h"),
                                           (5400, "1 h 30 min")])
def test_durations(seconds, text):
    assert format_duration(seconds) == text
