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
    criteria = {"event_ids": args.event or None, "source_item_ids": args.item or None, "entity": args.entity,
                "source": args.source, "start": start, "end": end}
    with Memory.open(data_dir(args)) as memory:
        try:
            preview = memory.forget_preview(**criteria)
        except InvalidInput as exc:
            print(f"magi forget: {exc}", file=sys.stderr)
            return 2
        if not (preview["events"] or preview["traces"] or preview["entities"]):
            # Nothing is written: an empty receipt would say a forget happened.
            print("magi forget: nothing matches " + _criteria_words(preview["criteria"]) + "; nothing was forgotten",
                  file=sys.stderr)
            if args.json:
                print_json({"dry_run": True, "would_forget": preview})
            return 0
        if args.dry_run:
            if args.json:
                print_json({"dry_run": True, "would_forget": preview})
            else:
                _print_preview(preview, "dry run: forgetting this would remove")
            return 0
        if not args.yes:
            if not sys.stdin.isatty():
                print("magi forget: not forgetting without --yes: there is no terminal to ask in (see what would go "
                      "with --dry-run)", file=sys.stderr)
                return 2
            _print_preview(preview, "this removes, everywhere and for good,", file=sys.stderr)
            try:
                answer = input("Forget it? [y/N] ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                print("magi forget: nothing was forgotten", file=sys.stderr)
                return 1
        receipt = memory.forget(**criteria)
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


def _criteria_words(criteria: dict) -> str:
    names = {"event_ids": "--event", "source_item_ids": "--item", "entity": "--entity", "source": "--source",
             "start": "--from", "end": "--to"}
    return " ".join(f"{names[key]} {', '.join(map(str, value)) if isinstance(value, list) else value}"
                    for key, value in criteria.items())


def _print_preview(preview: dict, head: str, file=None) -> None:
    from ..core.outbound import safe_text

    file = file or sys.stdout
    sources = ", ".join(f"{source} {n}" for source, n in preview["by_source"].items())
    print(f"{head} {preview['events']} event(s)" + (f" ({sources})" if sources else ""), file=file)
    if preview["traces"]:
        print(f"  {preview['traces']} tool run(s) recorded by an agent runtime", file=file)
    if preview["entities"]:
        print("  the entities " + ", ".join(preview["entities"]) + " with their edges and assertions", file=file)
    if preview["facts"]:
        print(f"  {len(preview['facts'])} saved fact(s) citing them: " + ", ".join(map(str, preview["facts"])),
              file=file)
    for event in preview["newest"]:
        text = " ".join(str(event["text"]).split())
        print(f"  {event['id']}  {event['source']}: {safe_text(text[:100])}", file=file)
    if preview["events"] > len(preview["newest"]):
        print(f"  … and {preview['events'] - len(preview['newest'])} more", file=file)


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
