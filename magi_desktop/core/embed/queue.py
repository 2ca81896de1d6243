"""The events' embedding worker under the name callers have imported it by; every vector kind is embedded in
:mod:`.indexing`, and the ``embedding_jobs`` queue is :data:`..store.queue.EMBEDDING_JOBS`."""

from __future__ import annotations

from .indexing import DEFAULT_BATCH, MAX_ATTEMPTS, EmbedReport, backoff_delay, embed_pending, pending_count

__all__ = ["DEFAULT_BATCH", "MAX_ATTEMPTS", "EmbedReport", "backoff_delay", "embed_pending", "pending_count"]
