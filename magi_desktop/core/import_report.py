"""What an import did (issue 16): rows taken per table, what was rebuilt instead of loaded, and every
value it changed and every row it dropped — by table, column and reason, with a few example ids.

Example ids only, never content: the report is printed and may be pasted into a bug report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXAMPLES = 3


@dataclass
class Tally:
    """How many rows one (table, column, reason) touched, and the first few of their ids."""

    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, example: Any) -> None:
        self.count += 1
        if len(self.examples) < EXAMPLES and example is not None:
            self.examples.append(str(example)[:80])


@dataclass
class ImportReport:
    """What ``Memory.import_jsonl`` did: ``schema_version`` and ``exported_at`` of the export, rows ``imported``
    per table (``events`` the events among them), tables ``rebuilt`` instead of loaded and why, values
    ``changed`` (by table, column, reason) and rows ``dropped`` (by table, reason) with a few example ids, and
    the work ``queued`` for the workers. ``lines()`` is the report as ``magi import`` prints it."""

    schema_version: int
    exported_at: float | None
    imported: dict[str, int] = field(default_factory=dict)       # rows taken per table
    rebuilt: dict[str, str] = field(default_factory=dict)        # table -> why it was made again, not loaded
    changed: dict[tuple[str, str, str], Tally] = field(default_factory=dict)
    dropped: dict[tuple[str, str], Tally] = field(default_factory=dict)
    queued: dict[str, int] = field(default_factory=dict)         # work the workers will do

    @property
    def events(self) -> int:
        return self.imported.get("fact_events", 0)

    def took(self, table: str, n: int = 1) -> None:
        self.imported[table] = self.imported.get(table, 0) + n

    def change(self, table: str, column: str, reason: str, example: Any) -> None:
        self.changed.setdefault((table, column, reason), Tally()).add(example)

    def drop(self, table: str, reason: str, example: Any) -> None:
        self.dropped.setdefault((table, reason), Tally()).add(example)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version, "exported_at": self.exported_at, "events": self.events,
            "imported": dict(self.imported), "rebuilt": dict(self.rebuilt), "queued": dict(self.queued),
            "changed": [{"table": t, "column": c, "reason": r, "rows": v.count, "examples": v.examples}
                        for (t, c, r), v in sorted(self.changed.items())],
            "dropped": [{"table": t, "reason": r, "rows": v.count, "examples": v.examples}
                        for (t, r), v in sorted(self.dropped.items())],
        }

    def lines(self) -> list[str]:
        """The report as a person reads it (``magi import``)."""
        out = [f"imported {self.events} events and {sum(self.imported.values()) - self.events} other rows "
               f"(exported from schema v{self.schema_version})"]
        out += [f"  {table}: {n}" for table, n in sorted(self.imported.items())]
        if self.rebuilt:
            out.append(f"rebuilt, not loaded: {', '.join(sorted(self.rebuilt))}")
        if self.queued:
            out.append("queued for the workers: " + ", ".join(f"{k} {v}" for k, v in sorted(self.queued.items())))
        for (table, column, reason), tally in sorted(self.changed.items()):
            out.append(f"changed {table}.{column} in {tally.count} row(s): {reason} (e.g. {', '.join(tally.examples)})")
        for (table, reason), tally in sorted(self.dropped.items()):
            out.append(f"dropped {tally.count} row(s) of {table}: {reason} (e.g. {', '.join(tally.examples)})")
        if not self.changed and not self.dropped:
            out.append("no imported value was changed and no row dropped")
        return out
