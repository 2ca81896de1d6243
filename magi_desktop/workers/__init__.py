"""Scheduling of the core's background work. Plain threads and plain functions; no Qt here."""

from .background import BackgroundWorker
from .jobs import DrainReport, drain, maintain, process_batch, reindex

__all__ = ["BackgroundWorker", "DrainReport", "drain", "maintain", "process_batch", "reindex"]
