"""The published payload contract (magi_desktop/plugin_api/payload.schema.json, draft 2020-12) and the core's own
checks (``plugin_api.testing.check_payload``: the host's refusals, then ``contracts.validate_payload``) accept the
same sensor payloads (issue 19, item 7).

Payloads are generated field by field, valid, then with a field made bad, removed or added — every way the schema
can see — and must be accepted by both or by neither. Five rules no JSON Schema can state are the core's alone
(the schema's description lists them): a payload breaking one is accepted by the schema and rejected by the core,
never the other way; the fuzz strategies of tests/reliability check that on payloads of any shape.
"""

from __future__ import annotations

import json
import math
import re
import sys
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from magi_desktop.core.contracts import (
    MAX_ENTITIES,
    MAX_ID_CHARS,
    MAX_PROVENANCE_BYTES,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    PayloadError,
    _json_size,
    parse_timestamp,
)
from magi_desktop.plugin_api import activity, entity
from magi_desktop.plugin_api.testing import PAYLOAD_SCHEMA, PayloadRejected, check_payload

SCHEMA = Draft202012Validator(PAYLOAD_SCHEMA)
ISO_PATTERN = re.compile(PAYLOAD_SCHEMA["$defs"]["time"]["anyOf"][1]["pattern"])
CASES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.data_too_large])


def core_accepts(payload: Any) -> bool:
    try:
        check_payload(payload)
    except PayloadRejected:
        return False
    return True


def disagreement(payload: Any) -> str:
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '(payload)'}: {e.message[:200]}" for e in
              SCHEMA.iter_errors(payload)]
    try:
        check_payload(payload)
        core = "accepts"
    except PayloadRejected as exc:
        core = f"rejects: {exc}"
    return f"schema: {errors or 'accepts'}; core {core}; payload {payload!r:.600}"


# ------------------------------------------------------------------------------------- the rules only the core has

def _time(value: Any) -> float | None:
    try:
        return parse_timestamp(value, "t")
    except PayloadError:
        return None


def core_only_rules(payload: Any) -> list[str]:
    """Which of the five rules the schema cannot state ``payload`` breaks (as the core measures them)."""
    if not isinstance(payload, dict):
        return []
    broken = []
    schedule = payload.get("schedule")
    times = [payload.get("occurred_at")]
    if isinstance(schedule, dict):
        times += [schedule.get("start"), schedule.get("end")]
        start, end = _time(schedule.get("start")), _time(schedule.get("end"))
        occurred = _time(payload.get("occurred_at"))
        if payload.get("occurred_at") is not None and None not in (occurred, start) and occurred != start:
            broken.append("occurred_at is not schedule.start")
        if None not in (start, end) and end < start:
            broken.append("schedule.end before its start")
    if any(isinstance(t, str) and ISO_PATTERN.search(t) and _time(t) is None for t in times):
        broken.append("an ISO time names no real day or falls outside 1970-01-02 .. 2100-01-01")
    provenance = payload.get("provenance")
    if isinstance(provenance, dict):
        try:
            if _json_size(provenance, "provenance") > MAX_PROVENANCE_BYTES:
                broken.append("provenance over 64 KiB")
        except PayloadError as exc:
            if "deeper" in exc.reason or "too large" in exc.reason:
                broken.append(f"provenance: {exc.reason}")
    return broken


@pytest.mark.parametrize("payload, rule", [
    ({"occurred_at": 1_700_000_000, "schedule": {"start": 1_700_000_060}}, "occurred_at is not schedule.start"),
    ({"occurred_at": "2026-01-01T10:00:00Z", "schedule": {"start": "2026-01-01T11:00:00+02:00"}},
     "occurred_at is not schedule.start"),
    ({"schedule": {"start": 1_700_000_000, "end": 1_699_999_999}}, "schedule.end before its start"),
    ({"occurred_at": "2026-02-30T10:00:00Z"}, "an ISO time names no real day"),
    ({"occurred_at": "1970-01-01T12:00:00Z"}, "falls outside 1970-01-02"),
    ({"occurred_at": "2100-01-01T00:00:01Z"}, "falls outside 1970-01-02"),
    ({"provenance": {"text": "x" * MAX_PROVENANCE_BYTES}}, "provenance over 64 KiB"),
    ({"provenance": {"deep": json.loads("[" * 33 + "]" * 33)}}, "nested deeper"),
    ({"provenance": {"bytes": 2**64}}, "integer too large"),
])
def test_the_rules_only_the_core_checks_are_the_ones_the_schema_names(payload, rule):
    payload = {"source_type": "notes", "occurred_at": 1_700_000_000, "activity": {"action_code": "write"}, **payload}
    assert SCHEMA.is_valid(payload) and not core_accepts(payload)
    assert any(rule in broken for broken in core_only_rules(payload))
    assert "no JSON Schema can state" in PAYLOAD_SCHEMA["description"]


# ------------------------------------------------------------------------------------- field by field strategies

_SPACES = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
_any_json = st.recursive(st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.floats(allow_nan=False,
                         allow_infinity=False) | st.text(max_size=8),
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                     max_size=3), max_leaves=6)
_not_a_string = st.one_of(st.integers(), st.booleans(), st.lists(st.text(max_size=2), max_size=2),
                          st.dictionaries(st.text(max_size=2), st.integers(), max_size=1), st.floats(allow_nan=False))


def _text(limit: int, nul: bool = False) -> st.SearchStrategy[str]:
    """Text the core takes: not blank, at most ``limit`` characters, valid Unicode (NUL only where ``nul``)."""
    chars = st.characters(exclude_characters=() if nul else ("\x00",))
    return st.one_of(st.text(chars, min_size=1, max_size=12).filter(str.strip),
                     st.builds(lambda c: c * limit, st.sampled_from("x我\U0001f600")),
                     st.builds(lambda s, c: s + c, st.text(st.sampled_from(_SPACES), max_size=3), chars))


def _bad_text(limit: int, nul: bool = False) -> st.SearchStrategy[Any]:
    bad = [st.just(""), st.text(st.sampled_from(_SPACES), min_size=1, max_size=4), st.just("x" * (limit + 1)),
           st.just("a\ud800"), st.just("\udfffb"), _not_a_string]
    if not nul:
        bad.append(st.just("a\x00b"))
    return st.one_of(bad)


def _nullable(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


_codes = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}", fullmatch=True)
_bad_codes = st.one_of(st.sampled_from(["", "-x", "_x", "a b", "a\n", "a\t", "é", "x" * 65, "a/b", "a\x00"]),
                       _not_a_string)
_source_types = st.from_regex(r"[a-z0-9][a-z0-9_.\-]{0,63}", fullmatch=True).filter(
    lambda s: s not in ("chat", "runtime"))
_bad_source_types = st.one_of(st.sampled_from(["chat", "runtime", "Chrome", "notes\n", " notes", "n" * 65, "",
                                               "nö"]), _not_a_string)

_OFFSETS = [timezone.utc, timezone(timedelta(hours=8)), timezone(timedelta(hours=-5, minutes=-30)),
            timezone(timedelta(hours=23, minutes=59)), timezone(-timedelta(minutes=44, seconds=30))]


@st.composite
def _iso_times(draw) -> str:
    """ISO-8601 times the contract allows, in each of its spellings."""
    moment = draw(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2098, 12, 31),
                               timezones=st.sampled_from(_OFFSETS)))
    text = moment.isoformat(sep=draw(st.sampled_from("T ")),
                            timespec=draw(st.sampled_from(["minutes", "seconds", "milliseconds", "microseconds"])))
    if draw(st.booleans()):
        text = text.replace("+00:00", "Z")
    return draw(st.sampled_from(["", " ", "\n", "\t"])) + text + draw(st.sampled_from(["", " ", "\r\n"]))


_numbers = st.one_of(st.floats(MIN_TIMESTAMP, MAX_TIMESTAMP), st.integers(int(MIN_TIMESTAMP), int(MAX_TIMESTAMP)),
                     st.sampled_from([MIN_TIMESTAMP, MAX_TIMESTAMP, int(MAX_TIMESTAMP)]))
_times = st.one_of(_numbers, _iso_times())
_bad_times = st.one_of(
    st.sampled_from([MIN_TIMESTAMP - 0.001, MAX_TIMESTAMP + 0.001, 0, -1, 1.7e12, 10**400, True, False,
                     "", "now", "1700000000", "2026-11-30T09:15:00", "20261130T091500Z", "2026-W48-1T09:15Z",
                     "2026-11-30", "2026-11-30T09Z", "2026-13-01T00:00Z", "2026-11-30T24:00Z", "2026-11-30T09:60Z",
                     "2026-11-30T09:15:60Z", "2026-11-30T09:15+05:60", "2026-11-30T09:15+24:00",
                     "2026-11-30t09:15Z", "2026-11-30T09:15z", "2026-11-30T09:15:00.Z", "2026-11-30T09:15:00,5Z",
                     "2026-11-30T09:15+0530", "1969-06-01T00:00:00Z", "2101-06-01T00:00:00Z",
                     "\u00a02026-11-30T09:15Z", "2026-11-30T09:15Z\x0b", "２０２６-11-30T09:15Z"]),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
    st.floats(max_value=MIN_TIMESTAMP, exclude_max=True), st.floats(min_value=MAX_TIMESTAMP, exclude_min=True))

_activity = st.fixed_dictionaries({"action_code": _codes},
                                  optional={"source_code": _nullable(_codes), "object_code": _nullable(_codes)})
_bad_activity = st.one_of(
    st.fixed_dictionaries({"action_code": _bad_codes}),
    st.fixed_dictionaries({"action_code": _codes, "source_code": _bad_codes}),
    st.fixed_dictionaries({"action_code": _codes, "object_code": _bad_codes}),
    st.fixed_dictionaries({"action_code": _codes, "verb": st.text(max_size=3)}),
    st.just({}), st.just({"action_code": None}), _not_a_string)

# Provenance: any JSON object whose text is valid Unicode (NUL included), its integers within 64 bits.
_json_text = st.text(st.characters(), max_size=10)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63) + 1, 2**63 - 1) | st.floats(allow_nan=False,
                                                                                 allow_infinity=False) | _json_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_json_text, inner, max_size=3), max_leaves=8)
_provenance = _nullable(st.dictionaries(_json_text, _json_value, max_size=4))
_bad_provenance = st.one_of(st.just({"title": "a\ud800"}), st.just({"a\udc00": 1}), st.just({"x": [{"y": "\ud83d"}]}),
                            st.lists(st.integers(), max_size=2), st.text(max_size=3), st.integers(), st.booleans())

_entity = st.fixed_dictionaries({"mention_text": _text(500)}, optional={"entity_type": _nullable(_codes)})
_entities = _nullable(st.one_of(st.lists(_entity, max_size=4),
                                st.just([{"mention_text": "x"}] * MAX_ENTITIES)))
_bad_entities = st.one_of(
    st.just([{"mention_text": "x"}] * (MAX_ENTITIES + 1)),
    st.lists(st.fixed_dictionaries({"mention_text": _bad_text(500)}), min_size=1, max_size=2),
    st.lists(st.fixed_dictionaries({"mention_text": _text(500), "entity_type": _bad_codes}), min_size=1, max_size=2),
    st.just([{}]), st.just([{"mention_text": None}]), st.just([{"mention_text": "x", "kind": "person"}]),
    st.just(["Ana"]), st.just({"mention_text": "x"}), st.text(max_size=3), st.integers())
_tags = _nullable(st.one_of(st.lists(_text(MAX_TAG_CHARS, nul=True), max_size=4), st.just(["t"] * MAX_TAGS)))
_bad_tags = st.one_of(st.just(["t"] * (MAX_TAGS + 1)), st.lists(_bad_text(MAX_TAG_CHARS, nul=True), min_size=1,
                                                                max_size=2),
                      st.just("work"), st.just({"work": True}), st.integers())
_ids = _nullable(_text(MAX_ID_CHARS))
_bad_ids = _bad_text(MAX_ID_CHARS)
_user_ids = _nullable(_text(200))
_booleans = st.booleans()
_bad_booleans = st.one_of(st.none(), st.sampled_from([0, 1, "true", "false", [], {}]))

# A top-level field: (its values the core takes, values it refuses). source_type and activity are required.
FIELDS: dict[str, tuple[st.SearchStrategy, st.SearchStrategy]] = {
    "source_type": (_source_types, _bad_source_types),
    "activity": (_activity, _bad_activity),
    "occurred_at": (_times, _bad_times),
    "provenance": (_provenance, _bad_provenance),
    "source_item_id": (_ids, _bad_ids),
    "session_id": (_ids, _bad_ids),
    "l2_batch_owner": (_ids, _bad_ids),
    "natural_key": (_ids, _bad_ids),
    "user_id": (_user_ids, _bad_text(200)),
    "entities": (_entities, _bad_entities),
    "tags": (_tags, _bad_tags),
    "ephemeral": (_booleans, _bad_booleans),
    "retire": (_booleans, _bad_booleans),
}
_OPTIONAL = sorted(set(FIELDS) - {"source_type", "activity", "occurred_at"})


@st.composite
def _schedules(draw, payload: dict) -> dict:
    """A schedule consistent with the payload's occurred_at (which it may leave out): the rules of one instant and
    of an end not before the start are the core's alone, so the valid ones keep them."""
    start = draw(_times)
    schedule: dict[str, Any] = {"start": start}
    if draw(st.booleans()) and not isinstance(start, str):
        schedule["end"] = draw(st.one_of(st.none(), st.floats(start, MAX_TIMESTAMP)))
    if draw(st.booleans()):
        schedule["all_day"] = draw(_booleans)
    if draw(st.booleans()):
        payload["occurred_at"] = start
    else:
        payload.pop("occurred_at", None)
    return schedule


_bad_schedules = st.one_of(
    st.fixed_dictionaries({"start": _bad_times}), st.fixed_dictionaries({"start": _numbers, "end": _bad_times}),
    st.fixed_dictionaries({"start": _numbers, "all_day": _bad_booleans}),
    st.fixed_dictionaries({"start": _numbers, "timezone": st.just("UTC")}), st.just({}), st.just({"end": 1.8e9}),
    st.just([1.8e9]), st.just("2026-11-30T09:15Z"), st.integers())


@st.composite
def payload_cases(draw) -> Any:
    """A sensor payload with every field valid, then 0-2 of: a field made bad, a field removed, an unknown field
    or a chat turn / tool run added, a retirement without its key, an ephemeral version."""
    payload: dict[str, Any] = {key: draw(FIELDS[key][0]) for key in ("source_type", "activity", "occurred_at")}
    for key in draw(st.lists(st.sampled_from(_OPTIONAL), unique=True, max_size=len(_OPTIONAL))):
        payload[key] = draw(FIELDS[key][0])
    if payload.get("retire") and payload.get("natural_key") is None:
        payload["natural_key"] = "uid-1"
    if payload.get("ephemeral"):
        payload.pop("natural_key", None)
    if draw(st.integers(0, 3)) == 0:
        payload["schedule"] = draw(_schedules(payload))
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        change = draw(st.sampled_from(["bad", "bad", "bad", "remove", "unknown", "speak", "retire", "ephemeral",
                                       "schedule", "shape"]))
        if change == "bad":
            key = draw(st.sampled_from(sorted(FIELDS)))
            payload[key] = draw(FIELDS[key][1])
        elif change == "remove" and payload:
            del payload[draw(st.sampled_from(sorted(payload)))]
        elif change == "unknown":
            payload[draw(st.sampled_from(["text", "timestamp", "content", "Source_type", ""]))] = draw(_any_json)
        elif change == "speak":
            payload[draw(st.sampled_from(["chat", "action"]))] = draw(st.sampled_from(
                [None, {"role": "user", "text": "hi", "provenance": "human_input"}, {"tool": "shell", "ok": True}]))
        elif change == "retire":
            payload["retire"] = True
            if draw(st.booleans()):
                payload.pop("natural_key", None)
            else:
                payload["natural_key"] = None
        elif change == "ephemeral":
            payload.update(ephemeral=True, natural_key=draw(_text(MAX_ID_CHARS)))
        elif change == "schedule":
            payload["schedule"] = draw(_bad_schedules)
        elif change == "shape":
            return draw(st.sampled_from([[payload], "payload", None, 1.5]))
    return payload


@CASES
@given(payload_cases())
def test_the_schema_accepts_exactly_what_the_core_accepts(payload):
    schema_ok = SCHEMA.is_valid(payload)
    assert not (schema_ok and core_only_rules(payload))      # the cases keep to what a schema can say
    assert schema_ok == core_accepts(payload), disagreement(payload)


@pytest.mark.parametrize("field", sorted(FIELDS))
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_each_field_alone_is_accepted_exactly_when_the_core_accepts_it(field, data):
    """Every value drawn for one field, good or bad, in an otherwise minimal payload: where the mixed cases above
    meet a given bad value rarely, this meets each field's often."""
    good, bad = FIELDS[field]
    payload = {"source_type": "notes", "occurred_at": 1_700_000_000, "activity": {"action_code": "write"}}
    payload[field] = data.draw(st.one_of(good, bad))
    assert SCHEMA.is_valid(payload) == core_accepts(payload), disagreement(payload)


def test_the_cases_are_both_accepted_and_refused():
    """Not a property that holds vacuously: the cases hold payloads both accept and payloads both refuse."""
    search = settings(max_examples=200, database=None, phases=[Phase.generate])    # found is enough: no shrinking
    assert isinstance(find(payload_cases(), core_accepts, settings=search), dict)
    find(payload_cases(), lambda p: not core_accepts(p), settings=search)
    find(payload_cases(), lambda p: isinstance(p, dict) and "schedule" in p and core_accepts(p), settings=search)


@CASES
@given(st.data())
def test_on_payloads_of_any_shape_only_the_core_only_rules_part_them(data):
    """The write path's fuzz strategies (chat-like fields, huge values, nested odd JSON, lone surrogates): the
    schema never refuses what the core takes, and takes what the core refuses only by one of the five rules."""
    from reliability.fuzzing import mutated, sensor_payloads

    raw = data.draw(mutated(sensor_payloads()))
    try:
        payload = json.loads(json.dumps(raw, allow_nan=False))   # the contract is about JSON
    except (TypeError, ValueError):
        return
    schema_ok, core_ok = SCHEMA.is_valid(payload), core_accepts(payload)
    if core_ok:
        assert schema_ok, disagreement(payload)
    elif schema_ok:
        assert core_only_rules(payload), disagreement(payload)


# ------------------------------------------------------------------------------------- the schema itself

def test_the_schema_is_a_draft_2020_12_schema_that_says_what_each_field_means():
    Draft202012Validator.check_schema(PAYLOAD_SCHEMA)
    assert PAYLOAD_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert PAYLOAD_SCHEMA["title"] and PAYLOAD_SCHEMA["description"]
    undescribed = [name for name, spec in PAYLOAD_SCHEMA["properties"].items() if not spec.get("description")]
    assert undescribed == []
    # Every field the core takes from a sensor is in the schema, and no other.
    from magi_desktop.core.contracts import _TOP_LEVEL_FIELDS
    assert set(PAYLOAD_SCHEMA["properties"]) == _TOP_LEVEL_FIELDS - {"chat", "action"}


def test_what_the_payload_helper_builds_is_valid_under_the_schema():
    payload = activity("calendar", "attend_meeting", "2026-11-30T09:15:00+08:00", {"summary": "Standup"},
                       item_id="uid-1", entities=[entity("Ana", "person")], tags=["work"], session_id="s1",
                       schedule={"start": "2026-11-30T09:15:00+08:00", "end": 1_796_003_100, "all_day": False},
                       natural_key="uid-1@20261130")
    assert SCHEMA.is_valid(payload) and core_accepts(payload)
    assert SCHEMA.is_valid(activity("calendar", "attend_meeting", 1_700_000_000, {}, natural_key="k", retire=True))


@pytest.mark.parametrize("value", ["visit_page\n", "visit page", "visit_page\x00"])
def test_a_code_with_a_trailing_newline_is_refused_by_both(value):
    """Python's ``re.match`` with ``$`` took "visit_page\\n" (and a schema pattern ending in $ would, in Python);
    the core now matches whole codes, and the schema says so without $."""
    payload = activity("chrome", value, 1_700_000_000, {})
    assert not core_accepts(payload) and not SCHEMA.is_valid(payload)


@pytest.mark.parametrize("value, ok", [
    ("2026-11-30T09:15:00+08:00", True), ("2026-11-30 09:15Z", True), (" 2026-11-30T09:15:00.5-05:30\n", True),
    ("2026-11-30T09:15:00-00:44:30", True),
    ("20261130T091500Z", False), ("2026-11-30T09:15+05:60", False), ("2026-11-30T09Z", False),
    ("\u30002026-11-30T09:15Z", False),
])
def test_iso_times_are_the_forms_the_schema_states(value, ok):
    """fromisoformat alone read basic and reduced forms, offsets of 60 minutes and any white space around; the core
    takes the forms the schema states."""
    payload = activity("chrome", "visit_page", value, {})
    assert core_accepts(payload) is ok and SCHEMA.is_valid(payload) is ok
    if ok:
        expected = datetime.fromisoformat(value.strip().replace("Z", "+00:00")).astimezone(UTC).timestamp()
        assert math.isclose(parse_timestamp(value), expected)
