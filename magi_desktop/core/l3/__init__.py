"""L3 summaries and insights (architecture §7): time-window summaries, rule-made insights, their retrieval."""

from .jobs import run
from .windows import GRANULARITIES

__all__ = ["GRANULARITIES", "run"]
