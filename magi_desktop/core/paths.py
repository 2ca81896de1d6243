"""Where the memory lives on disk."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "magi-desktop"
DATABASE_NAME = "memory.db"
_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def default_data_dir() -> Path:
    """``$MAGI_DATA_DIR`` if set, else the platform's user data folder."""
    override = os.environ.get("MAGI_DATA_DIR")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def database_path(location: str | os.PathLike | None = None) -> Path:
    """A data folder (→ folder/memory.db), a database file path, or None for the default folder."""
    if location is None:
        return default_data_dir() / DATABASE_NAME
    path = Path(location).expanduser()
    if path.suffix.lower() in _DB_SUFFIXES:
        return path
    return path / DATABASE_NAME
