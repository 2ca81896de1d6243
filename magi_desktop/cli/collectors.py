"""``magi plugins`` and ``magi collect``: the sensor plugins, listed and run once."""

from __future__ import annotations

import argparse
import os
import sys

from .ingest import drain_queues
from .output import data_dir, print_json


def cmd_plugins(args: argparse.Namespace) -> int:
    from ..collectors import load_plugins

    plugins = load_plugins()
    collectors = plugins.collectors()
    if args.json:
        print_json({
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
        before = {name: (dict(status.counts), dict(status.skipped)) for name, status in supervisor.status.items()}
        supervisor.tick()
        while not supervisor.wait_idle(timeout=1.0):
            supervisor.tick()        # abandons a run past its timeout (it is reported as hung)
        supervisor.stop()
        report = {}
        for name, status in supervisor.status.items():
            # This run's counts; the running totals are in `magi status`.
            report[name] = status.to_dict() | {"counts": this_run(status.counts, before[name][0]),
                                               "skipped": this_run(status.skipped, before[name][1])}
        drain_queues(memory)        # what was collected is embedded and understood now, as after `magi ingest`
    if args.json:
        print_json({"collectors": report, "errors": errors})
    else:
        for name, status in report.items():
            counts = status["counts"]
            line = (f"{name}: stored {counts.get('stored', 0)}, duplicates {counts.get('duplicates', 0)}, "
                    f"rejected {counts.get('rejected', 0)}")
            if status["skipped"]:
                line += f"; skipped {by_reason(status['skipped'])}"
            print(line + (f" — failed: {status['last_error']}" if status["last_error"] else ""))
    return 1 if any(s["last_error"] for s in report.values()) else 0


def this_run(now: dict, before: dict) -> dict:
    return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}


def by_reason(skipped: dict) -> str:
    """Skipped items as "bad_dtstart 2, unknown_timezone 1" (README, Troubleshooting, says what each means)."""
    return ", ".join(f"{reason} {n}" for reason, n in sorted(skipped.items(), key=lambda item: (-item[1], item[0])))
