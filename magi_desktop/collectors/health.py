"""A collector's health, per source: collecting, idle, unavailable (why, and the fix) or failing (its error).

A run builds a :class:`RunHealth` as the collector names its sources (``ctx.source``, ``ctx.unavailable``,
``ctx.failing``); the writer, which alone knows what was stored, completes it once every payload of the run is
written (:meth:`RunHealth.summary`). The summary is saved with the collector's status, so every process shows
the same thing, and :func:`describe` words it for the CLI, the doctor and the windows.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..core.redact import redact_text

COLLECTING, IDLE, UNAVAILABLE, FAILING, QUARANTINED = "collecting", "idle", "unavailable", "failing", "quarantined"
STATES = (COLLECTING, IDLE, UNAVAILABLE, FAILING)
MAX_SOURCES = 64          # a collector naming more (a folder of 500 calendars) has the rest counted as one
MAX_NAME_CHARS = 200
MAX_TEXT_CHARS = 300
OTHER_SOURCES = "(other sources)"


def _text(value: Any, limit: int = MAX_TEXT_CHARS) -> str | None:
    """A plugin's words as the status keeps them: text, short, redacted (a reason may quote a path or a URL)."""
    if value is None:
        return None
    return redact_text(str(value)[:limit])


class RunHealth:
    """What one run found of each source. The run's thread writes it; the writer reads it after the run ended."""

    def __init__(self, collector: str):
        self.default = collector
        self.current = collector
        self.sources: dict[str, dict[str, Any]] = {}
        self.named = False       # the collector named a source: its own name is a source only if it yielded
        self.abandoned = False   # the run hung and was given up: what it still yields says nothing of health

    def _slot(self, name: Any) -> str:
        key = _text(name, MAX_NAME_CHARS) or self.default
        if key not in self.sources and len(self.sources) >= MAX_SOURCES:
            key = OTHER_SOURCES
        self.sources.setdefault(key, {"state": IDLE})
        return key

    def read(self, name: Any) -> str:
        """The collector reads ``name`` now: the payloads that follow are its."""
        self.named = True
        self.current = self._slot(name)
        return self.current

    def unavailable(self, name: Any, reason: Any, fix: Any = None) -> None:
        self.named = True
        self.sources[self._slot(name)] = {"state": UNAVAILABLE, "reason": _text(reason), "fix": _text(fix)}

    def failing(self, name: Any, error: Any) -> None:
        self.named = True
        self.sources[self._slot(name)] = {"state": FAILING, "reason": _text(error)}

    def summary(self, stored: Mapping[str, int], *, error: str | None = None, unavailable: Any = None,
                now: float | None = None) -> dict[str, Any]:
        """The run's health once everything it yielded is written: ``stored`` counts new items by source."""
        sources = {name: dict(entry) for name, entry in self.sources.items()}
        if not self.named or stored.get(self.default):
            sources.setdefault(self.default, {"state": IDLE})
        for name, count in stored.items():
            entry = sources.setdefault(name if name in sources else OTHER_SOURCES, {"state": IDLE})
            entry["stored"] = entry.get("stored", 0) + int(count)
            if count and entry["state"] == IDLE:
                entry["state"] = COLLECTING
        if unavailable is not None:
            reason, fix = getattr(unavailable, "reason", str(unavailable)), getattr(unavailable, "fix", None)
            state, reason, fix = UNAVAILABLE, _text(reason), _text(fix)
            if not self.named:
                sources[self.default] = {"state": UNAVAILABLE, "reason": reason, "fix": fix}
        elif error is not None:
            state, reason, fix = FAILING, _text(error), None
            if not self.named:
                sources[self.default] = {"state": FAILING, "reason": reason}
        else:
            state, reason, fix = overall(sources)
        return {"state": state, "reason": reason, "fix": fix, "at": time.time() if now is None else now,
                "sources": sources}


def overall(sources: Mapping[str, Mapping[str, Any]]) -> tuple[str, str | None, str | None]:
    """One state for a run that ended well: collecting if anything was new; else failing or unavailable when
    a source is (its reason, and how many of how many); else idle."""
    states = Counter(entry.get("state") for entry in sources.values())
    if states[COLLECTING]:
        return COLLECTING, None, None
    for state in (FAILING, UNAVAILABLE):
        if states[state]:
            first = next(e for e in sources.values() if e.get("state") == state)
            if len(sources) == 1:
                return state, first.get("reason"), first.get("fix")
            name = next(n for n, e in sources.items() if e.get("state") == state)
            return state, f"{states[state]} of {len(sources)} sources; {name}: {first.get('reason')}", first.get("fix")
    return IDLE, None, None


def state_of(status: Mapping[str, Any]) -> str | None:
    """The state a saved status shows: quarantined over what its last run found; None before any run."""
    if status.get("quarantined"):
        return QUARANTINED
    health = status.get("health")
    return health.get("state") if isinstance(health, Mapping) else None


def describe(status: Mapping[str, Any]) -> list[str]:
    """A saved status in words: its state (with the reason and the fix), then each source that needs the user
    or was read — "~/src/x: unavailable: no such repository — check the path in Settings"."""
    state = state_of(status)
    saved = status.get("health")
    health: Mapping[str, Any] = saved if isinstance(saved, Mapping) else {}
    if state is None:
        return ["not run yet"]
    if state == QUARANTINED:
        head = f"quarantined after {status.get('failures') or 0} failures: {status.get('last_error') or '?'}"
        head += f" — release it with `magi plugins --release {status.get('name')}`" if status.get("name") else ""
    else:
        head = state
        if health.get("reason"):
            head += f": {health['reason']}"
        if health.get("fix"):
            head += f" — {health['fix']}"
    lines = [head]
    sources = health.get("sources") or {}
    if len(sources) > 1 or (sources and next(iter(sources)) != status.get("name")):
        for name, entry in sources.items():
            line = f"{name}: {entry.get('state')}"
            if entry.get("reason"):
                line += f": {entry['reason']}"
            if entry.get("fix"):
                line += f" — {entry['fix']}"
            if entry.get("stored"):
                line += f" ({entry['stored']} new)"
            lines.append(line)
    return lines
