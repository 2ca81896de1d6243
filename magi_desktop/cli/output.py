"""What the commands print: JSON for programs, text safe for a terminal, the lock-wait notice."""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path

LINE_BREAKS = re.compile(r"\s*(?:\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])\s*")


def print_json(data) -> None:
    """JSON for programs that a terminal shows safely too (outbound.json_text: valid, readable, inert)."""
    from ..core.outbound import json_text

    print(json_text(data))


class ShownFormatter(logging.Formatter):
    """Log lines may quote stored text too (a collector's error about a page): shown as printed text is."""

    def format(self, record: logging.LogRecord) -> str:
        from ..core.outbound import safe_text

        return safe_text(super().format(record))


class ShownStream:
    """stdout / stderr for a person's terminal: what is printed may quote stored text (a page title, a
    plugin's error), whose escape sequences, bidi overrides and invisible characters must not act on the
    terminal, nor its recalled-memory markers on an agent it is pasted to (core/outbound.py). A carriage
    return that starts a write is ours — a progress line redrawn — and is kept."""

    def __init__(self, stream):
        from ..core.outbound import safe_text

        self._stream, self._safe = stream, safe_text

    def write(self, text: str) -> int:
        head = "\r" if text.startswith("\r") else ""
        self._stream.write(head + self._safe(text[len(head):]))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def shown_output(command: str | None) -> Iterator[None]:
    """Printed output made safe, except where stdout is a protocol (``mcp``) or there is none (the app)."""
    if command in (None, "app", "mcp"):
        yield
        return
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ShownStream(sys.stdout), ShownStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


class LockWaitNotice:
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


def one_line(value) -> str:
    """A stored field on one line: a line break inside it (a commit body, a title with U+2028 — which the
    pack already turned into one) is shown as ⏎, so stored text cannot print lines that look like ours."""
    return LINE_BREAKS.sub(" ⏎ ", str(value)) if value is not None else ""


def data_dir(args: argparse.Namespace) -> Path | None:
    return getattr(args, "data_dir", None)
