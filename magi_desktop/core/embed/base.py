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
