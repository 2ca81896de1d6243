"""Real MiniLM vectors for a benchmark memory of a million events, in a reasonable time.

The workload's texts repeat a lot, so each distinct text is embedded once with the real model and its vector
kept in a cache file outside git (``~/.cache/magi-bench/minilm-vectors.sqlite``, keyed by the model name and the
text's SHA-256). ``workload.py`` makes every chat turn unique with a counter (``… (#123)``); that counter is
left out of the text embedded (the vector of "I moved to Jiaxing last month" stands for each numbered copy),
else 60% of the texts would be distinct and a million events would take a day of numpy MiniLM. The memory sees
an ordinary embedder of the same name, dimension and floor as MiniLM: its index, vector paths and similarity
floors are MiniLM's. A text the cache does not hold yet is embedded on the spot (and then kept).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CACHE = Path.home() / ".cache" / "magi-bench" / "minilm-vectors.sqlite"
_WORKLOAD_COUNTER = re.compile(r" \(#\d+\)")      # workload.py: f"{text} (#{i})"


def embedded_text(text: str) -> str:
    """The text whose vector stands for ``text``: without the workload's uniqueness counter."""
    return _WORKLOAD_COUNTER.sub("", text)


class CachedMiniLM:
    """MiniLM behind a text -> vector cache file; the Embedder protocol of ``core/embed/base.py``."""

    def __init__(self, cache: Path = CACHE, *, batch_size: int = 32):
        from magi_desktop.core.embed import MiniLMEmbedder

        self.inner = MiniLMEmbedder(idle_seconds=None, batch_size=batch_size)
        self.name = self.inner.name
        self.dimension = self.inner.dimension
        self.max_units = self.inner.max_units
        self.similarity_floor = self.inner.similarity_floor
        self.stands_in_for = None
        cache.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(cache, check_same_thread=False)
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) "
                           "WITHOUT ROWID")
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @property
    def loaded(self) -> bool:
        return self.inner.loaded

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.name}\0{text}".encode()).digest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [embedded_text(t) for t in texts]
        keys = [self._key(t) for t in texts]
        with self._lock:
            found: dict[bytes, bytes] = {}
            for first in range(0, len(keys), 500):
                part = keys[first:first + 500]
                found.update(self._conn.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({', '.join('?' * len(part))})", part).fetchall())
        missing = list(dict.fromkeys(text for text, key in zip(texts, keys, strict=True) if key not in found))
        if missing:
            block = self.inner.embed(missing)
            new = {self._key(t): np.ascontiguousarray(row, dtype=np.float32).tobytes()
                   for t, row in zip(missing, block, strict=True)}
            with self._lock, self._conn:
                self._conn.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", new.items())
            found.update(new)
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = np.frombuffer(found[key], dtype=np.float32)
        return out

    def release(self) -> None:
        self.inner.release()

    def close(self) -> None:
        self.inner.release()
        self._conn.close()
