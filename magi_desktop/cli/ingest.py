"""``magi ingest``: payloads from JSON Lines, then the queues drained (workers.jobs.drain)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .output import data_dir


class LineError(ValueError):
    """A line that is not a JSON payload (bad encoding or bad JSON)."""


def read_jsonl(source: str) -> Iterator[tuple[int, object]]:
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


def cmd_ingest(args: argparse.Namespace) -> int:
    from ..collectors import use_plugin_templates
    from ..core import Memory

    if args.file != "-" and not Path(args.file).is_file():
        print(f"magi ingest: no such file: {args.file}", file=sys.stderr)
        return 2
    if args.batch_size < 1:
        print("magi ingest: --batch-size must be at least 1", file=sys.stderr)
        return 2
    stored = duplicates = rejected = 0
    errors: list[str] = []

    with Memory.open(data_dir(args)) as memory:
        use_plugin_templates(memory)        # a plugin's events read as its templates say, as when collected
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
        for line, payload in read_jsonl(args.file):
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
            drain_queues(memory)
    return 1 if rejected else 0


def drain_queues(memory) -> None:
    """Run the background queues until every one is drained (workers.jobs.drain: embeddings, L2, L4 and fact
    extraction, waiting for a batch another process holds), with progress on stderr."""
    from ..workers import drain
    from ..workers.jobs import HELD_PATIENCE_SECONDS

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
