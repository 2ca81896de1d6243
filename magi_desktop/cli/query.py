"""``magi query``: a question asked, its evidence pack printed."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from .output import data_dir, one_line, print_json


def modes() -> tuple[str, ...]:
    from ..core.retrieval.modes import MODES

    return MODES


def print_pack(pack) -> None:
    print(f"{pack.status.upper()} · mode {pack.query_mode} · {pack.trace.get('total_ms', 0):.0f} ms")
    print(one_line(pack.summary))
    for i, f in enumerate(pack.findings, start=1):
        if f.layer != "L1":
            related = "" if f.answers else " (related: does not answer)"
            print(f"\n{i}. [{f.layer} · {f.status or 'derived'}] {one_line(f.text)}{related}")
            cited = [one_line(c) for c in f.supporting_source_item_ids or f.supporting_event_ids]
            print(f"   {f.event_id} · from {len(f.supporting_event_ids)} event(s)"
                  + (f": {', '.join(cited[:5])}" + (" …" if len(cited) > 5 else "") if cited else ""))
            continue
        who = one_line(f.speaker or f.author)
        flag = ("  (indirect)" if f.indirect else "") + ("" if f.answers else "  (related: does not answer)")
        flag += f"  ({f.kind})" if f.kind else ""
        flag += "  (history)" if f.status == "history" else ""
        print(f"\n{i}. [{f.occurred_at_iso()[:16].replace('T', ' ')}] {who} · {one_line(f.source)}"
              f" · {f.evidence_class}{flag}")
        print(f"   {one_line(f.text)}")
        print(f"   event {f.event_id}" + (f" · item {one_line(f.source_item_id)}" if f.source_item_id else ""))
    if pack.answering_hints:
        print("\nHints:")
        for hint in pack.answering_hints:
            print(f"  - {one_line(hint)}")


def cmd_query(args: argparse.Namespace) -> int:
    from ..core import Memory
    from ..core.contracts import PayloadError, parse_timestamp

    now, tz = None, None
    if args.now:
        try:
            now = parse_timestamp(args.now, "--now")
        except PayloadError as exc:
            print(f"magi query: {exc}", file=sys.stderr)
            return 2
        tz = datetime.fromisoformat(args.now.strip().replace("Z", "+00:00")).tzinfo if not \
            args.now.strip().replace(".", "", 1).isdigit() else None  # "yesterday" is yesterday in that offset
    if args.mode and args.mode not in modes():
        print(f"magi query: unknown mode {args.mode!r}; one of {', '.join(modes())}", file=sys.stderr)
        return 2
    with Memory.open(data_dir(args)) as memory:
        pack = memory.query(args.text, mode=args.mode, now=now, limit=args.limit, tz=tz, search_all=args.search_all)
    if args.json:
        print_json(pack.to_dict())
    else:
        print_pack(pack)
    return 0
