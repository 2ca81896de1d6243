"""Activity blocks (issue 20, item 3): what the browser, terminal and music collectors emit is folded per source,
clock hour and topic into an L1 event of its own that cites its members; the hour's block grows by supersede;
window lists and summaries count the block, not its members; forget reaches both; a rule can be turned off."""
# Raw SQL counts the activity_blocks rows left after a forget: no reader exposes the table.

import gzip
import json
import shutil
from pathlib import Path

import pytest
from collecting import Ctx
from magi_plugins import browser as B
from magi_plugins import music as M
from magi_plugins import terminal as T
from payloads import chat

from magi_desktop.collectors import SettingsError, load_settings, save_settings, use_aggregation_settings
from magi_desktop.core import Memory
from magi_desktop.core.errors import InvalidInput
from magi_desktop.core.l3.summarize import window_events
from magi_desktop.core.redact import CURRENT
from magi_desktop.core.store.l1 import event_row, event_rows
from magi_desktop.core.store.summaries import stored_summaries
from magi_desktop.core.store.supersede import superseded

FIXTURES = Path(__file__).parent / "fixtures"
HOUR = 3600


def chromium_visits(tmp_path):
    """The visits the browser collector reads from the History file headless Chromium wrote."""
    history = tmp_path / "chromium" / "Default" / "History"
    history.parent.mkdir(parents=True)
    with gzip.open(FIXTURES / "browser" / "chromium_History.gz") as packed, history.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return list(B.BrowserHistory().collect(None, Ctx({"profiles": [str(history)], "backfill_days": 36500})))


def zsh_commands(tmp_path):
    """The commands the terminal collector reads from the zsh history a real zsh wrote."""
    history = tmp_path / ".zsh_history"
    shutil.copy(FIXTURES / "terminal" / "zsh_history", history)
    return list(T.TerminalHistory().collect(None, Ctx({"files": [str(history)]})))


def play(track, start, seconds, artist="Dua Lipa"):
    return M.play_payload(M.Play("spotify", artist, track, "Future Nostalgia", start, start + seconds, 200.0))


def blocks(memory):
    return [r for r in event_rows(memory.db.reader())
            if r["metadata"]["timeline"].get("activity", {}).get("object_code") == "activity_block"]


def members(row):
    return row["metadata"]["activity_block"]["members"]


def provenance(row):
    return row["metadata"]["timeline"]["provenance"]


def test_a_chromium_history_becomes_one_block_per_site_and_hour_that_cites_its_visits(memory, tmp_path):
    visits = chromium_visits(tmp_path)
    results = memory.ingest_many(visits)
    local = [r.event_id for r, p in zip(results, visits, strict=True) if p["provenance"]["domain"] == "127.0.0.1"]
    assert len(local) == 7 and len({int(p["occurred_at"] // HOUR) for p in visits}) == 1   # what the fixture holds
    [block] = blocks(memory)
    said = provenance(block)
    assert said["domain"] == "127.0.0.1" and said["visits"] == 7 and said["distinct"] == 4
    assert said["top"] == ["Magi fixture home", "Café notes — 笔记", "Going on", "Blob maker"]
    assert said["top_counts"] == [3, 2, 1, 1]
    times = [p["occurred_at"] for p in visits if p["provenance"]["domain"] == "127.0.0.1"]
    assert (said["first_at"], said["last_at"], block["timestamp"]) == (min(times), max(times), min(times))
    assert block["metadata"]["activity_block"] == {"members": local, "member_count": 7}   # cited in time order
    assert block["content"].startswith("Chromium: Browsed 127.0.0.1: 7 visits from ")
    assert "Magi fixture home, Café notes — 笔记, Going on, Blob maker" in block["content"]
    # An observation of the sensor's, never the user's word, and not a second copy of each visit for L2.
    assert (block["evidence_class"], block["author_type"], block["cognition_eligible"]) == (
        "external_observation", "external", False)
    assert block["source"] == "chromium"                     # forgetting the source forgets it with its members
    # The lone localhost visit stays itself; every member stays stored and findable on its own.
    assert len(event_rows(memory.db.reader())) == len(visits) + 1
    pack = memory.query("Blob maker page", now=max(times) + 60)
    assert any(f.event_id in local for f in pack.findings)


def test_a_zsh_history_folds_each_program_of_the_hour_and_keeps_redacted_commands_redacted(memory, tmp_path):
    commands = zsh_commands(tmp_path)
    memory.ingest_many(commands)
    by_program = {provenance(b)["program"]: b for b in blocks(memory)}
    echoes = [p for p in commands if p["provenance"]["command"].startswith("echo ")]
    assert len(echoes) >= 2 and "echo" in by_program
    echo = provenance(by_program["echo"])
    assert echo["commands"] == len(echoes) and echo["top"][0] == "echo hello"
    assert by_program["echo"]["content"].startswith("Terminal: Ran echo 3 times from ")
    # The password on the mysql command line was redacted in the member: nothing of it reaches any block.
    assert not any("S3cretPass" in b["content"] or "S3cretPass" in str(provenance(b)) for b in blocks(memory))
    assert "mysql" not in by_program                         # one run is no block


def test_replays_of_an_artist_become_one_block_with_the_tracks_played_most_and_the_time_listened(memory):
    start = 1_796_160_000.0
    memory.ingest_many([play("Levitating", start, 203), play("Levitating", start + 210, 203),
                        play("Physical", start + 420, 193), play("Levitating", start + 620, 100),
                        play("Hello", start + 800, 120, artist="Adele")])
    [block] = blocks(memory)
    said = provenance(block)
    assert (said["artist_name"], said["plays"], said["top"], said["top_counts"], said["total_sec"]) == (
        "Dua Lipa", 4, ["Levitating", "Physical"], [3, 1], 203 + 203 + 193 + 100)
    assert block["content"].startswith("Music: Listened to Dua Lipa: 4 plays for 11 min 39 s from ")
    assert memory.entities("Dua Lipa")                      # the artist the block names is an entity, as a play's


def test_the_current_hours_block_grows_as_a_new_version_superseding_the_last(memory, tmp_path):
    visits = [p for p in chromium_visits(tmp_path) if p["provenance"]["domain"] == "127.0.0.1"]
    memory.ingest_many(visits[:2])
    [first] = blocks(memory)
    assert provenance(first)["visits"] == 2
    for n, visit in enumerate(visits[2:], start=3):
        memory.ingest(visit)
        [live] = blocks(memory)
        assert provenance(live)["visits"] == n and live["natural_key"] == first["natural_key"]
    conn = memory.db.reader()
    assert event_row(conn, first["event_id"]) is None
    assert superseded(conn)[first["event_id"]] == live["event_id"]      # each version points at the live one
    memory.ingest(visits[-1])                                            # a re-read visit: nothing changes
    assert blocks(memory) == [live]


def test_what_did_i_do_lists_the_block_not_its_visits_again(memory, tmp_path):
    visits = chromium_visits(tmp_path)
    memory.ingest_many(visits)
    memory.ingest_many(zsh_commands(tmp_path))
    end = max(p["occurred_at"] for p in visits) + 600
    pack = memory.query("what did I do today?", now=end, limit=30)
    [block] = [b for b in blocks(memory) if b["source"] == "chromium"]
    listed = [f.event_id for f in pack.findings if f.source == "chromium"]
    assert block["event_id"] in listed
    assert not set(listed) & set(members(block))
    assert pack.trace["listing"]["counts"]["chromium"] == 2      # the block and the lone localhost visit
    # As of a moment inside the hour the block is not known yet (it holds later visits): its visits so far are.
    early = sorted(p["occurred_at"] for p in visits)[2]
    listed_early = {f.event_id for f in memory.query("what did I do today?", now=early + 0.01, limit=30).findings}
    assert block["event_id"] not in listed_early and len(listed_early & set(members(block))) == 3


def test_a_summary_of_the_hour_counts_the_block_and_not_its_members(memory, tmp_path):
    visits = chromium_visits(tmp_path)
    memory.ingest_many(visits)
    hour = visits[0]["occurred_at"] // HOUR * HOUR
    events = window_events(memory.db.reader(), hour, hour + HOUR)
    [block] = blocks(memory)
    assert sorted(e.rowid for e in events) == sorted([block["id"]] + [
        r["id"] for r in event_rows(memory.db.reader()) if provenance(r).get("domain") == "localhost"])
    assert {e.topic for e in events} == {"127.0.0.1", "localhost"}


def test_forgetting_a_member_renders_its_block_again_without_it_and_the_last_but_one_drops_it(memory, tmp_path):
    visits = [p for p in chromium_visits(tmp_path) if p["provenance"]["domain"] == "127.0.0.1"]
    ids = [r.event_id for r in memory.ingest_many(visits)]
    blob = next(i for i, p in zip(ids, visits, strict=True) if p["provenance"]["title"] == "Blob maker")
    memory.forget(event_ids=[blob])
    [block] = blocks(memory)
    assert provenance(block)["visits"] == 6 and "Blob maker" not in block["content"]
    assert blob not in members(block)
    found = memory.query("Blob maker", now=visits[-1]["occurred_at"] + 60).findings
    assert all("Blob maker" not in f.text for f in found)
    rest = [i for i in ids if i != blob]
    memory.forget(event_ids=rest[:-1])
    assert blocks(memory) == []                               # one visit left is itself again
    assert [r["event_id"] for r in event_rows(memory.db.reader())] == rest[-1:]


def test_forgetting_a_block_forgets_the_visits_it_counts_and_forgetting_the_source_forgets_both(memory, tmp_path):
    visits = chromium_visits(tmp_path)
    memory.ingest_many(visits)
    [block] = blocks(memory)
    memory.forget(event_ids=[block["event_id"]])
    left = event_rows(memory.db.reader())
    assert [provenance(r)["domain"] for r in left] == ["localhost"]
    memory.ingest_many(zsh_commands(tmp_path))
    assert any(b["source"] == "terminal" for b in blocks(memory))
    memory.forget(source="terminal")
    assert not [r for r in event_rows(memory.db.reader()) if r["source"] == "terminal"]
    left_blocks = memory.db.reader().execute("SELECT count(*) FROM activity_blocks WHERE source = 'terminal'")
    assert left_blocks.fetchone()[0] == 0                     # no descriptor of a block with nothing left


def test_a_rule_turned_off_folds_nothing_new_the_others_still_fold_and_the_choice_is_kept(tmp_path):
    with Memory.open(tmp_path / "data", embedder="hashing") as memory:
        assert memory.aggregation_settings() == {"browser": True, "terminal": True, "music": True}
        memory.set_aggregation("browser", False)
        with pytest.raises(InvalidInput, match="no aggregation rule 'app_usage'"):
            memory.set_aggregation("app_usage", True)
    with Memory.open(tmp_path / "data", embedder="hashing") as memory:
        assert memory.aggregation_settings()["browser"] is False
        visits = chromium_visits(tmp_path)
        memory.ingest_many(visits)
        memory.ingest_many(zsh_commands(tmp_path))
        assert {b["source"] for b in blocks(memory)} == {"terminal"}
        assert len([r for r in event_rows(memory.db.reader()) if r["source"] == "chromium"]) == len(visits)


def test_collectors_json_turns_a_collectors_folding_off_and_a_wrong_value_names_its_field(memory, tmp_path):
    folder = memory.path.parent                             # the data folder, where collectors.json lives
    (folder / "collectors.json").write_text(json.dumps({"collectors": {
        "terminal": {"enabled": False, "aggregate": False}, "browser": {"enabled": False}}}))
    settings = load_settings(folder)
    use_aggregation_settings(memory, settings)
    assert memory.aggregation_settings() == {"browser": True, "terminal": False, "music": True}
    save_settings(folder, settings)                        # the Settings dialog writing the file keeps the choice
    assert json.loads((folder / "collectors.json").read_text())["collectors"]["terminal"]["aggregate"] is False
    memory.ingest_many(zsh_commands(tmp_path))
    assert blocks(memory) == []
    for entry, where in (({"aggregate": "no"}, "collectors.terminal.aggregate"),
                         ({"aggregate": True}, "collectors.git.aggregate")):
        name = "git" if "git" in where else "terminal"
        (folder / "collectors.json").write_text(json.dumps({"collectors": {name: entry}}))
        with pytest.raises(SettingsError) as raised:
            load_settings(folder)
        assert raised.value.where == where


def test_an_export_imported_folds_its_visits_again_and_lists_each_block_once(memory, tmp_path):
    visits = chromium_visits(tmp_path)
    memory.ingest_many(visits)
    [block] = blocks(memory)
    memory.export_jsonl(tmp_path / "export.jsonl")
    with Memory.open(tmp_path / "other", embedder="hashing") as other:
        report = other.import_jsonl(tmp_path / "export.jsonl")
        assert report.rebuilt["activity_blocks"] == "1 exported, 1 folded again from the imported events"
        [again] = blocks(other)
        assert (again["content"], provenance(again), members(again)) == (
            block["content"], provenance(block), members(block))
        assert again["cognition_eligible"] is False
        end = max(p["occurred_at"] for p in visits) + 600
        listed = [f.event_id for f in other.query("what did I do today?", now=end, limit=30).findings]
        assert again["event_id"] in listed and not set(listed) & set(members(again))


def test_forgetting_a_time_range_forgets_the_plays_in_it_and_the_block_is_made_again_from_the_rest(memory):
    start = 1_796_158_800.0                                                                # an hour's start
    memory.ingest_many([play(f"Track {i % 3}", start + i * 100, 90) for i in range(30)])     # 30 plays, 4 chunks
    memory.forget(start=start, end=start + 1000)                                           # the first 10
    [block] = blocks(memory)
    said = provenance(block)
    assert (said["plays"], said["first_at"], said["total_sec"]) == (20, start + 1000, 20 * 90)
    assert block["timestamp"] == start + 1000 and len(members(block)) == 20
    assert len([r for r in event_rows(memory.db.reader()) if r["source"] == "music"]) == 21


def test_a_block_grown_after_its_members_were_redacted_again_never_brings_the_secret_back(tmp_path):
    def curl(i):
        return {"source_type": "terminal", "source_item_id": f"zsh:{i}", "occurred_at": 1_796_158_800.0 + i * 60,
                "activity": {"source_code": "terminal", "action_code": "run_command"},
                "provenance": {"command": f"curl https://api.example/v1/items?sid=4711&page={i}", "shell": "zsh"}}

    older = CURRENT.without("url_param")                  # as if an older version did not redact "sid="
    with Memory.open(tmp_path / "m", embedder="hashing", redaction=older) as memory:
        memory.ingest_many([curl(1), curl(2)])
        assert "4711" in blocks(memory)[0]["content"]
    with Memory.open(tmp_path / "m", embedder="hashing") as memory:
        memory.redact_stored()
        memory.ingest(curl(3))
        [block] = blocks(memory)
        assert provenance(block)["commands"] == 3
        assert not any("4711" in r["content"] or "4711" in json.dumps(r["metadata"])
                       for r in event_rows(memory.db.reader()))


def test_a_trend_counts_the_visits_and_not_their_blocks_besides(memory):
    start = 1_796_158_800.0                                                                # an hour's start
    memory.ingest(chat("Hello again.", at=start - 40 * 86400, session="early"))        # reaching back 8 weeks
    memory.ingest_many([{"source_type": "chrome", "source_item_id": f"v{i}", "occurred_at": start + (i // 3) * HOUR
                         + (i % 3) * 60, "activity": {"source_code": "chrome", "action_code": "visit_page"},
                         "provenance": {"url": f"https://x.example/{i}", "domain": "x.example"}} for i in range(30)])
    assert len(blocks(memory)) == 10                                                   # three visits an hour
    memory.run_due(now=start + 20 * 86400)
    [trend] = [s.title for s in stored_summaries(memory.db.reader(), summary_type="insight")
               if s.summary_category == "trend"]
    assert trend == "chrome activity rose: 0 → 30 events (4 weeks vs the 4 before)"
