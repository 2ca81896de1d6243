"""The embedder interface every provider implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    name: str
    dimension: int
    #: How many tokens/units one input may have before it must be chunked.
    max_units: int
    #: Cosine below which a text shares no meaning with a question: retrieval drops a candidate that shares
    #: no word with the question either (architecture §5, filters). Each model's own: its scores differ.
    similarity_floor: float
    #: The model this one was chosen in place of because that model is missing, else None: an index that
    #: model built is then kept and embedding waits, instead of rebuilding it with these vectors (§13).
    stands_in_for: str | None

    @property
    def loaded(self) -> bool:
        """Whether the large resources (model weights) are in memory now (``stats()``, for the status)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dimension), rows L2-normalised."""
        ...

    def release(self) -> None:
        """Drop large resources (model weights); the next ``embed`` reloads them."""
        ...


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


# What retrieval assumed of an embedder that did not say (the MiniLM figure): before the Protocol named it.
DEFAULT_SIMILARITY_FLOOR = 0.3


class CompletedEmbedder:
    """An embedder written against the older, smaller contract (name, dimension, max_units, embed, release),
    given the members added since with their old defaults, so a caller's own embedder keeps working."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self.name: str = inner.name                                       # type: ignore[attr-defined]
        self.dimension: int = inner.dimension                             # type: ignore[attr-defined]
        self.max_units: int = getattr(inner, "max_units", 256)
        self.similarity_floor: float = getattr(inner, "similarity_floor", DEFAULT_SIMILARITY_FLOOR)
        self.stands_in_for: str | None = getattr(inner, "stands_in_for", None)

    @property
    def loaded(self) -> bool:
        return bool(getattr(self._inner, "loaded", False))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed(texts)                                   # type: ignore[attr-defined]

    def release(self) -> None:
        release = getattr(self._inner, "release", None)
        if release is not None:
            release()


def completed_embedder(spec: object) -> Embedder:
    """``spec`` as an Embedder: itself when it has every member, completed when it has the older minimum
    (name, dimension, embed); TypeError for anything else."""
    if isinstance(spec, Embedder):
        return spec
    if all(hasattr(spec, member) for member in ("name", "dimension", "embed")):
        return CompletedEmbedder(spec)
    raise TypeError(f"not an embedder: {spec!r} (needs name, dimension and embed(texts))")
