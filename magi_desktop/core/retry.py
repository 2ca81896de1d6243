"""The retry policy of the background queues, under the name callers have imported it by; it lives in
:mod:`.store.queue` with the queue primitive."""

from __future__ import annotations

from .store.queue import BACKOFF_SECONDS, MAX_ATTEMPTS, MAX_BACKOFF_SECONDS, backoff_delay

__all__ = ["BACKOFF_SECONDS", "MAX_ATTEMPTS", "MAX_BACKOFF_SECONDS", "backoff_delay"]
