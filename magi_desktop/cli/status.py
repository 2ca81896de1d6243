"""``magi status`` and ``magi doctor``: what the memory holds and whether it can run."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .output import data_dir, print_json

if TYPE_CHECKING:      # the CLI imports the core lazily: `magi --help` starts fast
    from ..core import MemoryStats


def print_status(stats: MemoryStats, enabled: set[str] | None = None) -> None:
    events = stats.events
    emb = stats.embedding
    print(f"database      {stats.database} ({stats.size_bytes / 1e6:.1f} MB, schema v{stats.schema_version})")
    storage = stats.storage
    last = storage["last_backup"]
    print(f"storage       {'writable' if storage['writable'] else 'DISK FULL: read-only until space is freed'}; "
          + (f"last backup {last['label']}" if last else "no backup yet")
          + (f"; last backup failed: {storage['backup_error']}" if storage["backup_error"] else ""))
    redaction = stats.redaction
    if redaction and not redaction["current"]:
        print(f"redaction     stored data predates the current rules ({redaction['stored_version']} -> "
              f"{redaction['rules_version']}): {redaction['hint']}")
    tiered = events["tiers"]
    blocks = f", {events['activity_blocks']} of them activity blocks" if events["activity_blocks"] else ""
    print(f"L1 events     {events['total']}{blocks}"
          + (f" ({tiered['hot']} hot, {tiered['cold']} cold: older than {tiered['cold_after_days']:g} days, "
             "summarised, searched when a question reaches back)" if tiered["cold"] else ""))
    for name, count in events["by_evidence_class"].items():
        print(f"  {name:<22}{count}")
    print(f"runtime trace {stats.runtime_traces}")
    print(f"chat sessions {stats.chat_sessions}")
    print(f"embedding     {emb['model']} ({emb['dimension']} d): {emb['chunks']} chunks, "
          f"{emb['pending']} queued, {emb['dead']} dead")
    cognition = stats.l2
    jobs = cognition["jobs"]
    lag = cognition["oldest_pending_seconds"]
    print(f"L2 ({cognition['llm']:<5})   {jobs['pending']} queued, {jobs['running']} running, {jobs['done']} done, "
          f"{jobs['dead']} dead" + (f"; oldest waiting {lag:.0f} s" if lag is not None else ""))
    print(f"  {cognition['entities']} entities, {cognition['edges']} edges, {cognition['assertions']} assertions, "
          f"{cognition['episodes']} episodes")
    facts = stats.facts
    evidence = ", ".join(f"{n} {kind}" for kind, n in facts["by_evidence"].items()) or "none"
    failed = facts["failed"]
    print(f"facts         {evidence}; {facts['extractions']} conversations read, {facts['conversations_due']} due"
          + (f", {failed.get('pending', 0)} retrying, {failed.get('dead', 0)} failed" if failed else ""))
    if stats.sources:
        print("sources       accepted  duplicates  rejected")
        for source, c in stats.sources.items():
            print(f"  {source:<20}{c['accepted']:>9}  {c['duplicates']:>10}  {c['rejected']:>8}")
            if c["last_rejection"]:
                print(f"    last rejection: {c['last_rejection']}")
    if stats.collectors:
        print_collectors(stats.collectors, enabled)


def enabled_collectors(data_folder: Any) -> set[str] | None:
    """The collectors collectors.json turns on (None when it cannot be read: then nothing is called disabled)."""
    from ..collectors import SettingsError, load_settings

    try:
        return set(load_settings(data_folder).enabled)
    except SettingsError:
        return None


def print_collectors(statuses: dict[str, dict[str, Any]], enabled: set[str] | None = None) -> None:
    """Each collector's counters and its health in :mod:`~magi_desktop.collectors.health`'s words: the state,
    a line per source, the items left out by reason. One no longer ``enabled`` shows as disabled, its last
    run's state as history, without reasons or fixes to act on."""
    from ..collectors.health import as_disabled, describe, state_of, tallies

    print("collectors    runs  stored  duplicates  rejected  dropped  state")
    for name, c in statuses.items():
        if enabled is not None and name not in enabled:
            c = as_disabled(c)
        counts = c.get("counts", {})
        state = state_of(c) or "not run yet"
        dropped = sum(counts.get(k, 0) for k in ("throttled", "dropped", "write_failed"))
        print(f"  {name:<12}{c.get('runs', 0):>4}{counts.get('stored', 0):>8}{counts.get('duplicates', 0):>12}"
              f"{counts.get('rejected', 0):>10}{dropped:>9}  {state}")
        head, *sources = describe(c)
        lines = ([head] if head != state else []) + sources
        if c.get("last_error") and not any(c["last_error"] in line for line in lines):
            lines.append(f"last error: {c['last_error']}")     # an earlier run's, or one the health predates
        for line in lines + tallies(c):
            print(f"    {line}")


def cmd_status(args: argparse.Namespace) -> int:
    from ..core import Memory

    with Memory.open(data_dir(args)) as memory:
        stats = memory.stats()
        enabled = enabled_collectors(memory.path.parent)
    if args.json:
        print_json(stats.to_dict())
    else:
        print_status(stats, enabled)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..doctor import run_checks

    checks = run_checks(data_dir(args))
    if args.json:
        print_json([c.__dict__ for c in checks])
    else:
        width = max(18, *(len(c.name) for c in checks))     # "collector app_usage" and a plugin's name fit
        for check in checks:
            print(f"[{check.status:^4}] {check.name:<{width}} {check.detail}")
    return 1 if any(c.status == "FAIL" for c in checks) else 0
