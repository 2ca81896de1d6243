"""A hashing embedder: character n-grams and words hashed into a fixed vector.

The fallback when the real model is not installed. It knows nothing of meaning
("sofa" and "couch" are unrelated), but it is deterministic, instant and keeps
lexical near-matches close, so the vector path still works.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from .base import l2_normalise

_TOKEN = re.compile(r"\w+", re.UNICODE)


def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimension, 1.0 if (value >> 63) & 1 else -1.0


class HashingEmbedder:
    name = "hashing-ngram-v1"
    max_units = 512
    similarity_floor = 0.35  # n-gram overlap below this is coincidence

    def __init__(self, dimension: int = 384, ngram: int = 3, stands_in_for: str | None = None):
        self.dimension = dimension
        self.ngram = ngram
        #: Set when chosen only because the real model is missing: an index
        #: built by that model is then kept, not rebuilt with hashed vectors.
        self.stands_in_for = stands_in_for

    @property
    def loaded(self) -> bool:
        return False        # no model: nothing large to hold

    def _features(self, text: str) -> list[str]:
        features = []
        for word in _TOKEN.findall(text.lower()):
            features.append("w:" + word)
            padded = f"#{word}#"
            features.extend("c:" + padded[i:i + self.ngram] for i in range(max(1, len(padded) - self.ngram + 1)))
        return features

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                index, sign = _bucket(feature, self.dimension)
                matrix[row, index] += sign
        return l2_normalise(matrix)

    def release(self) -> None:
        pass
