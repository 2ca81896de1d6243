"""Skipped items and scratch folders (issue 16, defect 6): a collector counts what it leaves out by reason
(``ctx.skipped``) without failing its run, and copies locked files into a run folder in the data folder
(``ctx.temp_dir``) that the host removes after the run — and, after a ``kill -9``, at the next start."""

import json
import os
import signal
import subprocess
import sys
import textwrap

from collecting import Ctx
from magi_plugins.git import GitActivity
from magi_plugins.music import Music

from magi_desktop.collectors import Supervisor, scratch
from magi_desktop.core.paths import temp_dir
from magi_desktop.plugin_api import activity

T0 = 1_700_000_000


class Skips:
    """Yields ``n`` notes and skips two kinds of broken ones on each run."""

    name = "skips"
    source_type = "notes"
    interval_seconds = 60
    settings_schema = {}
    privacy_note = "test"

    def __init__(self, n=3):
        self.n, self.folders = n, []

    def collect(self, since, ctx):
        folder = ctx.temp_dir
        (folder / "copy.db").write_bytes(b"x" * 1000)
        self.folders.append(folder)
        for i in range(self.n):
            yield activity("notes", "write_note", T0 + i, {"title": f"note {i}"}, item_id=f"n{i}")
        ctx.skipped("bad_date", "notes.txt line 4")
        ctx.skipped("bad_date", "notes.txt line 9")
        ctx.skipped("binary_line", "notes.txt line 12: password=hunter2hunter2")


class Raises(Skips):
    name = "raises"

    def collect(self, since, ctx):
        (ctx.temp_dir / "half.db").write_bytes(b"x")
        self.folders.append(ctx.temp_dir)
        yield activity("notes", "write_note", T0, {"title": "before the crash"}, item_id="r0")
        raise RuntimeError("disk on fire")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_skips_are_counted_by_reason_saved_and_never_a_failure(memory):
    clock = Clock()
    collector = Skips()
    sup = Supervisor(memory, [collector], clock=clock, quarantine_after=2)
    for _ in range(4):                       # twice the quarantine threshold: skips never count towards it
        sup.tick()
        assert sup.wait_idle()
        clock.now += 61
    status = sup.status["skips"]
    assert status.runs == 4 and status.failures == 0 and status.last_error is None and not status.quarantined
    assert status.skipped == {"bad_date": 8, "binary_line": 4}
    assert status.counts["stored"] == 3 and status.counts["duplicates"] == 9
    shown = status.to_dict()["last_skip"]           # redacted where it is saved or shown, not at each skip
    assert shown.startswith("binary_line: notes.txt line 12") and "hunter2hunter2" not in shown
    sup.stop()
    saved = memory.collector_statuses()["skips"]
    assert saved["last_skip"] == shown
    assert saved["skipped"] == {"bad_date": 8, "binary_line": 4}
    again = Supervisor(memory, [Skips()], clock=clock)
    assert again.status["skips"].skipped == {"bad_date": 8, "binary_line": 4}     # totals survive a restart
    again.tick()
    assert again.wait_idle()
    again.stop()
    assert memory.collector_statuses()["skips"]["skipped"] == {"bad_date": 10, "binary_line": 5}


def test_reasons_are_short_codes_and_a_plugin_cannot_invent_unbounded_ones(memory):
    class Inventive(Skips):
        name = "inventive"

        def collect(self, since, ctx):
            ctx.skipped("Bad DTSTART!", "x" * 10_000)
            for i in range(1000):
                ctx.skipped(f"reason {i}")
            return iter(())

    sup = Supervisor(memory, [Inventive()])
    sup.tick()
    assert sup.wait_idle()
    sup.stop()
    status = sup.status["inventive"]
    assert status.skipped["bad_dtstart"] == 1
    assert len(status.skipped) <= 33 and status.skipped["other"] == 1001 - len(status.skipped) + 1
    assert sum(status.skipped.values()) == 1001
    assert all(len(code) <= 40 for code in status.skipped)
    assert len(memory.collector_statuses()["inventive"]["last_skip"] or "") <= 300


def test_the_run_folder_is_in_the_data_folder_and_removed_after_each_run(memory):
    ok, raises = Skips(), Raises()
    sup = Supervisor(memory, [ok, raises])
    sup.tick()
    assert sup.wait_idle()
    sup.stop()
    root = temp_dir(memory.path.parent)
    assert len(ok.folders) == 1 and len(raises.folders) == 1 and sup.status["skips"].counts["stored"] == 3
    for folder in ok.folders + raises.folders:
        assert folder.is_relative_to(root) and not folder.exists()
    assert sup.status["raises"].failures == 1
    assert [p for p in root.rglob("*") if p.is_file()] == []


_HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from magi_desktop.collectors import scratch
    folder = scratch.run_folder(Path(sys.argv[1]), "browser")
    (folder / "History").write_bytes(b"SQLite format 3\\0" + b"x" * 100_000)
    print(folder, flush=True)
    time.sleep(120)
""")


def _holder(root):
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, str(root)], stdout=subprocess.PIPE, text=True)
    return child, child.stdout.readline().strip()


def test_a_killed_runs_copy_is_removed_at_the_next_start_and_a_live_ones_is_kept(memory):
    root = temp_dir(memory.path.parent)
    killed, killed_folder = _holder(root)
    alive, alive_folder = _holder(root)
    try:
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(10)
        (root / "stray-file").write_text("left by who knows")
        (root / "browser" / "magi-browser-old").mkdir()
        assert os.path.exists(killed_folder) and os.path.exists(alive_folder)
        sup = Supervisor(memory, [Skips()])               # a host starting: `magi collect`, the app
        sup.stop()
        assert not os.path.exists(killed_folder)
        assert not (root / "stray-file").exists() and not (root / "browser" / "magi-browser-old").exists()
        assert os.path.exists(alive_folder)               # another process's run in progress is left alone
    finally:
        alive.kill()
        alive.wait(10)
        killed.stdout.close()
        alive.stdout.close()
    assert scratch.clean(root) == 1 and not os.path.exists(alive_folder)


def test_the_other_collectors_count_what_they_used_to_drop_without_a_word(tmp_path):
    log = tmp_path / "plays.jsonl"
    log.write_text(json.dumps({"played_at": 1_700_000_000, "artist": "Debussy", "track": "Arabesque"}) + "\n"
                   "{damaged\n\n" + json.dumps({"played_at": "never", "track": "x"}) + "\n")
    ctx = Ctx({"play_log": str(log), "players": False})
    assert len(list(Music().collect(None, ctx))) == 1
    assert ctx.skips == {"bad_line": 2} and ctx.details[0][1].startswith(f"{log} line 2")
    (tmp_path / "not-a-repo").mkdir()
    ctx = Ctx({"repositories": [str(tmp_path / "not-a-repo"), str(tmp_path / "moved-away")]})
    assert list(GitActivity().collect(None, ctx)) == []
    # A folder that is no repository is no item left out: the source itself is unavailable, and says why.
    assert not ctx.skips and {state for state, _, _ in ctx.sources.values()} == {"unavailable"}
    assert len(ctx.sources) == 2


def test_magi_collect_prints_this_runs_skips_and_magi_status_the_totals(tmp_path):
    history = tmp_path / ".bash_history"
    history.write_bytes(b"git status\nmake test\n\x00\x00\x01garbage\ncaf\xe9\nls\nls -la\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "collectors.json").write_text(json.dumps(
        {"collectors": {"terminal": {"enabled": True, "settings": {"files": [str(history)]}}}}))
    env = {"MAGI_DATA_DIR": str(data), "MAGI_LOAD_PLUGINS": "terminal", "PATH": "/usr/bin:/bin"}

    def magi(*args):
        out = subprocess.run([sys.executable, "-m", "magi_desktop.cli", *args], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert "terminal: stored 4, duplicates 0, rejected 0; skipped binary_line 1, not_utf8 1" in magi("collect")
    with history.open("ab") as f:
        f.write(b"\x00binary\npwd\n")
    report = json.loads(magi("collect", "--json"))["collectors"]["terminal"]
    assert report["skipped"] == {"binary_line": 1} and report["counts"]["stored"] == 1   # this run's
    status = json.loads(magi("status", "--json"))["collectors"]["terminal"]
    assert status["skipped"] == {"binary_line": 2, "not_utf8": 1} and status["failures"] == 0
    assert "skipped (not failures): binary_line 2, not_utf8 1; last: binary_line:" in magi("status")
