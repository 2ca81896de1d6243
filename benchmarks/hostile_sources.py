"""Hostile sources (issue 16): what one bad file costs a collector run.

Each case runs the first-party collector once, in a fresh child process (so the peak RSS is its own),
over a source written here, and reports occurrences/payloads yielded, skips by reason, wall time and
the child's peak RSS. Cases:

* ``calendar_secondly`` — one ``RRULE:FREQ=SECONDLY`` event without an end, starting in the window
  (the default 30 days back + 14 ahead: ~3.8M occurrences unbounded);
* ``calendar_secondly_2000`` — the same rule starting in 2000 (~820M rule steps before the window);
* ``calendar_impossible`` — five events whose rule never matches (``FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30``:
  dateutil searches to year 9999 for each) next to one good event;
* ``terminal_garbage`` — 200 KB of random bytes between real commands in a bash history;
* ``calendar_ordinary`` — not hostile: 300 weekly and daily series started since 2018 and 1,000 single
  events, for what the bounded reading costs a normal calendar.

    .venv/bin/python benchmarks/hostile_sources.py [--case NAME] [--timeout S]

Prints one JSON line: {case: {yielded, skipped, seconds, peak_rss_mb} | {timeout: S}}.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

NOW = 1_773_835_200.0          # 2026-03-18 12:00 UTC

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from collections import Counter
    from pathlib import Path

    kind, source, now = sys.argv[1], sys.argv[2], float(sys.argv[3])

    class Ctx:
        def __init__(self, settings):
            self.settings, self.stopping, self.skips = settings, False, Counter()
            self.temp_dir = Path(source).parent
        def excluded(self, kind, value): return False
        def save_cursor(self, value): pass
        def progress(self, done, total=None): pass
        def skipped(self, reason, detail=None): self.skips[reason] += 1
        def source(self, name): pass
        def unavailable(self, source, reason, fix=None): pass
        def failing(self, source, error): pass

    if kind == "calendar":
        from magi_plugins.calendar import CalendarFiles
        collector, ctx = CalendarFiles(clock=lambda: now), Ctx({"paths": [source]})
    else:
        from magi_plugins.terminal import TerminalHistory
        collector, ctx = TerminalHistory(), Ctx({"files": [source]})
    began = time.perf_counter()
    yielded = sum(1 for _ in collector.collect(None, ctx))
    print(json.dumps({"yielded": yielded, "skipped": dict(ctx.skips),
                      "seconds": round(time.perf_counter() - began, 2),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
""")


def _ics(*events: str) -> str:
    body = "".join(f"BEGIN:VEVENT\r\n{e.strip()}\r\nEND:VEVENT\r\n" for e in events)
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//magi bench//EN\r\n{body}END:VCALENDAR\r\n"


GOOD = "UID:good@bench\r\nDTSTART:20260310T090000Z\r\nDTEND:20260310T100000Z\r\nSUMMARY:Dentist"


def write_case(name: str, folder: Path) -> tuple[str, Path]:
    if name == "calendar_secondly":
        path = folder / "secondly.ics"
        path.write_text(_ics("UID:tick@bench\r\nDTSTART:20260220T000000Z\r\nRRULE:FREQ=SECONDLY\r\nSUMMARY:Tick", GOOD))
        return "calendar", path
    if name == "calendar_secondly_2000":
        path = folder / "secondly-2000.ics"
        path.write_text(_ics("UID:tick@bench\r\nDTSTART:20000101T000000Z\r\nRRULE:FREQ=SECONDLY\r\nSUMMARY:Tick", GOOD))
        return "calendar", path
    if name == "calendar_impossible":
        path = folder / "impossible.ics"
        never = [f"UID:never{i}@bench\r\nDTSTART:20260301T000000Z\r\nRRULE:FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30\r\n"
                 f"SUMMARY:Never {i}" for i in range(5)]
        path.write_text(_ics(*never, GOOD))
        return "calendar", path
    if name == "terminal_garbage":
        path = folder / ".bash_history"
        garbage = random.Random(16).randbytes(200_000)
        path.write_bytes(b"git status\nmake test\n" + garbage + b"\nls -la\ngit push\n")
        return "terminal", path
    if name == "calendar_ordinary":
        path = folder / "ordinary.ics"
        rng = random.Random(16)
        series = [f"UID:s{i}@bench\r\nDTSTART:{2018 + i % 8}{1 + i % 12:02d}{1 + i % 28:02d}T{8 + i % 10:02d}0000Z\r\n"
                  f"DTEND:{2018 + i % 8}{1 + i % 12:02d}{1 + i % 28:02d}T{9 + i % 10:02d}0000Z\r\n"
                  f"RRULE:FREQ={'WEEKLY' if i % 3 else 'DAILY'}\r\nSUMMARY:Series {i}" for i in range(300)]
        single = [f"UID:e{i}@bench\r\nDTSTART:202603{1 + rng.randrange(28):02d}T{rng.randrange(24):02d}0000Z\r\n"
                  f"SUMMARY:Event {i}" for i in range(1000)]
        path.write_text(_ics(*series, *single))
        return "calendar", path
    raise SystemExit(f"unknown case {name}")


CASES = ("calendar_secondly", "calendar_secondly_2000", "calendar_impossible", "terminal_garbage",
         "calendar_ordinary")


def run(name: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="magi-hostile-") as tmp:
        kind, path = write_case(name, Path(tmp))
        try:
            out = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), str(NOW)], capture_output=True,
                                 text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"timeout": timeout}
        if out.returncode:
            return {"error": out.stderr.strip().splitlines()[-1:]}
        return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES, action="append")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    print(json.dumps({name: run(name, args.timeout) for name in args.case or CASES}))


if __name__ == "__main__":
    main()
