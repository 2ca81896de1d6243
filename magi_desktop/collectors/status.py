"""What the supervisor knows of each collector: runs, failures, counters, skipped items by reason."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.redact import redact_text

# Skip reasons are short codes; a collector cannot grow its status without bound by inventing new ones.
MAX_SKIP_REASONS = 32
MAX_REASON_CHARS = 40
MAX_SKIP_DETAIL_CHARS = 300


@dataclass
class CollectorStatus:
    name: str
    runs: int = 0
    failures: int = 0             # in a row
    last_error: str | None = None
    quarantined: bool = False
    next_run_at: float = 0.0
    running: bool = False
    counts: Counter = field(default_factory=Counter)   # yielded, stored, duplicates, rejected, throttled, dropped
    last_rejection: str | None = None
    last_run_at: float | None = None
    progress: tuple[int, int | None] | None = None     # (done, total) the running run reported
    skipped: Counter = field(default_factory=Counter)  # items the collector left out, by reason code
    last_skip: str | None = None                       # "reason: detail" of the newest skip
    health: dict[str, Any] | None = None               # what the last run found, per source (health.RunHealth)
    rejected: Counter = field(default_factory=Counter) # payloads the host refused, by reason (the bad field)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "runs": self.runs, "failures": self.failures, "last_error": self.last_error,
                "quarantined": self.quarantined, "next_run_at": self.next_run_at, "running": self.running,
                "counts": dict(self.counts), "last_rejection": self.last_rejection, "last_run_at": self.last_run_at,
                "progress": list(self.progress) if self.progress else None, "skipped": dict(self.skipped),
                "last_skip": redact_text(self.last_skip) if self.last_skip else self.last_skip, "health": self.health,
                "rejected": dict(self.rejected)}

    def skip(self, reason: Any, detail: Any = None) -> str:
        """Count one skipped item; returns the reason code it was counted under."""
        code = _code(reason, self.skipped)
        self.skipped[code] += 1
        # A detail names where (a file, a line number), but may quote what it skipped: short here, and redacted
        # when the status is saved or shown (to_dict) — not on each of a back-fill's thousands of skips.
        said = f"{code}: {detail}" if detail is not None else code
        self.last_skip = said[:MAX_SKIP_DETAIL_CHARS]
        return code

    def reject(self, reason: Any, message: str) -> str:
        """Count one payload the host refused under ``reason`` (the bad field, "source_type"); ``message`` is the
        whole refusal, kept as the newest. Returns the code it was counted under."""
        code = _code(reason, self.rejected)
        self.counts["rejected"] += 1
        self.rejected[code] += 1
        self.last_rejection = redact_text(message[:MAX_SKIP_DETAIL_CHARS])
        return code

    @classmethod
    def resumed(cls, name: str, saved: Mapping[str, Any] | None) -> CollectorStatus:
        """Continue the counts a previous process saved. Failures and quarantine come from the memory's guard,
        which the supervisor reads next (a restart alone does not release a quarantined collector)."""
        status = cls(name)
        if saved:
            status.runs = int(saved.get("runs") or 0)
            status.counts.update({k: int(v) for k, v in (saved.get("counts") or {}).items()})
            status.last_error, status.last_rejection = saved.get("last_error"), saved.get("last_rejection")
            status.last_run_at = saved.get("last_run_at")
            status.skipped.update({k: int(v) for k, v in (saved.get("skipped") or {}).items()})
            status.last_skip = saved.get("last_skip")
            status.rejected.update({k: int(v) for k, v in (saved.get("rejected") or {}).items()})
            status.health = saved.get("health") if isinstance(saved.get("health"), dict) else None
        return status



def _code(reason: Any, counts: Counter) -> str:
    """A reason as a short code (``"bad DTSTART"`` → ``bad_dtstart``); past MAX_SKIP_REASONS distinct ones, "other"
    — a source cannot grow a status without bound by inventing reasons."""
    code = re.sub(r"[^a-z0-9_]+", "_", str(reason).casefold()).strip("_")[:MAX_REASON_CHARS] or "unspecified"
    if code not in counts and len(counts) >= MAX_SKIP_REASONS:
        code = "other"
    return code
