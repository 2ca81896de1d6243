"""A repository's history read with one ``git log`` per walk, parsed as it streams.

One process for the whole walk, not one per commit: ``--numstat`` (or ``--name-only``) gives each commit's
changed files with it, so a 20,000-commit back-fill is one read of git's output. Output is NUL-separated
(``-z``), so a path with a tab, a newline or non-ASCII letters comes through as it is, never quoted.

What a walk may read of each commit's changes is its :data:`Changes`:

* ``LINES`` — paths and line counts. Line counts need the files' contents (blobs).
* ``PATHS`` — paths only, which need only trees: a partial clone (``--filter=blob:none``) has its trees but
  not its blobs, and counting lines there would make git fetch every blob from the remote.
* ``NOTHING`` — the commits alone, for a repository whose trees are missing too (``--filter=tree:0``).

Git never reaches the network here: a missing object is an error (``GIT_NO_LAZY_FETCH``, and for gits older
than 2.44, which do not know it, no transport is allowed), never a silent download, and never a password prompt.
"""

from __future__ import annotations

import subprocess
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple

Changes = Literal["lines", "paths", "nothing"]
LINES: Changes = "lines"
PATHS: Changes = "paths"
NOTHING: Changes = "nothing"

OFFLINE = {"GIT_NO_LAZY_FETCH": "1", "GIT_ALLOW_PROTOCOL": "none", "GIT_TERMINAL_PROMPT": "0"}

_START = b"\x1e"        # before each commit's header; a numstat line starts with a digit or "-", a path with "\n"
# hash, parents, author and e-mail (after .mailmap), committer time, the start the walk reached it from, subject
_FORMAT = "%x1e%H%x00%P%x00%aN%x00%aE%x00%ct%x00%S%x00%s"
_HEADER_FIELDS = 7
_READ_SIZE = 1 << 16
# Settings of the user's that would change what git log prints or make it run programs: turned off.
_PLAIN = ("--no-renames", "--no-ext-diff", "--no-textconv", "--no-show-signature", "--no-color", "--encoding=UTF-8")
_DIFF_OPTIONS: dict[Changes, tuple[str, ...]] = {LINES: ("--numstat",), PATHS: ("--name-only",), NOTHING: ()}


class Commit(NamedTuple):
    sha: str
    parents: tuple[str, ...]
    author: str
    email: str
    committed_at: int
    start: str                      # the starting point (a tip's hash) the walk reached it from
    subject: str                    # the first paragraph of the message, on one line
    paths: tuple[str, ...]          # the first ``max_paths`` changed files, in git's order
    files: int | None               # how many files it changed; None when the walk did not read changes
    insertions: int | None          # None when not read (or for binary files only)
    deletions: int | None

    def without_changes(self) -> Commit:
        return self._replace(paths=(), files=None, insertions=None, deletions=None)


def walk(repo: Any, starts: Iterable[str], exclude: Iterable[str] = (), *, since: int | None = None, skip: int = 0,
         changes: Changes = LINES, max_paths: int = 50) -> Generator[Commit, None, None]:
    """The commits reachable from ``starts`` and not from ``exclude`` (hashes), newest first, the first ``skip``
    left out; ``since`` (epoch seconds) bounds the walk by commit date. A merge's changes are not read (git
    shows none by default): it has ``files`` None. Raises ``git.GitCommandError`` — after the commits it could
    read — when git fails."""
    revisions = "".join(f"{sha}\n" for sha in starts) + "".join(f"^{sha}\n" for sha in exclude)
    options = ["--stdin", "--source", "-z", f"--format={_FORMAT}", *_PLAIN, *_DIFF_OPTIONS[changes]]
    if since:
        options.append(f"--since={int(since)}")
    if skip:
        options.append(f"--skip={int(skip)}")
    process = repo.git.log(*options, as_process=True, istream=subprocess.PIPE, env=OFFLINE)
    finished = False
    try:
        process.stdin.write(revisions.encode("ascii"))
        process.stdin.close()
        yield from _parse(_chunks(process.stdout), changes, max_paths)
        finished = True
    finally:
        if not finished:            # the caller stopped early: git need not print the rest
            process.proc.kill()
        try:
            process.wait()
        except Exception:
            if finished:
                raise
        process.stdout.close()


def is_partial(repo: Any) -> bool:
    """A partial clone: some objects stay on the remote (``extensions.partialClone``, a ``promisor`` remote)."""
    reader = repo.config_reader("repository")
    if reader.has_section("extensions") and reader.get_value("extensions", "partialclone", ""):
        return True
    return any(reader.get_value(section, "promisor", False) is True
               for section in reader.sections() if section.startswith("remote "))


def shallow_boundary(repo: Any) -> frozenset[str]:
    """The commits a shallow clone cut the history below: their parents are absent, so what they changed is not
    known (git shows every file they hold as added)."""
    try:
        text = (Path(repo.common_dir) / "shallow").read_text("ascii")
    except (FileNotFoundError, UnicodeDecodeError):
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def short_error(exc: BaseException) -> str:
    """git's own complaint ("fatal: bad object …") rather than GitPython's three lines about the command."""
    stderr = getattr(exc, "stderr", None)
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else str(stderr or "")
    lines = [line.strip(" '\"") for line in text.replace("\\n", "\n").splitlines()]
    lines = [line.removeprefix("stderr: ").strip(" '\"") for line in lines if line.strip(" '\"")]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or [str(exc)])[0][:300]


def _chunks(stream: Any) -> Iterator[bytes]:
    while chunk := stream.read(_READ_SIZE):
        yield chunk


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _parse(chunks: Iterable[bytes], changes: Changes, max_paths: int) -> Iterator[Commit]:
    header: list[bytes] = []
    paths: list[str] = []
    files = insertions = deletions = 0
    rest = b""

    def finish() -> Commit:
        sha, parents, author, email, at, start, subject = (_text(field) for field in header)
        merge = len(parents.split()) > 1
        read = changes != NOTHING and not (merge and not files)      # git shows a merge's changes only if asked
        lines = read and changes == LINES
        return Commit(sha, tuple(parents.split()), author, email, int(at or 0), start, subject, tuple(paths),
                      files if read else None, insertions if lines else None, deletions if lines else None)

    for chunk in chunks:
        *tokens, rest = (rest + chunk).split(b"\0")
        for token in tokens:
            if token.startswith(_START) and (not header or len(header) >= _HEADER_FIELDS):
                if header:
                    yield finish()
                header, paths, files, insertions, deletions = [token[1:]], [], 0, 0, 0
            elif len(header) < _HEADER_FIELDS:
                header.append(token)
            elif entry := token.lstrip(b"\n"):
                path = entry
                if changes == LINES:
                    added, deleted, path = (entry.split(b"\t", 2) + [b"", b""])[:3]
                    insertions += int(added) if added.isdigit() else 0      # "-" for a binary file
                    deletions += int(deleted) if deleted.isdigit() else 0
                files += 1
                if len(paths) < max_paths:
                    paths.append(_text(path))
    if header:
        yield finish()
