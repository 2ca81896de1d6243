"""A collector's health, per source: collecting, idle, unavailable (why, and the fix) or failing (its error).

A run builds a :class:`RunHealth` as the collector names its sources (``ctx.source``, ``ctx.unavailable``,
``ctx.failing``); the writer, which alone knows what was stored, completes it once every payload of the run is
written (:meth:`RunHealth.summary`). The summary is saved with the collector's status, so every process shows
the same thing; :func:`describe`, :func:`troubles` and :func:`tallies` word it for the CLI, the doctor and the
windows (pure functions of a saved status, so every surface says the same).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..core.redact import redact_text

COLLECTING, IDLE, UNAVAILABLE, FAILING, QUARANTINED = "collecting", "idle", "unavailable", "failing", "quarantined"
STATES = (COLLECTING, IDLE, UNAVAILABLE, FAILING)
TROUBLED = (UNAVAILABLE, FAILING)          # a source in one of these needs the user
RELEASE_HINT = "release it with `magi plugins --release {name}`"   # how a quarantine ends, where words are printed
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
            elif sources.get(self.current, {}).get("state") in (IDLE, COLLECTING):
                sources[self.current]["state"], sources[self.current]["reason"] = FAILING, reason   # read when it broke
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
    if status.get("disabled"):
        return "disabled"
    if status.get("quarantined"):
        return QUARANTINED
    health = status.get("health")
    return health.get("state") if isinstance(health, Mapping) else None


def describe(status: Mapping[str, Any], *, release_hint: str = RELEASE_HINT,
             max_sources: int | None = None) -> list[str]:
    """A saved status in words: its state (with the reason and the fix), then each source that needs the user
    or was read — "~/src/x: unavailable: no such repository — check the path in Settings".

    ``release_hint`` says how a quarantine ends where the words are shown (``{name}`` is the collector's; the
    Settings page has a button). ``max_sources`` keeps a long list short: the sources that need the user first,
    then "… and N more sources"."""
    state = state_of(status)
    health = _health(status)
    if state is None:     # one that ran: saved by an older version, or its writer is completing it now
        return ["no health recorded yet" if status.get("runs") else "not run yet"]
    if state == "disabled":
        last = status.get("last_state")
        return ["disabled" + (f" (its last run: {last})" if last else "")]
    sources = _listed_sources(status)
    bad = _summed_up(status, sources)
    if state == QUARANTINED:
        failures = int(status.get("failures") or 0)
        head = f"quarantined after {failures} failure{'' if failures == 1 else 's'}: {status.get('last_error') or '?'}"
        head += f" — {release_hint.format(name=status.get('name'))}" if status.get("name") else ""
    elif bad:        # the sources' own lines say why and how to fix it: "failing: 1 of 3 sources, 1 unavailable"
        head = state
        if len(sources) > 1:
            kinds = Counter(entry.get("state") for entry in bad.values())
            head += f": {kinds.pop(state, 0)} of {len(sources)} sources"
            head += "".join(f", {n} {other}" for other, n in kinds.items())
    else:
        head = _worded(state, health)
    lines = [head]
    if max_sources is not None and len(sources) > max_sources:
        ordered = sorted(sources.items(), key=lambda item: item[1].get("state") not in TROUBLED)
        lines += [source_line(name, entry) for name, entry in ordered[:max_sources]]
        lines.append(f"… and {len(sources) - max_sources} more sources")
    else:
        lines += [source_line(name, entry) for name, entry in sources.items()]
    return lines


def source_line(name: str, entry: Mapping[str, Any]) -> str:
    """One source in words: "~/src/a: collecting (2 new)", "~/src/x: unavailable: no such repository — fix"."""
    line = _worded(f"{name}: {entry.get('state')}", entry)
    return line + (f" ({entry['stored']} new)" if entry.get("stored") else "")


def troubles(status: Mapping[str, Any], *, release_hint: str = RELEASE_HINT) -> list[str]:
    """What of a saved status needs the user, in :func:`describe`'s words (empty when nothing does): the
    quarantine; the run's own failure or unavailability; each source unavailable or failing."""
    state = state_of(status)
    if state is None:
        return []
    head = describe(status, release_hint=release_hint)[0]
    if state == QUARANTINED:
        return [head]
    sources = _listed_sources(status)
    bad = {name: entry for name, entry in sources.items() if entry.get("state") in TROUBLED}
    # A head that sums up the sources is said by their lines; one that words the run's own failure is not.
    lines = [head] if state in TROUBLED and not _summed_up(status, sources) else []
    return lines + [source_line(name, entry) for name, entry in bad.items()]


def as_disabled(status: Mapping[str, Any]) -> dict[str, Any]:
    """A saved status of a collector the user has since turned off: its last run's state kept as history, no
    reasons or fixes (they are nothing to act on now), no quarantine to release."""
    last = state_of(status)
    return {"name": status.get("name"), "runs": status.get("runs"), "counts": status.get("counts", {}),
            "disabled": True, "last_state": last}


def trouble_label(status: Mapping[str, Any]) -> str:
    """A word or three on why a collector needs the user, for a one-line summary: its state when that is the
    trouble ("failing", "quarantined"), else its troubled sources ("1 source unavailable" while others collect)."""
    state = state_of(status)
    if state in (QUARANTINED, *TROUBLED):
        return str(state)
    bad = Counter(entry.get("state") for entry in _listed_sources(status).values() if entry.get("state") in TROUBLED)
    return ", ".join(f"{n} source{'s' if n > 1 else ''} {kind}" for kind, n in sorted(bad.items())) or str(state)


def tallies(status: Mapping[str, Any]) -> list[str]:
    """The items a collector left out, counted by reason: "skipped (not failures): binary_line 2, not_utf8 1;
    last: …" and "rejected: bad_url 3; last: …" (README, Troubleshooting, says what each reason means)."""
    lines = []
    if status.get("skipped"):
        line = f"skipped (not failures): {by_reason(status['skipped'])}"
        lines.append(line + (f"; last: {status['last_skip']}" if status.get("last_skip") else ""))
    rejected = status.get("rejected")
    if isinstance(rejected, Mapping) and rejected:
        line = f"rejected: {by_reason(rejected)}"
        lines.append(line + (f"; last: {status['last_rejection']}" if status.get("last_rejection") else ""))
    elif status.get("last_rejection"):      # saved before rejections were counted by reason
        lines.append(f"last rejection: {status['last_rejection']}")
    return lines


def by_reason(counts: Mapping[str, Any]) -> str:
    """Counts by reason code, the most first: "bad_dtstart 2, unknown_timezone 1"."""
    return ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _health(status: Mapping[str, Any]) -> Mapping[str, Any]:
    saved = status.get("health")
    return saved if isinstance(saved, Mapping) else {}


def _listed_sources(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The sources worth a line: none when the only one is the collector itself (its state says it all)."""
    sources = _health(status).get("sources") or {}
    if len(sources) > 1 or (sources and next(iter(sources)) != status.get("name")):
        return {str(name): entry for name, entry in sources.items() if isinstance(entry, Mapping)}
    return {}


def _summed_up(status: Mapping[str, Any], sources: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The listed sources unavailable or failing when the state's reason only sums them up (:func:`overall`:
    "1 of 4 sources; ~/src/x: …"); empty when it is the run's own (it raised, or could read nothing)."""
    reason = str(_health(status).get("reason") or "")
    bad = {name: entry for name, entry in sources.items() if entry.get("state") in TROUBLED}
    if state_of(status) in TROUBLED and any(e.get("reason") and str(e["reason"]) in reason for e in bad.values()):
        return bad
    return {}


def _worded(head: str, entry: Mapping[str, Any]) -> str:
    """``head``, then the entry's reason and fix: "unavailable: playerctl not found — install playerctl"."""
    if entry.get("reason"):
        head += f": {entry['reason']}"
    if entry.get("fix"):
        head += f" — {entry['fix']}"
    return head
