"""Payload validation: every malformed payload names its bad field."""

import math

import pytest
from payloads import chat, sensor

from magi_desktop.core.contracts import PayloadError, validate_payload

GOOD_SENSOR = sensor("listen_music", {"track_name": "End Of An Era", "artist_name": "Dua Lipa"},
                     source="netease_music", item="n1",
                     entities=[{"mention_text": "Dua Lipa", "entity_type": "person"}], tags=["music"])


def with_(base, **changes):
    payload = {**base}
    for key, value in changes.items():
        if value is DELETE:
            payload.pop(key, None)
        else:
            payload[key] = value
    return payload


DELETE = object()


def nested(depth):
    value = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def test_valid_sensor_payload_is_typed():
    p = validate_payload(GOOD_SENSOR)
    assert p.kind == "sensor"
    assert p.activity.action_code == "listen_music"
    assert p.entities[0].mention_text == "Dua Lipa"
    assert p.tags == ("music",)


def test_valid_chat_turn():
    p = validate_payload(chat("hello"))
    assert p.kind == "chat" and p.chat.provenance == "human_input" and p.chat.is_human_testimony
    assistant = validate_payload(chat("hi!", role="assistant"))
    assert assistant.chat.provenance is None and not assistant.chat.is_human_testimony


def test_iso_timestamp_with_offset_is_accepted():
    utc = validate_payload(with_(GOOD_SENSOR, occurred_at="2026-05-17T08:15:40Z"))
    shanghai = validate_payload(with_(GOOD_SENSOR, occurred_at="2026-05-17T16:15:40+08:00"))
    assert utc.occurred_at == shanghai.occurred_at == 1779005740.0


@pytest.mark.parametrize(
    "payload, field, words",
    [
        ("not a dict", "payload", "JSON object"),
        (with_(GOOD_SENSOR, source_type=DELETE), "source_type", "required"),
        (with_(GOOD_SENSOR, source_type="Bad Source!"), "source_type", "does not match"),
        (with_(GOOD_SENSOR, occurred_at=DELETE), "occurred_at", "required"),
        (with_(GOOD_SENSOR, occurred_at="yesterday"), "occurred_at", "ISO-8601"),
        (with_(GOOD_SENSOR, occurred_at="2026-05-17T08:15:40"), "occurred_at", "UTC offset"),
        (with_(GOOD_SENSOR, occurred_at=1779005740382), "occurred_at", "milliseconds"),
        (with_(GOOD_SENSOR, occurred_at=math.nan), "occurred_at", "finite"),
        (with_(GOOD_SENSOR, occurred_at=True), "occurred_at", "required"),
        (with_(GOOD_SENSOR, occurred_at=-5), "occurred_at", "outside"),
        (with_(GOOD_SENSOR, occurred_at=10**400), "occurred_at", "out of range"),
        (with_(GOOD_SENSOR, occurred_at="9999-12-31T23:59:59+00:00"), "occurred_at", "outside"),
        (with_(GOOD_SENSOR, provenance={"n": 2**70}), "provenance", "too large"),
        (with_(GOOD_SENSOR, provenance=nested(40)), "provenance", "nested deeper than"),
        (with_(GOOD_SENSOR, provenance={"t": "bad \ud800 text"}), "provenance", "lone surrogate"),
        (with_(GOOD_SENSOR, provenance={"\udfff": 1}), "provenance", "lone surrogate"),
        (with_(GOOD_SENSOR, source_item_id="id-\ud800"), "source_item_id", "lone surrogate"),
        (with_(GOOD_SENSOR, tags=["ok", "\ud800"]), "tags[1]", "lone surrogate"),
        (with_(GOOD_SENSOR, occured_at=1), "occured_at", "unknown field"),
        (with_(GOOD_SENSOR, activity=DELETE), "activity", "required"),
        (with_(GOOD_SENSOR, activity={"source_code": "x"}), "activity.action_code", "required"),
        (with_(GOOD_SENSOR, activity={"action_code": "play", "verb": "x"}), "activity.verb", "unknown"),
        (with_(GOOD_SENSOR, provenance=["a"]), "provenance", "object"),
        (with_(GOOD_SENSOR, provenance={"x": {1, 2}}), "provenance", "JSON-serialisable"),
        (with_(GOOD_SENSOR, provenance={"x": "a" * 70_000}), "provenance", "larger"),
        (with_(GOOD_SENSOR, entities={"mention_text": "x"}), "entities", "list"),
        (with_(GOOD_SENSOR, entities=[{"entity_type": "person"}]), "entities[0].mention_text", "required"),
        (with_(GOOD_SENSOR, entities=[{"mention_text": "x", "entity_type": "has space"}]),
         "entities[0].entity_type", "does not match"),
        (with_(GOOD_SENSOR, tags=["ok", ""]), "tags[1]", "non-empty"),
        (with_(GOOD_SENSOR, source_item_id=""), "source_item_id", "empty"),
        (with_(GOOD_SENSOR, source_item_id=12), "source_item_id", "string"),
        (with_(GOOD_SENSOR, source_item_id="x" * 600), "source_item_id", "limit"),
        (with_(GOOD_SENSOR, chat={"role": "user", "text": "hi"}), "activity",
         "exactly one of chat / action / activity"),
        (with_(GOOD_SENSOR, ephemeral="yes"), "ephemeral", "true or false"),
        (chat("hi", session=None), "session_id", "required"),
        (with_(chat("hi"), chat={"text": "hi"}), "chat.role", "required"),
        (with_(chat("hi"), chat={"role": "user", "text": "hi"}), "chat.provenance", "required for role 'user'"),
        (with_(chat("hi"), source_type="chrome"), "chat", "use source_type 'chat'"),
        ({"source_type": "agent_x", "occurred_at": 1.7e9, "action": {"tool": "t", "ok": True}}, "action",
         "use source_type 'runtime'"),
        (with_(chat("hi"), chat={"role": "robot", "text": "hi"}), "chat.role", "not one of"),
        (with_(chat("hi"), chat={"role": "user", "text": "   "}), "chat.text", "empty"),
        (with_(chat("hi"), chat={"role": "user", "text": "a\x00b"}), "chat.text", "NUL"),
        (with_(chat("hi"), chat={"role": "user", "text": "x" * 200_001}), "chat.text", "limit"),
        (with_(chat("hi"), chat={"role": "user", "text": "hi", "provenance": "dream"}), "chat.provenance",
         "not one of"),
        (with_(chat("hi"), chat=DELETE, activity={"action_code": "x"}), "chat", "required when source_type is 'chat'"),
        (with_(chat("hi"), provenance={"a": 1}), "provenance", "chat.provenance"),
        ({"source_type": "runtime", "occurred_at": 1.7e9, "action": {"tool": "t"}}, "action.ok", "true or false"),
        ({"source_type": "runtime", "occurred_at": 1.7e9, "action": {"ok": True}}, "action.tool", "required"),
        ({"source_type": "runtime", "occurred_at": 1.7e9, "action": {"tool": "t", "ok": True, "duration_ms": -1}},
         "action.duration_ms", ">= 0"),
        ({"source_type": "runtime", "occurred_at": 1.7e9, "activity": {"action_code": "x"}}, "action", "required"),
        ({"source_type": "runtime", "occurred_at": 1.7e9, "action": {"tool": "t", "ok": True, "duration_ms": 10**400}},
         "action.duration_ms", "out of range"),
    ],
)
def test_malformed_payload_names_the_field(payload, field, words):
    with pytest.raises(PayloadError) as caught:
        validate_payload(payload)
    assert caught.value.field == field
    assert words in str(caught.value)
    assert str(caught.value).startswith(field)


def test_chat_text_is_stored_in_one_unicode_form():
    composed = validate_payload(chat("caf\u00e9"))
    decomposed = validate_payload(chat("cafe\u0301"))
    assert composed.chat.text == decomposed.chat.text == "caf\u00e9"


def test_error_in_batch_carries_its_position():
    error = PayloadError("chat.role", "is required").at(3)
    assert error.index == 3
    assert str(error) == "payloads[3].chat.role: is required"
