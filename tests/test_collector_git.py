"""The Git collector against real repositories made with GitPython and git itself: shallow and partial clones,
commits by several authors, folders that cannot be read, a back-fill cut and resumed."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import git
import pytest
from collecting import Ctx
from magi_plugins import git as git_plugin
from magi_plugins.git import GitActivity

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.graph import named_edges
from magi_desktop.core.store.l1 import event_rows

T0 = 1_764_000_000
ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """git's global configuration is the test's own (not the machine's): the user is Ana."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    (folder / ".gitconfig").write_text("[user]\n\tname = Ana\n\temail = ana@example.com\n")
    return folder


def commit(repo, name, text, message, at, author="Ana <ana@example.com>"):
    path = os.path.join(repo.working_tree_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
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


def run_git(*args, cwd=None):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def missing_objects(path):
    """Objects a partial clone left on its remote (git lists them without fetching)."""
    out = subprocess.run(["git", "rev-list", "--objects", "--all", "--missing=print"], cwd=path, check=True,
                         capture_output=True, text=True).stdout
    return sorted(line for line in out.splitlines() if line.startswith("?"))


def collect(folder, **settings):
    ctx = Ctx({"repositories": [str(folder)], "backfill_days": 0, **settings})
    return list(GitActivity().collect(None, ctx)), ctx


def messages(payloads):
    return [p["provenance"]["message"] for p in payloads]


def run_once(sup, name="git"):
    sup.status[name].next_run_at = 0
    assert name in sup.tick()
    assert sup.wait_idle()


# ------------------------------------------------------------------------------------------- what it reads

def test_commits_and_new_branches_incrementally(tmp_path):
    repo = make_repo(tmp_path / "falcon")
    collector = GitActivity()
    ctx = Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 0})
    payloads = list(collector.collect(None, ctx))
    assert messages(payloads) == ["Add the parser", "Start the project"]
    first = payloads[0]
    assert first["activity"]["action_code"] == "git_commit" and first["occurred_at"] == T0 + 60
    assert first["provenance"]["repo"] == "falcon" and first["provenance"]["branch"] == "main"
    assert first["provenance"]["files_changed"] == 1 and first["provenance"]["insertions"] == 2
    assert first["provenance"]["paths"] == ["b.txt"] and "actor" not in first["provenance"]
    assert first["entities"] == [{"mention_text": "falcon", "entity_type": "project"}]
    assert ctx.sources == {str(tmp_path / "falcon"): ("read", None, None)} and not ctx.skips
    assert list(collector.collect(ctx.cursor, ctx)) == []     # nothing new: nothing yielded
    repo.create_head("feature/export").checkout()
    commit(repo, "c.txt", "x\n", "Export to CSV", T0 + 120)
    later = list(collector.collect(ctx.cursor, ctx))
    kinds = [(p["activity"]["action_code"], p["provenance"].get("message") or p["provenance"]["branch"])
             for p in later]
    assert kinds == [("git_commit", "Export to CSV"), ("git_branch_created", "feature/export")]
    assert later[0]["provenance"]["branch"] == "feature/export"


def test_git_under_the_supervisor_into_memory(tmp_path, memory):
    make_repo(tmp_path / "falcon")
    settings = {"git": {"repositories": [str(tmp_path / "falcon")], "backfill_days": 0}}
    sup = Supervisor(memory, [GitActivity()], settings=settings)
    run_once(sup)
    texts = sorted(r["content"] for r in event_rows(memory.db.reader()))
    assert texts == ["Git: Committed to falcon on branch main: “Add the parser” (1 files changed: b.txt)",
                     "Git: Committed to falcon on branch main: “Start the project” (1 files changed: a.txt)"]
    assert sup.status["git"].health["sources"] == {str(tmp_path / "falcon"): {"state": "collecting", "stored": 2}}
    run_once(sup)
    assert sup.status["git"].health["sources"] == {str(tmp_path / "falcon"): {"state": "idle"}}
    sup.stop()


def test_a_late_arriving_commit_with_an_old_date_is_still_found(tmp_path):
    """A pull or cherry-pick brings a commit dated before the last run: tips, not dates, bound the walk."""
    repo = make_repo(tmp_path / "falcon")
    collector, ctx = GitActivity(), Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 0})
    assert len(list(collector.collect(None, ctx))) == 2
    commit(repo, "old.txt", "o\n", "Fix written on the train last week", T0 - 7 * 86400)
    later = list(collector.collect(ctx.cursor, ctx))
    assert messages(later) == ["Fix written on the train last week"]


def test_the_first_run_backfills_only_backfill_days(tmp_path):
    import time

    now = int(time.time())
    repo = git.Repo.init(tmp_path / "falcon", initial_branch="main")
    commit(repo, "a.txt", "a\n", "Two years ago", now - 730 * 86400)
    commit(repo, "b.txt", "b\n", "Last month", now - 30 * 86400)
    ctx = Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 90})
    assert messages(GitActivity().collect(None, ctx)) == ["Last month"]
    assert GitActivity.settings_schema["backfill_days"]["default"] == 365


def test_a_rewritten_branch_does_not_break_the_cursor(tmp_path):
    """After a rebase the old tip may be gone; the walk still works and repeats nothing already stored twice."""
    make_repo(tmp_path / "falcon")
    collector, ctx = GitActivity(), Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 0})
    list(collector.collect(None, ctx))
    ctx.cursor = {k: {"tips": {"main": "0" * 40}} for k in ctx.cursor}     # a tip that no longer exists
    again = list(collector.collect(ctx.cursor, ctx))
    assert set(messages(again)) == {"Add the parser", "Start the project"}
    assert len({p["source_item_id"] for p in again}) == 2      # the same ids: duplicates when stored


def test_a_repository_without_a_commit_yet_is_idle(tmp_path):
    git.Repo.init(tmp_path / "new", initial_branch="main")
    payloads, ctx = collect(tmp_path / "new")
    assert payloads == [] and ctx.sources == {str(tmp_path / "new"): ("read", None, None)}


def test_every_settings_entry_has_a_title_and_a_description():
    for name, entry in GitActivity.settings_schema.items():
        assert entry.get("title") and entry.get("description"), name


# --------------------------------------------------------------------------------------------- whose commit

def two_authors(path):
    """Ana (the user, by the global git config) and Bo commit to one repository; Ana also commits from her
    laptop as ana.lima@work.example, Cy from a web editor."""
    repo = git.Repo.init(path, initial_branch="main")
    commit(repo, "a.txt", "a\n", "Start the project", T0)
    commit(repo, "b.txt", "b\n", "Bo's fix", T0 + 60, author="Bo <bo@example.com>")
    commit(repo, "c.txt", "c\n", "From the laptop", T0 + 120, author="Ana Lima <ana.lima@work.example>")
    commit(repo, "d.txt", "d\n", "Cy's typo fix", T0 + 180, author="Cy <cy@example.com>")
    return repo


def test_whose_commit_comes_from_git_config_and_authors_and_other_peoples_are_theirs(tmp_path):
    two_authors(tmp_path / "falcon")
    payloads, _ = collect(tmp_path / "falcon", authors=["Ana Lima <ana.lima@work.example>"])
    actors = {p["provenance"]["message"]: p["provenance"].get("actor") for p in payloads}
    assert actors == {"Start the project": None, "From the laptop": None, "Bo's fix": "Bo", "Cy's typo fix": "Cy"}
    bo = next(p for p in payloads if p["provenance"]["message"] == "Bo's fix")
    assert {"mention_text": "Bo", "entity_type": "person"} in bo["entities"]
    # Without the authors setting, the laptop's e-mail is someone else's as far as git config says.
    payloads, _ = collect(tmp_path / "falcon")
    assert {p["provenance"].get("actor") for p in payloads} == {None, "Bo", "Ana Lima", "Cy"}
    # others: false keeps only the user's own commits.
    payloads, _ = collect(tmp_path / "falcon", others=False, authors=["ana.lima@work.example"])
    assert messages(payloads) == ["From the laptop", "Start the project"]


def test_with_no_git_identity_the_commits_are_stored_as_others_and_the_health_says_so(tmp_path, home, memory):
    two_authors(tmp_path / "falcon")
    (home / ".gitconfig").unlink()                 # a fresh machine: no user.name, no user.email anywhere
    payloads, ctx = collect(tmp_path / "falcon")
    assert payloads and all(p["provenance"].get("actor") for p in payloads)
    where = f"{tmp_path / 'falcon'} (whose commits)"
    assert ctx.sources[where].state == "unavailable"
    assert ctx.sources[where].reason == "no git identity: every commit is stored as someone else's"
    payloads, ctx = collect(tmp_path / "falcon", authors=["ana@example.com"])     # said in Settings: fine
    assert where not in ctx.sources


def test_a_repositorys_own_user_email_is_the_users_there_only(tmp_path, home):
    (home / ".gitconfig").write_text("")                       # no global identity at all
    work = two_authors(tmp_path / "work")
    with work.config_writer() as config:
        config.set_value("user", "email", "bo@example.com")   # in this repository the user commits as Bo
    two_authors(tmp_path / "other")
    payloads, _ = collect(tmp_path / "work")
    assert [p["provenance"]["message"] for p in payloads if "actor" not in p["provenance"]] == ["Bo's fix"]
    payloads, _ = collect(tmp_path / "other")
    assert all("actor" in p["provenance"] for p in payloads)   # nobody is the user: every commit is someone's


def test_other_peoples_commits_never_become_what_the_user_did(tmp_path, memory, home):
    """The issue's case: an empty authors filter made 116 commits by other people "the user committed to …".
    Thirty commits by two colleagues and two of the user's: the user's edge counts the user's two, and each
    colleague has their own."""
    repo = git.Repo.init(tmp_path / "falcon", initial_branch="main")
    commit(repo, "mine.txt", "1\n", "Start the project", T0)
    for i in range(30):
        author = "Bo <bo@example.com>" if i % 2 else "Cy <cy@example.com>"
        commit(repo, f"src/f{i}.py", f"{i}\n", f"Colleague change {i}", T0 + 60 + i, author=author)
    commit(repo, "mine.txt", "2\n", "Tidy the README", T0 + 600)
    sup = Supervisor(memory, [GitActivity()], settings={"git": {"repositories": [str(tmp_path / "falcon")],
                                                                "backfill_days": 0}})
    run_once(sup)
    sup.stop()
    memory.process_pending()
    edges = {(e.subject, e.predicate, e.object): e.observations for e in named_edges(memory.db.reader())
             if e.predicate == "COMMITTED_TO"}
    user = next(s for s, _, _ in edges if s not in ("Bo", "Cy"))
    assert edges == {(user, "COMMITTED_TO", "falcon"): 2, ("Bo", "COMMITTED_TO", "falcon"): 15,
                     ("Cy", "COMMITTED_TO", "falcon"): 15}
    texts = {r["content"] for r in event_rows(memory.db.reader())}
    assert "Git: Bo committed to falcon on branch main: “Colleague change 1” (1 files changed: src/f1.py)" in texts
    assert sum(t.startswith("Git: Committed to") for t in texts) == 2
    pack = memory.query("what did Bo commit to falcon?")
    assert any("Bo committed" in f.text for f in pack.findings)


# ------------------------------------------------------------------------------------------ changed paths

def test_changed_paths_are_recorded_bounded_and_find_the_commit(tmp_path, memory):
    repo = git.Repo.init(tmp_path / "magi", initial_branch="main")
    commit(repo, "magi_desktop/core/retrieval/fusion.py", "rrf\n", "Tune the ranking weights", T0)
    commit(repo, "README.md", "hi\n", "Say hello", T0 + 60)
    for i in range(60):
        path = os.path.join(repo.working_tree_dir, "vendor", f"lib{i:02}.js")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_text(f"{i}\n")
    repo.index.add([os.path.join("vendor", f"lib{i:02}.js") for i in range(60)])
    who = git.Actor("Ana", "ana@example.com")
    repo.index.commit("Vendor the widgets", author=who, committer=who, author_date=f"{T0 + 120} +0000",
                      commit_date=f"{T0 + 120} +0000")
    payloads, _ = collect(tmp_path / "magi")
    vendored = payloads[0]["provenance"]
    assert vendored["files_changed"] == 60 and len(vendored["paths"]) == git_plugin.MAX_PATHS == 50
    assert vendored["paths_more"] == 10 and vendored["paths"][0] == "vendor/lib00.js"
    memory.ingest_many(payloads)
    texts = {r["content"] for r in event_rows(memory.db.reader())}
    assert any(t.endswith("vendor/lib49.js and 10 more)") for t in texts)
    # Found by its path alone: the message says nothing of retrieval.
    pack = memory.query("which commits touched retrieval?")
    answering = [f.text for f in pack.findings if f.answers]
    assert len(answering) == 1 and "“Tune the ranking weights”" in answering[0], [f.text for f in pack.findings]
    assert "core/retrieval/fusion.py" in answering[0]


def test_excluded_paths_are_not_recorded(tmp_path):
    repo = git.Repo.init(tmp_path / "app", initial_branch="main")
    commit(repo, "secrets/keys.txt", "k\n", "Rotate", T0)
    commit(repo, "src/app.py", "a\n", "Feature", T0 + 60)
    ctx = Ctx({"repositories": [str(tmp_path / "app")], "backfill_days": 0},
              {"paths": [str(tmp_path / "app" / "secrets")]})
    payloads = list(GitActivity().collect(None, ctx))
    assert [p["provenance"].get("paths") for p in payloads] == [["src/app.py"], None]
    rotated = payloads[1]["provenance"]
    assert rotated["files_changed"] == 1 and "paths_more" not in rotated


# --------------------------------------------------------------------------- shallow, partial, incomplete

def test_a_shallow_clone_is_read_and_its_first_commit_stored_without_what_it_changed(tmp_path, memory):
    """The issue's case: a shallow clone failed every run with `fatal: bad object <sha>`."""
    origin = make_repo(tmp_path / "origin")
    commit(origin, "c.txt", "c\n", "Third", T0 + 120)
    shallow = tmp_path / "shallow"
    run_git("clone", "-q", "--depth", "2", f"file://{tmp_path / 'origin'}", str(shallow))
    payloads, ctx = collect(shallow)
    assert messages(payloads) == ["Third", "Add the parser"]
    assert payloads[0]["provenance"]["paths"] == ["c.txt"]
    boundary = payloads[1]["provenance"]
    assert "files_changed" not in boundary and "paths" not in boundary and "insertions" not in boundary
    assert ctx.skips == {"no_stats": 1} and ctx.sources == {str(shallow): ("read", None, None)}
    sup = Supervisor(memory, [GitActivity()], settings={"git": {"repositories": [str(shallow)], "backfill_days": 0}})
    run_once(sup)
    status = sup.status["git"]
    assert status.health["sources"] == {str(shallow): {"state": "collecting", "stored": 2}}
    assert status.failures == 0 and not status.last_error and status.skipped == {"no_stats": 1}
    sup.stop()


def test_a_depth_one_clone_stores_its_one_commit(tmp_path):
    make_repo(tmp_path / "origin")
    run_git("clone", "-q", "--depth", "1", f"file://{tmp_path / 'origin'}", str(tmp_path / "shallow"))
    payloads, ctx = collect(tmp_path / "shallow")
    assert messages(payloads) == ["Add the parser"] and ctx.skips == {"no_stats": 1}


def test_a_bare_repository_is_read_too(tmp_path):
    make_repo(tmp_path / "origin")
    run_git("clone", "-q", "--bare", str(tmp_path / "origin"), str(tmp_path / "origin.git"))
    payloads, ctx = collect(tmp_path / "origin.git")
    assert messages(payloads) == ["Add the parser", "Start the project"]
    assert payloads[0]["provenance"]["paths"] == ["b.txt"] and not ctx.skips


def partial_clone(tmp_path, name, spec):
    origin = make_repo(tmp_path / "origin") if not (tmp_path / "origin").exists() else git.Repo(tmp_path / "origin")
    origin.git.config("uploadpack.allowFilter", "true")
    run_git("clone", "-q", "--no-checkout", f"--filter={spec}", f"file://{tmp_path / 'origin'}", str(tmp_path / name))
    return tmp_path / name


def test_a_partial_clone_gives_paths_without_fetching_a_single_blob(tmp_path):
    partial = partial_clone(tmp_path, "partial", "blob:none")
    absent = missing_objects(partial)
    assert absent                                              # the blobs are on the remote, which is right there
    payloads, ctx = collect(partial)
    assert [p["provenance"]["paths"] for p in payloads] == [["b.txt"], ["a.txt"]]
    assert all(p["provenance"]["files_changed"] == 1 and "insertions" not in p["provenance"] for p in payloads)
    assert ctx.skips == {"no_line_counts": 2} and ctx.sources == {str(partial): ("read", None, None)}
    assert missing_objects(partial) == absent                  # nothing was fetched


def test_a_clone_without_trees_gives_the_commits_alone(tmp_path):
    bare = partial_clone(tmp_path, "treeless", "tree:0")
    payloads, ctx = collect(bare)
    assert messages(payloads) == ["Add the parser", "Start the project"]
    assert all("files_changed" not in p["provenance"] for p in payloads)
    assert ctx.skips == {"no_stats": 2} and ctx.sources == {str(bare): ("read", None, None)}


# ------------------------------------------------------------------------------- what cannot be read, and why

def test_each_folder_that_is_not_a_repository_says_why_and_the_fix(tmp_path, home):
    (tmp_path / "plain").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    make_repo(tmp_path / "falcon" / "repo")
    written = ["~/moved-away", str(tmp_path / "plain"), str(tmp_path / "notes.txt"), str(tmp_path / "falcon")]
    ctx = Ctx({"repositories": written})
    assert list(GitActivity().collect(None, ctx)) == []
    assert ctx.sources == {
        "~/moved-away": ("unavailable", "no such repository: ~/moved-away", "check the path in Settings"),
        written[1]: ("unavailable", f"not a Git repository: {written[1]}",
                     "name the repository's top folder (the one that holds .git)"),
        written[2]: ("unavailable", f"not a folder: {written[2]}",
                     "name the repository's folder (the one that holds .git)"),
        written[3]: ("unavailable", f"not a Git repository: {written[3]}",
                     "name the repository's top folder (the one that holds .git)"),
    }
    assert not ctx.skips


def run_as_nobody(code, cwd):
    """``code`` in a Python that runs as the user nobody (a test run as root can read every folder). Through
    util-linux's setpriv: Python's own ``subprocess.run(user=…)`` cannot start this venv's interpreter here."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("run as root without setpriv (util-linux): no way to read a folder as another user")
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONPATH": f"{ROOT / 'tests'}:{ROOT / 'plugins'}"}
    done = subprocess.run([setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable,
                           "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_repository_the_user_may_not_read_is_unavailable_permission_denied(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="magi-git-"))       # outside pytest's root-only folder
    try:
        base.chmod(0o755)
        make_repo(base / "locked")
        (base / "locked").chmod(0o700 if os.geteuid() == 0 else 0o000)
        folder = str(base / "locked")
        if os.geteuid() == 0:
            code = ("import json; from collecting import Ctx; from magi_plugins.git import GitActivity\n"
                    f"ctx = Ctx({{'repositories': [{folder!r}]}})\n"
                    "assert list(GitActivity().collect(None, ctx)) == []\n"
                    "print(json.dumps(ctx.sources))")
            sources = {k: tuple(v) for k, v in json.loads(run_as_nobody(code, base)).items()}
        else:
            ctx = Ctx({"repositories": [folder]})
            assert list(GitActivity().collect(None, ctx)) == []
            sources = ctx.sources
        assert sources == {folder: ("unavailable", f"permission denied: {folder}",
                                    "give your user read access to it, or remove it from the repositories")}
    finally:
        (base / "locked").chmod(0o755)
        shutil.rmtree(base)


def test_a_repository_owned_by_another_user_says_how_to_trust_it(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a repository owned by another user needs root")
    make_repo(tmp_path / "theirs")
    for folder, _, files in os.walk(tmp_path / "theirs"):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, NOBODY, NOBODY)
    payloads, ctx = collect(tmp_path / "theirs")
    folder = str(tmp_path / "theirs")
    assert payloads == [] and ctx.sources == {folder: (
        "unavailable", f"owned by another user, which git refuses: {folder}",
        f"if you trust it, run: git config --global --add safe.directory {folder}")}


def test_a_repository_git_cannot_read_is_failing_by_its_name_and_the_others_go_on(tmp_path):
    broken = make_repo(tmp_path / "broken")
    tip = broken.head.commit.hexsha
    (Path(broken.git_dir) / "objects" / tip[:2] / tip[2:]).unlink()     # the branch's commit is gone
    make_repo(tmp_path / "fine")
    ctx = Ctx({"repositories": [str(tmp_path / "broken"), str(tmp_path / "fine")], "backfill_days": 0})
    payloads = list(GitActivity().collect(None, ctx))
    assert len(payloads) == 2 and {p["provenance"]["repo"] for p in payloads} == {"fine"}
    state, reason, _ = ctx.sources[str(tmp_path / "broken")]
    assert state == "failing" and reason.startswith("git cannot read it: fatal: bad object")
    assert ctx.sources[str(tmp_path / "fine")] == ("read", None, None)


def test_without_git_on_the_path_the_collector_is_unavailable_and_says_what_to_install(tmp_path):
    code = ("from collecting import Ctx; from magi_plugins.git import GitActivity\n"
            "from magi_desktop.plugin_api import Unavailable\n"
            "try:\n    list(GitActivity().collect(None, Ctx({'repositories': ['.']})))\n"
            "except Unavailable as exc:\n    print(exc.reason, '|', exc.fix)\n")
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "PYTHONPATH": f"{ROOT / 'tests'}:{ROOT / 'plugins'}"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "git not found | install Git (git-scm.com) and make sure `git` is on the PATH"


def test_an_excluded_repository_is_neither_read_nor_named(tmp_path):
    make_repo(tmp_path / "secret")
    make_repo(tmp_path / "mine")
    ctx = Ctx({"repositories": [str(tmp_path / "secret"), str(tmp_path / "mine")], "backfill_days": 0},
              {"repositories": ["secret"]})
    payloads = list(GitActivity().collect(None, ctx))
    assert {p["provenance"]["repo"] for p in payloads} == {"mine"}
    assert list(ctx.sources) == [str(tmp_path / "mine")]


# ----------------------------------------------------------------------------------------- long back-fills

def test_a_backfill_cut_by_the_host_goes_on_where_it_was(tmp_path, memory, monkeypatch):
    """Cut at the host's cap per run (4 here, 50,000 in the app), the walk resumes from the place it saved
    every SAVE_EVERY commits instead of starting again, and ends with the branch tips as its cursor."""
    monkeypatch.setattr(git_plugin, "SAVE_EVERY", 3)
    repo = git.Repo.init(tmp_path / "falcon", initial_branch="main")
    for i in range(10):
        commit(repo, f"f{i}.txt", f"{i}\n", f"Step {i}", T0 + i)
    sup = Supervisor(memory, [GitActivity()], settings={"git": {"repositories": [str(tmp_path / "falcon")],
                                                                "backfill_days": 0}}, max_per_run=4)
    stored = []
    for _ in range(4):
        run_once(sup)
        stored.append(len(event_rows(memory.db.reader())))
    sup.stop()
    # Each run stores four, the first of them the one after the last saved place (it comes again and dedupes):
    # the back-fill moves on every run, it never repeats the same four forever.
    assert stored == [4, 7, 10, 10]
    (cursor,) = memory.plugin_cursor("git").values()
    assert cursor == {"tips": {"main": repo.head.commit.hexsha}}


def test_a_run_asked_to_stop_saves_its_place(tmp_path):
    repo = git.Repo.init(tmp_path / "falcon", initial_branch="main")
    for i in range(5):
        commit(repo, f"f{i}.txt", f"{i}\n", f"Step {i}", T0 + i)
    ctx = Ctx({"repositories": [str(tmp_path / "falcon")], "backfill_days": 0})
    run = GitActivity().collect(None, ctx)
    assert messages([next(run), next(run)]) == ["Step 4", "Step 3"]
    ctx.stopping = True
    assert list(run) == []
    (place,) = ctx.cursor.values()
    assert place["walk"]["done"] == 2 and place["walk"]["to"] == {"main": repo.head.commit.hexsha}
    ctx.stopping = False
    assert messages(GitActivity().collect(ctx.cursor, ctx)) == ["Step 2", "Step 1", "Step 0"]
    (place,) = ctx.cursor.values()
    assert place == {"tips": {"main": repo.head.commit.hexsha}}
