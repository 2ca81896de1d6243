"""The calendar's health per source (issue 19): each entry of its ``paths`` says collecting, idle, unavailable
(no such file or folder, no .ics in a folder, permission denied, not a file — each with its fix) or failing (no
file of it is iCalendar), saved in the memory for every process; a file deleted from a folder of one file per
event retires what it stored, a folder that is gone retires nothing."""

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from collecting import Ctx
from magi_plugins.calendar import CalendarFiles

from magi_desktop.collectors import Supervisor
from magi_desktop.collectors.health import describe
from magi_desktop.core.store.l1 import event_rows

NOW = datetime(2026, 3, 18, 12, 0, tzinfo=timezone.utc).timestamp()
CHECK = "check the path under Calendar in Settings"


def ics(*events):
    """A calendar of ``(uid, summary, days from NOW)`` events, an hour each."""
    body = ""
    for uid, summary, days in events:
        start = datetime.fromtimestamp(NOW, timezone.utc) + timedelta(days=days)
        body += (f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTART:{start:%Y%m%dT%H%M%SZ}\r\n"
                 f"DTEND:{start + timedelta(hours=1):%Y%m%dT%H%M%SZ}\r\nSUMMARY:{summary}\r\nEND:VEVENT\r\n")
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//magi tests//EN\r\n{body}END:VCALENDAR\r\n"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, newline="")
    return path


def collect(paths, since=None, clock=NOW):
    ctx = Ctx({"paths": [str(p) for p in paths]})
    payloads = list(CalendarFiles(clock=lambda: clock).collect(since, ctx))
    return payloads, ctx


def run(sup):
    sup.status["calendar"].next_run_at = 0
    assert sup.tick() == ["calendar"]
    assert sup.wait_idle(60)
    return sup.status["calendar"]


def test_each_path_says_what_it_found_and_why_not_and_every_process_sees_it(memory, tmp_path):
    work = write(tmp_path / "work.ics", ics(("dentist", "Dentist", 1), ("review", "Review", 2)))
    garbage = write(tmp_path / "notes.ics", "these are my notes, not a calendar\n")
    (tmp_path / "empty").mkdir()
    paths = [str(work), str(tmp_path / "gone.ics"), str(tmp_path / "empty"), str(garbage)]
    sup = Supervisor(memory, [CalendarFiles(clock=lambda: NOW)], settings={"calendar": {"paths": paths}},
                     clock=lambda: NOW)
    status = run(sup)
    assert status.health["sources"] == {
        str(work): {"state": "collecting", "stored": 2},
        str(tmp_path / "gone.ics"): {"state": "unavailable", "reason": f"no such file or folder: {tmp_path}/gone.ics",
                                     "fix": CHECK},
        str(tmp_path / "empty"): {"state": "unavailable", "reason": f"no .ics files in {tmp_path}/empty",
                                  "fix": "choose the folder your calendar program saves .ics files in, or the files "
                                         "themselves"},
        str(garbage): {"state": "failing", "reason": "notes.ics is not an iCalendar file: does not end with "
                                                     "END:VCALENDAR: cut short, or still being written"},
    }
    assert status.health["state"] == "collecting" and status.failures == 0 and not status.quarantined
    saved = memory.collector_statuses()["calendar"]          # what `magi status` in another process reads
    assert saved["health"] == status.health and saved["skipped"] == {"unreadable_file": 1}
    assert f"{tmp_path}/gone.ics: unavailable: no such file or folder: {tmp_path}/gone.ics — {CHECK}" in describe(saved)
    # Nothing new: the calendar goes idle; what cannot be read still says why (the garbage is tried again).
    status = run(sup)
    assert status.health["sources"][str(work)] == {"state": "idle"}
    assert status.health["state"] == "failing" and status.health["reason"].startswith("1 of 4 sources; ")
    assert status.failures == 0
    sup.stop()


def test_no_paths_at_all_is_unavailable_with_the_fix_and_never_a_failure(memory):
    sup = Supervisor(memory, [CalendarFiles(clock=lambda: NOW)], settings={"calendar": {"paths": []}},
                     quarantine_after=2, clock=lambda: NOW)
    for _ in range(3):
        status = run(sup)
    assert status.failures == 0 and not status.quarantined
    assert describe(memory.collector_statuses()["calendar"]) == [
        "unavailable: no calendar files chosen — add .ics files or folders under Calendar in Settings"]
    sup.stop()


def test_a_bad_file_in_a_folder_is_skipped_and_the_folder_is_read(tmp_path):
    folder = tmp_path / "calendars"
    write(folder / "home.ics", ics(("dentist", "Dentist", 1)))
    write(folder / "half.ics", ics(("review", "Review", 2))[:60])          # a calendar program half-way through
    payloads, ctx = collect([folder])
    assert [p["provenance"]["summary"] for p in payloads] == ["Dentist"]
    assert ctx.sources == {str(folder): ("read", None, None)} and ctx.skips == {"unreadable_file": 1}
    # Every file of the folder broken: the folder is failing, naming one.
    (folder / "home.ics").write_text("BEGIN:VCALENDAR\r\n")
    _, ctx = collect([folder], since=ctx.cursor)
    state, reason, _ = ctx.sources[str(folder)]
    assert state == "failing" and reason.startswith("none of its 2 files can be read; ")
    assert "is not an iCalendar file" in reason


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_is_never_opened(tmp_path):
    os.mkfifo(tmp_path / "pipe.ics")
    folder = tmp_path / "folder"
    write(folder / "home.ics", ics(("dentist", "Dentist", 1)))
    os.mkfifo(folder / "pipe.ics")                  # opening one would block the run until something writes to it
    payloads, ctx = collect([tmp_path / "pipe.ics", folder])
    assert [p["provenance"]["summary"] for p in payloads] == ["Dentist"]
    assert ctx.sources[str(tmp_path / "pipe.ics")] == ("unavailable", f"not a file or a folder: {tmp_path}/pipe.ics",
                                                        CHECK)


def test_an_excluded_path_is_not_read_nor_named(tmp_path):
    private = write(tmp_path / "private.ics", ics(("x", "Secret", 1)))
    ctx = Ctx({"paths": [str(private)]}, {"paths": ["private"]})
    assert list(CalendarFiles(clock=lambda: NOW).collect(None, ctx)) == [] and ctx.sources == {}


def test_an_event_file_deleted_from_a_folder_retires_its_event_and_a_folder_that_is_gone_retires_nothing(
        memory, tmp_path):
    vdir = tmp_path / "vdir"                        # vdirsyncer, khal, macOS Calendar: one file per event
    write(vdir / "dentist.ics", ics(("dentist", "Dentist", 1)))
    write(vdir / "sub" / "review.ics", ics(("review", "Review", 2)))
    ctx = Ctx({"paths": [str(vdir)]})

    def collect_into_memory(clock):
        results = memory.ingest_many(list(CalendarFiles(clock=lambda: clock).collect(ctx.cursor, ctx)))
        return sorted(r["content"].split("“")[1].split("”")[0] for r in event_rows(memory.db.reader())), results

    assert collect_into_memory(NOW)[0] == ["Dentist", "Review"]
    (vdir / "sub" / "review.ics").unlink()           # the review was deleted in the calendar program
    live, results = collect_into_memory(NOW + 60)
    assert live == ["Dentist"] and [r.target for r in results] == ["retired"]
    assert sorted(Path(k).name for k in ctx.cursor) == ["dentist.ics"]
    # The folder is on a drive not mounted now: unavailable, and what it stored stays.
    vdir.rename(tmp_path / "away")
    live, results = collect_into_memory(NOW + 120)
    assert live == ["Dentist"] and results == []
    assert ctx.sources[str(vdir)][:2] == ("unavailable", f"no such file or folder: {vdir}")
    (tmp_path / "away").rename(vdir)
    assert collect_into_memory(NOW + 180) == (["Dentist"], [])


# ---------------------------------------------------------------------------------------------- permission denied

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from collecting import Ctx
from magi_plugins.calendar import CalendarFiles
ctx = Ctx({"paths": json.loads(sys.argv[2])})
payloads = list(CalendarFiles(clock=lambda: float(sys.argv[3])).collect(None, ctx))
print(json.dumps({"sources": ctx.sources, "skips": ctx.skips, "read": [p["provenance"]["summary"] for p in payloads]}))
"""
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2      # linux/prctl.h, linux/capability.h


def without_the_right_to_read_everything():
    """In the child before it runs Python: root without the capabilities that let it read any file, so the
    permission bits bind it as they bind a user (the bounding set is what an exec'd program keeps)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def collect_as_someone_the_permissions_bind(paths):
    """What a run finds when the files' permissions keep it out: run here, or — the tests running as root, who
    reads every file — in a child process that root's right to read everything was taken from."""
    if os.geteuid() != 0:
        payloads, ctx = collect(paths)
        return {"sources": ctx.sources, "skips": dict(ctx.skips),
                "read": [p["provenance"]["summary"] for p in payloads]}
    if not sys.platform.startswith("linux"):
        pytest.skip("running as root, and only Linux lets a child give up root's right to read every file")
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(Path(__file__).parent),
                               json.dumps([str(p) for p in paths]), str(NOW)],
                              capture_output=True, text=True, timeout=120,
                              preexec_fn=without_the_right_to_read_everything)
    except subprocess.SubprocessError as exc:
        pytest.skip(f"running as root, and this machine does not let a child drop CAP_DAC_OVERRIDE: {exc}")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    found["sources"] = {name: tuple(entry) for name, entry in found["sources"].items()}
    return found


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX file permissions")
def test_what_this_user_may_not_read_is_unavailable_with_the_fix_and_the_rest_is_read(tmp_path):
    locked: list[Path] = []
    try:
        secret = write(tmp_path / "secret.ics", ics(("s", "Secret", 1)))
        write(tmp_path / "locked" / "a.ics", ics(("a", "Locked away", 1)))
        mixed = tmp_path / "mixed"
        write(mixed / "home.ics", ics(("dentist", "Dentist", 1)))
        write(mixed / "hidden.ics", ics(("h", "Hidden", 1)))
        write(mixed / "private" / "b.ics", ics(("b", "Private", 1)))
        for path in (secret, mixed / "hidden.ics", tmp_path / "locked", mixed / "private"):
            path.chmod(0o000)
            locked.append(path)
        found = collect_as_someone_the_permissions_bind([secret, tmp_path / "locked", mixed])
        fix = "let your user read it (check its permissions, e.g. chmod u+r)"
        assert found["sources"] == {str(secret): ("unavailable", f"permission denied: {secret}", fix),
                                    str(tmp_path / "locked"): ("unavailable", f"permission denied: {tmp_path}/locked",
                                                               fix),
                                    str(mixed): ("read", None, None)}
        assert found["read"] == ["Dentist"]
        assert found["skips"] == {"permission_denied": 3}   # secret.ics, hidden.ics, the private folder
    finally:
        for path in locked:
            path.chmod(0o755 if path.is_dir() else 0o644)     # so pytest can remove its temporary folder
