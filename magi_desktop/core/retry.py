"""The retry policy the background queues share (embedding, L2 projection)."""

from __future__ import annotations

MAX_ATTEMPTS = 5              # then the job goes to the dead letter
BACKOFF_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 3600.0


def backoff_delay(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failure: doubling from 30 s, at most an hour."""
    return min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS * 2 ** max(0, attempts - 1))
