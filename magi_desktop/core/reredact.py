"""Redact again what the memory stores, when the redaction rules grow (architecture §14, issue 16).

The memory records the version of the rules that redacted what it holds (``memory_meta``
``redaction_rules``; ``unknown`` for data stored before versions were kept). :func:`run` applies the
current rules to every text the database holds — found from the schema, not from a list: every TEXT
column of every ordinary table (the FTS5 and vec0 tables are indexes, rebuilt from their tables) — in
write transactions of :data:`BATCH_ROWS` rows, so no other writer waits long. JSON columns are parsed
and redacted as data. Where a column is derived from another, it follows: an event's full-text row is
re-indexed (and so is the next turn, which indexes it as context), its chunks are dropped and it is
queued for embedding again; an entity's, a mention's or an assertion's key is made again from its new
text, and the vectors of changed entities, edges and summaries are made again. A rewritten value that
would collide with a unique key gets a ``#rowid`` suffix (two names that differed only in a secret);
chat sessions that become one are merged. The receipt counts what changed per table and per rule family,
never the secrets.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .ingest import _keyed_hash
from .redact import CURRENT, RuleSet
from .store import summaries
from .store.connection import Connection, IntegrityError, write_transaction
from .store.entities import name_key
from .store.queue import EMBEDDING_JOBS
from .store.vectors import ENTITY_VEC_TABLE

META_KEY = "redaction_rules"
UNKNOWN = "unknown"
BATCH_ROWS = 200            # rows per write transaction: a few hundred keep each one well under a second
HINT = "run `magi redact` to apply the current secret-redaction rules to what is stored"

# Tables that are the memory's own bookkeeping: the dedupe secret, the migrations, these receipts.
_SKIPPED_TABLES = frozenset({"memory_meta", "schema_migrations", "redaction_receipts"})
# Columns whose value is made from another column of the row.
_DERIVED = {("entity_catalog", "name_key"): "name", ("entity_mentions", "name_key"): "mention_text",
            ("tom_trait_assertions", "value_key"): "value"}


# ------------------------------------------------------------------ the recorded version


def stored_version(conn: Connection) -> str | None:
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (META_KEY,)).fetchone()
    return row[0] if row else None


def record_version(conn: Connection, version: str) -> None:
    conn.execute("INSERT INTO memory_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                 "value = excluded.value", (META_KEY, version))


def note_rules_at_open(conn: Connection, rules: RuleSet) -> None:
    """A new memory holds nothing older than ``rules``; one that holds data but no version predates them."""
    if stored_version(conn) is None:
        empty = not any(conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone()
                        for table in ("fact_events", "runtime_traces"))
        record_version(conn, rules.version if empty else UNKNOWN)


def status(conn: Connection, rules: RuleSet = CURRENT) -> dict[str, Any]:
    """Whether what is stored was redacted with ``rules`` — and if not, what to run."""
    stored = stored_version(conn)
    current = stored == rules.version
    last = conn.execute("SELECT receipt_id, finished_at, rules_from, rules_to, tables_json, families_json FROM "
                        "redaction_receipts WHERE finished_at IS NOT NULL ORDER BY receipt_id DESC LIMIT 1"
                        ).fetchone()
    return {"rules_version": rules.version, "stored_version": stored, "current": current,
            "hint": None if current else HINT,
            "last_run": None if last is None else {"receipt_id": last[0], "finished_at": last[1], "rules_from": last[2],
                                                   "rules_to": last[3], "changed": json.loads(last[4]),
                                                   "families": json.loads(last[5])}}


# ------------------------------------------------------------------ the schema's text


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]            # ("rowid",) or the primary key of a WITHOUT ROWID table
    columns: tuple[str, ...]        # its TEXT columns
    unique: frozenset[str]          # text columns in a primary key or a unique index


def text_tables(conn: Connection) -> list[Table]:
    """Every ordinary table with TEXT columns (FTS5 / vec0 tables and their shadow tables are indexes)."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                        "ORDER BY name").fetchall()
    virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")]
    tables = []
    for name, sql in rows:
        if name in _SKIPPED_TABLES or name in virtual or any(name.startswith(v + "_") for v in virtual):
            continue
        info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
        columns = tuple(c[1] for c in info if (c[2] or "").upper() == "TEXT")
        if not columns:
            continue
        unique = {c[1] for c in info if c[5]}
        for index in conn.execute(f'PRAGMA index_list("{name}")').fetchall():
            if index[2]:
                unique |= {c[2] for c in conn.execute(f'PRAGMA index_info("{index[1]}")').fetchall()}
        without_rowid = "WITHOUT ROWID" in (sql or "").upper()
        key = tuple(c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]) if without_rowid else ("rowid",)
        tables.append(Table(name, key, columns, frozenset(unique) & set(columns)))
    return tables


# ------------------------------------------------------------------ the run


@dataclass
class Report:
    rules_version: str
    rules_from: str | None
    dry_run: bool
    rows_scanned: int = 0
    changed: Counter = field(default_factory=Counter)        # rows per table
    families: Counter = field(default_factory=Counter)       # replacements per rule family
    receipt_id: int | None = None
    backups_replaced: int | None = None
    scrub: str | None = None                                    # "done" / "pending" (a reader held the WAL)
    seconds: float = 0.0
    longest_batch_seconds: float = 0.0                          # the longest a write transaction held the lock

    def to_dict(self) -> dict[str, Any]:
        return {"rules_version": self.rules_version, "rules_from": self.rules_from, "dry_run": self.dry_run,
                "rows_scanned": self.rows_scanned, "changed": dict(sorted(self.changed.items())),
                "families": dict(sorted(self.families.items())), "receipt_id": self.receipt_id,
                "backups_replaced": self.backups_replaced, "scrub": self.scrub, "seconds": round(self.seconds, 3),
                "longest_batch_seconds": round(self.longest_batch_seconds, 4)}


def run(writer: Callable[[], contextlib.AbstractContextManager[Connection]], reader: Connection, *,
        rules: RuleSet = CURRENT, key_secret: bytes, dry_run: bool = False,
        batch_rows: int = BATCH_ROWS, now: float | None = None) -> Report:
    """Apply ``rules`` to every stored text. ``writer()`` lends the write connection (locked) for one
    batch; ``reader`` finds the candidate rows. Dry run: count what would change, write nothing."""
    started = time.time()
    now = started if now is None else now
    report = Report(rules.version, stored_version(reader), dry_run)
    reader.create_function("magi_may_redact", 1, lambda v: isinstance(v, str) and rules.may_need_redaction(v),
                           deterministic=True)
    if not dry_run:
        with writer() as conn, write_transaction(conn):
            report.receipt_id = conn.execute(
                "INSERT INTO redaction_receipts (started_at, rules_from, rules_to) VALUES (?, ?, ?)",
                (now, report.rules_from, rules.version)).lastrowid
    pass_ = _Pass(rules, key_secret, report, now)
    for table in text_tables(reader):
        for batch in _candidates(reader, table, batch_rows):
            report.rows_scanned += len(batch)
            edits = [edit for row in batch if (edit := pass_.row(table, row)) is not None]
            if edits and not dry_run:
                with writer() as conn, write_transaction(conn):
                    began = time.perf_counter()
                    for edit in edits:
                        pass_.write(conn, table, edit)
                report.longest_batch_seconds = max(report.longest_batch_seconds, time.perf_counter() - began)
            elif edits:
                for edit in edits:
                    report.changed[table.name] += 1
                    report.families.update(edit.families)
    if not dry_run:
        with writer() as conn, write_transaction(conn):
            record_version(conn, rules.version)
            conn.execute("UPDATE redaction_receipts SET finished_at = ?, rows_scanned = ?, tables_json = ?, "
                         "families_json = ? WHERE receipt_id = ?",
                         (time.time(), report.rows_scanned, json.dumps(dict(sorted(report.changed.items()))),
                          json.dumps(dict(sorted(report.families.items()))), report.receipt_id))
    report.seconds = time.time() - started
    return report


def _candidates(reader: Connection, table: Table, batch_rows: int) -> Iterator[list[tuple]]:
    """Rows of ``table`` with a text the rules may touch, ``batch_rows`` at a time: (key…, columns…)."""
    selected = ", ".join(f'"{c}"' for c in (*table.key, *table.columns))
    may = " OR ".join(f'magi_may_redact("{c}")' for c in table.columns)
    if table.key != ("rowid",):
        rows = reader.execute(f'SELECT {selected} FROM "{table.name}" WHERE {may}').fetchall()
        for start in range(0, len(rows), batch_rows):
            yield rows[start:start + batch_rows]
        return
    last = -1 << 62
    while True:
        rows = reader.execute(f'SELECT {selected} FROM "{table.name}" WHERE rowid > ? AND ({may}) ORDER BY rowid '
                              f"LIMIT ?", (last, batch_rows)).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


@dataclass
class _Edit:
    key: tuple
    old: dict[str, Any]
    new: dict[str, Any]            # only the columns that change
    families: Counter


class _Pass:
    def __init__(self, rules: RuleSet, key_secret: bytes, report: Report, now: float):
        self.rules, self.key_secret, self.report, self.now = rules, key_secret, report, now

    # -------------------------------------------------------------- deciding

    def row(self, table: Table, row: tuple) -> _Edit | None:
        key, values = row[:len(table.key)], dict(zip(table.columns, row[len(table.key):], strict=True))
        counts: Counter = Counter()
        new: dict[str, Any] = {}
        for column, value in values.items():
            if not isinstance(value, str) or (table.name, column) in _DERIVED:
                continue
            redacted = self._text(table.name, column, value, counts)
            if redacted != value:
                new[column] = redacted
        if not new:
            return None
        for (name, derived), source in _DERIVED.items():
            if name == table.name and source in new and derived in values:
                new[derived] = name_key(new[source])
        if table.name in ("fact_events", "runtime_traces"):
            self._rekey(values, new)
            if "metadata_json" in values or "content" in new:
                new["metadata_json"] = _with_counts(new.get("metadata_json", values["metadata_json"]), counts)
        return _Edit(key, values, new, counts)

    def _text(self, table: str, column: str, value: str, counts: Counter) -> str:
        # JSON is redacted as data, as ingest did (a tool run's input is stored as JSON text too)
        if column.endswith("_json") or (value[:1] in "{[" and value[-1:] in "}]"):
            try:
                data = json.loads(value)
            except ValueError:
                return self.rules.redact_text(value, counts)
            redacted = _metadata(self.rules, data, counts) if column == "metadata_json" else \
                self.rules.redact_value(data, counts)
            if redacted == data:
                return value
            compact = table in ("fact_events", "runtime_traces")
            return json.dumps(redacted, ensure_ascii=False, separators=(",", ":") if compact else None, default=str)
        return self.rules.redact_text(value, counts)

    def _rekey(self, values: dict[str, Any], new: dict[str, Any]) -> None:
        """An item id that held a secret was the dedupe key as sent: the key becomes the keyed hash of it,
        which is what ingest makes of such an id now (a replay still dedupes: the old id is its alias)."""
        item = values.get("source_item_id")
        if "source_item_id" in new and isinstance(item, str) and values.get("idempotency_key") == item:
            new["idempotency_key"] = _keyed_hash(self.key_secret, item.encode("utf-8"))

    # -------------------------------------------------------------- writing

    def write(self, conn: Connection, table: Table, edit: _Edit) -> None:
        new = dict(edit.new)
        if table.name == "chat_sessions" and "session_id" in new and self._merge_session(conn, edit, new):
            return self._counted(table, edit)
        if table.name == "procedural_skills":
            new.setdefault("optimized_prompt", edit.old.get("optimized_prompt"))   # its index follows this column
        if table.name == "fact_events":
            new.setdefault("content", edit.old["content"])                        # its index follows this column
        where = " AND ".join(f'"{k}" = ?' for k in table.key)
        try:
            with _savepoint(conn):
                self._update(conn, table, new, where, edit.key)
        except IntegrityError:
            for column in table.unique & set(new):       # two values that differed only in a secret
                new[column] = f"{new[column]} #{edit.key[0]}"
            self._update(conn, table, new, where, edit.key)
        self._follow(conn, table, edit, new)
        self._counted(table, edit)

    def _counted(self, table: Table, edit: _Edit) -> None:
        self.report.changed[table.name] += 1
        self.report.families.update(edit.families)

    @staticmethod
    def _update(conn: Connection, table: Table, new: dict[str, Any], where: str, key: tuple) -> None:
        sets = ", ".join(f'"{c}" = ?' for c in new)
        conn.execute(f'UPDATE "{table.name}" SET {sets} WHERE {where}', (*new.values(), *key))

    def _follow(self, conn: Connection, table: Table, edit: _Edit, new: dict[str, Any]) -> None:
        """What is made from the changed row: vectors, the next turn's index, the embedding queue."""
        rowid = edit.key[0]
        if table.name == "fact_events" and new.get("content") != edit.old["content"]:
            conn.execute("DELETE FROM event_chunks WHERE event_rowid = ?", (rowid,))
            EMBEDDING_JOBS.requeue(conn, "SELECT ?", (rowid,), self.now)
            # The next turn of the session indexes this one as its context: index it again.
            conn.execute("UPDATE fact_events SET content = content WHERE id = (SELECT n.id FROM fact_events n, "
                         "fact_events e WHERE e.id = ? AND e.session_id IS NOT NULL AND n.session_id = e.session_id "
                         "AND (n.timestamp > e.timestamp OR (n.timestamp = e.timestamp AND n.id > e.id)) "
                         "ORDER BY n.timestamp, n.id LIMIT 1)", (rowid,))
            self._derived_from_event(conn, rowid)
        elif table.name == "entity_catalog" and "name" in new:
            with contextlib.suppress(Exception):        # no vector table before the first embedding
                conn.execute(f"DELETE FROM {ENTITY_VEC_TABLE} WHERE rowid = ?", (rowid,))
        elif table.name == "kg_edges" and "edge_text" in new:
            conn.execute("UPDATE kg_edges SET embedded = 0 WHERE rowid = ?", (rowid,))

    def _derived_from_event(self, conn: Connection, rowid: int) -> None:
        """Texts cut from the event's old content hold a secret the rules may no longer see whole (an 80-
        character title ends inside a token): the summaries that cite it are deleted and their windows
        summarised again on the next run (as forget does), and its episodes' titles are made again."""
        redrawn = summaries.redraw_citing(conn, [rowid])
        if redrawn:
            self.report.changed["l3_summaries (summarised again)"] += redrawn
        conn.execute("UPDATE l2_episodes SET title = coalesce((SELECT substr(e.content, 1, 80) FROM l2_evidence v "
                     "JOIN fact_events e ON e.id = v.event_rowid WHERE v.kind = 'episode' AND v.row_key = "
                     "CAST(l2_episodes.episode_id AS TEXT) ORDER BY e.author_type != 'user', e.timestamp LIMIT 1), "
                     "title) WHERE episode_id IN (SELECT CAST(row_key AS INTEGER) FROM l2_evidence WHERE kind = "
                     "'episode' AND event_rowid = ?)", (rowid,))

    @staticmethod
    def _merge_session(conn: Connection, edit: _Edit, new: dict[str, Any]) -> bool:
        """Two sessions whose ids differed only in a secret are now one (as ingest would have made them)."""
        twin = conn.execute("SELECT 1 FROM chat_sessions WHERE session_id = ?", (new["session_id"],)).fetchone()
        if twin is None:
            return False
        old = edit.old["session_id"]
        conn.execute("UPDATE chat_sessions SET message_count = message_count + o.message_count, "
                     "first_event_at = min(first_event_at, o.first_event_at), last_event_at = max(last_event_at, "
                     "o.last_event_at), generation = max(chat_sessions.generation, o.generation) FROM "
                     "(SELECT * FROM chat_sessions WHERE session_id = ?) AS o WHERE chat_sessions.session_id = ?",
                     (old, new["session_id"]))
        conn.execute("DELETE FROM chat_sessions WHERE session_id = ?", (old,))
        return True


@contextlib.contextmanager
def _savepoint(conn: Connection) -> Iterator[None]:
    conn.execute("SAVEPOINT reredact_row")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK TO reredact_row")
        conn.execute("RELEASE reredact_row")
        raise
    conn.execute("RELEASE reredact_row")


def _metadata(rules: RuleSet, data: Any, counts: Counter) -> Any:
    """An event's metadata redacted as ingest redacts the fields it was made from (the counts it already
    holds are left out: they are what was redacted, not text)."""
    if not isinstance(data, dict):
        return rules.redact_value(data, counts)
    out = {}
    for key, value in data.items():
        if key == "redactions":
            out[key] = value
        elif key == "tags" and isinstance(value, list):
            out[key] = [rules.redact_text(t, counts) if isinstance(t, str) else t for t in value]
        elif key == "structured_entity_hints" and isinstance(value, list):
            out[key] = [{k: rules.redact_text(v, counts) if isinstance(v, str) else v for k, v in hint.items()}
                        if isinstance(hint, dict) else hint for hint in value]
        else:
            out[key] = rules.redact_value(value, counts)
    return out


def _with_counts(metadata_json: str, counts: Counter) -> str:
    """The metadata with this run's replacements added to what it records as redacted."""
    if not counts:
        return metadata_json
    data = json.loads(metadata_json)
    merged = Counter(data.get("redactions") or {})
    merged.update(counts)
    data["redactions"] = dict(sorted(merged.items()))
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


# ------------------------------------------------------------------ the scrub


@contextlib.contextmanager
def secure_writes(conn: Connection) -> Iterator[None]:
    """``secure_delete`` for the writes inside: the old text's bytes are overwritten, not left in free pages."""
    before = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(before)}")


def scrub(conn: Connection) -> None:
    """What forget does after its writes — the full-text indexes rewritten without the old terms (FTS5 only
    marks deletions until a merge), the write-ahead log that held the old pages checkpointed away — and a
    VACUUM: an updated row leaves older copies of itself in its page's free space (written before
    secure_delete was on, when the page was last rearranged), which only rebuilding the file removes.
    One small function so it can be routed through forget's scrub job."""
    with secure_writes(conn), write_transaction(conn):
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                     "sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'").fetchall():
            conn.execute(f'INSERT INTO "{table}" ("{table}") VALUES (\'optimize\')')
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
