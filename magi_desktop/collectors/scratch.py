"""Collectors' scratch space: per-run folders inside the data folder, and cleaning what a crash left.

A collector that must copy a locked file (a browser's History) does it in ``ctx.temp_dir``:
``<data folder>/tmp/<collector>/<pid>-<process start>-<token>/``. The host removes the folder when
the run ends; a process killed mid-run (``kill -9``, a power cut) cannot, so every host start
removes what no live process owns. The owner is named by its pid *and* its start time, so a pid
reused by an unrelated process does not keep a dead run's copy alive. Being inside the data folder,
the copies are also within reach of forget and of the user's own clean-up.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

_OWNED = re.compile(r"^(\d+)-(\d+)-[0-9a-f]+$")


def _started(pid: int) -> int | None:
    """When a process started (centiseconds since the epoch), None if it is gone."""
    try:
        return round(psutil.Process(pid).create_time() * 100)
    except (psutil.Error, OSError):
        return None


def run_folder(root: Path, collector: str) -> Path:
    """A new folder for one run of ``collector``, owned by this process (created)."""
    safe = re.sub(r"[^\w.-]+", "_", collector) or "collector"
    folder = Path(root) / safe / f"{os.getpid()}-{_started(os.getpid()) or 0}-{secrets.token_hex(4)}"
    folder.mkdir(parents=True, mode=0o700)
    return folder


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _alive(name: str) -> bool:
    owned = _OWNED.match(name)
    return owned is not None and _started(int(owned.group(1))) == int(owned.group(2))


def clean(root: Path) -> int:
    """Remove everything under ``root`` that no live process's run owns; the number of entries removed.
    Runs of live processes (the app while ``magi collect`` starts, say) are left alone."""
    root = Path(root)
    if not root.is_dir():
        return 0
    removed = 0
    for entry in root.iterdir():
        runs = list(entry.iterdir()) if entry.is_dir() and not entry.is_symlink() else [entry]
        for item in runs:
            if item is not entry and _alive(item.name):
                continue
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item, ignore_errors=True)
            else:
                try:
                    item.unlink()
                except OSError:
                    continue
            removed += not item.exists()
        if entry.is_dir() and not entry.is_symlink():
            try:
                entry.rmdir()      # only when empty: a live run may still be in it
            except OSError:
                pass
    if removed:
        log.info("removed %d scratch folder(s) left in %s by runs that ended abnormally", removed, root)
    return removed
