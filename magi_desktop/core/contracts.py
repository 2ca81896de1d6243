"""Contracts between the world and the memory core (architecture §3).

A *payload* is what a plugin or an agent submits: an activity seen by a sensor,
a chat turn, or a tool execution. :func:`validate_payload` turns a JSON-like
mapping into a typed :class:`Payload` or raises :class:`PayloadError` naming the
offending field. A :class:`MemoryEvent` is what the core stores; plugins never
write its fields.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, NoReturn, TypeGuard, overload

from .errors import InvalidInput
from .recalled import RECALL_CLOSE, RECALL_OPEN, has_recalled, recalled_block, strip_recalled  # noqa: F401 - re-exported
from .redact import redact_text

# Limits on what one payload may carry. Generous for real use, small enough
# that one bad plugin cannot fill the disk with a single event.
MAX_TEXT_CHARS = 200_000
MAX_ID_CHARS = 512
MAX_PROVENANCE_BYTES = 64 * 1024
MAX_ACTION_FIELD_BYTES = 64 * 1024
MAX_ENTITIES = 64
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_DEPTH = 32  # nesting of provenance / tool input and output
MAX_ACTOR_CHARS = 200
# 1970-01-02 .. 2100-01-01: catches milliseconds sent as seconds.
MIN_TIMESTAMP = 86_400.0
MAX_TIMESTAMP = 4_102_444_800.0

CHAT_ROLES = ("user", "assistant", "tool")
CHAT_PROVENANCES = ("human_input", "interjection", "task_result", "timer", "wake", "template", "quarantined",
                    "recalled")
HUMAN_PROVENANCES = ("human_input", "interjection")

PayloadKind = Literal["chat", "runtime", "sensor"]

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_SOURCE_TYPE = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,63}$")
_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
# The ISO-8601 times a payload may carry (magi_desktop/plugin_api/payload.schema.json states the same): a date, a
# time of day (seconds and their fraction optional; a space may stand for the T), then Z or an offset. Python's
# fromisoformat alone reads far more ("20260101T0915", week dates, "+05:60") than a published schema could say.
_ISO_TIME = re.compile(r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[T ](?:[01][0-9]|2[0-3]):[0-5][0-9]"
                       r"(?::[0-5][0-9](?:\.[0-9]+)?)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]+)?)?)?")
_ISO_SPACE = " \t\n\r"      # around an ISO time: JSON's own white space, not every character str.strip takes

_TOP_LEVEL_FIELDS = frozenset(
    {
        "source_type", "source_item_id", "occurred_at", "activity", "provenance", "entities",
        "tags", "l2_batch_owner", "session_id", "user_id", "chat", "action", "ephemeral", "schedule",
        "natural_key", "retire",
    }
)
_CHAT_FIELDS = frozenset({"role", "text", "provenance", "tool_name", "speaker"})
_ACTIVITY_FIELDS = frozenset({"source_code", "action_code", "object_code"})
_ACTION_FIELDS = frozenset({"tool", "category", "ok", "duration_ms", "input", "output", "error"})
_ENTITY_FIELDS = frozenset({"mention_text", "entity_type"})
_SCHEDULE_FIELDS = frozenset({"start", "end", "all_day"})


# A sensor event is what the user did unless its provenance names someone else as its actor (a colleague's
# commit): then it renders as theirs (render.py), L2 makes it their activity, never the user's (l2/rules.py,
# l2/projection.py), and retrieval does not take it for an answer about the user (store/l1.py, sufficiency.py).
ACTOR = "actor"


def actor_of(provenance: Mapping[str, Any] | None) -> str | None:
    """Who did what a sensor event records, when it was not the user; None when it was the user."""
    value = provenance.get(ACTOR) if isinstance(provenance, Mapping) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def is_valid_source_type(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(_SOURCE_TYPE.fullmatch(value))


class PayloadError(InvalidInput):
    """A payload is malformed. ``field`` names the bad field (dotted path)."""

    def __init__(self, field: str, reason: str, index: int | None = None):
        self.field = field
        self.reason = reason
        self.index = index
        where = field if index is None else f"payloads[{index}].{field}"
        super().__init__(f"{where}: {reason}")

    def at(self, index: int) -> PayloadError:
        """The same error, located at position ``index`` of a batch."""
        return PayloadError(self.field, self.reason, index)


# The records below are NamedTuples: immutable like frozen dataclasses, but
# several times cheaper to build, and ingest builds a few per event.


class Activity(NamedTuple):
    source_code: str
    action_code: str
    object_code: str | None = None


class ChatTurn(NamedTuple):
    role: str
    text: str
    provenance: str | None = None
    tool_name: str | None = None
    speaker: str | None = None

    @property
    def is_human_testimony(self) -> bool:
        return self.role == "user" and self.provenance in HUMAN_PROVENANCES


class ToolRun(NamedTuple):
    tool: str
    ok: bool
    category: str = "general"
    duration_ms: float | None = None
    input: Any = None
    output: Any = None
    error: str | None = None


class EntityHint(NamedTuple):
    mention_text: str
    entity_type: str

    def to_dict(self) -> dict[str, str]:
        return {"mention_text": self.mention_text, "entity_type": self.entity_type}


class Schedule(NamedTuple):
    """When a scheduled event (a meeting, a booking) takes place: it is visible before it happens."""

    start: float
    end: float
    all_day: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "all_day": self.all_day}


class Payload(NamedTuple):
    kind: PayloadKind
    source_type: str
    occurred_at: float
    source_item_id: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    activity: Activity | None = None
    chat: ChatTurn | None = None
    action: ToolRun | None = None
    provenance: Mapping[str, Any] = MappingProxyType({})
    entities: tuple[EntityHint, ...] = ()
    tags: tuple[str, ...] = ()
    l2_batch_owner: str | None = None
    ephemeral: bool = False
    schedule: Schedule | None = None
    #: One live event per (source_type, natural_key): a new version supersedes the stored one.
    natural_key: str | None = None
    #: Retire the stored version of ``natural_key`` (a cancelled meeting); nothing new is stored.
    retire: bool = False


class MemoryEvent(NamedTuple):
    """One normalised event as the core stores it (architecture §3.2); ``Memory.get_event`` gives the same as a dict.

    ``event_id`` (a ULID), ``timestamp`` (UNIX seconds it is about), ``event_type`` (``CHAT_MESSAGE``,
    ``SENSOR_EVENT``, ``ACTION_EXECUTED``), ``source`` (the payload's source_type), ``source_item_id``,
    ``idempotency_key`` (what dedupes it), ``session_id``, ``user_id`` (deprecated: always ``local`` unless a
    caller set another), ``content`` (the rendered, redacted sentence), ``memory_domain``, ``ingest_target``
    (where it went, as ``IngestResult.target``), ``cognition_eligible`` (may feed L2), ``retention_class``,
    ``author_type`` (user, assistant, tool, external, system), ``content_type``, ``evidence_class`` and
    ``l1_retrieval_scope`` (what it may prove and which questions see it, architecture §4), ``metadata``
    (the payload's own fields under ``timeline``, the entity hints…), ``ingested_at`` (when it was
    stored), ``dedupe_aliases`` (other keys it dedupes against, never stored), ``recorded_at`` (when the memory
    could first have known it; None: ``timestamp``), ``natural_key`` (what it is a version of) and ``retire``
    (it retires that key's stored version).
    """

    event_id: str
    timestamp: float
    event_type: str
    source: str
    source_item_id: str | None
    idempotency_key: str
    session_id: str | None
    user_id: str
    content: str
    memory_domain: str
    ingest_target: str
    cognition_eligible: bool
    retention_class: str
    author_type: str
    content_type: str
    evidence_class: str
    l1_retrieval_scope: str
    metadata: Mapping[str, Any]
    ingested_at: float
    #: Other keys the same payload may have been stored under (looked up, never
    #: stored): the plain id and its hash, whichever ``idempotency_key`` is not.
    dedupe_aliases: tuple[str, ...] = ()
    #: When the memory could first have known it (architecture §16): ``now`` hides what was recorded after it.
    #: None means the occurred_at (``timestamp``).
    recorded_at: float | None = None
    natural_key: str | None = None
    retire: bool = False

    @property
    def visible_from(self) -> float:
        return self.timestamp if self.recorded_at is None else self.recorded_at


# The event type of each payload kind (architecture §3.2).
EVENT_TYPES = {"chat": "CHAT_MESSAGE", "sensor": "SENSOR_EVENT", "runtime": "ACTION_EXECUTED"}


def tool_run_of(event: MemoryEvent) -> ToolRun | None:
    """The (redacted) tool execution an ACTION_EXECUTED event describes."""
    if event.event_type != EVENT_TYPES["runtime"]:
        return None
    fields = event.metadata["timeline"]
    return ToolRun(**{k: fields.get(k) for k in ("tool", "ok", "category", "duration_ms", "input", "output", "error")})


class IngestResult(NamedTuple):
    """What ``Memory.ingest`` returns for one payload.

    ``event_id`` is the stored event's id (None for a refused payload, or a retire that found nothing).
    ``duplicate`` is true when the same (source, event_type, idempotency_key)
    was already stored; ``event_id`` is then the id of the stored event.
    ``target`` says where the event went (l1_only, l1_and_l2, runtime_trace,
    l0_only, retired). ``evidence_class`` is the class governance gave it (``user_self_report``…,
    architecture §4). ``error`` is only set by ``ingest_many(..., on_error="report")``; ``ok`` is its absence.
    """

    event_id: str | None
    duplicate: bool = False
    target: str | None = None
    evidence_class: str | None = None
    error: PayloadError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


# ---------------------------------------------------------------- validation


def _fail(field_name: str, reason: str) -> NoReturn:
    raise PayloadError(field_name, reason)


def _preview(value: Any, limit: int = 60) -> str:
    """A short, redacted repr of a bad value for an error message (errors are logged and stored)."""
    text = redact_text(repr(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_keys(obj: Mapping, allowed: frozenset, prefix: str) -> None:
    for key in obj:
        if not isinstance(key, str):
            _fail(prefix.rstrip(".") or "payload", f"keys must be strings, got {_preview(key)}")
        if key not in allowed:
            # The field is named as sent only when it reads as a name: "" or a key holding control
            # characters, lone surrogates or a secret is shown as its short, escaped, redacted repr.
            name = key if _PLAIN_KEY.fullmatch(key) and redact_text(key) == key else _preview(key, 40)
            _fail(prefix + name, f"unknown field (allowed: {', '.join(sorted(allowed))})")


@overload
def _str(obj: Mapping, key: str, path: str, *, required: Literal[True], max_chars: int = ...,
         pattern: re.Pattern | None = ..., allow_blank: bool = ...) -> str: ...
@overload
def _str(obj: Mapping, key: str, path: str, *, required: bool, max_chars: int = ...,
         pattern: re.Pattern | None = ..., allow_blank: bool = ...) -> str | None: ...
def _str(obj: Mapping, key: str, path: str, *, required: bool, max_chars: int = MAX_ID_CHARS,
         pattern: re.Pattern | None = None, allow_blank: bool = False) -> str | None:
    value = _field(obj, key, path, required)
    if value is None:
        return None
    if not isinstance(value, str):
        _fail(path, f"must be a string, got {type(value).__name__}")
    if not allow_blank and not value.strip():
        _fail(path, "must not be empty")
    if len(value) > max_chars:
        _fail(path, f"is {len(value)} characters long; the limit is {max_chars}")
    if "\x00" in value:
        _fail(path, "must not contain NUL characters")
    _check_unicode(value, path)
    if pattern is not None and not pattern.fullmatch(value):    # match's $ would let "code\n" through
        _fail(path, f"{_preview(value)} does not match {pattern.pattern}")
    return value


def _field(obj: Mapping, key: str, path: str, required: bool) -> Any:
    """``obj[key]``, None when it is missing or null — which a required field must not be."""
    value = obj.get(key)
    if value is None and required:
        _fail(path, "is required")
    return value


def _check_unicode(value: str, path: str) -> None:
    """JSON can carry lone surrogates ("\\ud800") that no UTF-8 database can store."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            _fail(path, f"is not valid Unicode (a lone surrogate at character {exc.start})")


@overload
def _mapping(obj: Mapping, key: str, path: str, *, required: Literal[True]) -> Mapping: ...
@overload
def _mapping(obj: Mapping, key: str, path: str, *, required: bool) -> Mapping | None: ...
def _mapping(obj: Mapping, key: str, path: str, *, required: bool) -> Mapping | None:
    value = _field(obj, key, path, required)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        _fail(path, f"must be an object, got {type(value).__name__}")
    return value


_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_size(value: Any, path: str, depth: int = 0) -> int:
    """Check that ``value`` is plain JSON data and return roughly its encoded size."""
    if depth > MAX_DEPTH:
        _fail(path, f"is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        if value.isascii():
            return len(value)
        _check_unicode(value, path)
        return len(value) * 3
    if isinstance(value, _JSON_SCALARS):
        if isinstance(value, float) and not math.isfinite(value):
            _fail(path, "must not contain NaN or infinity")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
            _fail(path, "has an integer too large to store (more than 64 bits)")
        return 8
    if isinstance(value, Mapping):
        size = 2
        for key, item in value.items():
            if not isinstance(key, str):
                _fail(path, f"must be JSON-serialisable (object key {_preview(key)} is not a string)")
            _check_unicode(key, path)
            size += len(key) + 4 + _json_size(item, path, depth + 1)
        return size
    if isinstance(value, (list, tuple)):
        return 2 + sum(_json_size(item, path, depth + 1) + 1 for item in value)
    _fail(path, f"must be JSON-serialisable ({type(value).__name__} is not)")


def _finite_float(value: int | float, path: str) -> float:
    try:
        number = float(value)
    except OverflowError:
        _fail(path, "is out of range")
    if not math.isfinite(number):
        _fail(path, "must be a finite number")
    return number


def parse_timestamp(value: Any, path: str = "occurred_at") -> float:
    """A UNIX timestamp in seconds, or an ISO-8601 string with a UTC offset."""
    if isinstance(value, bool) or value is None:
        _fail(path, "is required: a UNIX timestamp in seconds or an ISO-8601 string")
    if isinstance(value, (int, float)):
        ts = _finite_float(value, path)
    elif isinstance(value, str):
        text = value.strip(_ISO_SPACE)
        if not _ISO_TIME.fullmatch(text):
            _fail(path, f"{_preview(value)} is not an ISO-8601 date-time (YYYY-MM-DDTHH:MM:SS with Z or ±HH:MM)")
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            _fail(path, f"{_preview(value)} is not an ISO-8601 date-time")
        if parsed.tzinfo is None:
            _fail(path, f"{_preview(value)} has no UTC offset; add one (e.g. +08:00 or Z)")
        try:
            ts = parsed.timestamp()
        except (OverflowError, OSError, ValueError):
            _fail(path, f"{_preview(value)} is outside 1970-01-02 .. 2100-01-01")
    else:
        _fail(path, f"must be a number or an ISO-8601 string, got {type(value).__name__}")
    if not isinstance(value, str) and ts > MAX_TIMESTAMP and ts / 1000 < MAX_TIMESTAMP:
        _fail(path, f"{_preview(value)} looks like milliseconds; send seconds")
    if not MIN_TIMESTAMP <= ts <= MAX_TIMESTAMP:
        _fail(path, f"{_preview(value)} is outside 1970-01-02 .. 2100-01-01")
    return ts


#: A moment a caller names (a query's ``now``): UNIX seconds, an ISO-8601 string with a UTC offset, or a
#: :class:`~datetime.datetime` — aware, or naive for this machine's local time.
Instant = float | str | datetime


def parse_now(value: Instant | None, path: str = "now") -> float | None:
    """``value`` (an :data:`Instant`) as UNIX seconds; None stays None (the caller reads the clock). Anything else,
    or a moment outside 1970-01-02 .. 2100-01-01, raises :class:`PayloadError` naming ``path``."""
    if value is None:
        return None
    if isinstance(value, datetime):
        try:
            ts = value.timestamp()          # a naive datetime is local time (datetime.timestamp's own rule)
        except (OverflowError, OSError, ValueError):
            ts = math.inf
        if not MIN_TIMESTAMP <= ts <= MAX_TIMESTAMP:
            _fail(path, f"{_preview(value)} is outside 1970-01-02 .. 2100-01-01")
        return ts
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        _fail(path, f"must be a datetime, an ISO-8601 string with an offset or UNIX seconds, "
                    f"got {type(value).__name__}")
    return parse_timestamp(value, path)


def _validate_chat(raw: Mapping) -> ChatTurn:
    chat = _mapping(raw, "chat", "chat", required=True)
    _check_keys(chat, _CHAT_FIELDS, "chat.")
    role = _str(chat, "role", "chat.role", required=True)
    if role not in CHAT_ROLES:
        _fail("chat.role", f"{_preview(role)} is not one of {', '.join(CHAT_ROLES)}")
    text = _str(chat, "text", "chat.text", required=True, max_chars=MAX_TEXT_CHARS)
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)  # "é" typed two ways is one message
    provenance = _str(chat, "provenance", "chat.provenance", required=False)
    if provenance is not None and provenance not in CHAT_PROVENANCES:
        _fail("chat.provenance", f"{_preview(provenance)} is not one of {', '.join(CHAT_PROVENANCES)}")
    if has_recalled(text):
        # Memories recalled into a turn (recalled.py) are a copy of what the memory holds, never new
        # testimony: they are cut out before storage and before the quote gate.
        stripped = strip_recalled(text)
        # A turn of nothing but recalled memory is kept as a mark, not a second copy of the memory
        # (which forgetting the original would leave behind).
        text, provenance = (stripped, provenance) if stripped else (f"[recalled memory, {len(text)} characters]",
                                                                    "recalled")
    if provenance is None and role == "user":
        # Never guess that a user-role message is human testimony: frameworks
        # also put task results, timers and templates in user messages.
        _fail("chat.provenance", "is required for role 'user': human_input (a person typed it), interjection, "
                                 "or task_result / timer / wake / template / quarantined for generated text")
    return ChatTurn(
        role=role,
        text=text,
        provenance=provenance,
        tool_name=_str(chat, "tool_name", "chat.tool_name", required=False),
        speaker=_str(chat, "speaker", "chat.speaker", required=False, max_chars=200),
    )


def _validate_action(raw: Mapping) -> ToolRun:
    action = _mapping(raw, "action", "action", required=True)
    _check_keys(action, _ACTION_FIELDS, "action.")
    ok = action.get("ok")
    if not isinstance(ok, bool):
        _fail("action.ok", "is required and must be true or false")
    duration = action.get("duration_ms")
    if duration is not None:
        if isinstance(duration, bool) or not isinstance(duration, (int, float)):
            _fail("action.duration_ms", f"must be a number, got {type(duration).__name__}")
        if _finite_float(duration, "action.duration_ms") < 0:
            _fail("action.duration_ms", "must be >= 0")
    for key in ("input", "output"):
        if key in action and _json_size(action[key], f"action.{key}") > MAX_ACTION_FIELD_BYTES:
            _fail(f"action.{key}", f"is larger than {MAX_ACTION_FIELD_BYTES} bytes")
    return ToolRun(
        tool=_str(action, "tool", "action.tool", required=True, max_chars=200),
        ok=ok,
        category=_str(action, "category", "action.category", required=False, max_chars=200) or "general",
        duration_ms=_finite_float(duration, "action.duration_ms") if duration is not None else None,
        input=action.get("input"),
        output=action.get("output"),
        error=_str(action, "error", "action.error", required=False, max_chars=MAX_TEXT_CHARS),
    )


def _validate_activity(raw: Mapping, source_type: str) -> Activity:
    activity = _mapping(raw, "activity", "activity", required=True)
    _check_keys(activity, _ACTIVITY_FIELDS, "activity.")
    return Activity(
        source_code=_str(activity, "source_code", "activity.source_code", required=False, pattern=_CODE)
        or source_type,
        action_code=_str(activity, "action_code", "activity.action_code", required=True, pattern=_CODE),
        object_code=_str(activity, "object_code", "activity.object_code", required=False, pattern=_CODE),
    )


def _list(raw: Mapping, key: str, limit: int) -> list:
    """An optional list field, checked for type and length ([] when absent)."""
    items = raw.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        _fail(key, f"must be a list, got {type(items).__name__}")
    if len(items) > limit:
        _fail(key, f"has {len(items)} items; the limit is {limit}")
    return items


def _validate_entities(raw: Mapping) -> tuple[EntityHint, ...]:
    entities = _list(raw, "entities", MAX_ENTITIES)
    hints = []
    for i, item in enumerate(entities):
        path = f"entities[{i}]"
        if not isinstance(item, Mapping):
            _fail(path, f"must be an object, got {type(item).__name__}")
        _check_keys(item, _ENTITY_FIELDS, path + ".")
        hints.append(
            EntityHint(
                mention_text=_str(item, "mention_text", path + ".mention_text", required=True, max_chars=500),
                entity_type=_str(item, "entity_type", path + ".entity_type", required=False, pattern=_CODE)
                or "thing",
            )
        )
    return tuple(hints)


def _validate_tags(raw: Mapping) -> tuple[str, ...]:
    tags = _list(raw, "tags", MAX_TAGS)
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_CHARS:
            _fail(f"tags[{i}]", f"must be a non-empty string of at most {MAX_TAG_CHARS} characters")
        _check_unicode(tag, f"tags[{i}]")
    return tuple(tags)


def _validate_schedule(raw: Mapping) -> Schedule | None:
    schedule = _mapping(raw, "schedule", "schedule", required=False)
    if schedule is None:
        return None
    _check_keys(schedule, _SCHEDULE_FIELDS, "schedule.")
    start = parse_timestamp(schedule.get("start"), "schedule.start")
    end = parse_timestamp(schedule["end"], "schedule.end") if schedule.get("end") is not None else start
    if end < start:
        _fail("schedule.end", "must not be before schedule.start")
    all_day = schedule.get("all_day", False)
    if not isinstance(all_day, bool):
        _fail("schedule.all_day", "must be true or false")
    return Schedule(start=start, end=end, all_day=all_day)


def _payload_kind(raw: Mapping, source_type: str) -> PayloadKind:
    present = [k for k in ("chat", "action", "activity") if raw.get(k) is not None]
    if len(present) > 1:
        _fail(present[1], f"a payload carries exactly one of chat / action / activity, got {', '.join(present)}")
    if source_type == "chat" and present != ["chat"]:
        _fail("chat", "is required when source_type is 'chat'")
    if source_type == "runtime" and present != ["action"]:
        _fail("action", "is required when source_type is 'runtime'")
    # Chat turns and tool runs come only through their own source types, so a
    # sensor plugin cannot submit text that would count as the user speaking.
    if present == ["chat"] and source_type != "chat":
        _fail("chat", f"chat turns use source_type 'chat', not {_preview(source_type)}")
    if present == ["action"] and source_type != "runtime":
        _fail("action", f"tool executions use source_type 'runtime', not {_preview(source_type)}")
    if not present:
        _fail("activity", "is required (or chat for a chat turn, action for a tool execution)")
    kinds: dict[str, PayloadKind] = {"chat": "chat", "action": "runtime", "activity": "sensor"}
    return kinds[present[0]]


def validate_payload(raw: Any) -> Payload:
    """Check a submitted payload; raise :class:`PayloadError` naming the bad field."""
    if not isinstance(raw, Mapping):
        _fail("payload", f"must be a JSON object, got {type(raw).__name__}")
    _check_keys(raw, _TOP_LEVEL_FIELDS, "")
    source_type = _str(raw, "source_type", "source_type", required=True, pattern=_SOURCE_TYPE)
    kind = _payload_kind(raw, source_type)
    schedule = _validate_schedule(raw)
    if schedule is not None and kind != "sensor":
        _fail("schedule", "belongs to activity payloads (a calendar entry, a booking), not to chat turns or tool runs")
    if schedule is not None and raw.get("occurred_at") is None:
        occurred_at = schedule.start      # a scheduled event is about its start
    else:
        occurred_at = parse_timestamp(raw.get("occurred_at"))
    if schedule is not None and occurred_at != schedule.start:
        _fail("schedule.start", "must equal occurred_at (a scheduled event is about its start)")
    natural_key = _str(raw, "natural_key", "natural_key", required=False)
    retire = raw.get("retire", False)
    if not isinstance(retire, bool):
        _fail("retire", "must be true or false")
    if retire and natural_key is None:
        _fail("retire", "needs natural_key: it retires the stored event of that key")
    if natural_key is not None and kind == "chat":
        # A chat turn is someone's words: a later turn (an assistant's, another session's) must never replace or
        # retire them by naming the same key; a retried turn dedupes by its source_item_id instead.
        _fail("natural_key", "belongs to activity payloads; a chat turn is never replaced (send a source_item_id "
                             "to make a retry a duplicate)")
    if natural_key is not None and (kind == "runtime" or raw.get("ephemeral") is True):
        _fail("natural_key", "belongs to stored activity payloads, not to tool runs or ephemeral ones")
    session_id = _str(raw, "session_id", "session_id", required=kind == "chat")
    provenance = raw.get("provenance")
    if kind == "sensor":
        provenance = _mapping(raw, "provenance", "provenance", required=False) or {}
        if _json_size(provenance, "provenance") > MAX_PROVENANCE_BYTES:
            _fail("provenance", f"is larger than {MAX_PROVENANCE_BYTES} bytes")
        if ACTOR in provenance:
            _str(provenance, ACTOR, f"provenance.{ACTOR}", required=True, max_chars=MAX_ACTOR_CHARS)
    elif provenance is not None:
        _fail("provenance", "belongs to sensor payloads; chat turns use chat.provenance")
    ephemeral = raw.get("ephemeral", False)
    if not isinstance(ephemeral, bool):
        _fail("ephemeral", "must be true or false")
    return Payload(
        kind=kind,
        source_type=source_type,
        occurred_at=occurred_at,
        source_item_id=_str(raw, "source_item_id", "source_item_id", required=False),
        session_id=session_id,
        user_id=_str(raw, "user_id", "user_id", required=False, max_chars=200),
        activity=_validate_activity(raw, source_type) if kind == "sensor" else None,
        chat=_validate_chat(raw) if kind == "chat" else None,
        action=_validate_action(raw) if kind == "runtime" else None,
        provenance=dict(provenance or {}),
        entities=_validate_entities(raw),
        tags=_validate_tags(raw),
        l2_batch_owner=_str(raw, "l2_batch_owner", "l2_batch_owner", required=False),
        ephemeral=ephemeral,
        schedule=schedule,
        natural_key=natural_key,
        retire=retire,
    )
