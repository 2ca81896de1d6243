"""``magi forget`` and ``magi redact``: removing what must not stay, everywhere."""

from __future__ import annotations

import argparse
import sys

from .output import data_dir, print_json


def cmd_forget(args: argparse.Namespace) -> int:
    from ..core import InvalidInput, Memory
    from ..core.contracts import PayloadError, parse_timestamp

    try:
        start = parse_timestamp(args.start, "--from") if args.start else None
        end = parse_timestamp(args.end, "--to") if args.end else None
    except PayloadError as exc:
        print(f"magi forget: {exc}", file=sys.stderr)
        return 2
    with Memory.open(data_dir(args)) as memory:
        try:
            receipt = memory.forget(event_ids=args.event or None, source_item_ids=args.item or None,
                                    entity=args.entity, source=args.source, start=start, end=end)
        except InvalidInput as exc:
            print(f"magi forget: {exc}", file=sys.stderr)
            return 2
    if args.json:
        print_json(receipt)
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


def cmd_redact(args: argparse.Namespace) -> int:
    from ..core import Memory

    with Memory.open(data_dir(args)) as memory:
        receipt = memory.redact_stored(dry_run=args.dry_run)
    if args.json:
        print_json(receipt)
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
