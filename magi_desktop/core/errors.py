"""The memory's exception families (architecture §14), below both the store and ``Memory`` so any layer
can raise them and every caller (the CLI, the app, the MCP server) can tell them apart:

- :class:`MagiError`, the root: something the memory raises on purpose. Anything else escaping a call
  (a plain ``ValueError``, a ``KeyError``…) is a bug and is reported as one, with a traceback.
- :class:`InvalidInput` (also a ``ValueError``): the caller's input is wrong; the message says what to
  change. ``PayloadError``, ``RememberRejected``, ``ReviewError``, ``ImportFailed`` … are kinds of it.
- :class:`MemoryUnavailable` (also a ``RuntimeError``): the environment is wrong — the database cannot be
  opened or written — and under it ``DiskFull``, ``DatabaseCorrupt``, ``MemoryBusy``, ``SchemaTooNew``.
  The LLM endpoint's ``LLMError`` and the embedding model's ``ModelNotInstalled`` are environment errors
  under the root too (``core/llm/base.py``, ``core/embed/minilm.py``).
"""

from __future__ import annotations

from pathlib import Path


class MagiError(Exception):
    """The root of every error the memory raises on purpose."""


class InvalidInput(MagiError, ValueError):
    """Bad input from a caller (an argument, a payload, a file to import): nothing was done; the message says
    what to change. A ``ValueError`` too, so callers that caught ``ValueError`` still do."""


class MemoryUnavailable(MagiError, RuntimeError):
    """The database cannot be opened or written (permissions, corruption, a full disk, a newer schema…)."""


class DiskFull(MemoryUnavailable):
    """A write failed because the disk (or the database's size limit) is full. Nothing was written by it,
    nothing committed before it is lost, and reads still work: the memory is read-only until space
    is freed, then the next write succeeds by itself."""

    def __init__(self, path: Path | str, detail: str = ""):
        self.path = Path(path) if str(path) != ":memory:" else path
        super().__init__(
            f"the disk holding the memory ({path}) is full{f' ({detail})' if detail else ''}: nothing new is "
            "stored until space is freed — delete or move files on that disk (or choose another data folder "
            "in the settings); the memory keeps answering meanwhile and resumes writing by itself")


class DatabaseCorrupt(MemoryUnavailable):
    """The database file is damaged. ``backups`` are the automatic backups that can replace it
    (newest first; see ``magi restore``)."""

    def __init__(self, path: Path | str, detail: str, backups: list | None = None):
        self.path = Path(path)
        self.detail = detail = " ".join(str(detail).split())[:240]
        self.backups = list(backups or [])
        if self.backups:
            newest = self.backups[0]
            remedy = (f"restore the newest automatic backup ({newest.label}) with `magi restore` "
                      "(the damaged file is kept aside, never deleted)")
        else:
            remedy = ("there is no automatic backup of it yet: keep a copy of the file, then try "
                      f"`sqlite3 {self.path.name} .recover` on the copy, or move it away to start afresh")
        super().__init__(f"the memory database {self.path} is corrupt ({detail}); {remedy}")


class MemoryBusy(MemoryUnavailable):
    """Another program held the memory's write lock for longer than this caller would wait. Nothing was
    written by the refused call; calling again later is safe."""

    def __init__(self, path: Path | str, waited: float):
        self.path, self.waited = path, waited
        super().__init__(
            f"the memory ({path}) is busy: another program has held its write lock for {waited:.0f} s "
            "(a long import or restore, or a stuck process); nothing was written — try again, and check "
            "for a stuck `magi` process if it persists")
