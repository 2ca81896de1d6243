"""``magi export``, ``magi import`` and ``magi restore``: the memory as a file, and back."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import IO

from .ingest import drain_queues
from .output import data_dir, print_json


def cmd_export(args: argparse.Namespace) -> int:
    import io

    from ..core import Memory
    from ..core.export_markdown import MarkdownTargetError

    if args.format == "markdown" and args.out == "-":
        print("magi export: --format markdown writes a folder of files; give --out DIR", file=sys.stderr)
        return 2
    with Memory.open(data_dir(args)) as memory:
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


def cmd_import(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from ..collectors import use_plugin_templates
    from ..core import Memory
    from ..core.export import ImportFailed
    from ..core.services.periodic import PERIODIC_JOBS

    if args.file != "-" and not Path(args.file).is_file():
        print(f"magi import: no such file: {args.file}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        source: str | IO[bytes] = args.file
        if args.file == "-":                      # the import reads its file twice (check, then load)
            source = stack.enter_context(tempfile.TemporaryFile())
            shutil.copyfileobj(sys.stdin.buffer, source)
            source.seek(0)
        memory = stack.enter_context(Memory.open(data_dir(args)))
        use_plugin_templates(memory)        # an export's plugin events re-render with their plugin's templates
        try:
            report = memory.import_jsonl(source)
        except ImportFailed as exc:
            print(f"magi import: {exc}\nnothing was imported", file=sys.stderr)
            return 2
        if args.json:
            print_json(report.to_dict())
        else:
            print("\n".join(report.lines()))     # what was taken, rebuilt, changed and dropped (ids, never content)
        if not args.no_embed:
            drain_queues(memory)                  # vectors, L2 (and the reviews waiting on it), L4 strategies
            memory.run_due(jobs=[job for job in PERIODIC_JOBS if job != "backup"])     # L3, as a fresh memory
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from ..core import list_backups, restore_backup

    if args.list:
        backups = list_backups(data_dir(args))
        if args.json:
            print_json(backups)
        elif not backups:
            print("no automatic backups yet (the app makes one a day, and one before each upgrade)")
        for backup in backups:
            print(f"{Path(backup['path']).name}  {backup['label']}  {backup['size_bytes'] / 1e6:.1f} MB")
        return 0
    done = restore_backup(data_dir(args), args.backup)
    if args.json:
        print_json(done)
    else:
        print(f"restored {done['database']} from the backup of {done['restored_from']['label']}")
        for path in done["kept_aside"]:
            print(f"the replaced file is kept as {path}")
    return 0
