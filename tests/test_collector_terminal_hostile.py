"""Binary garbage in a shell history is not commands (issue 16, defect 6): lines with NULs, not UTF-8,
mostly control characters or absurdly long are skipped and counted by reason; the real commands around
them are stored; zsh's metafied non-ASCII text is read as what was typed."""

import random

from collecting import Ctx
from magi_plugins.history_lines import MAX_LINE_BYTES
from magi_plugins.terminal import TerminalHistory

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.l1 import event_rows

GARBAGE = random.Random(16).randbytes(200_000)


def commands(payloads):
    return [p["provenance"]["command"] for p in payloads]


def zsh_metafy(text: str) -> bytes:
    """How zsh writes a line: NUL and the bytes 0x83–0xA2 as 0x83 followed by the byte XOR 0x20."""
    out = bytearray()
    for byte in text.encode("utf-8"):
        out += bytes([0x83, byte ^ 0x20]) if byte == 0 or 0x83 <= byte <= 0xA2 else bytes([byte])
    return bytes(out)


def test_200_kb_of_random_bytes_in_a_bash_history_are_no_commands(tmp_path):
    history = tmp_path / ".bash_history"
    history.write_bytes(b"git status\nmake test\n" + GARBAGE + b"\nls -la\ngit push\n")
    ctx = Ctx({"files": [str(history)]})
    assert commands(TerminalHistory().collect(None, ctx)) == ["git status", "make test", "ls -la", "git push"]
    lines = (b"git status\nmake test\n" + GARBAGE + b"\nls -la\ngit push\n").count(b"\n")
    assert sum(ctx.skips.values()) == lines - 4 - GARBAGE.count(b"\n\n")       # every other non-empty line
    assert set(ctx.skips) <= {"binary_line", "not_utf8", "overlong_line"} and ctx.skips["not_utf8"] > 100
    assert ctx.details[0][1] == f"{history} at byte 21"                      # where, not what
    assert ctx.cursor[str(history)]["offset"] == history.stat().st_size       # read past it: not counted again
    again = Ctx({"files": [str(history)]})
    again.cursor = ctx.cursor
    assert list(TerminalHistory().collect(ctx.cursor, again)) == [] and not again.skips


def test_under_the_supervisor_garbage_is_an_ok_run_with_its_skips_counted(tmp_path, memory):
    history = tmp_path / ".zsh_history"
    history.write_bytes(b": 1700000000:0;git status\n" + GARBAGE + b"\n: 1700000060:0;make test\n")
    sup = Supervisor(memory, [TerminalHistory()], settings={"terminal": {"files": [str(history)]}})
    sup.tick()
    assert sup.wait_idle(60)
    sup.stop()
    status = memory.collector_statuses()["terminal"]
    assert status["counts"]["stored"] == 2 and status["failures"] == 0 and status["last_error"] is None
    assert sum(status["skipped"].values()) > 700
    rows = len([r for r in event_rows(memory.db.reader()) if r["source"] == "terminal"])
    assert rows == 2


def test_each_kind_of_bad_line_has_its_reason_and_odd_but_real_commands_are_kept(tmp_path):
    history = tmp_path / ".bash_history"
    history.write_bytes(b"echo one\n"
                        b"cat \x00\x00\x00\n"                         # a NUL: binary
                        b"\x01\x02\x03\x04ab\n"                       # mostly control characters
                        b"caf\xe9 --latin1\n"                         # not UTF-8
                        + b"x" * (MAX_LINE_BYTES + 1) + b"\n"          # absurdly long
                        b"printf 'a\tb'\n"                            # a tab is typed text
                        b"echo 'form\x0cfeed' | wc\r\n"               # one command, not split at \x0c; CRLF
                        b"echo \xe4\xb8\xad\xe6\x96\x87\n")           # UTF-8 Chinese
    ctx = Ctx({"files": [str(history)]})
    assert commands(TerminalHistory().collect(None, ctx)) == [
        "echo one", "printf 'a\tb'", "echo 'form\x0cfeed' | wc", "echo 中文"]
    assert ctx.skips == {"binary_line": 2, "not_utf8": 1, "overlong_line": 1}


def test_zsh_metafied_non_ascii_is_read_as_typed(tmp_path):
    history = tmp_path / ".zsh_history"
    history.write_bytes(zsh_metafy(": 1700000000:0;echo 中文 ăĂ\n") + zsh_metafy(": 1700000010:0;git commit -m 'é'\n"))
    ctx = Ctx({"files": [str(history)]})
    assert commands(TerminalHistory().collect(None, ctx)) == ["echo 中文 ăĂ", "git commit -m 'é'"]
    assert not ctx.skips
    plain = tmp_path / "other.zsh_history"             # written as plain UTF-8 by another tool: read as such
    plain.write_bytes(": 1700000000:0;echo ăĂ\n".encode())
    assert commands(TerminalHistory().collect(None, Ctx({"files": [str(plain)]}))) == ["echo ăĂ"]


def test_fish_history_with_garbage_keeps_its_commands(tmp_path):
    history = tmp_path / "fish_history"
    history.write_bytes(b"- cmd: ls\n  when: 1700000000\n" + GARBAGE[:20_000] + b"\n- cmd: pwd\n  when: 1700000010\n")
    ctx = Ctx({"files": [str(history)]})
    assert commands(TerminalHistory().collect(None, ctx)) == ["ls", "pwd"]
    assert sum(ctx.skips.values()) > 50
