"""The sources benchmarks/collect.py generates are ones the collectors read: small ones here, each back-filled
through the benchmark's own harness (the real Supervisor into a real Memory), every item a reader should keep
stored. Timing stays in the benchmark."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import collect
import collector_sources as sources


@pytest.mark.parametrize(("name", "size"), [("browser", 400), ("terminal", 300), ("git", 40), ("calendar", 60)])
def test_a_generated_source_is_back_filled_whole(name, size, tmp_path):
    result = collect.backfill(name, size, tmp_path, max_runs=3)
    assert result["complete"] and result["runs"] == 1
    assert result["stored"] == result["expected_stored"] == result["events_in_memory"] > 0
    assert result["rejected"] == 0 and result["nothing_new_run"]["stored"] == 0


def test_both_browsers_profiles_are_read_and_only_web_pages_kept(tmp_path):
    result = collect.backfill("browser", 2000, tmp_path, max_runs=3)
    by_source = result["events_by_source"]
    assert set(by_source) == {"chrome", "firefox"}
    assert by_source["firefox"] == pytest.approx(2000 * collect.FIREFOX_SHARE, rel=0.05)
    assert result["generated"]["items"] - result["stored"] > 0      # the file:// and chrome:// visits


def test_the_repository_is_valid_with_two_authors_changing_files(tmp_path):
    made = sources.git_repository(tmp_path / "repo", 60, time.time())

    def git(*args):
        return subprocess.run(["git", "-C", str(made.paths[0]), *args], capture_output=True, text=True,
                              check=True).stdout

    git("fsck", "--strict", "--no-progress")
    assert git("rev-list", "--count", "main").strip() == "60"
    assert {line.split("\t")[1] for line in git("shortlog", "-sne", "main").splitlines()} == {
        "Ana Lima <ana@example.com>", "Ben Okafor <ben@example.org>"}
    assert git("config", "user.email").strip() == "ana@example.com"      # Ana is this repository's user
    changed = [line for line in git("log", "--format=", "--numstat", "main").splitlines() if line]
    assert len(changed) >= 60 and all(line.split("\t")[2].startswith(("src/", "docs/", "tests/")) for line in changed)
    assert not git("status", "--porcelain")                              # the work tree is checked out


def test_the_calendar_holds_what_its_docstring_says(tmp_path):
    made = sources.calendar_file(tmp_path / "cal.ics", 200, time.time())
    text = made.paths[0].read_text()
    assert text.count("BEGIN:VEVENT") == made.items == 200
    for mark in ("BEGIN:VTIMEZONE", "RRULE:FREQ=WEEKLY", "EXDATE;TZID=Europe/Berlin", "RECURRENCE-ID;TZID=",
                 "STATUS:CANCELLED", "DTSTART;VALUE=DATE:"):
        assert mark in text
    moved = text.count("RECURRENCE-ID")
    series = text.count("RRULE:FREQ=WEEKLY")
    singles = made.items - series - moved
    # Each series keeps its occurrences but for an EXDATE; a cancelled single event is not one to store.
    assert made.expected == (singles - text.count("STATUS:CANCELLED")
                             + series * sources.SERIES_LENGTH - text.count("EXDATE"))
