"""Scheduling of the core's background work. Plain threads; no Qt here."""

from .background import BackgroundWorker

__all__ = ["BackgroundWorker"]
