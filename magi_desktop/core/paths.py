"""Where the memory lives on disk."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "magi-desktop"
DATABASE_NAME = "memory.db"
_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def default_data_dir() -> Path:
    """``$MAGI_DATA_DIR`` if set, else the folder the user chose in the settings, else the
    platform's user data folder."""
    override = os.environ.get("MAGI_DATA_DIR")
    if override:
        return Path(override).expanduser()
    chosen = chosen_data_dir()
    if chosen is not None:
        return chosen
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def data_dir_pointer() -> Path:
    """A one-line file in the user's config folder naming a data folder chosen in the settings."""
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "data-dir"


def chosen_data_dir() -> Path | None:
    try:
        text = data_dir_pointer().read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text).expanduser() if text else None


def choose_data_dir(folder: str | os.PathLike | None) -> None:
    """Use ``folder`` from the next start on (None: back to the platform's default)."""
    pointer = data_dir_pointer()
    if folder is None:
        pointer.unlink(missing_ok=True)
        return
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(str(Path(folder).expanduser()) + "\n", "utf-8")


def database_path(location: str | os.PathLike | None = None) -> Path:
    """A data folder (→ folder/memory.db), a database file path, or None for the default folder."""
    if location is None:
        return default_data_dir() / DATABASE_NAME
    path = Path(location).expanduser()
    if path.suffix.lower() in _DB_SUFFIXES:
        return path
    return path / DATABASE_NAME


def temp_dir(data_dir: str | os.PathLike) -> Path:
    """Scratch space inside the data folder (collectors' copies of locked source files, for one):
    under the memory's own folder, so forget can reach it and a start can clean what a crash left."""
    return Path(data_dir) / "tmp"
