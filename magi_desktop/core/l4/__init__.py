"""L4 procedural experience (architecture §8): per-tool statistics, traces, circuit breakers, strategies."""

from . import distill
from .skills import Decision, decision, record

__all__ = ["Decision", "decision", "distill", "record"]
