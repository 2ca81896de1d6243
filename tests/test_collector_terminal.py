"""The terminal collector against bash, zsh (extended) and fish history files."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from collecting import Ctx
from file_permissions import without_root_powers
from magi_plugins.terminal import FIX_FILES, TerminalHistory

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.plugin_api import Unavailable


def commands(payloads):
    return [(p["provenance"]["shell"], p["occurred_at"], p["provenance"]["command"]) for p in payloads]


def test_zsh_extended_history_incrementally(tmp_path):
    history = tmp_path / ".zsh_history"
    history.write_text(": 1700000000:0;git status\n: 1700000060:2;make test \\\n  && make lint\n")
    collector, ctx = TerminalHistory(), Ctx({"files": [str(history)]})
    assert commands(collector.collect(None, ctx)) == [
        ("zsh", 1700000000.0, "git status"), ("zsh", 1700000060.0, "make test \n  && make lint")]
    assert list(collector.collect(ctx.cursor, ctx)) == []
    with history.open("a") as f:
        f.write(": 1700000120:0;ls -la\n: 1700000130:0;half-writ")      # the last line is not complete yet
    assert commands(collector.collect(ctx.cursor, ctx)) == [("zsh", 1700000120.0, "ls -la")]
    with history.open("a") as f:
        f.write("ten\n")
    assert commands(collector.collect(ctx.cursor, ctx)) == [("zsh", 1700000130.0, "half-written")]


def test_bash_with_and_without_timestamps_and_ignore(tmp_path):
    history = tmp_path / ".bash_history"
    history.write_text("#1700000000\ncd /srv\n#1700000010\ndocker ps\nls\n")
    os.utime(history, (1700009999, 1700009999))
    ctx = Ctx({"files": [str(history)], "ignore": ["cd"]})
    assert commands(TerminalHistory().collect(None, ctx)) == [
        ("bash", 1700000010.0, "docker ps"), ("bash", 1700000010.0, "ls")]


def test_fish_history(tmp_path):
    history = tmp_path / "fish_history"
    history.write_text("- cmd: echo hi\\nthere\n  when: 1700000000\n- cmd: pip install x\n  when: 1700000050\n"
                       "  paths:\n    - x\n")
    ctx = Ctx({"files": [str(history)]})
    assert commands(TerminalHistory().collect(None, ctx)) == [
        ("fish", 1700000000.0, "echo hi\nthere"), ("fish", 1700000050.0, "pip install x")]


def test_a_rewritten_file_is_read_again_and_stored_once(tmp_path, memory):
    history = tmp_path / ".zsh_history"
    history.write_text(": 1700000000:0;git status\n: 1700000060:0;mysql -u root -pS3cretPass db\n")
    clock = [1_800_000_000.0]
    sup = Supervisor(memory, [TerminalHistory()], settings={"terminal": {"files": [str(history)]}},
                     clock=lambda: clock[0])
    sup.tick()
    assert sup.wait_idle()
    texts = sorted(r["content"] for r in event_rows(memory.db.reader()))
    assert len(texts) == 2 and "S3cretPass" not in " ".join(texts)           # the core redacted the password
    history.write_text(": 1700000000:0;git status\n")                          # zsh rewrote (shrank) its file
    clock[0] += 61
    sup.tick()
    assert sup.wait_idle()
    assert sup.status["terminal"].counts["duplicates"] == 1 and sup.status["terminal"].counts["stored"] == 2
    sup.stop()


def test_excluded_paths_are_not_read(tmp_path):
    history = tmp_path / "secret" / ".bash_history"
    history.parent.mkdir()
    history.write_text("ls\n")
    assert list(TerminalHistory().collect(None, Ctx({"files": [str(history)]}, {"paths": ["secret"]}))) == []


def test_a_history_rewritten_through_a_new_file_is_not_stored_again(tmp_path):
    history = tmp_path / ".bash_history"
    history.write_text("ls\nmake\n")
    collector, ctx = TerminalHistory(), Ctx({"files": [str(history)]})
    first = {p["source_item_id"] for p in collector.collect(None, ctx)}
    replacement = tmp_path / ".bash_history.new"
    replacement.write_text("ls\nmake\ngit push\n")
    os.replace(replacement, history)                       # readline/zsh rewrite through a temporary file
    os.utime(history, (1_800_000_000, 1_800_000_000))
    again = list(collector.collect(ctx.cursor, ctx))
    assert {p["source_item_id"] for p in again} - first == {again[-1]["source_item_id"]}
    assert again[-1]["provenance"]["command"] == "git push"


def test_a_watched_history_file_makes_the_collector_due_at_once(tmp_path, memory):
    """watchdog sees the shell append a command: the collector runs at the next tick, not a minute later."""
    history = tmp_path / ".zsh_history"
    history.write_text(": 1764000000:0;make test\n")
    sup = Supervisor(memory, [TerminalHistory()], settings={"terminal": {"files": [str(history)]}})
    assert sup.watch() == [str(history)]
    sup.tick()
    assert sup.wait_idle()
    assert sup.status["terminal"].next_run_at > time.time() + 30          # not due for a minute
    with history.open("a") as f:
        f.write(": 1764000060:0;git push\n")
    deadline = time.monotonic() + 20
    while sup.status["terminal"].next_run_at > time.time() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sup.tick() == ["terminal"]
    assert sup.wait_idle()
    sup.stop()
    commands = [r["content"] for r in sorted(event_rows(memory.db.reader()), key=lambda r: r["timestamp"])]
    assert len(commands) == 2 and "git push" in commands[-1]


# --- a history written by a real zsh (tests/fixtures/terminal/zsh_history), and why a file is not read ----------

ZSH_HISTORY = Path(__file__).parent / "fixtures" / "terminal" / "zsh_history"
TYPED = ["echo hello", "ls -la", "sleep 2", "printf '%s\\n' one \\\ntwo three", "for f in a b; do\necho $f\ndone",
         "echo 'café 中文 ăĂ'", "echo 'multi\nline string'", "mysql -u root -pS3cretPass db", "git status", "exit"]


def test_a_history_real_zsh_wrote_reads_as_typed(tmp_path):
    raw = ZSH_HISTORY.read_bytes()
    assert b"\x83" in raw and b"\\\n" in raw                    # zsh metafied the non-ASCII, escaped the newlines
    history = tmp_path / ".zsh_history"
    shutil.copyfile(ZSH_HISTORY, history)
    ctx = Ctx({"files": [str(history)]})
    payloads = list(TerminalHistory().collect(None, ctx))
    # A backslash-continued line keeps its backslash; a loop and a quote span lines; a command typed after a
    # space (HIST_IGNORE_SPACE) was never written.
    assert [p["provenance"]["command"] for p in payloads] == TYPED
    times = [p["occurred_at"] for p in payloads]
    assert times == sorted(times) and times[0] == float(raw[2:raw.index(b":", 2)])
    assert not ctx.skips and ctx.sources == {str(history): ("read", None, None)}


def test_the_real_zsh_history_under_the_supervisor_is_one_collecting_source_with_the_password_redacted(tmp_path,
                                                                                                       memory):
    history = tmp_path / ".zsh_history"
    shutil.copyfile(ZSH_HISTORY, history)
    sup = Supervisor(memory, [TerminalHistory()], settings={"terminal": {"files": [str(history)]}})
    sup.tick()
    assert sup.wait_idle()
    sup.stop()
    status = memory.collector_statuses()["terminal"]
    assert status["health"]["sources"] == {str(history): {"state": "collecting", "stored": len(TYPED)}}
    rows = event_rows(memory.db.reader())
    texts = [r["content"] for r in rows]                   # the commands and the activity block of the echoes
    commands = [r for r in rows if r["metadata"]["timeline"]["activity"]["action_code"] == "run_command"]
    assert len(commands) == len(TYPED) and "S3cretPass" not in " ".join(texts)
    assert "Terminal: Ran `echo 'café 中文 ăĂ'`" in texts


def test_a_configured_history_that_is_missing_is_unavailable_and_the_others_are_read(tmp_path):
    history = tmp_path / ".zsh_history"
    shutil.copyfile(ZSH_HISTORY, history)
    missing = tmp_path / "gone" / ".bash_history"
    ctx = Ctx({"files": [str(missing), str(tmp_path), str(history)]})
    assert len(list(TerminalHistory().collect(None, ctx))) == len(TYPED)
    assert ctx.sources == {str(missing): ("unavailable", f"no such file: {missing}", FIX_FILES),
                           str(tmp_path): ("unavailable", f"a folder, not a history file: {tmp_path}", FIX_FILES),
                           str(history): ("read", None, None)}
    assert set(ctx.cursor) == {str(history)}


def test_a_history_file_below_home_is_named_from_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".bash_history").write_text("ls\n")
    ctx = Ctx({})
    assert len(list(TerminalHistory().collect(None, ctx))) == 1
    assert ctx.sources == {"~/.bash_history": ("read", None, None)}


def test_no_shell_history_at_all_is_unavailable_with_the_fix(tmp_path, monkeypatch, memory):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("HISTFILE", raising=False)
    with pytest.raises(Unavailable) as raised:
        list(TerminalHistory().collect(None, Ctx({})))
    assert raised.value.reason.startswith("no shell history found") and "SAVEHIST" in raised.value.fix
    sup = Supervisor(memory, [TerminalHistory()])
    sup.tick()
    assert sup.wait_idle()
    sup.stop()
    status = memory.collector_statuses()["terminal"]
    assert status["health"]["state"] == "unavailable" and status["failures"] == 0
    assert status["health"]["reason"].startswith("no shell history found")


_READ_AS_GIVEN = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from collecting import Ctx
    from magi_plugins.terminal import TerminalHistory
    ctx = Ctx({"files": sys.argv[2:]})
    stored = len(list(TerminalHistory().collect(None, ctx)))
    print(json.dumps({"stored": stored, "sources": ctx.sources}))
""")


def test_a_history_this_user_may_not_read_is_unavailable_permission_denied(tmp_path):
    readable, refused = tmp_path / ".bash_history", tmp_path / ".zsh_history"
    readable.write_text("ls\n")
    shutil.copyfile(ZSH_HISTORY, refused)
    refused.chmod(0o000)
    done = subprocess.run([*without_root_powers(), sys.executable, "-c", _READ_AS_GIVEN, str(Path(__file__).parent),
                           str(readable), str(refused)], capture_output=True, text=True, timeout=120)
    refused.chmod(0o600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"stored": 1, "sources": {
        str(readable): ["read", None, None],
        str(refused): ["unavailable", f"permission denied: {refused}", "let the user Magi runs as read it"]}}
