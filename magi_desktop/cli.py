"""The ``magi`` command line (architecture §12)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from . import __version__

if TYPE_CHECKING:      # the CLI imports the core lazily: `magi --help` starts fast
    from .core import MemoryStats

LINE_BREAKS = re.compile(r"\s*(?:\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])\s*")


def _add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", type=Path, default=argparse.SUPPRESS,
        help="data folder (default: $MAGI_DATA_DIR or the platform's user data folder)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="magi", description="Magi Desktop — local-first memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"magi-desktop {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    _add_data_dir(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    app = commands.add_parser("app", help="start the desktop application (the default)")
    _add_data_dir(app)

    ingest = commands.add_parser("ingest", help="ingest payloads from a JSON Lines file ('-' for stdin)")
    _add_data_dir(ingest)
    ingest.add_argument("file", help="JSONL file: one payload (architecture §3.1) per line")
    ingest.add_argument("--batch-size", type=int, default=500, help="payloads per transaction (default 500)")
    ingest.add_argument("--no-embed", action="store_true",
                        help="leave embedding and L2 projection to the app's background worker")

    query = commands.add_parser("query", help="ask the memory a question; prints the evidence pack")
    _add_data_dir(query)
    query.add_argument("text", help="the question")
    query.add_argument("--mode", help="query mode (default: chosen by rules): " + ", ".join(_modes()))
    query.add_argument("--now", help="answer as of this ISO-8601 time (default: now)")
    query.add_argument("--limit", type=int, default=10, help="findings at most (default 10)")
    query.add_argument("--json", action="store_true", help="print the pack as JSON")

    status = commands.add_parser("status", help="show what the memory holds and what is queued")
    _add_data_dir(status)
    status.add_argument("--json", action="store_true", help="print JSON")

    doctor = commands.add_parser("doctor", help="check SQLite, FTS5, sqlite-vec, the model and the data folder")
    _add_data_dir(doctor)
    doctor.add_argument("--json", action="store_true", help="print JSON")

    plugins = commands.add_parser("plugins", help="list plugins (name, version, hooks), their collectors and errors")
    plugins.add_argument("--json", action="store_true", help="print JSON")

    collect = commands.add_parser("collect", help="run the collectors enabled in collectors.json once, now")
    _add_data_dir(collect)
    collect.add_argument("--json", action="store_true", help="print JSON")
    forget = commands.add_parser("forget", help="remove events everywhere (and what was derived from them), "
                                                "with a receipt; criteria combine")
    _add_data_dir(forget)
    forget.add_argument("--event", action="append", default=[], help="an event id (repeatable)")
    forget.add_argument("--item", action="append", default=[], help="a source item id (repeatable)")
    forget.add_argument("--entity", help="every event that mentions this entity (name or alias)")
    forget.add_argument("--source", help="every event of this source (e.g. chrome)")
    forget.add_argument("--from", dest="start", help="from this ISO-8601 time")
    forget.add_argument("--to", dest="end", help="until this ISO-8601 time")
    forget.add_argument("--json", action="store_true", help="print the receipt as JSON")

    redact = commands.add_parser("redact", help="apply the current secret-redaction rules to everything stored "
                                                "(events, indexes, derived rows, backups), with a receipt")
    _add_data_dir(redact)
    redact.add_argument("--dry-run", action="store_true", help="only count what would change; write nothing")
    redact.add_argument("--json", action="store_true", help="print the receipt as JSON")

    export = commands.add_parser("export", help="write everything the memory holds to a JSON Lines file (for "
                                                "`magi import`), or its facts and beliefs as Markdown files")
    _add_data_dir(export)
    export.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl",
                        help="jsonl: everything, with provenance (default); markdown: one file per scope × "
                             "category of the saved facts, and beliefs.md")
    export.add_argument("--out", required=True, help="jsonl: a file ('-' for stdout); markdown: a folder")

    load = commands.add_parser("import", help="load a `magi export` JSONL file into a new, empty memory "
                                              "(all or nothing)")
    _add_data_dir(load)
    load.add_argument("file", help="the export ('-' for stdin)")
    load.add_argument("--no-embed", action="store_true",
                      help="leave re-embedding and rebuilding L2–L4 to the app's background worker")
    load.add_argument("--json", action="store_true", help="print the import report as JSON")

    restore = commands.add_parser("restore", help="replace the memory with an automatic backup (a damaged memory: "
                                                  "the newest sound one); the replaced file is kept aside")
    _add_data_dir(restore)
    restore.add_argument("backup", nargs="?", help="a backup file, or its name in backups/ (default: the newest "
                                                   "that passes the integrity check)")
    restore.add_argument("--list", action="store_true", help="list the automatic backups, newest first")
    restore.add_argument("--json", action="store_true", help="print JSON")

    mcp = commands.add_parser("mcp", help="serve the memory to agents over MCP (stdio); safe beside the app")
    _add_data_dir(mcp)
    mcp.add_argument("--no-background", action="store_true",
                     help="leave embedding, L2 and summaries to the running app (default: do them here too)")
    return parser


def _cmd_export(args: argparse.Namespace) -> int:
    import io

    from .core import Memory
    from .core.export_markdown import MarkdownTargetError

    if args.format == "markdown" and args.out == "-":
        print("magi export: --format markdown writes a folder of files; give --out DIR", file=sys.stderr)
        return 2
    with Memory.open(_data_dir(args)) as memory:
        try:
            if args.format == "markdown":
                files = memory.export_markdown(args.out)
                print(f"wrote {len(files)} Markdown file(s) to {args.out}", file=sys.stderr)
                return 0
            if args.out == "-":
                stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
                try:
                    counts = memory.export_jsonl(stdout)
                finally:
                    stdout.flush()
                    stdout.detach()
            else:
                counts = memory.export_jsonl(args.out)
        except (MarkdownTargetError, OSError) as exc:
            print(f"magi export: {exc}", file=sys.stderr)
            return 2
    print(f"exported {counts.get('fact_events', 0)} events, {sum(counts.values())} rows of {len(counts)} tables "
          f"to {'stdout' if args.out == '-' else args.out}", file=sys.stderr)
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from .core import Memory
    from .core.export import ImportFailed
    from .core.services.periodic import PERIODIC_JOBS

    if args.file != "-" and not Path(args.file).is_file():
        print(f"magi import: no such file: {args.file}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        source: str | IO[bytes] = args.file
        if args.file == "-":                      # the import reads its file twice (check, then load)
            source = stack.enter_context(tempfile.TemporaryFile())
            shutil.copyfileobj(sys.stdin.buffer, source)
            source.seek(0)
        memory = stack.enter_context(Memory.open(_data_dir(args)))
        try:
            report = memory.import_jsonl(source)
        except ImportFailed as exc:
            print(f"magi import: {exc}\nnothing was imported", file=sys.stderr)
            return 2
        if args.json:
            _print_json(report.to_dict())
        else:
            print("\n".join(report.lines()))     # what was taken, rebuilt, changed and dropped (ids, never content)
        if not args.no_embed:
            _drain_queues(memory)                  # vectors, L2 (and the reviews waiting on it), L4 strategies
            memory.run_due(jobs=[job for job in PERIODIC_JOBS if job != "backup"])     # L3, as a fresh memory
    return 0


def _cmd_restore(args: argparse.Namespace) -> int:
    from .core import list_backups, restore_backup

    if args.list:
        backups = list_backups(_data_dir(args))
        if args.json:
            _print_json(backups)
        elif not backups:
            print("no automatic backups yet (the app makes one a day, and one before each upgrade)")
        for backup in backups:
            print(f"{Path(backup['path']).name}  {backup['label']}  {backup['size_bytes'] / 1e6:.1f} MB")
        return 0
    done = restore_backup(_data_dir(args), args.backup)
    if args.json:
        _print_json(done)
    else:
        print(f"restored {done['database']} from the backup of {done['restored_from']['label']}")
        for path in done["kept_aside"]:
            print(f"the replaced file is kept as {path}")
    return 0


def _cmd_forget(args: argparse.Namespace) -> int:
    from .core import InvalidInput, Memory
    from .core.contracts import PayloadError, parse_timestamp

    try:
        start = parse_timestamp(args.start, "--from") if args.start else None
        end = parse_timestamp(args.end, "--to") if args.end else None
    except PayloadError as exc:
        print(f"magi forget: {exc}", file=sys.stderr)
        return 2
    with Memory.open(_data_dir(args)) as memory:
        try:
            receipt = memory.forget(event_ids=args.event or None, source_item_ids=args.item or None,
                                    entity=args.entity, source=args.source, start=start, end=end)
        except InvalidInput as exc:
            print(f"magi forget: {exc}", file=sys.stderr)
            return 2
    if args.json:
        _print_json(receipt)
    else:
        print(f"receipt {receipt['receipt_id']}: {len(receipt['event_ids'])} event(s) forgotten")
        for table, count in sorted(receipt["removed"].items()):
            print(f"  {table:<22}-{count}")
        print("scrub done: no file of the memory holds them any more" if receipt["scrub"] == "done" else
              "scrub pending: another program is reading the memory; the old pages are cleared as soon as it "
              "lets go (the app, `magi mcp` or the next magi command finishes it)")
    if receipt["exports"]:
        print("these exports still hold it (delete them if they must go too): "
              + ", ".join(e["path"] for e in receipt["exports"]), file=sys.stderr)
    return 0


def _cmd_redact(args: argparse.Namespace) -> int:
    from .core import Memory

    with Memory.open(_data_dir(args)) as memory:
        receipt = memory.redact_stored(dry_run=args.dry_run)
    if args.json:
        _print_json(receipt)
        return 0
    what = "would change" if receipt["dry_run"] else "changed"
    head = "dry run" if receipt["dry_run"] else f"receipt {receipt['receipt_id']}"
    print(f"{head}: rules {receipt['rules_from']} -> {receipt['rules_version']}; {receipt['rows_scanned']} rows "
          f"with text read, {sum(receipt['changed'].values())} {what}")
    for table, count in receipt["changed"].items():
        print(f"  {table:<24}{count}")
    if receipt["families"]:
        print("  by rule family: " + ", ".join(f"{k} {v}" for k, v in receipt["families"].items()))
    if receipt["backups_replaced"]:
        print(f"  {receipt['backups_replaced']} older backup(s) replaced by a fresh one")
    return 0


def _cmd_plugins(args: argparse.Namespace) -> int:
    from .collectors import load_plugins

    plugins = load_plugins()
    collectors = plugins.collectors()
    if args.json:
        _print_json({
            "plugins": [{"name": p.name, "version": p.version, "hooks": p.hooks, "source": p.source}
                        for p in plugins.info],
            "collectors": [{"name": c.name, "source_type": c.source_type, "interval_seconds": c.interval_seconds,
                            "settings": dict(c.settings_schema), "privacy_note": c.privacy_note} for c in collectors],
            "errors": plugins.errors,
        })
        return 0
    if not plugins.info:
        print("no plugins loaded" + (" (MAGI_LOAD_PLUGINS is set)" if os.environ.get("MAGI_LOAD_PLUGINS") else ""))
    for p in plugins.info:
        print(f"{p.name} {p.version or ''} · {p.source} · hooks: {', '.join(p.hooks) or '-'}")
    for c in collectors:
        print(f"  collector {c.name} (every {c.interval_seconds:g} s): {c.privacy_note}")
        if c.settings_schema:
            print(f"    settings: {', '.join(dict(c.settings_schema))}")
    for name, error in plugins.errors.items():
        print(f"! {name}: {error}")
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from .collectors import SettingsError, build_supervisor
    from .core import Memory

    with Memory.open(_data_dir(args)) as memory:
        try:
            supervisor, errors = build_supervisor(memory, memory.path.parent)
        except SettingsError as exc:
            print(f"magi collect: {exc}", file=sys.stderr)
            return 2
        if supervisor is None:
            print(f"no collector is enabled: enable them in {memory.path.parent / 'collectors.json'} "
                  "(see docs/plugins.md); `magi plugins` lists them", file=sys.stderr)
            return 1
        supervisor.paused = False
        before = {name: (dict(status.counts), dict(status.skipped)) for name, status in supervisor.status.items()}
        supervisor.tick()
        while not supervisor.wait_idle(timeout=1.0):
            supervisor.tick()        # abandons a run past its timeout (it is reported as hung)
        supervisor.stop()
        report = {}
        for name, status in supervisor.status.items():
            # This run's counts; the running totals are in `magi status`.
            report[name] = status.to_dict() | {"counts": _this_run(status.counts, before[name][0]),
                                               "skipped": _this_run(status.skipped, before[name][1])}
        _drain_queues(memory)        # what was collected is embedded and understood now, as after `magi ingest`
    if args.json:
        _print_json({"collectors": report, "errors": errors})
    else:
        for name, status in report.items():
            counts = status["counts"]
            line = (f"{name}: stored {counts.get('stored', 0)}, duplicates {counts.get('duplicates', 0)}, "
                    f"rejected {counts.get('rejected', 0)}")
            if status["skipped"]:
                line += f"; skipped {_by_reason(status['skipped'])}"
            print(line + (f" — failed: {status['last_error']}" if status["last_error"] else ""))
    return 1 if any(s["last_error"] for s in report.values()) else 0


def _this_run(now: dict, before: dict) -> dict:
    return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}


def _by_reason(skipped: dict) -> str:
    """Skipped items as "bad_dtstart 2, unknown_timezone 1" (README, Troubleshooting, says what each means)."""
    return ", ".join(f"{reason} {n}" for reason, n in sorted(skipped.items(), key=lambda item: (-item[1], item[0])))


def _data_dir(args: argparse.Namespace) -> Path | None:
    return getattr(args, "data_dir", None)


# ------------------------------------------------------------------ ingest


class LineError(ValueError):
    """A line that is not a JSON payload (bad encoding or bad JSON)."""


def _read_jsonl(source: str) -> Iterator[tuple[int, object]]:
    """(line number, payload or a LineError) for every non-blank line; one bad line spoils nothing else."""
    handle = sys.stdin.buffer if source == "-" else open(source, "rb")  # noqa: SIM115 - closed below
    try:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig")  # -sig: a byte-order mark on line 1 is not data
            except UnicodeDecodeError as exc:
                yield number, LineError(f"not UTF-8 (byte {exc.start + 1})")
                continue
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, LineError(f"invalid JSON: {exc.msg} (column {exc.colno})")
            except RecursionError:
                yield number, LineError("invalid JSON: nested too deeply")
            except ValueError as exc:  # e.g. an integer longer than Python will parse
                yield number, LineError(f"invalid JSON: {exc}")
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def _cmd_ingest(args: argparse.Namespace) -> int:
    from .core import Memory

    if args.file != "-" and not Path(args.file).is_file():
        print(f"magi ingest: no such file: {args.file}", file=sys.stderr)
        return 2
    if args.batch_size < 1:
        print("magi ingest: --batch-size must be at least 1", file=sys.stderr)
        return 2
    stored = duplicates = rejected = 0
    errors: list[str] = []

    with Memory.open(_data_dir(args)) as memory:
        def flush(batch: list[tuple[int, Any]]) -> None:
            nonlocal stored, duplicates, rejected
            results = memory.ingest_many([payload for _, payload in batch], on_error="report")
            for (line, _), result in zip(batch, results, strict=True):
                if result.error is not None:
                    rejected += 1
                    errors.append(f"line {line}: {result.error.field}: {result.error.reason}")
                elif result.duplicate:
                    duplicates += 1
                else:
                    stored += 1
            batch.clear()

        batch: list[tuple[int, Any]] = []   # decoded JSON lines: ingest_many reports one that is no object
        for line, payload in _read_jsonl(args.file):
            if isinstance(payload, LineError):
                rejected += 1
                errors.append(f"line {line}: {payload}")
                continue
            batch.append((line, payload))
            if len(batch) >= args.batch_size:
                flush(batch)
        if batch:
            flush(batch)
        print(f"stored {stored}, duplicates {duplicates}, rejected {rejected}")
        for error in errors[:20]:
            print(f"  {error}", file=sys.stderr)
        if len(errors) > 20:
            print(f"  … and {len(errors) - 20} more", file=sys.stderr)
        if not args.no_embed:
            _drain_queues(memory)
    return 1 if rejected else 0


def _drain_queues(memory) -> None:
    """Run the background queues until every one is drained (workers.jobs.drain: embeddings, L2, L4 and fact
    extraction, waiting for a batch another process holds), with progress on stderr."""
    from .workers import drain
    from .workers.jobs import HELD_PATIENCE_SECONDS

    total = memory.pending_work()
    shown = False

    def progress(done: int, due: int) -> None:
        nonlocal shown, total
        total = max(total, done + due)
        shown = True
        print(f"\rprocessing {done}/{total}", end="", file=sys.stderr, flush=True)

    def waiting(state) -> None:
        nonlocal shown
        held = ", ".join(f"{queue} {n}" for queue, n in state.held.items() if n)
        print(("\n" if shown else "") + f"waiting for work another process holds ({held}); up to "
              f"{HELD_PATIENCE_SECONDS:.0f} s", file=sys.stderr, flush=True)
        shown = False

    report = drain(memory, 256, progress=progress, waiting=waiting)
    if shown:
        print(file=sys.stderr)
    if report.left is not None and not report.left.done:
        held = {queue: n for queue, n in report.left.held.items() if n}
        due = {queue: n for queue, n in report.left.due.items() if n}
        print(f"still queued: {due or held} (the background work goes on with it)", file=sys.stderr)


# ------------------------------------------------------------------- query


def _modes() -> tuple[str, ...]:
    from .core.retrieval.modes import MODES

    return MODES


def _one_line(value) -> str:
    """A stored field on one line: a line break inside it (a commit body, a title with U+2028 — which the
    pack already turned into one) is shown as ⏎, so stored text cannot print lines that look like ours."""
    return LINE_BREAKS.sub(" ⏎ ", str(value)) if value is not None else ""


def _print_pack(pack) -> None:
    print(f"{pack.status.upper()} · mode {pack.query_mode} · {pack.trace.get('total_ms', 0):.0f} ms")
    print(_one_line(pack.summary))
    for i, f in enumerate(pack.findings, start=1):
        if f.layer != "L1":
            related = "" if f.answers else " (related: does not answer)"
            print(f"\n{i}. [{f.layer} · {f.status or 'derived'}] {_one_line(f.text)}{related}")
            cited = [_one_line(c) for c in f.supporting_source_item_ids or f.supporting_event_ids]
            print(f"   {f.event_id} · from {len(f.supporting_event_ids)} event(s)"
                  + (f": {', '.join(cited[:5])}" + (" …" if len(cited) > 5 else "") if cited else ""))
            continue
        who = _one_line(f.speaker or f.author)
        flag = ("  (indirect)" if f.indirect else "") + ("" if f.answers else "  (related: does not answer)")
        flag += f"  ({f.kind})" if f.kind else ""
        flag += "  (history)" if f.status == "history" else ""
        print(f"\n{i}. [{f.occurred_at_iso()[:16].replace('T', ' ')}] {who} · {_one_line(f.source)}"
              f" · {f.evidence_class}{flag}")
        print(f"   {_one_line(f.text)}")
        print(f"   event {f.event_id}" + (f" · item {_one_line(f.source_item_id)}" if f.source_item_id else ""))
    if pack.answering_hints:
        print("\nHints:")
        for hint in pack.answering_hints:
            print(f"  - {_one_line(hint)}")


def _cmd_query(args: argparse.Namespace) -> int:
    from .core import Memory
    from .core.contracts import PayloadError, parse_timestamp

    now, tz = None, None
    if args.now:
        try:
            now = parse_timestamp(args.now, "--now")
        except PayloadError as exc:
            print(f"magi query: {exc}", file=sys.stderr)
            return 2
        tz = datetime.fromisoformat(args.now.strip().replace("Z", "+00:00")).tzinfo if not \
            args.now.strip().replace(".", "", 1).isdigit() else None  # "yesterday" is yesterday in that offset
    if args.mode and args.mode not in _modes():
        print(f"magi query: unknown mode {args.mode!r}; one of {', '.join(_modes())}", file=sys.stderr)
        return 2
    with Memory.open(_data_dir(args)) as memory:
        pack = memory.query(args.text, mode=args.mode, now=now, limit=args.limit, tz=tz)
    if args.json:
        _print_json(pack.to_dict())
    else:
        _print_pack(pack)
    return 0


# ------------------------------------------------------------------ status


def _print_status(stats: MemoryStats) -> None:
    events = stats["events"]
    emb = stats["embedding"]
    print(f"database      {stats['database']} ({stats['size_bytes'] / 1e6:.1f} MB, schema v{stats['schema_version']})")
    storage = stats["storage"]
    last = storage["last_backup"]
    print(f"storage       {'writable' if storage['writable'] else 'DISK FULL: read-only until space is freed'}; "
          + (f"last backup {last['label']}" if last else "no backup yet")
          + (f"; last backup failed: {storage['backup_error']}" if storage["backup_error"] else ""))
    redaction = stats.get("redaction")
    if redaction and not redaction["current"]:
        print(f"redaction     stored data predates the current rules ({redaction['stored_version']} -> "
              f"{redaction['rules_version']}): {redaction['hint']}")
    print(f"L1 events     {events['total']}")
    for name, count in events["by_evidence_class"].items():
        print(f"  {name:<22}{count}")
    print(f"runtime trace {stats['runtime_traces']}")
    print(f"chat sessions {stats['chat_sessions']}")
    print(f"embedding     {emb['model']} ({emb['dimension']} d): {emb['chunks']} chunks, "
          f"{emb['pending']} queued, {emb['dead']} dead")
    cognition = stats["l2"]
    jobs = cognition["jobs"]
    lag = cognition["oldest_pending_seconds"]
    print(f"L2 ({cognition['llm']:<5})   {jobs['pending']} queued, {jobs['running']} running, {jobs['done']} done, "
          f"{jobs['dead']} dead" + (f"; oldest waiting {lag:.0f} s" if lag is not None else ""))
    print(f"  {cognition['entities']} entities, {cognition['edges']} edges, {cognition['assertions']} assertions, "
          f"{cognition['episodes']} episodes")
    facts = stats["facts"]
    evidence = ", ".join(f"{n} {kind}" for kind, n in facts["by_evidence"].items()) or "none"
    failed = facts["failed"]
    print(f"facts         {evidence}; {facts['extractions']} conversations read, {facts['conversations_due']} due"
          + (f", {failed.get('pending', 0)} retrying, {failed.get('dead', 0)} failed" if failed else ""))
    if stats["sources"]:
        print("sources       accepted  duplicates  rejected")
        for source, c in stats["sources"].items():
            print(f"  {source:<20}{c['accepted']:>9}  {c['duplicates']:>10}  {c['rejected']:>8}")
            if c["last_rejection"]:
                print(f"    last rejection: {c['last_rejection']}")
    if stats["collectors"]:
        print("collectors    runs  stored  duplicates  rejected  dropped  state")
        for name, c in stats["collectors"].items():
            counts = c.get("counts", {})
            state = ("quarantined" if c.get("quarantined") else f"failing ({c['failures']})" if c.get("failures")
                     else "ok")
            dropped = sum(counts.get(k, 0) for k in ("throttled", "dropped", "write_failed"))
            print(f"  {name:<12}{c.get('runs', 0):>4}{counts.get('stored', 0):>8}{counts.get('duplicates', 0):>12}"
                  f"{counts.get('rejected', 0):>10}{dropped:>9}  {state}")
            if c.get("last_error"):
                print(f"    last error: {c['last_error']}")
            if c.get("last_rejection"):
                print(f"    last rejection: {c['last_rejection']}")
            if c.get("skipped"):
                print(f"    skipped (not failures): {_by_reason(c['skipped'])}; last: {c.get('last_skip')}")


def _cmd_status(args: argparse.Namespace) -> int:
    from .core import Memory

    with Memory.open(_data_dir(args)) as memory:
        stats = memory.stats()
    if args.json:
        _print_json(stats.to_dict())
    else:
        _print_status(stats)
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import run_checks

    checks = run_checks(_data_dir(args))
    if args.json:
        _print_json([c.__dict__ for c in checks])
    else:
        for check in checks:
            print(f"[{check.status:^4}] {check.name:<18} {check.detail}")
    return 1 if any(c.status == "FAIL" for c in checks) else 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    from .agents.mcp_server import serve

    return serve(_data_dir(args), background=not args.no_background)


def _cmd_app(args: argparse.Namespace) -> int:
    from .ui.app import run_app

    return run_app(_data_dir(args))


def _print_json(data) -> None:
    """JSON for programs that a terminal shows safely too (outbound.json_text: valid, readable, inert)."""
    from .core.outbound import json_text

    print(json_text(data))


class _ShownFormatter(logging.Formatter):
    """Log lines may quote stored text too (a collector's error about a page): shown as printed text is."""

    def format(self, record: logging.LogRecord) -> str:
        from .core.outbound import safe_text

        return safe_text(super().format(record))


class _ShownStream:
    """stdout / stderr for a person's terminal: what is printed may quote stored text (a page title, a
    plugin's error), whose escape sequences, bidi overrides and invisible characters must not act on the
    terminal, nor its recalled-memory markers on an agent it is pasted to (core/outbound.py). A carriage
    return that starts a write is ours — a progress line redrawn — and is kept."""

    def __init__(self, stream):
        from .core.outbound import safe_text

        self._stream, self._safe = stream, safe_text

    def write(self, text: str) -> int:
        head = "\r" if text.startswith("\r") else ""
        self._stream.write(head + self._safe(text[len(head):]))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _shown_output(command: str | None) -> Iterator[None]:
    """Printed output made safe, except where stdout is a protocol (``mcp``) or there is none (the app)."""
    if command in (None, "app", "mcp"):
        yield
        return
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ShownStream(sys.stdout), _ShownStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


class _LockWaitNotice:
    """Tell the user on stderr, once a second, that a write is waiting for another program's write lock
    (a wait under a second goes unsaid)."""

    def __init__(self) -> None:
        self.shown = 0

    def __call__(self, waited: float, acquired: bool) -> None:
        if acquired:
            if self.shown:
                print(f"\rmagi: got the memory's write lock after {waited:.0f} s{' ' * 30}", file=sys.stderr)
            self.shown = 0
        elif int(waited) > self.shown:
            self.shown = int(waited)
            print(f"\rmagi: waiting for another program writing to the memory ({waited:.0f} s)…", end="",
                  file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--probe-qt"]:          # `magi doctor` runs this in a child process (works frozen too)
        from .ui.qt import PYSIDE_VERSION

        print(PYSIDE_VERSION)
        return 0
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler()
    handler.setFormatter(_ShownFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, handlers=[handler])
    if _data_dir(args) is not None:
        os.environ["MAGI_DATA_DIR"] = str(_data_dir(args))
    from .core.store.connection import on_lock_wait

    on_lock_wait(_LockWaitNotice())         # waiting for another program's write lock is shown, not raised
    handlers = {"ingest": _cmd_ingest, "query": _cmd_query, "status": _cmd_status, "doctor": _cmd_doctor,
                "plugins": _cmd_plugins, "collect": _cmd_collect, "forget": _cmd_forget, "redact": _cmd_redact,
                "export": _cmd_export,
                "import": _cmd_import, "restore": _cmd_restore, "mcp": _cmd_mcp, "app": _cmd_app, None: _cmd_app}
    from .core import InvalidInput, MemoryUnavailable
    from .core.store.connection import OperationalError, is_busy

    try:
        with _shown_output(args.command):
            return handlers[args.command](args)
    except MemoryUnavailable as exc:
        print(f"magi: {exc}\n(run `magi doctor` for a full check)", file=sys.stderr)
        return 2
    except InvalidInput as exc:         # the user's argument (a plain ValueError is a bug: it keeps its traceback)
        print(f"magi {args.command or 'app'}: {exc}", file=sys.stderr)
        return 2
    except OperationalError as exc:
        if not is_busy(exc):
            raise
        print("magi: the memory is busy (another program held its lock); nothing more was written — try again",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
