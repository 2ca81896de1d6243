"""Embedding providers: the local MiniLM model (default), a hashing fallback."""

from __future__ import annotations

import logging

from ..errors import InvalidInput
from .base import Embedder, completed_embedder, l2_normalise
from .hashing import HashingEmbedder
from .minilm import MiniLMEmbedder, ModelNotInstalled

__all__ = ["Embedder", "HashingEmbedder", "MiniLMEmbedder", "ModelNotInstalled", "l2_normalise", "resolve_embedder"]

log = logging.getLogger(__name__)


def resolve_embedder(spec: str | Embedder) -> Embedder:
    """``"default"`` (MiniLM, else hashing with a warning), ``"minilm"``, ``"hashing"`` or an instance."""
    if not isinstance(spec, str):
        return completed_embedder(spec)
    if spec == "minilm":
        return MiniLMEmbedder(idle_seconds=idle_seconds())
    if spec == "hashing":
        return HashingEmbedder()
    if spec == "default":
        try:
            return MiniLMEmbedder(idle_seconds=idle_seconds())
        except ModelNotInstalled as exc:
            log.warning("%s; falling back to the hashing embedder (no semantic search)", exc)
            return HashingEmbedder(stands_in_for=MiniLMEmbedder.name)
    raise InvalidInput(f"unknown embedder {spec!r}: use 'default', 'minilm' or 'hashing'")


def idle_seconds() -> float:
    """How long the model (and jieba's dictionary) stays loaded without use: ``MAGI_EMBEDDER_IDLE_SECONDS``
    (default 300)."""
    import os

    from .minilm import DEFAULT_IDLE_SECONDS

    value = os.environ.get("MAGI_EMBEDDER_IDLE_SECONDS", "")
    try:
        return float(value) if value else DEFAULT_IDLE_SECONDS
    except ValueError:
        log.warning("MAGI_EMBEDDER_IDLE_SECONDS=%r is not a number; using %s", value, DEFAULT_IDLE_SECONDS)
        return DEFAULT_IDLE_SECONDS
