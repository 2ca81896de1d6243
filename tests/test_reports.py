"""The typed reports (issue 18, item 3) are still the dicts they replaced, read-only: callers that serialise or
test them as dicts keep working while they move to the attributes."""

import json

import pytest
from payloads import chat

from magi_desktop.core.reports import DueReport


def test_the_reports_are_read_only_dicts_with_totals(memory):
    memory.ingest(chat("I live in Lisbon.", at=1_700_000_000.0, item="a"))
    pending, stats, due = memory.process_pending(), memory.stats(), memory.run_due(now=1_700_003_600.0)
    for report in (pending, stats, due):
        assert isinstance(report, dict) and json.loads(json.dumps(report)) == report.to_dict()
        with pytest.raises(TypeError, match="read-only"):
            report["added"] = 1
    assert pending.handled >= 1 and pending["embedded"] == pending.embedded
    assert stats.event_count == stats["events"]["total"] == 1
    assert {} | stats == stats.to_dict()


def test_a_report_copies_and_pickles_as_itself_and_stays_read_only():
    import copy
    import pickle

    report = DueReport(backup={"made": None}, l3={"day": 1})
    for again in (copy.copy(report), copy.deepcopy(report), pickle.loads(pickle.dumps(report))):
        assert type(again) is DueReport and again == report and again.l3 == {"day": 1}
    with pytest.raises(TypeError, match="read-only"):
        report |= {"l3": None}
