"""Terminal: commands from bash, zsh (extended history) and fish history files.

Each run reads only what was appended since the file's stored offset (a file
that shrank or was replaced is read again from the start; the item id — a hash
of shell, time and command — makes the re-read a no-op). Secrets in commands
(`--password=…`, tokens, `mysql -p…`) are redacted by the core before anything
is stored. zsh and fish record when a command ran; bash does only with
``HISTTIMEFORMAT`` (``#<epoch>`` lines), otherwise the file's modification time
stands in. Lines that are not text a person typed — binary garbage, NULs, not
UTF-8, absurdly long — are skipped and counted by reason (``history_lines``).

Each history file is a source (``ctx.source("~/.zsh_history")``). A configured
file that is missing or unreadable is *unavailable* with the reason and the fix;
one that fails to read otherwise is *failing*. With no file configured and none
in the usual places the collector is unavailable: "no shell history found".
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from magi_desktop.plugin_api import Unavailable, activity, hookimpl

from .history_lines import good_text, screen

FIX_FILES = "set History files in the terminal collector's Settings to your shell's history file"
NOTHING_FOUND = "no shell history found (looked for ~/.bash_history, ~/.zsh_history, ~/.zhistory and fish_history)"
NOTHING_FOUND_FIX = (f"{FIX_FILES}; zsh keeps one only with HISTFILE and SAVEHIST set (in ~/.zshrc), bash writes "
                     "~/.bash_history when a shell exits")

_ZSH_EXTENDED = re.compile(r"^: (\d+):\d+;(.*)$")
_BASH_TIME = re.compile(r"^#(\d{9,11})$")


def default_files() -> list[tuple[str, Path]]:
    home = Path.home()
    candidates = [("bash", home / ".bash_history"), ("zsh", Path(os.environ.get("HISTFILE", home / ".zsh_history"))),
                  ("zsh", home / ".zhistory"), ("fish", home / ".local/share/fish/fish_history")]
    seen, out = set(), []
    for shell, path in candidates:
        if path.is_file() and path not in seen:
            seen.add(path)
            out.append((shell, path))
    return out


def display_name(path: Path) -> str:
    """How health names a history file: below the home folder as ``~/…``."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def shell_of(path: Path) -> str:
    name = path.name
    return "fish" if "fish" in name else "zsh" if "zsh" in name or name == ".zhistory" else "bash"


def parse_zsh(text: str, fallback: float) -> Iterator[tuple[float, str]]:
    entry: list[str] | None = None
    when = fallback
    for line in text.split("\n"):
        match = _ZSH_EXTENDED.match(line)
        if match:
            if entry is not None:
                yield when, "\n".join(entry)
            when, entry = float(match.group(1)), [match.group(2)]
        elif entry is not None and entry[-1].endswith("\\"):
            entry[-1] = entry[-1][:-1]
            entry.append(line)                     # a multi-line command continues
        elif line.strip():
            if entry is not None:
                yield when, "\n".join(entry)
            when, entry = fallback, [line]         # plain (non-extended) history
    if entry is not None:
        yield when, "\n".join(entry)


def parse_bash(text: str, fallback: float) -> Iterator[tuple[float, str]]:
    when = fallback
    for line in text.split("\n"):
        match = _BASH_TIME.match(line)
        if match:
            when = float(match.group(1))
        elif line.strip():
            yield when, line


def parse_fish(text: str, fallback: float) -> Iterator[tuple[float, str]]:
    command, when = None, fallback
    for line in text.split("\n"):
        if line.startswith("- cmd: "):
            if command is not None:
                yield when, command
            command, when = _fish_unescape(line[len("- cmd: "):]), fallback
        elif line.startswith("  when: ") and command is not None:
            try:
                when = float(line[len("  when: "):])
            except ValueError:
                pass
    if command is not None:
        yield when, command


def _fish_unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\\\", "\\")


PARSERS = {"zsh": parse_zsh, "bash": parse_bash, "fish": parse_fish}


class TerminalHistory:
    name = "terminal"
    source_type = "terminal"
    interval_seconds = 60
    settings_schema = {
        "files": {"type": "array", "items": {"type": "string"}, "title": "History files",
                  "description": "Shell history files to read (bash, zsh or fish, told by the file's name); empty: "
                                 "~/.bash_history, ~/.zsh_history (or $HISTFILE), ~/.zhistory and fish_history"},
        "ignore": {"type": "array", "items": {"type": "string"}, "title": "Commands to ignore",
                   "description": "Commands starting with these words are not stored (e.g. ls, cd)"},
    }
    privacy_note = ("Reads the commands in your bash, zsh and fish history. Passwords and tokens in commands are "
                    "redacted before anything is stored; excluded paths are skipped. Nothing leaves this machine.")

    def files(self, settings) -> list[tuple[str, Path]]:
        explicit = settings.get("files") or []
        return [(shell_of(Path(f).expanduser()), Path(f).expanduser()) for f in explicit] or default_files()

    def watch_paths(self, settings) -> list[Path]:
        """The host watches these (watchdog) and runs the collector as soon as one changes."""
        return [path for _, path in self.files(settings)]

    def collect(self, since, ctx):
        cursors = dict(since or {})
        ignore = tuple(ctx.settings.get("ignore") or ())
        files = self.files(ctx.settings)
        if not files:
            raise Unavailable(NOTHING_FOUND, NOTHING_FOUND_FIX)
        for shell, path in files:
            if ctx.stopping:
                return
            if ctx.excluded("paths", str(path)):
                continue
            source = display_name(path)
            ctx.source(source)
            try:
                data, stat, offset = self._appended(path, cursors.get(str(path)))
            except FileNotFoundError:
                ctx.unavailable(source, f"no such file: {path}", FIX_FILES)
                continue
            except PermissionError:
                ctx.unavailable(source, f"permission denied: {path}", "let the user Magi runs as read it")
                continue
            except IsADirectoryError:      # (Windows says PermissionError)
                ctx.unavailable(source, f"a folder, not a history file: {path}", FIX_FILES)
                continue
            except OSError as exc:
                ctx.failing(source, f"cannot read {path}: {type(exc).__name__}: {exc}")
                continue
            # Only complete lines: a command being written now is read next time.
            end = data.rfind(b"\n") + 1
            yield from self._commands(shell, path, data[:end], offset, stat.st_mtime, ignore, ctx)
            cursors[str(path)] = {"offset": offset + end, "inode": stat.st_ino}
            ctx.save_cursor(dict(cursors))

    @staticmethod
    def _appended(path: Path, state: dict | None) -> tuple[bytes, os.stat_result, int]:
        """What was appended to ``path`` since ``state`` (all of it when the file shrank or was replaced), its
        stat and the offset the bytes start at."""
        with path.open("rb") as f:
            stat = os.fstat(f.fileno())
            state = state or {"offset": 0, "inode": stat.st_ino}
            same = state.get("inode") == stat.st_ino and state.get("offset", 0) <= stat.st_size
            offset = state.get("offset", 0) if same else 0
            f.seek(offset)
            return f.read(), stat, offset

    @staticmethod
    def _commands(shell, path, data, offset, mtime, ignore, ctx):
        lines = screen(data, zsh=shell == "zsh")
        for line in lines:
            if line.reason is not None:
                ctx.skipped(line.reason, f"{path} at byte {offset + line.offset}")
        text = good_text(lines)
        fallback = -1.0           # entries without a recorded time get the file's time, but not in their id
        for when, command in PARSERS[shell](text, fallback):
            command = command.strip()
            if not command or (ignore and command.split()[0] in ignore):
                continue
            # A timed entry is identified by its time; an untimed one by its text, so a history the
            # shell rewrote (a new file, a new mtime) is not stored again. Repeats of an untimed
            # command are one event — the file cannot tell them apart.
            digest = hashlib.sha1(f"{shell}\0{when if when != fallback else ''}\0{command}".encode()
                                  ).hexdigest()[:16]
            when = mtime if when == fallback else when
            yield activity("terminal", "run_command", when, {"command": command, "shell": shell},
                           item_id=f"{shell}:{digest}")


@hookimpl
def register_collectors(register):
    register(TerminalHistory())
