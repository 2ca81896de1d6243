"""``magi plugins`` and ``magi collect``: the sensor plugins, listed (with each collector's health), released from
quarantine, and run once."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .ingest import drain_queues
from .output import data_dir, print_json


def cmd_plugins(args: argparse.Namespace) -> int:
    from ..collectors import load_plugins

    if args.release:
        return release(args)
    from ..collectors.health import as_disabled
    from ..core.paths import database_path
    from .status import enabled_collectors

    plugins = load_plugins()
    collectors = plugins.collectors()
    statuses = saved_statuses(args)
    enabled = enabled_collectors(database_path(data_dir(args)).parent)
    if args.json:
        print_json({
            "plugins": [{"name": p.name, "version": p.version, "hooks": p.hooks, "source": p.source}
                        for p in plugins.info],
            "collectors": [{"name": c.name, "source_type": c.source_type, "interval_seconds": c.interval_seconds,
                            "settings": dict(c.settings_schema), "privacy_note": c.privacy_note,
                            "status": statuses.get(c.name)} for c in collectors],
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
        status = statuses.get(c.name) or {"name": c.name}
        if enabled is not None and c.name not in enabled and c.name in statuses:
            status = as_disabled(status)        # its last run is history: nothing to fix while it is off
        print_health(status, indent="    ", label="health: ")
    for name, error in plugins.errors.items():
        print(f"! {name}: {error}")
    return 0


def release(args: argparse.Namespace) -> int:
    """``magi plugins --release NAME``: the collector runs again, in every process, at its next interval."""
    from ..core import Memory
    from ..core.paths import database_path

    name = args.release
    if not database_path(data_dir(args)).exists():       # a mistyped --data-dir must not make a new memory
        print(f"magi plugins: no memory in {database_path(data_dir(args)).parent} (check --data-dir)",
              file=sys.stderr)
        return 2
    with Memory.open(data_dir(args)) as memory:
        known = name in memory.collector_statuses()
        released = memory.release_collector(name) if known else False
    if not known:
        print(f"magi plugins: no collector named {name!r} has run in this memory (`magi status` lists them)",
              file=sys.stderr)
        return 2
    print(f"{name}: released from quarantine; it runs again at its next interval" if released
          else f"{name}: not quarantined; nothing to release")
    return 0


def saved_statuses(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """What every collector's last run found, as the memory keeps it; none before the memory exists (listing the
    plugins does not create it)."""
    from ..core import Memory
    from ..core.paths import database_path

    if not database_path(data_dir(args)).exists():
        return {}
    with Memory.open(data_dir(args)) as memory:      # its own embedder: another would re-queue every vector
        return memory.collector_statuses()


def print_health(status: dict[str, Any], *, indent: str, label: str = "") -> None:
    """A collector's health (:mod:`~magi_desktop.collectors.health`'s words): its state, then a line for each
    source and for the items left out by reason."""
    from ..collectors.health import describe, tallies

    head, *sources = describe(status)
    print(f"{indent}{label}{head}")
    for line in [*sources, *tallies(status)]:
        print(f"{indent}  {line}")


def cmd_collect(args: argparse.Namespace) -> int:
    from ..collectors import SettingsError, build_supervisor
    from ..core import Memory

    with Memory.open(data_dir(args)) as memory:
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
        before = {name: status.to_dict() for name, status in supervisor.status.items()}
        supervisor.tick()
        while not supervisor.wait_idle(timeout=1.0):
            supervisor.tick()        # abandons a run past its timeout (it is reported as hung)
        supervisor.stop()
        report = {}
        for name, status in supervisor.status.items():
            # This run's counts; the running totals are in `magi status`.
            now = status.to_dict()
            report[name] = now | {key: this_run(now[key], before[name].get(key) or {})
                                  for key in ("counts", "skipped", "rejected") if isinstance(now.get(key), dict)}
        drain_queues(memory)        # what was collected is embedded and understood now, as after `magi ingest`
    if args.json:
        print_json({"collectors": report, "errors": errors})
    else:
        for name, status in report.items():
            counts = status["counts"]
            print(f"{name}: stored {counts.get('stored', 0)}, duplicates {counts.get('duplicates', 0)}, "
                  f"rejected {counts.get('rejected', 0)}"
                  + (f"; skipped {by_reason(status['skipped'])}" if status["skipped"] else ""))
            # This run's skips are on the line above; a rejection is worth a line if this run made one.
            print_health(status | {"skipped": {}, "last_rejection": status["last_rejection"] if counts.get("rejected")
                                   else None}, indent="  ")
    return 1 if any(s["last_error"] for s in report.values()) else 0


def this_run(now: dict, before: dict) -> dict:
    return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}


def by_reason(counts: dict) -> str:
    """Counts by reason as "bad_dtstart 2, unknown_timezone 1" (README, Troubleshooting, says what each means)."""
    from ..collectors.health import by_reason as worded

    return worded(counts)
