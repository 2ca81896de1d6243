"""L3 summaries and insights (DESIGN §7): time-window summaries, rule-made insights, their retrieval."""

from .jobs import run

__all__ = ["run"]
