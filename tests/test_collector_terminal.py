"""The terminal collector against bash, zsh (extended) and fish history files."""

import os
import time

from collecting import Ctx
from magi_plugins.terminal import TerminalHistory

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.l1 import event_rows


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
