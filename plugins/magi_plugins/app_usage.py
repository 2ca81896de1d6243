"""App usage: which application is in front, sampled each run and merged into hour blocks.

One ``use_app`` event per application per clock hour (its seconds in front and the window title seen most):
high-frequency focus changes never reach memory one by one. The running hour's block is stored as soon as it
starts and again as it grows (every ``LIVE_STEP_SECONDS`` of use), so today's use is visible before the hour
ends; each version has the block's *natural key*, so a new one replaces the stored one, and the closed
block, once the hour is over, replaces the last of them — one event per app and hour, with the final
durations. The window in front comes from this platform's back-end (:mod:`.active_window`). Excluded apps
are neither counted nor named.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from magi_desktop.plugin_api import CollectContext, Unavailable, activity, hookimpl

from .active_window import WindowBackend, window_backend
from .window import Window

HOUR = 3600
MAX_SAMPLE_SECONDS = 120       # a gap longer than this (sleep, the app closed) counts as this much at most
# The running block is stored again once it has grown this much since its stored version: at most twelve
# versions an hour per app, each a supersede (one row out, one in, with its index terms).
LIVE_STEP_SECONDS = 300


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


def due_for_update(blocks: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The running blocks to store (again): never stored, or grown ``LIVE_STEP_SECONDS`` since, oldest first."""
    due = [b for b in blocks.values() if b["seconds"] >= 1
           and ("stored_seconds" not in b or b["seconds"] - b["stored_seconds"] >= LIVE_STEP_SECONDS)]
    return sorted(due, key=lambda b: (b["hour"], b["app"]))


def block_payload(block: dict[str, Any], *, running: bool = False) -> dict[str, Any]:
    """The block as a payload: the closed one keeps the id it always had (``app:hour``); each running version
    has its own id, and all share the natural key, so the newest replaces the one stored."""
    key = f"{block['app']}:{block['hour']}"
    seconds = round(block["seconds"])
    provenance: dict[str, Any] = {"app_name": block["app"], "duration_sec": seconds}
    if block["titles"]:
        provenance["window_title"] = Counter(block["titles"]).most_common(1)[0][0][:200]
    if running:
        provenance["hour_in_progress"] = True       # the durations so far; the closed block replaces it
    return activity("app_usage", "use_app", block["hour"], provenance,
                    item_id=f"{key}:so-far:{seconds}" if running else key, natural_key=key)


# ------------------------------------------------------------------ collector

class AppUsage:
    name = "app_usage"
    source_type = "app_usage"
    interval_seconds = 60
    settings_schema = {"titles": {"type": "boolean", "default": True, "title": "Keep window titles",
                                  "description": "Keep the window title seen most in each app's hour (X11 and "
                                                 "Windows; macOS names the app only)"}}
    privacy_note = ("Samples which application is in front (and its window title unless turned off) once a "
                    "minute and stores one summary per app per hour, updated while the hour runs. Excluded apps "
                    "are not recorded. Nothing leaves this machine.")

    def __init__(self, backend: Callable[[], WindowBackend] = window_backend,
                 clock: Callable[[], float] = time.time):
        self.backend, self.clock = backend, clock

    def collect(self, since: Any, ctx: CollectContext) -> Iterator[dict[str, Any]]:
        state = dict(since or {})
        blocks = dict(state.get("blocks") or {})
        now = self.clock()
        try:
            backend = self.backend()
            window = backend.active()
        except Unavailable:
            # The hours already over still close; the time the window system was out of reach counts for none.
            yield from _closed(blocks, now)
            ctx.save_cursor({"blocks": blocks, "last_sample": None})
            raise
        ctx.source(backend.source)
        last = state.get("last_sample")
        if window is not None and window.app and not ctx.excluded("apps", window.app):
            if not ctx.settings.get("titles", True):
                window = Window(window.app, "")
            seconds = min(MAX_SAMPLE_SECONDS, now - last) if last is not None else float(self.interval_seconds)
            add_sample(blocks, window, now, max(0.0, seconds))
        yield from _closed(blocks, now)
        for block in due_for_update(blocks):
            yield block_payload(block, running=True)
            block["stored_seconds"] = block["seconds"]
        ctx.save_cursor({"blocks": blocks, "last_sample": now})


def _closed(blocks: dict[str, dict[str, Any]], now: float) -> Iterator[dict[str, Any]]:
    for block in finished(blocks, now):
        if block["seconds"] >= 1:
            yield block_payload(block)


@hookimpl
def register_collectors(register):
    register(AppUsage())
