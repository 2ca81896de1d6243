"""The window in front, as every app-usage back-end reports it, and the process name when that is all there is."""

from __future__ import annotations

from typing import NamedTuple


class Window(NamedTuple):
    app: str
    title: str


def process_name(pid: int) -> str | None:
    """The name of process ``pid`` (psutil), None when it is gone or not ours to see."""
    try:
        import psutil

        return psutil.Process(pid).name()
    except Exception:  # noqa: BLE001 - the process is gone or not ours to see
        return None
