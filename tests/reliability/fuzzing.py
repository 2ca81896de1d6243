"""Strategies and database checks shared by the fuzz tests.

Payloads are built around the real shapes (README "Payloads": chat turns, sensor activities, tool
executions) and then mutated — a field replaced by any JSON value, removed, or an unknown field
added — so most cases are *nearly* valid, which is where validation bugs live. Text is drawn from
an alphabet heavy in what breaks text handling: lone surrogates, NUL and other control characters,
right-to-left marks, combining characters, CJK, emoji, and FTS5 / SQL syntax.
"""
# Raw SQL left dumps every row of every table and checks the file: a fuzz run compares whole databases.

from __future__ import annotations

import hashlib
import math
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from magi_desktop.core import Memory
from magi_desktop.core.contracts import (
    CHAT_PROVENANCES,
    CHAT_ROLES,
    MAX_ACTION_FIELD_BYTES,
    MAX_ENTITIES,
    MAX_ID_CHARS,
    MAX_PROVENANCE_BYTES,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TEXT_CHARS,
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
)

#: Cases run per entry point in this process (benchmarks/fuzz.py reports them).
CASES: Counter = Counter()


def count(entry_point: str) -> None:
    CASES[entry_point] += 1


# ----------------------------------------------------------------------------- text

_SPECIAL = [
    "\x00", "\x01", "\x07", "\x1b", "\x7f", "\t", "\n", "\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029",
    "\ud800", "\udfff", "\udc00", "\ud83d",                       # lone surrogates (JSON can carry them)
    "\u200b", "\u200c", "\u200d", "\ufeff", "\u00ad",             # zero-width, BOM, soft hyphen
    "\u200e", "\u200f", "\u202a", "\u202b", "\u202e", "\u2066", "\u2069",   # bidi controls (RTL override…)
    "\u0301", "\u0308", "\u20dd",                                 # combining marks
    "\ufffd", "\uffff", "\U0010ffff", "\U0001f600", "\U0001f468\u200d\U0001f469",
    "ش", "א", "ע", "م", "我", "空气炸锅", "吗", "？", "。", "Ｘ", "ﬁ", "ß", "İ", "é", "é",
]
_SYNTAX = [
    '"', "'", "*", "^", "-", "+", ":", "(", ")", "{", "}", "[", "]", ";", "--", "/*", "*/", "%", "_", "\\",
    " AND ", " OR ", " NOT ", " NEAR ", "NEAR(", "NEAR/3", "content:", "speaker:", "{content speaker}:",
    "- content", "fact_events_fts", "'; DROP TABLE fact_events; --", '" OR 1=1 --', "\\x00", "%00",
    "MATCH", "rank", "bm25(", "* ", "?", "$1", "@@", "<magi-recalled>", "</magi-recalled>",
]
_WORDS = ["I", "bought", "an", "air", "fryer", "my", "password", "is", "hunter2", "remember", "that", "the",
          "user", "what", "did", "before", "yesterday", "last", "week", "猫", "买了", "什么", "why", "?", "!"]

_char = st.one_of(
    st.characters(codec=None, exclude_categories=[]),  # any code point, surrogates included
    st.characters(max_codepoint=0x7F),
    st.sampled_from([c for c in _SPECIAL if len(c) == 1]),
)
_token = st.one_of(st.sampled_from(_WORDS), st.sampled_from(_SYNTAX), st.sampled_from(_SPECIAL),
                   st.text(_char, min_size=1, max_size=8))
#: Any Unicode, biased to the characters and syntax that break parsers, tokenizers and SQL bindings.
nasty_text = st.one_of(
    st.text(_char, max_size=40),
    st.lists(_token, max_size=12).map(" ".join),
    st.lists(_token, max_size=12).map("".join),
)


_UNIT = st.text(_char, min_size=1, max_size=4)
_OFF_BY = st.sampled_from([-1, 0, 1])


@st.composite
def huge_text(draw, limit: int = MAX_TEXT_CHARS) -> str:
    """A string whose length is the limit, or one off it either way (built from a short drawn unit)."""
    unit = draw(_UNIT)
    length = limit + draw(_OFF_BY)
    return (unit * (length // len(unit) + 1))[:length]


# ----------------------------------------------------------------------------- JSON values

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), nasty_text,
)
json_values = st.recursive(
    _scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.tuples(children),
                               st.dictionaries(nasty_text, children, max_size=4)),
    max_leaves=12,
)
#: Values that are not JSON at all (a plugin may yield anything).
not_json = st.sampled_from([object, lambda: b"bytes", lambda: {1, 2}, lambda: complex(1, 2), lambda: Path("/tmp"),
                            lambda: {1: "int key"}, lambda: {("t",): 1}, lambda: range(3),
                            lambda: bytearray(b"x")]).map(lambda make: make())   # fresh: mutations change them


# Strategies are built once: Hypothesis validates each new strategy object (recursively for
# json_values), which cost more than the cases themselves when composites built them per draw.
_ONE_IN = {n: st.integers(0, 2 * n - 1) for n in (2, 4, 5, 8, 20, 30)}


def rarely(draw, one_in: int) -> bool:
    """True about once in ``one_in`` draws (a middle value: Hypothesis favours the ends of a range)."""
    return draw(_ONE_IN[one_in]) == one_in


_VALID_TIMES = st.one_of(
    st.floats(min_value=MIN_TIMESTAMP, max_value=MAX_TIMESTAMP),
    st.integers(min_value=int(MIN_TIMESTAMP), max_value=int(MAX_TIMESTAMP)),
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 1, 1),
                 timezones=st.timezones()).map(lambda d: d.isoformat()))
_ODD_TIMES = st.one_of(
    st.floats(),
    st.integers(),
    st.sampled_from(["2026-11-30T09:15:00+08:00", "2026-11-30T01:15:00Z", "2026-11-30T09:15:00",
                     "1970-01-01T00:00:00Z", "2100-01-01T00:00:01Z", "9999-12-31T23:59:59+14:00",
                     "0001-01-01T00:00:00-12:00", " 2026-01-01T00:00:00Z ", "", "now", "1779005740382"]),
    st.sampled_from([0, -1, 1.7e12, 1.7e9 + 0.5, float("nan"), float("inf"), 2**63, 10**400 // 10**300]),
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    nasty_text,
)


@st.composite
def _timestamps(draw):
    return draw(_ODD_TIMES if rarely(draw, 8) else _VALID_TIMES)


_TIMESTAMPS = _timestamps()


def timestamps():
    """Mostly valid times (so the cases reach past validation), then every way a time can be wrong."""
    return _TIMESTAMPS


# ----------------------------------------------------------------------------- payloads

_ACTIONS = {
    "visit_page": {"url": st.one_of(nasty_text, st.sampled_from([
        "https://example.com/a?q=1", "https://user:pw@example.com/", "http://[::1]:80/", "http://%zz/",
        "https://xn--bcher-kva.example/", "javascript:alert(1)", "http://[invalid/"])),
        "title": nasty_text},
    "run_command": {"command": nasty_text, "cwd": nasty_text, "shell": st.sampled_from(["bash", "zsh", "fish"])},
    "calendar_event": {"summary": nasty_text, "start": st.one_of(timestamps(), json_values), "end": timestamps(),
                       "location": nasty_text, "description": nasty_text},
    "git_commit": {"repo": nasty_text, "branch": nasty_text, "message": nasty_text,
                   "files_changed": st.one_of(st.integers(), json_values)},
    "listen_music": {"track_name": nasty_text, "artist_name": nasty_text,
                     "play_duration_sec": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers())},
    "use_app": {"app_name": nasty_text, "duration_sec": st.one_of(st.floats(allow_nan=True), st.integers()),
                "window_title": nasty_text},
}
_SOURCES = ["chrome", "firefox", "terminal", "calendar", "git", "music", "app_usage", "netease_music", "x.y-z_1"]


def _maybe(draw, payload: dict, key: str, strategy) -> None:
    if rarely(draw, 4):
        payload[key] = draw(strategy)


def _common(draw, payload: dict) -> dict:
    _maybe(draw, payload, "source_item_id", _ITEM_IDS)
    _maybe(draw, payload, "user_id", nasty_text)
    _maybe(draw, payload, "l2_batch_owner", nasty_text)
    _maybe(draw, payload, "tags", _TAGS)
    _maybe(draw, payload, "entities", _ENTITIES)
    _maybe(draw, payload, "ephemeral", _BOOLS if not rarely(draw, 4) else json_values)
    return payload


_ITEM_IDS = st.one_of(nasty_text, st.text(max_size=3).map(lambda s: s * 200))
_TAGS = st.lists(nasty_text, max_size=MAX_TAGS + 1)
_ENTITIES = st.lists(st.fixed_dictionaries(
    {"mention_text": nasty_text}, optional={"entity_type": st.one_of(st.sampled_from(
        ["person", "place", "thing", "creator", "Org.x"]), nasty_text)}), max_size=4)
_BOOLS = st.booleans()
_ROLES = st.sampled_from(CHAT_ROLES)
_PROVENANCES = st.sampled_from(CHAT_PROVENANCES)
_SESSIONS = st.one_of(st.sampled_from(["s1", "s2"]), nasty_text)
_ACTION_NAMES = st.sampled_from(sorted(_ACTIONS))
_ODD_ACTION = st.text(st.characters(max_codepoint=0x7F), min_size=1, max_size=12)
_ODD_FIELDS = st.dictionaries(nasty_text, json_values, max_size=3)
_SOURCE_NAMES = st.sampled_from(_SOURCES)
_OBJECT_CODES = st.sampled_from(["song", "page", "commit", "x y"])
_KEEP_FIELD = st.integers(0, 4)
_TOOLS = st.one_of(st.sampled_from(["web_search", "shell", "http"]), nasty_text)
_CATEGORIES = st.one_of(st.sampled_from(["search", "io"]), nasty_text)
_DURATIONS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers())


@st.composite
def chat_payloads(draw, text=None) -> dict:
    role = draw(_ROLES)
    turn = {"role": role, "text": draw(text if text is not None else nasty_text)}
    if role == "user" or draw(_BOOLS):
        turn["provenance"] = draw(_PROVENANCES)
    _maybe(draw, turn, "speaker", nasty_text)
    _maybe(draw, turn, "tool_name", nasty_text)
    payload = {"source_type": "chat", "session_id": draw(_SESSIONS),
               "occurred_at": draw(timestamps()), "chat": turn}
    return _common(draw, payload)


@st.composite
def sensor_payloads(draw) -> dict:
    action = draw(_ACTION_NAMES if not rarely(draw, 5) else _ODD_ACTION)
    fields = _ACTIONS.get(action, {"value": nasty_text})
    provenance = {key: draw(strategy) for key, strategy in fields.items() if draw(_KEEP_FIELD)}
    if rarely(draw, 5):
        provenance.update(draw(_ODD_FIELDS))
    source = draw(_SOURCE_NAMES)
    activity = {"source_code": source, "action_code": action}
    _maybe(draw, activity, "object_code", _OBJECT_CODES)
    payload = {"source_type": source, "occurred_at": draw(timestamps()), "activity": activity,
               "provenance": provenance}
    _maybe(draw, payload, "session_id", nasty_text)
    # Plans and versions (issue 17): a schedule (mostly matching occurred_at), a natural key, a retirement.
    if rarely(draw, 4):
        start = payload["occurred_at"] if not rarely(draw, 4) else draw(timestamps())
        schedule = {"start": start}
        _maybe(draw, schedule, "end", st.one_of(timestamps(), st.just(start)))
        _maybe(draw, schedule, "all_day", _BOOLS if not rarely(draw, 4) else json_values)
        payload["schedule"] = schedule if not rarely(draw, 8) else draw(json_values)
    _maybe(draw, payload, "natural_key", st.one_of(st.sampled_from(["uid-1", "uid-1@1700000000", "k"]), nasty_text))
    _maybe(draw, payload, "retire", _BOOLS if not rarely(draw, 4) else json_values)
    return _common(draw, payload)


@st.composite
def runtime_payloads(draw) -> dict:
    action = {"tool": draw(_TOOLS), "ok": draw(_BOOLS)}
    _maybe(draw, action, "category", _CATEGORIES)
    _maybe(draw, action, "duration_ms", _DURATIONS)
    _maybe(draw, action, "input", json_values)
    _maybe(draw, action, "output", json_values)
    _maybe(draw, action, "error", nasty_text)
    payload = {"source_type": "runtime", "occurred_at": draw(timestamps()), "action": action}
    _maybe(draw, payload, "session_id", nasty_text)
    return _common(draw, payload)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every (nested) key path of a payload, for the mutations."""
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append(prefix + (key,))
            out.extend(_paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.append(prefix + (index,))
            out.extend(_paths(item, prefix + (index,)))
    return out


@st.composite
def mutated(draw, base) -> Any:
    """A payload of a real shape, with 0-3 mutations: a value replaced, a field removed or added."""
    payload = draw(base)
    for _ in range(0 if not rarely(draw, 2) else draw(_MUTATION_COUNT)):
        paths = _paths(payload)
        operation = draw(_OPERATIONS)
        if not paths or operation == "add":
            parent = payload if not paths else _parent(payload, draw(st.sampled_from(paths)))
            if isinstance(parent, dict):
                parent[draw(_NEW_KEYS)] = draw(json_values)
            continue
        path = draw(st.sampled_from(paths))
        parent, key = _parent(payload, path), path[-1]
        if operation == "remove":
            del parent[key]
        elif operation == "huge":
            parent[key] = draw(_HUGE)
        elif operation == "not_json":
            parent[key] = draw(not_json)
        else:
            parent[key] = draw(json_values)
    if rarely(draw, 30):
        payload = draw(_NOT_A_PAYLOAD) if draw(_BOOLS) else [payload] * draw(_MUTATION_COUNT)
    if isinstance(payload, dict) and rarely(draw, 20):
        payload["entities"] = [{"mention_text": "x"}] * (MAX_ENTITIES + draw(st.sampled_from([0, 1])))
    return payload


_MUTATION_COUNT = st.integers(1, 3)
_OPERATIONS = st.sampled_from(["replace", "remove", "add", "huge", "not_json"])
_NEW_KEYS = st.one_of(nasty_text, st.sampled_from(["chat", "action", "activity", "provenance", "text", "role", "ok",
                                                   "ephemeral"]))
_HUGE = st.one_of(*(huge_text(limit) for limit in (MAX_TEXT_CHARS, MAX_ID_CHARS, MAX_TAG_CHARS,
                                                    MAX_PROVENANCE_BYTES // 3, MAX_ACTION_FIELD_BYTES)))
_NOT_A_PAYLOAD = st.one_of(json_values, not_json)


def _parent(payload, path):
    for key in path[:-1]:
        payload = payload[key]
    return payload


payloads = st.one_of(mutated(chat_payloads()), mutated(sensor_payloads()), mutated(runtime_payloads()))
valid_shaped = st.one_of(chat_payloads(), sensor_payloads(), runtime_payloads())


def json_safe_repr(value: Any) -> str:
    """A repr that is equal for equal payloads (NaN included), to check nothing mutated the input."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json_safe_repr(k)}: {json_safe_repr(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return type(value).__name__ + "[" + ", ".join(json_safe_repr(v) for v in value) + "]"
    return repr(value)


# ----------------------------------------------------------------------------- the database

# Tables a rejected payload may change, and how: the per-source rejection counter (architecture §14: "counted
# per plugin"). Everything else must be byte-for-byte as before.
REJECTION_COUNTERS = "source_counters"


def tables(conn) -> list[str]:
    """Every real table (FTS5 and vec0 shadow tables included; the virtual tables are views over them)."""
    return [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' "
        "ORDER BY name")]


def digest(conn, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """A hash of every row of every table, per table."""
    out = {}
    for table in tables(conn):
        if table in skip:
            continue
        h = hashlib.sha256()
        for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid' if _has_rowid(conn, table)
                                else f'SELECT * FROM "{table}"'):
            h.update(repr(row).encode("utf-8", "surrogatepass"))
        out[table] = h.hexdigest()
    return out


def _has_rowid(conn, table: str) -> bool:
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    return "WITHOUT ROWID" not in sql.upper()


def counters(conn) -> dict[str, tuple]:
    return {row[0]: row[1:] for row in conn.execute(
        "SELECT source, accepted, duplicates, rejected FROM source_counters")}


class FuzzMemory:
    """A memory for one property's cases, replaced by a fresh one every ``rotate`` cases so that the
    whole-database checks stay cheap however many cases run."""

    def __init__(self, root: Path, rotate: int = 150, **open_args):
        self.root = Path(root)
        self.rotate = rotate
        self.open_args = {"embedder": "hashing", **open_args}
        self._memory: Memory | None = None
        self._uses = 0

    @property
    def memory(self) -> Memory:
        if self._memory is None or self._uses >= self.rotate:
            self.close()
            self._memory = Memory.open(Path(tempfile.mkdtemp(dir=self.root)), **self.open_args)
            self._uses = 0
        self._uses += 1
        return self._memory

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None


def integrity_ok(memory: Memory) -> bool:
    return memory.db.reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# ----------------------------------------------------------------------------- the files on disk


def files_holding(folder: Path, words) -> dict[str, list[str]]:
    """Which files under ``folder`` (recursively: database, WAL, backups, kept-aside copies, temp copies)
    hold any of ``words`` as raw bytes — UTF-8, UTF-16 LE or BE, any ASCII case; {file: words found}."""
    found: dict[str, list[str]] = {}
    needles = {word: [word.lower().encode(codec) for codec in ("utf-8", "utf-16-le", "utf-16-be")]
               for word in words}
    for path in sorted(Path(folder).rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes().lower()
        hits = [word for word, forms in needles.items() if any(form in data for form in forms)]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found
