"""Export everything in the memory as JSON Lines, and check such a file before an import (issue 8).

The format (``FORMAT_VERSION`` 1), one JSON object per line:

- line 1, the header: ``{"format": "magi-desktop-export", "format_version": 1, "schema_version": 12,
  "migrations": [[1, "l1_fact_events"], …], "exported_at": 1764000000.0, "exported_at_iso": "…Z",
  "app_version": "…", "embedding": {"model": …, "dimension": …}, "tables": [{"name": "fact_events",
  "rows": 1234}, …], "not_exported": {table: why}}``;
- then every row of every exported table, grouped by table in load order:
  ``{"table": "fact_events", "row": {"id": 1, "event_id": "01J…", …}}``, with ``"rowid"`` beside
  ``"row"`` for a table whose rowid is not one of its columns; a BLOB is ``{"$blob": "<base64>"}``.

Provenance travels with the rows: events keep their ids, sources, items and metadata; derived rows
keep the links to the events behind them (l2_evidence, summary_event_links, the pointers of facts).
The tables come from the live schema (:mod:`.export_schema`). Left out: the full-text indexes, the
vectors and their chunks, the embedding queue and the schema record.

Importing (:mod:`.importer`) reads the file twice: :func:`check_file` checks every line first (a bad
line is named with its number and field before anything is written), then the import takes the events
and the user's state from it, re-deriving and re-checking every value, and leaves the derived layers
to be rebuilt (issue 16).
"""

from __future__ import annotations

import base64
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

from .errors import InvalidInput
from .export_schema import NOT_EXPORTED, exported_tables
from .store.connection import Connection, read_snapshot
from .store.exports import TableSpec, applied_migrations, chunk_model, exported_rows, row_count, schema_version

FORMAT = "magi-desktop-export"
FORMAT_VERSION = 1

class ImportFailed(InvalidInput):
    """The import wrote nothing; ``line`` and ``field`` say where the file is wrong (when it is the file)."""

    def __init__(self, reason: str, line: int | None = None, field: str | None = None):
        where = ": ".join(p for p in (f"line {line}" if line else None, field) if p)
        super().__init__(f"{where}: {reason}" if where else reason)
        self.line, self.field, self.reason = line, field, reason


# ------------------------------------------------------------------ export


def open_private(path: str | os.PathLike, mode: str = "w") -> IO:
    """Open a file for writing that only the user can read (an export holds the whole memory; architecture §14)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    if os.name == "posix":
        os.fchmod(fd, stat.S_IRUSR | stat.S_IWUSR)      # an existing file keeps its mode otherwise
    return os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8", newline=None if "b" in mode else "\n")


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$blob": base64.b64encode(value).decode("ascii")}
    return value


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def export_jsonl(conn: Connection, out: IO[str], *, app_version: str, now: float | None = None) -> dict[str, int]:
    """Write the whole memory to ``out`` from one read snapshot; returns the rows written per table."""
    now = time.time() if now is None else now
    with read_snapshot(conn):                     # one snapshot: the header's counts match the rows
        tables = exported_tables(conn)
        counts = {t.name: row_count(conn, t.name) for t in tables}
        model = chunk_model(conn)
        out.write(_line({
            "format": FORMAT, "format_version": FORMAT_VERSION, "schema_version": schema_version(conn),
            "migrations": [list(r) for r in applied_migrations(conn)],
            "exported_at": now, "exported_at_iso": iso(now), "app_version": app_version,
            "embedding": {"model": model[0], "dimension": model[1]} if model else None,
            "tables": [{"name": t.name, "rows": counts[t.name]} for t in tables],
            "not_exported": dict(NOT_EXPORTED) | {"virtual tables": "full-text and vector indexes, rebuilt"},
        }))
        for table in tables:
            for values in exported_rows(conn, table):
                record: dict[str, Any] = {"table": table.name}
                if table.with_rowid:
                    record["rowid"], values = values[0], values[1:]
                record["row"] = {c: _encode(v) for c, v in zip(table.columns, values, strict=True)}
                out.write(_line(record))
    return counts


# ------------------------------------------------------------------ import


@dataclass
class _Segment:
    """Where one table's rows are in the file."""

    offset: int = 0
    first_line: int = 0
    rows: int = 0


@dataclass
class Checked:
    header: dict[str, Any]
    segments: dict[str, _Segment] = field(default_factory=dict)
    last_line: int = 1


def read_lines(handle: IO[bytes], first_number: int = 1) -> Iterator[tuple[int, int, Any]]:
    """(line number, byte offset, parsed JSON) for every non-blank line; ImportFailed on a bad one."""
    number = first_number - 1
    while True:
        offset = handle.tell()
        raw = handle.readline()
        if not raw:
            return
        number += 1
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise ImportFailed(f"not UTF-8 (byte {exc.start + 1})", number) from None
        if not text.strip():
            continue
        try:
            yield number, offset, json.loads(text)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            detail = f"{exc.msg} (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise ImportFailed(f"invalid JSON: {detail}", number) from None


def _check_header(obj: Any, target_version: int, known: dict[str, TableSpec]) -> dict[str, Any]:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise ImportFailed(f"not a Magi Desktop export (the first line must be its header, with \"format\": "
                           f"\"{FORMAT}\")", 1, "format")
    _check_version(obj, "format_version", 1, FORMAT_VERSION,
                   lambda v: f"the export's format version {v} is newer than this program reads "
                             f"({FORMAT_VERSION}); upgrade Magi Desktop")
    _check_version(obj, "schema_version", 0, target_version,
                   lambda v: f"the export comes from a newer memory schema (v{v}) than this one "
                             f"(v{target_version}); upgrade Magi Desktop to import it")
    tables = obj.get("tables")
    if not isinstance(tables, list):
        raise ImportFailed("must be a list of {\"name\", \"rows\"}", 1, "tables")
    seen: set[str] = set()
    for i, entry in enumerate(tables):
        name = entry.get("name") if isinstance(entry, dict) else None
        rows = entry.get("rows") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise ImportFailed("must be {\"name\": str, \"rows\": int >= 0}", 1, f"tables[{i}]")
        if name not in known:
            raise ImportFailed(f"table {name!r} is not one this memory (schema v{target_version}) imports",
                               1, f"tables[{i}].name")
        if name in seen:
            raise ImportFailed(f"table {name!r} is listed twice", 1, f"tables[{i}].name")
        seen.add(name)
    return obj


def _check_version(header: dict[str, Any], key: str, lowest: int, newest: int, too_new: Callable[[int], str]) -> None:
    """A version number of the header: a whole number from ``lowest`` (1 or 0) up to ``newest``, the newest this
    program reads (``too_new`` says so for a newer one)."""
    version = header.get(key)
    if not isinstance(version, int) or isinstance(version, bool) or version < lowest:
        raise ImportFailed("must be a positive integer" if lowest == 1 else "must be a non-negative integer", 1, key)
    if version > newest:
        raise ImportFailed(too_new(version), 1, key)


def _check_value(value: Any, line: int, where: str) -> None:
    if value is None or isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return
    if isinstance(value, dict) and set(value) == {"$blob"} and isinstance(value["$blob"], str):
        try:
            base64.b64decode(value["$blob"], validate=True)
            return
        except ValueError:
            raise ImportFailed("$blob is not base64", line, where) from None
    raise ImportFailed(f"must be null, a number, a string or {{\"$blob\": base64}}, not {type(value).__name__}",
                       line, where)


def _check_row(obj: Any, line: int, known: dict[str, TableSpec], listed: set[str]) -> str:
    if not isinstance(obj, dict):
        raise ImportFailed("must be a JSON object {\"table\", \"row\"}", line)
    table = obj.get("table")
    if not isinstance(table, str):
        raise ImportFailed("missing or not a string", line, "table")
    if table not in listed:
        raise ImportFailed(f"table {table!r} is not in the header's list", line, "table")
    row = obj.get("row")
    if not isinstance(row, dict) or not row:
        raise ImportFailed("missing or not an object of column values", line, "row")
    extra = set(obj) - {"table", "row", "rowid"}
    if extra:
        raise ImportFailed("unexpected key", line, sorted(extra)[0])
    spec = known[table]
    if spec.with_rowid or "rowid" in obj:
        rowid = obj.get("rowid")
        if not isinstance(rowid, int) or isinstance(rowid, bool):
            raise ImportFailed("missing or not an integer", line, "rowid")
    columns = set(spec.columns)
    for column, value in row.items():
        if column not in columns:
            raise ImportFailed(f"{table} has no column {column!r}", line, f"row.{column}")
        _check_value(value, line, f"row.{column}")
    return table


def check_file(handle: IO[bytes], target_version: int, known: dict[str, TableSpec]) -> Checked:
    """Every line well-formed, each table's rows together and as many as the header says."""
    lines = read_lines(handle)
    first = next(lines, None)
    if first is None:
        raise ImportFailed("the file is empty; line 1 must be the header of a Magi Desktop export")
    if first[0] != 1:
        raise ImportFailed("the header must be the first line", 1)
    checked = Checked(_check_header(first[2], target_version, known))
    promised = {t["name"]: t["rows"] for t in checked.header["tables"]}
    current: str | None = None
    for number, offset, obj in lines:
        table = _check_row(obj, number, known, set(promised))
        if table != current:
            if table in checked.segments:
                raise ImportFailed(f"the rows of {table} must be together (they began at line "
                                   f"{checked.segments[table].first_line})", number, "table")
            checked.segments[table] = _Segment(offset, number)
            current = table
        segment = checked.segments[table]
        segment.rows += 1
        if segment.rows > promised[table]:
            raise ImportFailed(f"more rows of {table} than the header's {promised[table]}", number, "table")
        checked.last_line = number
    for table, rows in promised.items():
        found = checked.segments[table].rows if table in checked.segments else 0
        if found != rows:
            raise ImportFailed(f"the header promises {rows} row(s) of {table}, the file has {found} "
                               "(is it truncated?)", checked.last_line + 1)
    return checked


def decode(value: Any) -> Any:
    return base64.b64decode(value["$blob"]) if isinstance(value, dict) else value


def table_rows(handle: IO[bytes], checked: Checked, table: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, decoded row) of one table's rows in a checked file, in file order."""
    segment = checked.segments.get(table)
    if segment is None:
        return
    handle.seek(segment.offset)
    read = 0
    for number, _, obj in read_lines(handle, segment.first_line):
        row = {column: decode(value) for column, value in obj["row"].items()}
        if "rowid" in obj:
            row["rowid"] = obj["rowid"]
        yield number, row
        read += 1
        if read == segment.rows:
            return
