"""The music collector: heartbeat merging (pure), MPRIS sampling through a playerctl on PATH, the play log."""

import json
import os
import stat

import pytest
from collecting import Ctx
from magi_plugins.music import Music, Play, merge_heartbeat, sample_players

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.l1 import event_rows


def beat(track, at, player="spotify", artist="Debussy", album="Suite"):
    return Play(player, artist, track, album, at, at)


@pytest.mark.parametrize("current, sample, going_on, ended", [
    (None, beat("Clair", 0), ("Clair", 0, 0), None),                            # a play starts
    (Play("spotify", "Debussy", "Clair", "Suite", 0, 30), beat("Clair", 60), ("Clair", 0, 60), None),  # extends
    (Play("spotify", "Debussy", "Clair", "Suite", 0, 30), beat("Reverie", 60), ("Reverie", 60, 60), "Clair"),
    (Play("spotify", "Debussy", "Clair", "Suite", 0, 30), beat("Clair", 500), ("Clair", 500, 500), "Clair"),  # gap
    (Play("spotify", "Debussy", "Clair", "Suite", 0, 30), None, None, "Clair"),  # silence ends it
    (None, None, None, None),
])
def test_merge_heartbeat(current, sample, going_on, ended):
    now, done = merge_heartbeat(current, sample)
    assert (now and (now.track, now.start, now.last)) == going_on
    assert (done and done.track) == ended



def test_samples_become_one_play_when_it_ends(tmp_path):
    samples = iter([[beat("Clair", 0)], [beat("Clair", 40), beat("X", 40, player="secret-player")],
                    [beat("Clair", 80)], [beat("Reverie", 120)], [], []])
    music = Music(sampler=lambda: next(samples))
    ctx, out = Ctx({}, {"apps": ["secret-player"]}), []
    for _ in range(6):
        out += list(music.collect(ctx.cursor, ctx))
        ctx.cursor = json.loads(json.dumps(ctx.cursor))       # the cursor survives a restart as JSON
    assert [(p["provenance"]["track_name"], p["provenance"]["play_duration_sec"]) for p in out] == [("Clair", 80)]
    assert out[0]["entities"] == [{"mention_text": "Debussy", "entity_type": "creator"}]
    # "Reverie" was sampled once (0 s): too short to be a play.


def test_playerctl_is_read_when_present(tmp_path, monkeypatch):
    fake = tmp_path / "playerctl"
    fake.write_text("#!/bin/sh\nprintf 'spotify\\tPlaying\\tDebussy\\tClair de Lune\\tSuite\\n"
                    "vlc\\tPaused\\tX\\tY\\tZ\\n'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    plays = sample_players()
    assert [(p.player, p.artist, p.track, p.album) for p in plays] == [("spotify", "Debussy", "Clair de Lune", "Suite")]
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert sample_players() == []


def test_the_play_log_is_imported_once(tmp_path, memory):
    log = tmp_path / "plays.jsonl"
    log.write_text(json.dumps({"played_at": 1_700_000_000, "artist": "Debussy", "track": "Arabesque",
                               "duration_sec": 240}) + "\n" + "{damaged\n")
    clock = [1_800_000_000.0]
    sup = Supervisor(memory, [Music(sampler=lambda: [])], settings={"music": {"play_log": str(log)}},
                     clock=lambda: clock[0])
    sup.tick()
    assert sup.wait_idle()
    texts = [r["content"] for r in event_rows(memory.db.reader())]
    assert texts == ["Music: Listened to “Arabesque” by Debussy for 4 min"]
    with log.open("a") as f:
        f.write(json.dumps({"played_at": 1_700_000_500, "artist": "Satie", "track": "Gymnopédie No. 1"}) + "\n")
    clock[0] += 31
    sup.tick()
    assert sup.wait_idle()
    assert sup.status["music"].counts["stored"] == 2 and sup.status["music"].counts["duplicates"] == 0
    sup.stop()
