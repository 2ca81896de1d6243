"""This process's memory apart: anonymous, file-backed, PSS and USS beside RSS (``load.py``, ``load_at_rest.py``)."""

from __future__ import annotations

import resource
import sys

import psutil


def _kib_fields(path: str) -> dict[str, int]:
    """The ``Name:   123 kB`` lines of a /proc file, in KiB."""
    fields = {}
    with open(path) as f:
        for line in f:
            name, _, value = line.partition(":")
            parts = value.split()
            if len(parts) == 2 and parts[1] == "kB":
                fields[name] = int(parts[0])
    return fields


def memory_mb() -> dict:
    """This process's memory, in MiB. ``rss_mb`` (psutil) counts every resident page of every mapping, once per
    mapping: each reader connection maps the database itself (``PRAGMA mmap_size``) and the approximate index is
    a memory-mapped view, so the same page-cache pages are counted several times and the figure grows with the
    database read, not with what the process holds. Beside it:

    * ``anon_mb`` — resident anonymous memory (``RssAnon``): the heap (Python objects, SQLite's page caches,
      numpy arrays, an index loaded to be folded): what the process itself takes, which the kernel cannot drop,
      only swap.
    * ``file_mb`` — resident file-backed pages (``RssFile`` + ``RssShmem``): the mapped database, the index
      view, the shared libraries. They belong to the kernel's page cache, are shared with any other process
      and dropped under pressure.
    * ``pss_mb`` (with ``pss_anon_mb`` / ``pss_file_mb``) — proportional set size: each page divided by the
      number of mappings of it, here and in other processes, so a page several connections map is counted once
      in all (``smaps_rollup``).
    * ``uss_mb`` — the pages only this process maps (private clean + dirty).
    * ``peak_rss_mb`` — the largest ``rss_mb`` so far (``ru_maxrss``).

    Linux reads ``/proc/self/status`` and ``/proc/self/smaps_rollup``; elsewhere psutil's ``memory_full_info``
    gives what it can (USS, PSS where the platform has it) and the rest is None."""
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss = psutil.Process().memory_info().rss / 2**20
    peak = peak_kib / 1024 if sys.platform.startswith("linux") else peak_kib / 2**20   # macOS: bytes
    out: dict[str, float | None] = {"rss_mb": rss, "peak_rss_mb": max(rss, peak)}
    try:
        status, rollup = _kib_fields("/proc/self/status"), _kib_fields("/proc/self/smaps_rollup")
        out |= {"anon_mb": status["RssAnon"] / 1024, "file_mb": (status["RssFile"] + status["RssShmem"]) / 1024,
                "pss_mb": rollup["Pss"] / 1024, "pss_anon_mb": rollup["Pss_Anon"] / 1024,
                "pss_file_mb": (rollup["Pss_File"] + rollup["Pss_Shmem"]) / 1024,
                "uss_mb": (rollup["Private_Clean"] + rollup["Private_Dirty"]) / 1024}
    except (OSError, KeyError):
        full = psutil.Process().memory_full_info()
        out |= {"anon_mb": None, "file_mb": None, "pss_mb": getattr(full, "pss", 0) / 2**20 or None,
                "pss_anon_mb": None, "pss_file_mb": None, "uss_mb": getattr(full, "uss", 0) / 2**20 or None}
    return {k: None if v is None else round(v, 1) for k, v in out.items()}
