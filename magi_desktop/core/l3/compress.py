"""Per-source compression of a window's events before they are summarised (architecture §7).

A busy source must not drown a quiet one: 800 page visits and 3 chat turns in an hour
become ~46 representative visits and all 3 turns, not 800 + 3. Each source keeps
at least ``FLOOR`` events (all of them if it has fewer); beyond that a source gets
``SQRT_FACTOR × √(n − FLOOR)`` more, so shares grow with the square root of the
volume; the total is capped at ``CAP`` by scaling those extra shares down.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

FLOOR = 4
SQRT_FACTOR = 1.5
CAP = 120

E = TypeVar("E")


def quotas(counts: dict[str, int], cap: int = CAP, floor: int = FLOOR, factor: float = SQRT_FACTOR) -> dict[str, int]:
    """How many events each source keeps."""
    base = {s: min(n, floor) for s, n in counts.items()}
    extra = {s: min(n - base[s], math.ceil(factor * math.sqrt(max(0, n - floor)))) for s, n in counts.items()}
    room = cap - sum(base.values())
    if room <= 0:                                  # more sources than the cap allows floors for
        ranked = sorted(counts, key=lambda s: -counts[s])
        return {s: (1 if i < cap else 0) for i, s in enumerate(ranked)}
    wanted = sum(extra.values())
    if wanted > room:
        scale = room / wanted
        extra = {s: math.floor(e * scale) for s, e in extra.items()}
    return {s: base[s] + extra[s] for s in counts}


def compress(events: Sequence[E], source: Callable[[E], str], key: Callable[[E], str],
             cap: int = CAP) -> list[E]:
    """Representative events per source: distinct ones first (by ``key``), spread evenly in the
    window's order; the result keeps the input order."""
    by_source: dict[str, list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        by_source[source(event)].append(index)
    keep = quotas({s: len(ix) for s, ix in by_source.items()}, cap)
    chosen: list[int] = []
    for name, indexes in by_source.items():
        quota = keep[name]
        if quota >= len(indexes):
            chosen += indexes
            continue
        seen: set[Hashable] = set()
        distinct: list[int] = []
        repeats: list[int] = []
        for i in indexes:
            (repeats if key(events[i]) in seen else distinct).append(i)
            seen.add(key(events[i]))
        pool = distinct if len(distinct) >= quota else distinct + repeats
        step = len(pool) / quota
        chosen += sorted(pool[int(j * step)] for j in range(quota))
    return [events[i] for i in sorted(chosen)]
