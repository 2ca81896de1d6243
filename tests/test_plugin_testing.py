"""``magi_desktop.plugin_api.testing`` (issue 19, item 7): a plugin's tests run its collector without a host, and
what they see is what the host would do — the same checks of payloads, cursors, exclusions and skips, the same
cursor for the next run (compared here with a real ``Supervisor`` over a real memory)."""

import subprocess
import sys
import typing

import pytest

from magi_desktop.collectors import Supervisor
from magi_desktop.collectors.runs import CursorNotSaved
from magi_desktop.plugin_api import CollectContext, Unavailable, activity
from magi_desktop.plugin_api.testing import FakeContext, PayloadRejected, SourceReport, check_payload, run

T0 = 1_700_000_000


class Notes:
    """Notes 0..count-1, one a second, oldest first; ``keep`` makes it save its own cursor every two notes."""

    name = "notes"
    source_type = "notes"
    interval_seconds = 60
    settings_schema = {}
    privacy_note = "test"

    def __init__(self, count=8, keep=False, extra=()):
        self.count, self.keep, self.extra = count, keep, list(extra)

    def collect(self, since, ctx):
        start = 0 if since is None else (since["next"] if self.keep else None)
        for i in range(self.count):
            at = T0 + i
            if self.keep and i < start or not self.keep and since is not None and at <= since:
                continue
            if self.keep and i % 2 == 0:
                ctx.save_cursor({"next": i})
            yield activity("notes", "write_note", at, {"title": f"note {i}"}, item_id=f"n{i}")
        yield from self.extra
        if self.keep:
            ctx.save_cursor({"next": self.count})


def test_the_fake_context_is_a_whole_collect_context():
    members = {n for n in vars(CollectContext) if not n.startswith("_")} | set(typing.get_type_hints(CollectContext))
    ctx = FakeContext()
    assert members >= {"settings", "excluded", "save_cursor", "progress", "source", "unavailable", "failing",
                       "skipped", "temp_dir", "stopping"}
    assert [m for m in sorted(members) if not hasattr(ctx, m)] == []
    assert isinstance(ctx, CollectContext)


def test_a_cursor_comes_back_as_json_gives_it_and_one_that_is_not_json_fails_as_in_the_host():
    ctx = FakeContext(name="notes")
    ctx.save_cursor({"tips": ("a", "b"), "at": 1.5})
    assert ctx.cursor == {"tips": ["a", "b"], "at": 1.5}       # the memory keeps JSON: the tuple is a list
    with pytest.raises(CursorNotSaved, match="collector notes: its cursor cannot be saved"):
        ctx.save_cursor({"seen": {"a", "b"}})
    assert ctx.cursors == [{"tips": ["a", "b"], "at": 1.5}]


def test_exclusions_match_as_the_host_matches_them(memory):
    lists = {"domains": ["Bank.Example", "bücher.example"], "apps": ["KeePassXC"]}
    host = Supervisor(memory, [], exclusions=lists)
    ctx = FakeContext(exclusions=lists)
    try:
        for kind, value in [("domains", "https://BANK.example/login"), ("domains", "https://xn--bcher-kva.example/"),
                            ("domains", "https://example.org/"), ("apps", "keepassxc"), ("apps", "firefox"),
                            ("paths", "/home/u/bank.example")]:
            assert ctx.excluded(kind, value) == host.is_excluded(kind, value), (kind, value)
        assert ctx.excluded("domains", "https://bücher.example/") and not ctx.excluded("apps", "bank.example")
    finally:
        host.stop()


def test_skips_are_counted_by_the_reason_codes_the_host_shows():
    ctx = FakeContext()
    ctx.skipped("Bad DTSTART!", "work.ics: event 3")
    ctx.skipped("bad_dtstart")
    assert ctx.skips == {"bad_dtstart": 2}
    assert ctx.details == [("bad_dtstart", "work.ics: event 3"), ("bad_dtstart", None)]


def test_the_scratch_folder_is_made_when_asked_for_and_gone_when_the_run_ends():
    made = []

    class Copies(Notes):
        def collect(self, since, ctx):
            made.append(ctx.temp_dir)
            (ctx.temp_dir / "History").write_text("copy")
            yield from super().collect(since, ctx)

    result = run(Copies(count=1))
    assert len(result.payloads) == 1 and made and not made[0].exists()


def _host_runs(memory, collector, runs, max_per_run, exclusions=None):
    """(stored item ids, the cursor after each run) as a real supervisor does it."""
    sup = Supervisor(memory, [collector], max_per_run=max_per_run, exclusions=exclusions)
    cursors = []
    try:
        for _ in range(runs):
            sup.status[collector.name].next_run_at = 0
            assert sup.tick() == [collector.name] and sup.wait_idle()
            cursors.append(memory.plugin_cursor(collector.name))
    finally:
        sup.stop()
    return cursors, sup.status[collector.name].counts


@pytest.mark.parametrize("keep", [False, True], ids=["a time cursor the host keeps", "its own cursor"])
def test_run_starts_each_next_run_where_the_host_would(memory, keep):
    host_cursors, counts = _host_runs(memory, Notes(count=8, keep=keep), runs=4, max_per_run=3)
    since, fake_cursors, yielded = None, [], []
    for _ in range(4):
        result = run(Notes(count=8, keep=keep), since=since, max_per_run=3)
        yielded += [p["source_item_id"] for p in result.payloads]
        since = result.next_since
        fake_cursors.append(since)
    assert fake_cursors == host_cursors
    assert len(set(yielded)) == 8 == counts["stored"]
    assert len(yielded) == counts["stored"] + counts["duplicates"]


def test_run_drops_what_the_host_would_drop_for_an_exclusion(memory):
    leak = activity("notes", "write_note", T0 + 100, {"title": "login at https://bank.example/"}, item_id="leak")
    exclusions = {"domains": ["bank.example"]}
    _, counts = _host_runs(memory, Notes(count=2, extra=[leak]), runs=1, max_per_run=50_000, exclusions=exclusions)
    result = run(Notes(count=2, extra=[leak]), exclusions=exclusions)
    assert (len(result.payloads), result.excluded) == (counts["stored"], counts["excluded"]) == (2, 1)


REFUSED = [
    ({"source_type": "chat", "session_id": "s", "occurred_at": T0, "chat": {"role": "user", "text": "I quit",
                                                                           "provenance": "human_input"}}, "chat"),
    ({"source_type": "runtime", "occurred_at": T0, "action": {"tool": "shell", "ok": True}}, "action"),
    (activity("calendar", "attend_meeting", T0, {}), "source_type"),
    (activity("notes", "write note", T0, {}), "activity.action_code"),
    (activity("notes", "write_note", T0 * 1000, {}), "occurred_at"),
]


@pytest.mark.parametrize("payload, field", REFUSED)
def test_a_payload_the_host_would_reject_stops_the_run_named_by_its_field(payload, field):
    with pytest.raises(PayloadRejected) as error:
        run(Notes(count=2, extra=[payload]))
    assert error.value.field == field and error.value.index == 2
    assert str(error.value).startswith(f"payload 2: {field}: ")
    kept = run(Notes(count=2, extra=[payload]), check=False)       # to look at it instead
    assert kept.payloads[-1] is payload


@pytest.mark.parametrize("payload, field", REFUSED)
def test_what_the_fake_refuses_the_host_refuses(memory, payload, field):
    _, counts = _host_runs(memory, Notes(count=2, extra=[payload]), runs=1, max_per_run=50_000)
    assert (counts["stored"], counts["rejected"]) == (2, 1)


def test_check_payload_names_the_bad_field_and_knows_the_collectors_source_types():
    good = activity("chromium", "visit_page", T0, {"url": "https://a.example/"})
    check_payload(good)
    check_payload(good, source_types=("chrome", "chromium"))
    with pytest.raises(PayloadRejected, match="source_type: this collector writes only 'chrome'"):
        check_payload(good, source_types=("chrome",))
    with pytest.raises(PayloadRejected) as error:
        check_payload({**good, "provenance": {"url": "a\ud800"}})
    assert (error.value.field, error.value.index) == ("provenance", None)


def test_sources_unavailable_ends_the_run_without_failing_and_a_bug_propagates():
    class Repos(Notes):
        def collect(self, since, ctx):
            ctx.source("~/src/a")
            yield from super().collect(since, ctx)
            ctx.unavailable("~/src/x", "no such repository: ~/src/x", "check the path in Settings")
            ctx.failing("~/src/b", "git: bad object")

    result = run(Repos(count=1))
    assert result.sources == {"~/src/a": SourceReport("read"), "~/src/b": ("failing", "git: bad object", None),
                              "~/src/x": ("unavailable", "no such repository: ~/src/x", "check the path in Settings")}
    assert result.per_source == {"~/src/a": 1} and result.unavailable is None

    class Nothing(Notes):
        def collect(self, since, ctx):
            raise Unavailable("no window system", "run it in a desktop session")
            yield

    nothing = run(Nothing(), since=T0)
    assert (nothing.unavailable.reason, nothing.unavailable.fix) == ("no window system", "run it in a desktop session")
    assert nothing.next_since == T0 and nothing.payloads == []

    class Broken(Notes):
        def collect(self, since, ctx):
            yield from super().collect(since, ctx)
            raise KeyError("files")

    with pytest.raises(KeyError):
        run(Broken(count=1))


def test_importing_the_testing_module_loads_neither_the_host_nor_the_core():
    code = ("import sys, magi_desktop.plugin_api.testing as t; "
            "assert t.PAYLOAD_SCHEMA['type'] == 'object'; "
            "print(sorted(m for m in sys.modules if m.startswith(('magi_desktop.core', 'magi_desktop.collectors'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_run_gives_the_declared_defaults_and_is_unavailable_on_a_required_setting_unset_as_the_host_is():
    from magi_desktop.plugin_api import activity
    from magi_desktop.plugin_api.testing import run

    class Needs:
        name, source_type, interval_seconds, privacy_note = "needs", "notes", 60, "test"
        settings_schema = {"folder": {"type": "string", "title": "Notes folder", "required": True},
                           "limit": {"type": "integer", "default": 7}}

        def __init__(self):
            self.seen = []

        def collect(self, since, ctx):
            self.seen.append(dict(ctx.settings))
            yield activity("notes", "write_note", 1_700_000_000, {"title": "n"}, item_id="n1")

    needs = Needs()
    result = run(needs)
    assert needs.seen == [] and result.unavailable is not None
    assert (result.unavailable.reason, result.unavailable.fix) == (
        "Notes folder not set", "set it in Settings (collectors.json: collectors.needs.settings.folder)")
    result = run(needs, settings={"folder": "~/notes"})
    assert needs.seen == [{"folder": "~/notes", "limit": 7}] and len(result.payloads) == 1
