"""A big real Git repository made fast, and the Git collector's back-fill rate over it. Prints one JSON line.

:func:`make_repository` writes N commits with ``git fast-import`` (one process, a few seconds for 20,000
commits) — a real repository git reads like any other: a tree of a few hundred files under nested folders,
one to four files changed per commit, every fifth commit by a colleague, a branch every 2,000 commits.
``benchmarks/collect.py`` may import it for its Git case.

    .venv/bin/python benchmarks/git_repository.py                      # 20k commits: collect() alone
    .venv/bin/python benchmarks/git_repository.py --commits 20000 --memory   # and through the Supervisor
    .venv/bin/python benchmarks/git_repository.py --shallow 5000       # a shallow clone of the last 5,000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "plugins"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

USER = ("Sam Doe", "sam@example.com")
COLLEAGUES = (("Ana Lima", "ana@example.com"), ("Bo Chen", "bo@example.com"))
FOLDERS = ("magi_desktop/core/retrieval", "magi_desktop/core/l2", "magi_desktop/ui", "plugins/magi_plugins",
           "tests", "docs")
T0 = 1_700_000_000


def make_repository(path: Path, commits: int, *, start: int = T0, step: int = 600) -> Path:
    """A repository at ``path`` with ``commits`` commits on ``main`` (and a branch every 2,000), the user's
    identity (:data:`USER`) in its own config. Returns ``path``."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "config", "user.name", USER[0]], check=True)
    subprocess.run(["git", "-C", str(path), "config", "user.email", USER[1]], check=True)
    importer = subprocess.Popen(["git", "-C", str(path), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert importer.stdin is not None
    out = importer.stdin
    for i in range(commits):
        name, email = COLLEAGUES[i // 5 % 2] if i % 5 == 4 else USER
        at = start + i * step
        message = f"Change {i}: tune {FOLDERS[i % len(FOLDERS)].rsplit('/', 1)[-1]}".encode()
        out.write(b"commit refs/heads/main\n")
        out.write(f"author {name} <{email}> {at} +0000\ncommitter {name} <{email}> {at} +0000\n".encode())
        out.write(b"data %d\n%s\n" % (len(message), message))
        for j in range(1 + i % 4):
            folder = FOLDERS[(i + j) % len(FOLDERS)]
            content = f"revision {i}\n".encode()
            out.write(f"M 100644 inline {folder}/module_{(i * 7 + j) % 60}.py\n".encode())
            out.write(b"data %d\n%s\n" % (len(content), content))
        if i and i % 2000 == 0:
            out.write(f"reset refs/heads/feature-{i}\nfrom refs/heads/main\n\n".encode())
    out.close()
    if importer.wait() != 0:
        raise RuntimeError("git fast-import failed")
    return path


def collect_alone(folder: Path) -> dict:
    from collecting import Ctx
    from magi_plugins.git import GitActivity

    ctx = Ctx({"repositories": [str(folder)], "backfill_days": 0})
    started = time.perf_counter()
    payloads = list(GitActivity().collect(None, ctx))
    seconds = time.perf_counter() - started
    mine = sum("actor" not in p["provenance"] for p in payloads)
    return {"payloads": len(payloads), "users": mine, "others": len(payloads) - mine, "seconds": round(seconds, 2),
            "commits_per_s": round(len(payloads) / seconds), "skipped": dict(ctx.skips)}


def through_supervisor(folder: Path, data: Path) -> dict:
    from magi_plugins.git import GitActivity

    from magi_desktop.collectors import Supervisor
    from magi_desktop.core import Memory

    memory = Memory.open(data, embedder="hashing")
    sup = Supervisor(memory, [GitActivity()], settings={"git": {"repositories": [str(folder)], "backfill_days": 0}})
    started = time.perf_counter()
    sup.tick()
    assert sup.wait_idle(timeout=3600)
    seconds = time.perf_counter() - started
    stored = sum(s.get("stored", 0) for s in sup.status["git"].health["sources"].values())
    sup.stop()
    memory.close()
    return {"stored": stored, "seconds": round(seconds, 2), "events_per_s": round(stored / seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--memory", action="store_true", help="also back-fill a memory through the Supervisor")
    parser.add_argument("--shallow", type=int, default=0, help="read a shallow clone of this depth instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="magi-git-bench-") as tmp:
        os.environ["HOME"] = tmp                   # the machine's git identity is not the benchmark's user:
        Path(tmp, ".gitconfig").write_text(f"[user]\n\tname = {USER[0]}\n\temail = {USER[1]}\n")   # a clone's too
        started = time.perf_counter()
        folder = make_repository(Path(tmp) / "big", args.commits)
        result: dict = {"commits": args.commits, "make_seconds": round(time.perf_counter() - started, 2)}
        if args.shallow:
            clone = Path(tmp) / "shallow"
            subprocess.run(["git", "clone", "-q", "--depth", str(args.shallow), f"file://{folder}", str(clone)],
                           check=True)
            folder, result["shallow_depth"] = clone, args.shallow
        result["collect"] = collect_alone(folder)
        if args.memory:
            result["supervisor"] = through_supervisor(folder, Path(tmp) / "data")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
