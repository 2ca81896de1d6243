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
never the secrets. The queries are :mod:`.store.reredaction`'s; the scrub after a run is
:func:`.store.erasure.scrub_rewritten_text`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .ingest import _keyed_hash
from .redact import CURRENT, RuleSet
from .store import reredaction, summaries
from .store.connection import Connection, IntegrityError, savepoint, write_transaction
from .store.entities import name_key
from .store.reredaction import Table, record_version, stored_version, text_tables

__all__ = ["BATCH_ROWS", "HINT", "UNKNOWN", "Report", "Table", "note_rules_at_open", "record_version", "run",
           "status", "stored_version", "text_tables"]

UNKNOWN = "unknown"
BATCH_ROWS = 200            # rows per write transaction: a few hundred keep each one well under a second
HINT = "run `magi redact` to apply the current secret-redaction rules to what is stored"

# Columns whose value is made from another column of the row.
_DERIVED = {("entity_catalog", "name_key"): "name", ("entity_mentions", "name_key"): "mention_text",
            ("tom_trait_assertions", "value_key"): "value"}


# ------------------------------------------------------------------ the recorded version


def note_rules_at_open(conn: Connection, rules: RuleSet) -> None:
    """A new memory holds nothing older than ``rules``; one that holds data but no version predates them."""
    if stored_version(conn) is None:
        empty = not reredaction.holds_events_or_traces(conn)
        record_version(conn, rules.version if empty else UNKNOWN)


def status(conn: Connection, rules: RuleSet = CURRENT) -> dict[str, Any]:
    """Whether what is stored was redacted with ``rules`` — and if not, what to run."""
    stored = stored_version(conn)
    current = stored == rules.version
    last = reredaction.last_finished_receipt(conn)
    return {"rules_version": rules.version, "stored_version": stored, "current": current,
            "hint": None if current else HINT,
            "last_run": None if last is None else {"receipt_id": last[0], "finished_at": last[1], "rules_from": last[2],
                                                   "rules_to": last[3], "changed": json.loads(last[4]),
                                                   "families": json.loads(last[5])}}


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
    reader.create_function(reredaction.MAY_REDACT, 1, lambda v: isinstance(v, str) and rules.may_need_redaction(v),
                           deterministic=True)
    if not dry_run:
        with writer() as conn, write_transaction(conn):
            report.receipt_id = reredaction.start_receipt(conn, now, report.rules_from, rules.version)
    pass_ = _Pass(rules, key_secret, report, now)
    for table in text_tables(reader):
        for batch in reredaction.candidate_rows(reader, table, batch_rows):
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
            reredaction.finish_receipt(conn, report.receipt_id, time.time(), report.rows_scanned,
                                       json.dumps(dict(sorted(report.changed.items()))),
                                       json.dumps(dict(sorted(report.families.items()))))
    report.seconds = time.time() - started
    return report


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
        try:
            with savepoint(conn, "reredact_row"):   # a unique key hit undoes this row alone
                reredaction.update_row(conn, table, new, edit.key)
        except IntegrityError:
            for column in table.unique & set(new):       # two values that differed only in a secret
                new[column] = f"{new[column]} #{edit.key[0]}"
            reredaction.update_row(conn, table, new, edit.key)
        self._follow(conn, table, edit, new)
        self._counted(table, edit)

    def _counted(self, table: Table, edit: _Edit) -> None:
        self.report.changed[table.name] += 1
        self.report.families.update(edit.families)

    def _follow(self, conn: Connection, table: Table, edit: _Edit, new: dict[str, Any]) -> None:
        """What is made from the changed row: vectors, the next turn's index, the embedding queue."""
        rowid = edit.key[0]
        if table.name == "fact_events" and new.get("content") != edit.old["content"]:
            reredaction.embed_event_again(conn, rowid, self.now)
            # The next turn of the session indexes this one as its context: index it again.
            reredaction.reindex_next_turn(conn, rowid)
            self._derived_from_event(conn, rowid)
        elif table.name == "entity_catalog" and "name" in new:
            reredaction.drop_entity_vector(conn, rowid)
        elif table.name == "kg_edges" and "edge_text" in new:
            reredaction.embed_edge_again(conn, rowid)

    def _derived_from_event(self, conn: Connection, rowid: int) -> None:
        """Texts cut from the event's old content hold a secret the rules may no longer see whole (an 80-
        character title ends inside a token): the summaries that cite it are deleted and their windows
        summarised again on the next run (as forget does), and its episodes' titles are made again."""
        redrawn = summaries.redraw_citing(conn, [rowid])
        if redrawn:
            self.report.changed["l3_summaries (summarised again)"] += redrawn
        reredaction.retitle_episodes_of(conn, rowid)

    @staticmethod
    def _merge_session(conn: Connection, edit: _Edit, new: dict[str, Any]) -> bool:
        """Two sessions whose ids differed only in a secret are now one (as ingest would have made them)."""
        if not reredaction.session_exists(conn, new["session_id"]):
            return False
        reredaction.merge_session(conn, edit.old["session_id"], new["session_id"])
        return True


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
