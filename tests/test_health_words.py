"""The words every surface shows for a collector's saved health (collectors/health.py): the state with its reason
and fix, a line per source, what needs the user (the doctor's WARN, the tray's "needs you") and the items left
out by reason. Pure functions of a saved status, so `magi status`, the doctor and the windows agree."""

from magi_desktop.collectors.health import RunHealth, by_reason, describe, tallies, troubles

T0 = 1_700_000_000


def repos_status() -> dict:
    """A real summary: one repository with news, one idle, one missing, one git cannot read."""
    health = RunHealth("git")
    health.read("~/src/a")
    health.read("~/src/b")
    health.unavailable("~/src/x", "no such repository: ~/src/x", "check the path in Settings")
    health.failing("~/src/broken", "git cannot read it: fatal: bad object HEAD")
    return {"name": "git", "runs": 3, "health": health.summary({}, now=T0)}


def test_a_state_that_sums_up_its_sources_counts_them_and_the_sources_say_why():
    lines = describe(repos_status())
    assert lines == [
        "failing: 1 of 4 sources, 1 unavailable",
        "~/src/a: idle",
        "~/src/b: idle",
        "~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings",
        "~/src/broken: failing: git cannot read it: fatal: bad object HEAD",
    ]


def test_what_needs_the_user_is_said_once():
    status = repos_status()
    assert troubles(status) == ["~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings",
                                "~/src/broken: failing: git cannot read it: fatal: bad object HEAD"]
    # The run failed as a whole while reading ~/src/a: that source carries the error, said once.
    raised = RunHealth("git")
    raised.unavailable("~/src/x", "no such repository: ~/src/x", "check the path in Settings")
    raised.read("~/src/a")
    failed = {"name": "git", "health": raised.summary({}, error="RuntimeError: disk on fire", now=T0)}
    assert troubles(failed) == ["~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings",
                                "~/src/a: failing: RuntimeError: disk on fire"]
    # Failed before naming any source of its own: its own error leads.
    early = RunHealth("git")
    early.unavailable("~/src/x", "no such repository: ~/src/x", "check the path in Settings")
    failed = {"name": "git", "health": early.summary({}, error="RuntimeError: disk on fire", now=T0)}
    assert troubles(failed) == ["failing: RuntimeError: disk on fire",
                                "~/src/x: unavailable: no such repository: ~/src/x — check the path in Settings"]
    # A collector that reads one thing only: the state itself, with its fix.
    player = RunHealth("music")
    unavailable = {"name": "music", "health": player.summary({}, unavailable="playerctl not found", now=T0)}
    assert troubles(unavailable) == ["unavailable: playerctl not found"]
    fine = RunHealth("music")
    assert troubles({"name": "music", "health": fine.summary({"music": 3}, now=T0)}) == []
    assert troubles({"name": "music"}) == []           # not run yet: nothing to fix


def test_a_quarantine_says_how_it_ends_where_it_is_shown():
    status = {"name": "flaky", "quarantined": True, "failures": 1, "last_error": "hung: no end after 300 s",
              "health": {"state": "failing", "reason": "hung: no end after 300 s", "sources": {}}}
    assert describe(status) == ["quarantined after 1 failure: hung: no end after 300 s — release it with "
                                "`magi plugins --release flaky`"]
    assert troubles(status, release_hint="press Release") == [
        "quarantined after 1 failure: hung: no end after 300 s — press Release"]


def test_a_long_list_of_sources_is_cut_with_the_ones_needing_the_user_first():
    health = RunHealth("calendar")
    for i in range(10):
        health.read(f"cal-{i}.ics")
    health.unavailable("gone.ics", "no such file: gone.ics", "check the path in Settings")
    status = {"name": "calendar", "health": health.summary({"cal-3.ics": 2}, now=T0)}
    lines = describe(status, max_sources=3)
    assert lines == ["collecting", "gone.ics: unavailable: no such file: gone.ics — check the path in Settings",
                     "cal-0.ics: idle", "cal-1.ics: idle", "… and 8 more sources"]
    assert len(describe(status)) == 12


def test_a_status_saved_before_health_was_recorded_does_not_claim_it_never_ran():
    assert describe({"name": "git"}) == ["not run yet"]
    assert describe({"name": "git", "runs": 4}) == ["no health recorded yet"]


def test_items_left_out_are_counted_by_reason_with_the_last_one():
    status = {"skipped": {"not_utf8": 1, "binary_line": 2}, "last_skip": "binary_line: ~/.zsh_history line 9",
              "rejected": {"bad_url": 3, "not_text": 3, "too_long": 1}, "last_rejection": "url: not an address"}
    assert tallies(status) == [
        "skipped (not failures): binary_line 2, not_utf8 1; last: binary_line: ~/.zsh_history line 9",
        "rejected: bad_url 3, not_text 3, too_long 1; last: url: not an address"]
    assert tallies({"last_rejection": "url: not an address"}) == ["last rejection: url: not an address"]
    assert tallies({"skipped": {}, "rejected": {}}) == []
    assert by_reason({"b": 1, "a": 1, "c": 5}) == "c 5, a 1, b 1"
