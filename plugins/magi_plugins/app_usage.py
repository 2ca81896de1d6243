"""App usage: which application is in front, sampled each run and merged into hour blocks.

One ``use_app`` event per application per clock hour (its seconds in front and
the window title seen most), emitted once the hour is over — high-frequency
focus changes never reach memory one by one. The active window comes from one
back-end per platform: X11 (``xprop``), macOS (``osascript``), Windows (the
Win32 API through ctypes); psutil names the process when the window system
does not. Excluded apps are neither counted nor named.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from typing import Any, NamedTuple

from magi_desktop.plugin_api import activity, hookimpl

HOUR = 3600
MAX_SAMPLE_SECONDS = 120       # a gap longer than this (sleep, the app closed) counts as this much at most


class Window(NamedTuple):
    app: str
    title: str


# ------------------------------------------------------------------ back-ends

def _run(args: list[str]) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=3).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def active_window_x11() -> Window | None:
    if shutil.which("xprop") is None:
        return None
    match = re.search(r"window id # (0x[0-9a-fA-F]+)", _run(["xprop", "-root", "_NET_ACTIVE_WINDOW"]))
    if not match or int(match.group(1), 16) == 0:
        return None
    props = _run(["xprop", "-id", match.group(1), "WM_CLASS", "_NET_WM_NAME", "_NET_WM_PID"])
    klass = re.search(r'WM_CLASS\(\w+\) = "([^"]*)", "([^"]*)"', props)
    title = re.search(r'_NET_WM_NAME\(\w+\) = "(.*)"', props)
    pid = re.search(r"_NET_WM_PID\(\w+\) = (\d+)", props)
    app = klass.group(2) if klass else _process_name(int(pid.group(1))) if pid else None
    return Window(app, title.group(1) if title else "") if app else None


def active_window_macos() -> Window | None:
    out = _run(["osascript", "-e", 'tell application "System Events" to get name of first application process '
                                   "whose frontmost is true"]).strip()
    return Window(out, "") if out else None


def active_window_windows() -> Window | None:  # pragma: no cover - exercised on Windows only
    if sys.platform != "win32":   # ctypes.windll exists only there (mypy checks the rest for Windows alone)
        return None
    import ctypes
    from ctypes import wintypes

    user32 = ctypes.windll.user32
    hwnd = user32.GetForegroundWindow()
    if not hwnd:
        return None
    length = user32.GetWindowTextLengthW(hwnd)
    buffer = ctypes.create_unicode_buffer(length + 1)
    user32.GetWindowTextW(hwnd, buffer, length + 1)
    pid = wintypes.DWORD()
    user32.GetWindowThreadProcessId(hwnd, ctypes.byref(pid))
    app = _process_name(pid.value)
    return Window(app, buffer.value) if app else None


def _process_name(pid: int) -> str | None:
    try:
        import psutil

        return psutil.Process(pid).name()
    except Exception:  # noqa: BLE001 - the process is gone or not ours to see
        return None


def active_window() -> Window | None:
    """The active window on this platform, or None (no display, a locked screen, no back-end)."""
    if sys.platform.startswith("win"):
        return active_window_windows()
    if sys.platform == "darwin":
        return active_window_macos()
    return active_window_x11()


# -------------------------------------------------------------------- merging

def add_sample(blocks: dict[str, dict[str, Any]], window: Window, at: float, seconds: float) -> None:
    """Count ``seconds`` of ``window`` in front into its hour block (pure: mutates only ``blocks``)."""
    hour = int(at // HOUR * HOUR)
    block = blocks.setdefault(f"{hour}|{window.app}", {"hour": hour, "app": window.app, "seconds": 0.0,
                                                       "titles": {}})
    block["seconds"] += seconds
    if window.title:
        block["titles"][window.title] = block["titles"].get(window.title, 0.0) + seconds


def finished(blocks: dict[str, dict[str, Any]], now: float) -> list[dict[str, Any]]:
    """Remove and return the blocks whose hour is over, oldest first."""
    done = [key for key, block in blocks.items() if block["hour"] + HOUR <= now]
    return sorted((blocks.pop(key) for key in done), key=lambda b: (b["hour"], b["app"]))


def block_payload(block: dict[str, Any]) -> dict[str, Any]:
    provenance: dict[str, Any] = {"app_name": block["app"], "duration_sec": round(block["seconds"])}
    if block["titles"]:
        provenance["window_title"] = Counter(block["titles"]).most_common(1)[0][0][:200]
    return activity("app_usage", "use_app", block["hour"], provenance, item_id=f"{block['app']}:{block['hour']}")


class AppUsage:
    name = "app_usage"
    source_type = "app_usage"
    interval_seconds = 60
    settings_schema = {"titles": {"type": "boolean", "default": True,
                                  "description": "Keep the most-seen window title of each hour"}}
    privacy_note = ("Samples which application is in front (and its window title unless turned off) once a "
                    "minute and stores one summary per app per hour. Excluded apps are not recorded. Nothing "
                    "leaves this machine.")

    def __init__(self, sampler=active_window, clock=time.time):
        self.sampler, self.clock = sampler, clock

    def collect(self, since, ctx):
        state = dict(since or {})
        blocks = dict(state.get("blocks") or {})
        now = self.clock()
        last = state.get("last_sample")
        window = self.sampler()
        if window is not None and window.app and not ctx.excluded("apps", window.app):
            if not ctx.settings.get("titles", True):
                window = Window(window.app, "")
            seconds = min(MAX_SAMPLE_SECONDS, now - last) if last is not None else float(self.interval_seconds)
            add_sample(blocks, window, now, max(0.0, seconds))
        for block in finished(blocks, now):
            if block["seconds"] >= 1:
                yield block_payload(block)
        ctx.save_cursor({"blocks": blocks, "last_sample": now})


@hookimpl
def register_collectors(register):
    register(AppUsage())
