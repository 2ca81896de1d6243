"""The query modes, a pack's status and the layers are str-valued enums (QueryMode, PackStatus, Layer): each member
is its string, plain strings are still accepted, and what a pack exports as JSON is byte for byte what it was."""

import json

import pytest
from payloads import chat

from magi_desktop.agents.output import pack_data, pack_text
from magi_desktop.core import EvidencePack, Finding, Layer, PackStatus, QueryMode
from magi_desktop.core.outbound import safe
from magi_desktop.core.retrieval.modes import MODES

T0 = 1_765_000_000.0


def not_plain(value) -> list:
    """Every string in ``value`` (JSON-like data) that is not a plain ``str``: an enum member, say."""
    if isinstance(value, dict):
        return not_plain(list(value)) + not_plain(list(value.values()))
    if isinstance(value, (list, tuple)):
        return [bad for item in value for bad in not_plain(item)]
    return [value] if isinstance(value, str) and type(value) is not str else []


def test_each_member_is_its_string_and_writes_as_it():
    assert MODES == tuple(QueryMode) == ("exact_fact", "current_state", "temporal_compare", "episode_recall",
                                         "cross_session", "event_stream", "summary", "activity_summary", "strategy")
    assert all(type(mode) is str for mode in MODES)
    assert [layer.value for layer in Layer] == ["L0", "L1", "L2", "L3", "L4"]
    assert (PackStatus.OK, PackStatus.INSUFFICIENT) == ("ok", "insufficient")
    for member in [*QueryMode, *Layer, *PackStatus]:
        assert member == member.value and str(member) == f"{member}" == member.value
        assert json.dumps(member) == json.dumps(member.value) and json.dumps({"k": member}) == f'{{"k": "{member}"}}'
        assert {member.value: 1}[member] == 1         # the same hash: a dict keyed by strings finds it


def test_a_pack_holds_members_and_exports_plain_strings(memory):
    memory.ingest(chat("I live in Hangzhou now.", at=T0, item="moved"))
    memory.process_pending()
    pack = memory.query("Where do I live now?", now=T0 + 60)
    assert type(pack.status) is PackStatus and type(pack.query_mode) is QueryMode
    assert pack.query_mode is QueryMode.CURRENT_STATE and pack.query_mode == "current_state"
    assert pack.findings and all(type(f.layer) is Layer for f in pack.findings)
    assert {f.layer for f in pack.findings} == {Layer.L1, Layer.L2} == {"L1", "L2"}    # the belief, its event
    exported = pack.to_dict()
    assert not_plain(exported) == []
    assert (exported["status"], exported["query_mode"]) == ("ok", "current_state")
    assert [f["layer"] for f in exported["findings"]] == [f.layer.value for f in pack.findings]
    assert json.loads(json.dumps(exported)) == exported
    assert not_plain(pack_data(pack)) == []                 # what the MCP tools send, as data and as text
    assert pack_data(pack)["findings"][0]["layer"] == pack.findings[0].layer.value
    assert "Memory answer (current_state mode, ok): 2 finding(s).\n[1] L2 · " in pack_text(pack)


def test_a_mode_is_taken_as_a_member_or_a_string_alike(memory):
    memory.ingest(chat("I adopted a cat called Miso.", at=T0, item="miso"))
    by_member = memory.query("Tell me about Miso", mode=QueryMode.EPISODE_RECALL, now=T0 + 60)
    by_string = memory.query("Tell me about Miso", mode="episode_recall", now=T0 + 60)
    assert by_member.query_mode is by_string.query_mode is QueryMode.EPISODE_RECALL
    assert by_member.summary == by_string.summary and "episode_recall mode" in by_member.summary
    without_timings = [{k: v for k, v in p.to_dict().items() if k != "trace"} for p in (by_member, by_string)]
    assert json.dumps(without_timings[0]) == json.dumps(without_timings[1])


def test_plain_strings_are_made_members_and_a_wrong_one_is_refused():
    finding = Finding(layer="L2", text="t", occurred_at=T0, source="l2", source_item_id=None, session_id=None,
                      author="user", evidence_class="user_self_report", score=0.5, event_id="e1")
    assert finding.layer is Layer.L2 and finding.to_dict()["layer"] == "L2" and type(finding.to_dict()["layer"]) is str
    pack = EvidencePack(status="ok", query="q", query_mode="summary", summary="", findings=[finding],
                        insufficient_evidence=False, answering_hints=[])
    assert pack.status is PackStatus.OK and pack.query_mode is QueryMode.SUMMARY
    assert type(safe(pack).status) is PackStatus and safe(pack).findings[0].layer is Layer.L2   # what query returns
    with pytest.raises(ValueError, match="'L9' is not a valid Layer"):
        Finding(layer="L9", text="t", occurred_at=T0, source="l2", source_item_id=None, session_id=None,
                author="user", evidence_class="user_self_report", score=0.5, event_id="e1")
    with pytest.raises(ValueError):
        EvidencePack(status="fine", query="q", query_mode="summary", summary="", findings=[],
                     insufficient_evidence=False, answering_hints=[])


def test_an_unknown_mode_is_still_refused_by_name(memory):
    from magi_desktop.core import InvalidInput

    with pytest.raises(InvalidInput, match="unknown query mode 'gossip'"):
        memory.query("anything?", mode="gossip")
