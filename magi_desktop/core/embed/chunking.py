"""Split long texts into overlapping chunks the embedding model can take whole.

A *unit* is a word or a single CJK character (each CJK character is about one
model token). Chunks keep character offsets into the original text, so a
vector hit maps back to a span of the event's content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CJK = "\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_UNIT = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")



@dataclass(frozen=True)
class Chunk:
    """content[start:end] is the chunk's text."""

    index: int
    start: int
    end: int


# all-MiniLM-L6-v2 reads 256 word pieces; ~1.3 pieces per English word.
DEFAULT_MAX_UNITS = 180
DEFAULT_OVERLAP = 30


def chunk_text(text: str, max_units: int = DEFAULT_MAX_UNITS, overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    if max_units <= 0 or not 0 <= overlap < max_units:
        raise ValueError("need max_units > 0 and 0 <= overlap < max_units")
    spans = [m.span() for m in _UNIT.finditer(text)]
    if len(spans) <= max_units:
        return [Chunk(0, 0, len(text))]
    chunks = []
    step = max_units - overlap
    for index, first in enumerate(range(0, len(spans), step)):
        window = spans[first:first + max_units]
        chunks.append(Chunk(index, window[0][0], window[-1][1]))
        if first + max_units >= len(spans):
            break
    return chunks
