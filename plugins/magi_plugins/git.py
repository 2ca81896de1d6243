"""Git: commits and new branches of the repositories the user names.

For each configured repository, every commit reachable from a local branch
and newer than the repository's cursor becomes a ``git_commit`` payload (first
line of the message, branch, files changed, insertions/deletions, author); a
branch not seen before becomes ``git_branch_created``. The commit hash is the
item id, so a commit reachable from two branches is stored once.
"""

from __future__ import annotations

from pathlib import Path

from magi_desktop.plugin_api import activity, entity, hookimpl


class GitActivity:
    name = "git"
    source_type = "git"
    interval_seconds = 600
    settings_schema = {
        "repositories": {"type": "array", "items": {"type": "string"}, "description": "Repository folders to read"},
        "authors": {"type": "array", "items": {"type": "string"},
                    "description": "Only commits by these names or e-mails (empty: every author)"},
    }
    privacy_note = ("Reads commit messages, branch names and change counts of the repositories you list (not the "
                    "code itself). Excluded repositories are skipped. Nothing leaves this machine.")

    def collect(self, since, ctx):
        import git  # GitPython; imported here so a broken git install only disables this collector

        cursors = dict(since or {})
        authors = {a.casefold() for a in ctx.settings.get("authors") or ()}
        for folder in ctx.settings.get("repositories") or ():
            path = Path(folder).expanduser()
            if ctx.stopping:
                return
            if ctx.excluded("repositories", str(path)) or not path.is_dir():
                continue
            try:
                repo = git.Repo(path)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                continue
            key = str(path.resolve())
            state = cursors.get(key, {"after": 0, "branches": None})
            name = path.resolve().name
            newest = state["after"]
            seen: set[str] = set()
            window = {"since": int(state["after"])} if state["after"] else {}
            for head in repo.heads:
                for commit in repo.iter_commits(head, **window):
                    # The cursor's own second is read again: a commit made in it after the last run
                    # is not missed, and one already stored is a duplicate by its hash.
                    if commit.hexsha in seen or commit.committed_date < state["after"]:
                        continue
                    seen.add(commit.hexsha)
                    who = f"{commit.author.name} <{commit.author.email}>"
                    if authors and not any(a in who.casefold() for a in authors):
                        continue
                    stats = commit.stats.total
                    newest = max(newest, commit.committed_date)
                    yield activity("git", "git_commit", commit.committed_date, {
                        "repo": name, "branch": head.name, "sha": commit.hexsha,
                        "message": commit.message.strip().splitlines()[0][:300] if commit.message.strip() else "",
                        "files_changed": stats.get("files", 0), "insertions": stats.get("insertions", 0),
                        "deletions": stats.get("deletions", 0), "author": commit.author.name,
                    }, item_id=f"{name}:{commit.hexsha}", entities=[entity(name, "project")])
            branches = sorted(h.name for h in repo.heads)
            if state["branches"] is not None:          # the first run learns the branches, it does not report them
                for branch in sorted(set(branches) - set(state["branches"])):
                    at = repo.heads[branch].commit.committed_date
                    yield activity("git", "git_branch_created", at, {"repo": name, "branch": branch},
                                   item_id=f"{name}:branch:{branch}:{repo.heads[branch].commit.hexsha}",
                                   entities=[entity(name, "project")])
            cursors[key] = {"after": newest, "branches": branches}
            ctx.save_cursor(dict(cursors))


@hookimpl
def register_collectors(register):
    register(GitActivity())
