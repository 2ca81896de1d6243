"""Git: commits and new branches of the repositories the user names.

For each configured repository, every commit reachable from a local branch
and not yet seen becomes a ``git_commit`` payload (first line of the message,
branch, files changed, insertions/deletions, author); a branch not seen before
becomes ``git_branch_created``. The commit hash is the item id, so a commit
reachable from two branches is stored once.

The cursor is the set of branch tips seen last time, not a date: the next run
walks from the new tips and stops at the old ones (``git rev-list new ^old``).
A commit that arrives late with an old date (a pull, a rebase, a cherry-pick)
is therefore still found. The first run back-fills ``backfill_days`` of history.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from magi_desktop.plugin_api import activity, entity, hookimpl

DEFAULT_BACKFILL_DAYS = 365


class GitActivity:
    name = "git"
    source_type = "git"
    interval_seconds = 600
    settings_schema = {
        "repositories": {"type": "array", "items": {"type": "string"}, "description": "Repository folders to read"},
        "authors": {"type": "array", "items": {"type": "string"},
                    "description": "Only commits by these names or e-mails (empty: every author)"},
        "backfill_days": {"type": "integer", "default": DEFAULT_BACKFILL_DAYS,
                          "description": "How far back the first run reads a repository (0: all of it)"},
    }
    privacy_note = ("Reads commit messages, branch names and change counts of the repositories you list (not the "
                    "code itself). Excluded repositories are skipped. Nothing leaves this machine.")

    def collect(self, since, ctx):
        import git  # GitPython; imported here so a broken git install only disables this collector

        cursors = dict(since or {})
        authors = {a.casefold() for a in ctx.settings.get("authors") or ()}
        days = int(ctx.settings.get("backfill_days", DEFAULT_BACKFILL_DAYS) or 0)
        for folder in ctx.settings.get("repositories") or ():
            path = Path(folder).expanduser()
            if ctx.stopping:
                return
            if ctx.excluded("repositories", str(path)):
                continue
            try:
                repo = git.Repo(path)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                ctx.skipped("not_a_repository", str(path))     # a configured folder that moved or was never one
                continue
            key = str(path.resolve())
            state = cursors.get(key) or {}
            name = path.resolve().name
            known = [sha for sha in state.get("tips", {}).values() if _exists(repo, sha)]
            window: dict[str, Any] = {}   # git rev-list options
            if not state.get("tips"):
                # First run (or a cursor from before tips were kept): bounded by date.
                after = int(state.get("after") or 0) or (int(time.time() - days * 86400) if days else 0)
                window = {"since": after} if after else {}
            seen: set[str] = set()
            for head in repo.heads:
                if ctx.stopping:
                    return
                revisions = [head.name, *(f"^{sha}" for sha in known)]   # handed to `git rev-list` as they are
                for commit in repo.iter_commits(revisions, **window):  # type: ignore[arg-type]  # stub: a single rev
                    if commit.hexsha in seen:
                        continue
                    seen.add(commit.hexsha)
                    who = f"{commit.author.name} <{commit.author.email}>"
                    if authors and not any(a in who.casefold() for a in authors):
                        continue
                    stats = commit.stats.total
                    message = commit.message.strip()
                    yield activity("git", "git_commit", commit.committed_date, {
                        "repo": name, "branch": head.name, "sha": commit.hexsha,
                        "message": message.splitlines()[0][:300] if message else "",
                        "files_changed": stats.get("files", 0), "insertions": stats.get("insertions", 0),
                        "deletions": stats.get("deletions", 0), "author": commit.author.name,
                    }, item_id=f"{name}:{commit.hexsha}", entities=[entity(name, "project")])
            tips = {h.name: h.commit.hexsha for h in repo.heads}
            if "branches" in state or "tips" in state:   # the first run learns the branches, it does not report them
                before = set(state.get("tips") or state.get("branches") or ())
                for branch in sorted(set(tips) - before):
                    at = repo.heads[branch].commit.committed_date
                    yield activity("git", "git_branch_created", at, {"repo": name, "branch": branch},
                                   item_id=f"{name}:branch:{branch}:{tips[branch]}",
                                   entities=[entity(name, "project")])
            cursors[key] = {"tips": tips}
            ctx.save_cursor(dict(cursors))


def _exists(repo, sha: str) -> bool:
    """A tip seen last time may be gone (a rebased and garbage-collected branch): then it bounds nothing."""
    import git

    try:
        repo.git.cat_file("-e", f"{sha}^{{commit}}")
        return True
    except git.GitCommandError:
        return False


@hookimpl
def register_collectors(register):
    register(GitActivity())
