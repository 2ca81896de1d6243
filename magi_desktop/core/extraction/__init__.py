"""Background fact extraction from whole conversations (architecture §9; the quote-gate seed, part 5)."""

from .pipeline import BATCH, ExtractionReport, due, extract, held_count, pending_count, revive_dead, run
from .rules import HANDLERS as RULE_HANDLERS
from .task import EXTRACT_SEGMENT

__all__ = ["BATCH", "EXTRACT_SEGMENT", "ExtractionReport", "RULE_HANDLERS", "due", "extract", "held_count",
           "pending_count", "revive_dead", "run"]
