"""The stored metadata text: orjson's, and the standard encoder's where orjson refuses a value."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections import Counter
from types import MappingProxyType

import pytest

from magi_desktop.core.store.json_text import compact_json


def standard(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@pytest.mark.parametrize("value", [
    {"structured_entity_hints": [{"mention_text": "周杰伦", "entity_type": "person"}],
     "timeline": {"activity": {"source_code": "music", "action_code": "listen_music", "object_code": None},
                  "provenance": {"track_name": "晴天", "play_duration_sec": 215, "ratio": 0.25, "ok": True}},
     "classified_by": "sensor", "tags": ["music"], "redactions": Counter({"assignment": 2})},
    {"text": "emoji 😀, quotes \" and \\ backslash, control \x01 and tab \t", "empty": {}, "list": []},
    {"tuple": (1, 2.5, "x"), "big": 2**63 - 1, "small": -(2**63), "float": 1735689600.123456},
])
def test_plain_json_data_is_the_standard_text_byte_for_byte(value):
    assert compact_json(value) == standard(value)


def test_what_orjson_refuses_is_the_standard_encoders_text():
    for value in ({"huge": 2**70}, {1: "int key"}, {"nested": {2.5: [None]}}):
        assert compact_json(value) == standard(value)


def test_what_json_sends_to_str_goes_to_str():
    @dataclasses.dataclass
    class Point:
        x: int

    value = {"at": datetime.datetime(2025, 1, 1, 9, 30), "point": Point(1), "frozen": MappingProxyType({"a": 1})}
    assert compact_json(value) == standard(value)


def test_a_float_spelt_otherwise_reads_back_the_same():
    value = {"far": 1e16, "near": 1e-5, "third": 1 / 3}
    assert json.loads(compact_json(value)) == value


def test_a_lone_surrogate_fails_as_it_did():
    with pytest.raises(UnicodeEncodeError):
        compact_json({"bad": "\ud800"}).encode("utf-8")
