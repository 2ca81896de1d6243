"""Git: commits and new branches of the repositories the user names.

For each configured repository, every commit reachable from a local branch and not yet seen becomes a
``git_commit`` payload (first line of the message, branch, author, the files it changed — the first
:data:`MAX_PATHS` paths and how many more — and the lines added and removed); a branch not seen before becomes
``git_branch_created``. The commit hash is the item id, so a commit reachable from two branches is stored once.
The history is read with one ``git log`` per walk (git_log.py), not one command per commit.

**Whose commit.** The user's identities are git's ``user.name`` / ``user.email`` (every configuration level,
the repository's own included) plus the ``authors`` setting (git_identity.py). Anyone else's commit is stored
as theirs: it names them as its ``actor`` (it reads "Ana committed to …" and becomes Ana's activity in the
graph, never the user's) and carries a person entity for them. ``others: false`` leaves them out.

**The cursor** is the set of branch tips seen last time, not a date: the next run walks from the new tips and
stops at the old ones (``git log new ^old``), so a commit that arrives late with an old date (a pull, a
rebase, a cherry-pick) is still found. The first run back-fills ``backfill_days`` of history. A long walk saves
where it is every :data:`SAVE_EVERY` commits (the tips it walks to and how many it has done); a run cut short
(stopped, or at the host's cap per run) goes on from there in the next one instead of starting again.

**Repositories that are not whole.** A shallow clone's boundary commits (their parents are absent) are stored
without files or line counts; a partial clone (``--filter=blob:none``) has no file contents, so its commits
carry their paths but no line counts; a repository whose trees are missing too gives commits alone. Each is
counted (``no_stats``, ``no_line_counts``) and nothing is fetched from the remote. A folder that is missing,
is not a repository or cannot be read is *unavailable* with the reason and the fix; a repository git cannot
read is *failing*, named by the path the user wrote.

**Excluded repositories** (the ``repositories`` exclusion list) are neither read nor named: not even the health
says they exist, because an exclusion keeps a name out of the memory, and the status is in the memory.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from magi_desktop.plugin_api import CollectContext, Unavailable, activity, entity, hookimpl

from .git_identity import Identities, of_user, parse_authors
from .git_log import LINES, NOTHING, OFFLINE, PATHS, Commit, is_partial, shallow_boundary, short_error, walk

log = logging.getLogger(__name__)

DEFAULT_BACKFILL_DAYS = 365
MAX_PATHS = 50                  # changed files named per commit; the rest are counted in paths_more
MAX_MESSAGE_CHARS = 300
SAVE_EVERY = 1000               # commits between two saves of a long walk's place
_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")      # SHA-1, SHA-256
GIT_MISSING = ("git not found", "install Git (git-scm.com) and make sure `git` is on the PATH")


class NotReadable(Exception):
    """A configured folder this machine cannot read as a repository: ``reason`` and ``fix`` for the user."""

    def __init__(self, reason: str, fix: str):
        super().__init__(reason)
        self.reason, self.fix = reason, fix


class GitActivity:
    name = "git"
    source_type = "git"
    interval_seconds = 600
    settings_schema = {
        "repositories": {
            "type": "array", "items": {"type": "string"}, "title": "Repositories",
            "description": "Folders of the repositories to read (the folder that holds .git; ~ is your home "
                           "folder)"},
        "authors": {
            "type": "array", "items": {"type": "string"}, "title": "Your other names and e-mails",
            "description": "Who you commit as, besides user.name and user.email in your git configuration: an "
                           "e-mail, a name, or both (\"Ana Lima <ana@example.com>\"). Commits by anyone else are "
                           "theirs (\"Bo committed …\"), never counted as yours"},
        "others": {
            "type": "boolean", "default": True, "title": "Other people's commits",
            "description": "Also keep commits by other people, as theirs (off: only yours are kept)"},
        "backfill_days": {
            "type": "integer", "default": DEFAULT_BACKFILL_DAYS, "title": "First read goes back (days)",
            "description": "How far back the first read of a repository goes (0: all of its history)"},
    }
    privacy_note = ("Reads commit messages, authors, branch names and the names of the files each commit changed "
                    "in the repositories you list (not the code itself). Excluded repositories are not read. "
                    "Nothing leaves this machine.")

    def collect(self, since: Any, ctx: CollectContext) -> Iterator[dict[str, Any]]:
        try:
            import git  # GitPython; imported here so a machine without git only has this collector unavailable
        except ImportError:
            raise Unavailable(*GIT_MISSING) from None

        cursors = dict(since or {})
        authors = parse_authors(ctx.settings.get("authors") or ())
        days = int(ctx.settings.get("backfill_days", DEFAULT_BACKFILL_DAYS) or 0)
        for folder in ctx.settings.get("repositories") or ():
            if ctx.stopping:
                return
            path = Path(folder).expanduser()
            if ctx.excluded("repositories", str(path)):
                continue
            try:
                repo = open_repository(git, folder)
            except NotReadable as exc:
                ctx.unavailable(folder, exc.reason, exc.fix)
                continue
            except git.GitCommandNotFound:
                raise Unavailable(*GIT_MISSING) from None
            identities = of_user(repo, authors)
            if not identities.names and not identities.emails:
                # Stored all the same, but as other people's: say so where the user looks, before months of
                # their own commits become someone else's (a stored commit is not re-read).
                ctx.unavailable(f"{folder} (whose commits)", "no git identity: every commit is stored as someone "
                                "else's", "set user.email in git config (git config --global user.email …) or "
                                "add yours to Your other names and e-mails in Settings")
            ctx.source(folder)
            try:
                reading = _Reading(repo, folder, ctx, identities, ctx.settings.get("others", True))
                yield from reading.commits(cursors, first_window=int(time.time() - days * 86400) if days else 0)
            except git.GitCommandNotFound:
                raise Unavailable(*GIT_MISSING) from None
            except git.GitCommandError as exc:
                ctx.failing(folder, f"git cannot read it: {short_error(exc)}")
            except (git.GitError, ValueError, OSError) as exc:   # an object GitPython cannot parse or find
                ctx.failing(folder, f"{type(exc).__name__}: {exc}"[:300])
            finally:
                repo.close()


def open_repository(git: Any, folder: str) -> Any:
    """The repository at ``folder`` (as the user wrote it), or :class:`NotReadable` saying why not."""
    path = Path(folder).expanduser()
    denied = NotReadable(f"permission denied: {folder}", "give your user read access to it, or remove it from the "
                                                          "repositories")
    try:
        mode = path.stat().st_mode
    except PermissionError:
        raise denied from None
    except (FileNotFoundError, NotADirectoryError):
        raise NotReadable(f"no such repository: {folder}", "check the path in Settings") from None
    except OSError as exc:
        raise NotReadable(f"cannot read {folder}: {exc.strerror}", "check the path in Settings") from None
    if not stat.S_ISDIR(mode):
        raise NotReadable(f"not a folder: {folder}", "name the repository's folder (the one that holds .git)")
    if not os.access(path, os.R_OK | os.X_OK):
        raise denied
    try:
        repo = git.Repo(path)
    except git.NoSuchPathError:
        raise NotReadable(f"no such repository: {folder}", "check the path in Settings") from None
    except PermissionError:
        raise denied from None
    except git.InvalidGitRepositoryError:
        dot_git = path / ".git"
        if dot_git.exists() and not os.access(dot_git, os.R_OK | os.X_OK):
            raise denied from None      # a .git that cannot be read looks like none to GitPython
        raise NotReadable(f"not a Git repository: {folder}",
                          "name the repository's top folder (the one that holds .git)") from None
    repo.git.update_environment(**OFFLINE)      # every command of this repository's, the object readers' too
    try:
        repo.git.rev_parse("--git-dir")
    except git.GitCommandError as exc:
        repo.close()
        if "dubious ownership" not in str(exc):
            raise
        raise NotReadable(f"owned by another user, which git refuses: {folder}",
                          f"if you trust it, run: git config --global --add safe.directory {path}") from None
    return repo


class _Reading:
    """One run's read of one repository: the walk from its cursor, and the payloads it makes."""

    def __init__(self, repo: Any, folder: str, ctx: CollectContext, user: Identities, others: bool):
        self.repo, self.folder, self.ctx, self.user, self.others = repo, folder, ctx, user, others is not False
        self.path = Path(folder).expanduser()
        self.name = self.path.resolve().name
        self.root = os.path.join(repo.working_tree_dir or repo.git_dir, "")   # with its separator: + a path
        self.boundary = shallow_boundary(repo)

    def commits(self, cursors: dict[str, Any], first_window: int) -> Iterator[dict[str, Any]]:
        """This repository's new commits and branches; ``cursors`` (every repository's) is updated and saved."""
        import git

        key = str(self.path.resolve())
        state = _mapping(cursors.get(key))
        known = [sha for sha in _mapping(state.get("tips")).values() if self._exists(sha)]
        pending = _mapping(state.get("walk"))
        if not (pending and all(self._exists(sha) for sha in _mapping(pending.get("to")).values())):
            pending = {}        # a walk begun towards tips that are gone (a rebase and gc since): start again
        if pending:
            target, done, window = dict(pending["to"]), int(pending.get("done") or 0), pending.get("since")
        else:
            target, done = self.branch_tips(), 0
            # The first run (or a cursor from before tips were kept) is bounded by date.
            window = None if state.get("tips") else int(state.get("after") or 0) or first_window or None

        def save_place() -> None:
            place = {k: v for k, v in state.items() if k in ("tips", "branches")}
            cursors[key] = {**place, "walk": {"to": target, "done": done, "since": window}}
            self.ctx.save_cursor(dict(cursors))
            self.ctx.progress(done)

        branch_of: dict[str, str] = {}
        for branch, sha in target.items():
            branch_of.setdefault(sha, branch)
        changes = PATHS if is_partial(self.repo) else LINES
        while branch_of:            # a repository without a commit yet has no branch to walk
            commits = walk(self.repo, list(branch_of), known, since=window, skip=done, changes=changes,
                           max_paths=MAX_PATHS)
            try:
                with closing(commits):      # a run closed early stops git at once
                    for commit in commits:
                        if self.ctx.stopping:
                            save_place()
                            return
                        done += 1
                        payload = self.payload(commit, branch_of.get(commit.start, ""), changes)
                        if payload is not None:
                            yield payload
                        if done % SAVE_EVERY == 0:
                            save_place()
                break
            except git.GitCommandError as exc:
                if changes == NOTHING:
                    raise
                # What the commits changed cannot be read (a tree or a blob is absent): the rest without it.
                log.info("git: %s: reading commits without their changes: %s", self.folder, short_error(exc))
                changes = NOTHING

        if "tips" in state or "branches" in state:   # the first run learns the branches, it does not report them
            before = set(state.get("tips") or state.get("branches") or ())
            for branch in sorted(set(target) - before):
                at = self.repo.commit(target[branch]).committed_date
                yield activity("git", "git_branch_created", at, {"repo": self.name, "branch": branch},
                               item_id=f"{self.name}:branch:{branch}:{target[branch]}",
                               entities=[entity(self.name, "project")])
        cursors[key] = {"tips": target}
        self.ctx.save_cursor(dict(cursors))

    def payload(self, commit: Commit, branch: str, changes: str) -> dict[str, Any] | None:
        mine = self.user.owns(commit.author, commit.email)
        if not mine and not self.others:
            return None
        where = f"{self.folder}: {commit.sha[:12]}"
        if commit.sha in self.boundary:
            commit = commit.without_changes()
            self.ctx.skipped("no_stats", f"{where} (the shallow clone's first commit: its parent is absent)")
        elif commit.files is None and len(commit.parents) < 2:
            self.ctx.skipped("no_stats", f"{where} (the repository lacks what it changed)")
        elif changes == PATHS and commit.files:
            self.ctx.skipped("no_line_counts", f"{where} (a partial clone: the files' contents are absent)")
        provenance: dict[str, Any] = {"repo": self.name, "branch": branch, "sha": commit.sha,
                                      "message": commit.subject[:MAX_MESSAGE_CHARS], "author": commit.author}
        if commit.files is not None:
            provenance["files_changed"] = commit.files
        if commit.insertions is not None:
            provenance["insertions"], provenance["deletions"] = commit.insertions, commit.deletions
        paths = [p for p in commit.paths if not self.ctx.excluded("paths", self.root + p.replace("/", os.sep))]
        if paths:
            provenance["paths"] = paths
            if commit.files and commit.files > len(paths):
                provenance["paths_more"] = commit.files - len(paths)
        entities = [entity(self.name, "project")]
        actor = None
        if not mine:
            actor = commit.author or commit.email or "someone else"
            entities.append(entity(actor, "person"))
        return activity("git", "git_commit", commit.committed_at, provenance, item_id=f"{self.name}:{commit.sha}",
                        entities=entities, actor=actor)

    def branch_tips(self) -> dict[str, str]:
        """branch → the commit it points at, read from the refs alone: a tip whose commit is missing fails the walk
        with git's own words, and a broken ref is left out (git warns and goes on)."""
        listing = self.repo.git.for_each_ref("--format=%(objectname) %(refname)", "refs/heads/")
        tips = {}
        for line in listing.splitlines():
            sha, _, ref = line.partition(" ")
            tips[ref.removeprefix("refs/heads/")] = sha
        return tips

    def _exists(self, sha: Any) -> bool:
        """A tip seen last time may be gone (a rebased and garbage-collected branch): then it bounds nothing."""
        if not (isinstance(sha, str) and _HASH.fullmatch(sha)):
            return False
        try:
            return self.repo.git.get_object_header(sha)[1] == b"commit"      # one cat-file process for them all
        except ValueError:
            return False


def _mapping(value: Any) -> Mapping[str, Any]:
    """A part of the cursor, or nothing when it is not what this version wrote."""
    return value if isinstance(value, Mapping) else {}


@hookimpl
def register_collectors(register):
    register(GitActivity())
