"""The Git collector against real repositories made with GitPython."""

import os

import git
from collecting import Ctx
from magi_plugins.git import GitActivity

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.l1 import event_rows

T0 = 1_764_000_000



def commit(repo, name, text, message, at, author="Ana <ana@example.com>"):
    path = os.path.join(repo.working_tree_dir, name)
    with open(path, "w") as f:
        f.write(text)
    repo.index.add([path])
    who = git.Actor(*author[:-1].split(" <"))
    date = f"{at} +0000"
    return repo.index.commit(message, author=who, committer=who, author_date=date, commit_date=date)


def make_repo(path):
    repo = git.Repo.init(path, initial_branch="main")
    commit(repo, "a.txt", "one\n", "Start the project", T0)
    commit(repo, "b.txt", "two\nthree\n", "Add the parser\n\nLonger body.", T0 + 60)
    return repo


def test_commits_and_new_branches_incrementally(tmp_path):
    repo = make_repo(tmp_path / "falcon")
    collector = GitActivity()
    ctx = Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 0})
    payloads = list(collector.collect(None, ctx))
    assert [p["provenance"]["message"] for p in payloads] == ["Add the parser", "Start the project"]
    first = payloads[0]
    assert first["activity"]["action_code"] == "git_commit" and first["occurred_at"] == T0 + 60
    assert first["provenance"]["repo"] == "falcon" and first["provenance"]["branch"] == "main"
    assert first["provenance"]["files_changed"] == 1 and first["provenance"]["insertions"] == 2
    assert first["entities"] == [{"mention_text": "falcon", "entity_type": "project"}]
    assert list(collector.collect(ctx.cursor, ctx)) == []     # nothing new: nothing yielded
    repo.create_head("feature/export").checkout()
    commit(repo, "c.txt", "x\n", "Export to CSV", T0 + 120)
    later = list(collector.collect(ctx.cursor, ctx))
    kinds = [(p["activity"]["action_code"], p["provenance"].get("message") or p["provenance"]["branch"])
             for p in later]
    assert kinds == [("git_commit", "Export to CSV"), ("git_branch_created", "feature/export")]


def test_authors_and_exclusions(tmp_path):
    repo = make_repo(tmp_path / "mine")
    commit(repo, "d.txt", "d\n", "Someone else's fix", T0 + 90, author="Bo <bo@example.com>")
    make_repo(tmp_path / "secret")
    ctx = Ctx({"repositories": [str(tmp_path / "mine"), str(tmp_path / "secret"), str(tmp_path / "missing")],
               "authors": ["ana@example.com"], "backfill_days": 0}, {"repositories": ["secret"]})
    payloads = list(GitActivity().collect(None, ctx))
    assert {p["provenance"]["repo"] for p in payloads} == {"mine"}
    assert all(p["provenance"]["author"] == "Ana" for p in payloads) and len(payloads) == 2


def test_git_under_the_supervisor_into_memory(tmp_path, memory):
    make_repo(tmp_path / "falcon")
    settings = {"git": {"repositories": [str(tmp_path / "falcon")], "backfill_days": 0}}
    sup = Supervisor(memory, [GitActivity()], settings=settings)
    sup.tick()
    assert sup.wait_idle()
    texts = sorted(r["content"] for r in event_rows(memory.db.reader()))
    assert texts == ["Git: Committed to falcon on branch main: “Add the parser” (1 files changed)",
                     "Git: Committed to falcon on branch main: “Start the project” (1 files changed)"]
    sup.stop()


def test_a_late_arriving_commit_with_an_old_date_is_still_found(tmp_path):
    """A pull or cherry-pick brings a commit dated before the last run: tips, not dates, bound the walk."""
    repo = make_repo(tmp_path / "falcon")
    collector, ctx = GitActivity(), Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 0})
    assert len(list(collector.collect(None, ctx))) == 2
    commit(repo, "old.txt", "o\n", "Fix written on the train last week", T0 - 7 * 86400)
    later = list(collector.collect(ctx.cursor, ctx))
    assert [p["provenance"]["message"] for p in later] == ["Fix written on the train last week"]


def test_the_first_run_backfills_only_backfill_days(tmp_path):
    import time

    now = int(time.time())
    repo = git.Repo.init(tmp_path / "falcon", initial_branch="main")
    commit(repo, "a.txt", "a\n", "Two years ago", now - 730 * 86400)
    commit(repo, "b.txt", "b\n", "Last month", now - 30 * 86400)
    ctx = Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 90})
    assert [p["provenance"]["message"] for p in GitActivity().collect(None, ctx)] == ["Last month"]
    assert GitActivity.settings_schema["backfill_days"]["default"] == 365


def test_a_rewritten_branch_does_not_break_the_cursor(tmp_path):
    """After a rebase the old tip may be gone; the walk still works and repeats nothing already stored twice."""
    make_repo(tmp_path / "falcon")
    collector, ctx = GitActivity(), Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 0})
    list(collector.collect(None, ctx))
    ctx.cursor = {k: {"tips": {"main": "0" * 40}} for k in ctx.cursor}     # a tip that no longer exists
    again = list(collector.collect(ctx.cursor, ctx))
    assert {p["provenance"]["message"] for p in again} == {"Add the parser", "Start the project"}
    assert len({p["source_item_id"] for p in again}) == 2      # the same ids: duplicates when stored
