"""The calendar files a setting names, and in words why one cannot be read.

Each entry of the calendar's ``paths`` setting is one *source* of its health: an ``.ics`` file, or a folder whose
``.ics`` files (in its subfolders too) are read — a folder of one file per event, as vdirsyncer, khal and macOS
Calendar keep them, is one calendar and one source. What keeps a source from being read is said with the fix the
user can make (issue 19): a path that does not exist, a folder with no ``.ics`` file in it, one that this user may
not read, something that is neither a file nor a folder (a FIFO would block the run forever).
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

CHECK_THE_PATH = "check the path under Calendar in Settings"


@dataclass(frozen=True)
class Problem:
    """Why a source cannot be read (``ctx.unavailable``'s reason) and what the user can do about it."""

    reason: str
    fix: str


@dataclass
class Listing:
    """The ``.ics`` files of one source, in a stable order; ``problem`` when there is nothing to read at all."""

    files: list[Path]
    problem: Problem | None = None
    unlisted: list[str] = field(default_factory=list)   # subfolders this user may not list


def denied(where: str) -> Problem:
    if sys.platform == "darwin":
        # ~/Library/Calendars is readable only by apps the user gave Full Disk Access.
        fix = "give Magi Full Disk Access (System Settings → Privacy & Security), or check the file's permissions"
    elif sys.platform == "win32":
        fix = "check the file's security settings: your user must be allowed to read it"
    else:
        fix = "let your user read it (check its permissions, e.g. chmod u+r)"
    return Problem(f"permission denied: {where}", fix)


def calendar_files(setting: str) -> Listing:
    """The files the setting ``setting`` (a path as the user wrote it, ``~`` allowed) names."""
    path = Path(setting).expanduser()
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return Listing([], Problem(f"no such file or folder: {setting}", CHECK_THE_PATH))
    except PermissionError:
        return Listing([], denied(setting))
    except OSError as exc:      # a symlink loop, a name too long, an unplugged network drive
        return Listing([], Problem(f"cannot open {setting}: {exc.strerror or exc}", CHECK_THE_PATH))
    if stat.S_ISREG(info.st_mode):
        return Listing([path])
    if not stat.S_ISDIR(info.st_mode):
        return Listing([], Problem(f"not a file or a folder: {setting}", CHECK_THE_PATH))
    return _folder(setting, path)


def _folder(setting: str, folder: Path) -> Listing:
    errors: list[OSError] = []
    found: list[Path] = []
    # os.walk, not Path.rglob: rglob passes over a folder it may not list without a word.
    for root, folders, names in os.walk(folder, onerror=errors.append):
        folders.sort()
        for name in sorted(names):
            if name.lower().endswith(".ics") and _may_be_a_file(Path(root, name)):
                found.append(Path(root, name))
    top = next((e for e in errors if Path(str(e.filename)) == folder), None)
    if top is not None:
        return Listing([], _cannot_list(setting, top))
    unlisted = [str(Path(str(e.filename)).relative_to(folder)) for e in errors if e.filename]
    if not found and errors:
        more = f" (and {len(errors) - 1} more folders)" if len(errors) > 1 else ""
        return Listing([], _cannot_list(f"{setting}: {unlisted[0]}{more}", errors[0]), unlisted)
    if not found:
        return Listing([], Problem(f"no .ics files in {setting}", "choose the folder your calendar program saves .ics "
                                                                    "files in, or the files themselves"))
    return Listing(found, unlisted=unlisted)


def _cannot_list(where: str, error: OSError) -> Problem:
    if isinstance(error, PermissionError):
        return denied(where)
    return Problem(f"cannot list {where}: {error.strerror or error}", CHECK_THE_PATH)


def _may_be_a_file(path: Path) -> bool:
    """A regular file (through a symlink too), or one that cannot be looked at: reading it says why."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        return False        # a dangling symlink, or removed while listing
    except OSError:
        return True
