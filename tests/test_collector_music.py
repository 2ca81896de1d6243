"""The music collector: heartbeat merging (pure), MPRIS players read over a real private D-Bus session bus, each
reason it cannot hear players, the macOS and Windows back-ends, and the play log."""

import json
import os
import stat

import pytest
from collecting import Ctx
from desktop import MprisPlayer, metadata, session_bus
from magi_plugins import mpris
from magi_plugins.mpris import player_name, player_state, read_players, session_bus_address
from magi_plugins.music import Music, Play, merge_heartbeat
from magi_plugins.music_players import AppleScriptPlayers, Heard, MprisPlayers, Sample, now_playing, player_backend

from magi_desktop.collectors import Supervisor
from magi_desktop.collectors.health import describe
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.plugin_api import Unavailable


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


class Scripted:
    """A back-end that hears what the test says, one sample a run (the merging is what is under test here)."""

    source = "scripted players"

    def __init__(self, samples):
        self.samples = iter(samples)

    def sample(self):
        return Sample([Heard(*h) for h in next(self.samples)], [])


def test_samples_become_one_play_when_it_ends():
    clock = [0.0]
    backend = Scripted([[("spotify", "Debussy", "Clair", "Suite")],
                        [("spotify", "Debussy", "Clair", "Suite"), ("secret-player", "A", "X", "")],
                        [("spotify", "Debussy", "Clair", "Suite")], [("spotify", "Debussy", "Reverie", "Suite")],
                        [], []])
    music = Music(backend=lambda: backend, clock=lambda: clock[0])
    ctx, out = Ctx({}, {"apps": ["secret-player"]}), []
    for _ in range(6):
        out += list(music.collect(ctx.cursor, ctx))
        ctx.cursor = json.loads(json.dumps(ctx.cursor))       # the cursor survives a restart as JSON
        clock[0] += 40
    assert [(p["provenance"]["track_name"], p["provenance"]["play_duration_sec"]) for p in out] == [("Clair", 80)]
    assert out[0]["entities"] == [{"mention_text": "Debussy", "entity_type": "creator"}]
    # "Reverie" was sampled once (0 s): too short to be a play.


# ------------------------------------------------------------ MPRIS over D-Bus

@pytest.fixture
def bus(tmp_path):
    with session_bus(tmp_path) as address:
        yield address


@pytest.fixture
def players(bus):
    started = []

    def start(name, **kwargs):
        player = MprisPlayer(bus, name, **kwargs)
        started.append(player)
        return player

    yield start
    for player in started:
        player.close()


def test_mpris_players_on_the_session_bus_are_read_with_their_metadata(bus, players):
    players("spotify", meta=metadata("Clair de Lune", ["Claude Debussy", "Isao Tomita"], "Suite bergamasque",
                                     length_us=302_000_000))
    players("vlc", status="Paused", meta=metadata("Gymnopédie No. 1", ["Satie"]))
    players("chromium.instance4242", meta=metadata("Lecture 3"))
    players("broken", broken=True)
    reading = read_players(bus)
    assert reading.players == [
        player_state("chromium", {"PlaybackStatus": ("s", "Playing"), "Metadata": ("a{sv}", metadata("Lecture 3"))}),
        player_state("spotify", {"PlaybackStatus": ("s", "Playing"),
                                 "Metadata": ("a{sv}", metadata("Clair de Lune", ["Claude Debussy", "Isao Tomita"],
                                                                "Suite bergamasque", 302_000_000))}),
        player_state("vlc", {"PlaybackStatus": ("s", "Paused"),
                             "Metadata": ("a{sv}", metadata("Gymnopédie No. 1", ["Satie"]))}),
    ]
    spotify = reading.players[1]
    assert (spotify.title, spotify.artists, spotify.album, spotify.length_seconds, spotify.status) == (
        "Clair de Lune", ("Claude Debussy", "Isao Tomita"), "Suite bergamasque", 302.0, "Playing")
    assert list(reading.errors) == ["broken"] and "UnknownInterface" in reading.errors["broken"]
    # Only what is playing, with a title, is heard; the broken player is named, the others still read.
    sample = MprisPlayers({"DBUS_SESSION_BUS_ADDRESS": bus}).sample()
    assert sample.heard == [
        Heard("chromium", "", "Lecture 3", "", None),
        Heard("spotify", "Claude Debussy, Isao Tomita", "Clair de Lune", "Suite bergamasque", 302.0)]
    assert [(t.source, t.failing) for t in sample.troubles] == [("MPRIS player broken", True)]


def test_hung_players_are_named_and_cost_a_sample_no_more_than_its_budget(bus, players):
    for name in ("a-frozen", "b-frozen", "c-frozen"):
        players(name, hung=True)
    players("z-fine", meta=metadata("Clair de Lune"))
    reading = read_players(bus, timeout=0.2, budget=0.3)
    assert reading.players == []
    assert [p for p, error in reading.errors.items() if error.startswith("does not answer")] == ["a-frozen",
                                                                                                  "b-frozen"]
    assert [p for p, error in reading.errors.items() if error.startswith("not read")] == ["c-frozen", "z-fine"]
    assert [p.player for p in read_players(bus, timeout=0.2, budget=5).players] == ["z-fine"]


@pytest.mark.parametrize("properties, expected", [
    ({}, ("", "", (), "", None)),                                                    # a player that says nothing
    ({"PlaybackStatus": ("s", "Playing"), "Metadata": ("a{sv}", {"xesam:artist": ("s", "One String"),
                                                                 "mpris:length": ("t", 0)})},
     ("Playing", "", ("One String",), "", None)),                                    # a string, not a list; no length
    ({"Metadata": ("s", "not a dict")}, ("", "", (), "", None)),
    ({"Metadata": ("a{sv}", {"mpris:length": ("d", 1.5e6), "xesam:title": ("s", "  T  ")})},
     ("", "T", (), "", 1.5)),
])
def test_player_state_takes_what_a_player_sends_without_failing_on_what_it_got_wrong(properties, expected):
    state = player_state("p", properties)
    assert (state.status, state.title, state.artists, state.album, state.length_seconds) == expected


def test_player_names_drop_the_instance_a_browser_adds():
    assert player_name("org.mpris.MediaPlayer2.firefox.instance_1_84") == "firefox"
    assert player_name("org.mpris.MediaPlayer2.chromium.instance4242") == "chromium"
    assert player_name("org.mpris.MediaPlayer2.spotify") == "spotify"


def run_once(sup, name="music"):
    sup.status[name].next_run_at = 0
    assert name in sup.tick()
    assert sup.wait_idle()


def test_a_play_heard_over_mpris_is_stored_when_the_track_changes(memory, bus, players):
    player = players("spotify", meta=metadata("Clair de Lune", ["Debussy"], "Suite bergamasque", 302_000_000))
    players("excluded-player", meta=metadata("Secret"))
    clock = [1_800_000_000.0]
    music = Music(backend=lambda: player_backend("linux", {"DBUS_SESSION_BUS_ADDRESS": bus}), clock=lambda: clock[0])
    sup = Supervisor(memory, [music], clock=lambda: clock[0], exclusions={"apps": ["excluded-player"]})
    for _ in range(3):
        run_once(sup)
        clock[0] += 30
    assert event_rows(memory.db.reader()) == []          # still playing: no play has ended yet
    assert sup.status["music"].health["sources"] == {"MPRIS players (D-Bus session bus)": {"state": "idle"}}
    player.metadata = metadata("Rêverie", ["Debussy"])
    run_once(sup)
    rows = event_rows(memory.db.reader())
    assert [r["content"] for r in rows] == [
        "Music: Listened to “Clair de Lune” by Debussy from “Suite bergamasque” for 1 min"]   # heard at 0, 30 and 60 s
    assert rows[0]["metadata"]["timeline"]["provenance"]["track_length_sec"] == 302
    assert "Secret" not in json.dumps(memory.plugin_cursor("music"))      # an excluded player is not even kept
    assert sup.status["music"].health["sources"]["MPRIS players (D-Bus session bus)"] == {"state": "collecting",
                                                                                       "stored": 1}
    sup.stop()


# ------------------------------------------------------------ unavailable: why

def test_no_session_bus_is_unavailable_with_the_fix_and_no_failure(memory, tmp_path):
    music = Music(backend=lambda: player_backend("linux", {"XDG_RUNTIME_DIR": str(tmp_path)}))   # no bus socket
    sup = Supervisor(memory, [music], quarantine_after=1)
    run_once(sup)
    run_once(sup)
    status = sup.status["music"]
    assert status.failures == 0 and not status.quarantined
    assert status.health["state"] == "unavailable" and status.health["reason"] == "no D-Bus session bus"
    assert "DBUS_SESSION_BUS_ADDRESS is not set" in status.health["fix"]
    assert status.health["sources"] == {"music": {"state": "unavailable", "reason": "no D-Bus session bus",
                                                  "fix": mpris.NO_BUS_FIX}}
    assert describe(memory.collector_statuses()["music"])[0].startswith("unavailable: no D-Bus session bus — ")
    sup.stop()


def test_a_bus_address_nobody_listens_at_is_unavailable_saying_where(tmp_path):
    gone = f"unix:path={tmp_path / 'no-bus-here'}"
    with pytest.raises(Unavailable) as caught:
        list(Music(backend=lambda: player_backend("linux", {"DBUS_SESSION_BUS_ADDRESS": gone})).collect(None, Ctx({})))
    assert caught.value.reason.startswith(f"cannot reach the D-Bus session bus at {gone}: ")
    assert "is not set here" not in caught.value.fix and "session" in caught.value.fix    # it is set: say so


def test_systemds_bus_in_the_runtime_folder_is_found_without_the_variable(bus, tmp_path):
    assert session_bus_address({"XDG_RUNTIME_DIR": str(tmp_path)}) == f"unix:path={tmp_path / 'bus'}"
    assert session_bus_address({"DBUS_SESSION_BUS_ADDRESS": bus}) == bus
    assert session_bus_address({}) is None


def test_with_a_play_log_the_players_out_of_reach_are_one_unavailable_source(memory, tmp_path):
    log = tmp_path / "plays.jsonl"
    log.write_text(json.dumps({"played_at": 1_700_000_000, "artist": "Debussy", "track": "Arabesque"}) + "\n")
    music = Music(backend=lambda: player_backend("linux", {}))
    sup = Supervisor(memory, [music], settings={"music": {"play_log": str(log)}})
    run_once(sup)
    sources = sup.status["music"].health["sources"]
    assert sources == {"MPRIS players (D-Bus session bus)": {"state": "unavailable", "reason": "no D-Bus session bus",
                                                             "fix": mpris.NO_BUS_FIX},
                       f"play log {log}": {"state": "collecting", "stored": 1}}
    assert sup.status["music"].health["state"] == "collecting"
    sup.stop()


def test_a_play_going_on_is_stored_when_the_bus_goes_away(bus, players):
    players("spotify", meta=metadata("Clair de Lune", ["Debussy"]))
    env = {"DBUS_SESSION_BUS_ADDRESS": bus}
    clock = [0.0]
    music = Music(backend=lambda: player_backend("linux", env), clock=lambda: clock[0])
    ctx = Ctx({})
    for _ in range(3):
        assert list(music.collect(ctx.cursor, ctx)) == []
        clock[0] += 30
    env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/bus"      # the session ended
    out = []
    with pytest.raises(Unavailable):
        for payload in music.collect(ctx.cursor, ctx):
            out.append(payload)
    assert [(p["provenance"]["track_name"], p["provenance"]["play_duration_sec"]) for p in out] == [
        ("Clair de Lune", 60)]
    assert ctx.cursor["playing"] == {}


def test_windows_is_unavailable_and_says_the_play_log_works_there():
    with pytest.raises(Unavailable) as caught:
        player_backend("win32")
    assert "WinRT" in caught.value.reason and "play log" in caught.value.fix


def test_players_turned_off_and_no_play_log_is_unavailable_not_idle():
    with pytest.raises(Unavailable) as caught:
        list(Music(backend=lambda: pytest.fail("not asked")).collect(None, Ctx({"players": False})))
    assert "turned off" in caught.value.reason


def test_a_missing_play_log_is_an_unavailable_source(tmp_path):
    ctx = Ctx({"players": False, "play_log": str(tmp_path / "gone.jsonl")})
    assert list(Music().collect(None, ctx)) == []
    assert ctx.sources == {f"play log {tmp_path / 'gone.jsonl'}": (
        "unavailable", f"no such file: {tmp_path / 'gone.jsonl'}", "check the play log's path in Settings → Music")}


# ----------------------------------------------------------------------- macOS

def fake_osascript(folder, body):
    """osascript does not exist here: a script with its interface answers as Music would."""
    fake = folder / "osascript"
    fake.write_text("#!/bin/sh\n" + body)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)


def test_macos_asks_music_and_spotify_only_when_they_run(tmp_path, monkeypatch):
    fake_osascript(tmp_path, 'case "$2" in\n'
                             '  *\'"Music" is running\'*) echo true ;;\n'
                             '  *\'"Spotify" is running\'*) echo false ;;\n'
                             '  *\'application "Music" to\'*) printf "Clair de Lune\\tDebussy\\tSuite\\t302,5\\n" ;;\n'
                             '  *) echo "asked a stopped app" >&2; exit 1 ;;\n'
                             'esac\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    backend = player_backend("darwin")
    assert isinstance(backend, AppleScriptPlayers)
    assert backend.sample() == Sample([Heard("Music", "Debussy", "Clair de Lune", "Suite", 302.5)], [])


def test_macos_without_the_automation_permission_says_where_to_give_it(tmp_path, monkeypatch):
    fake_osascript(tmp_path, 'case "$2" in\n'
                             '  *"is running"*) echo true ;;\n'
                             '  *) echo "execution error: Not authorized to send Apple events to Music. (-1743)" >&2;'
                             ' exit 1 ;;\n'
                             'esac\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    troubles = AppleScriptPlayers().sample().troubles
    assert [(t.source, t.failing) for t in troubles] == [("Music", False), ("Spotify", False)]
    assert "Automation" in troubles[0].fix


@pytest.mark.parametrize("answer, heard", [
    ("", None),
    ("Song\tArtist\tAlbum\t215000\n", Heard("Spotify", "Artist", "Song", "Album", 215.0)),
    ("Song\t\t\tmissing value\n", Heard("Spotify", "", "Song", "", None)),
])
def test_now_playing_reads_the_scripts_answer(answer, heard):
    assert now_playing("Spotify", answer, 1000.0) == heard


# -------------------------------------------------------------------- play log

def test_the_play_log_is_imported_once(tmp_path, memory):
    log = tmp_path / "plays.jsonl"
    log.write_text(json.dumps({"played_at": 1_700_000_000, "artist": "Debussy", "track": "Arabesque",
                               "duration_sec": 240}) + "\n" + "{damaged\n")
    clock = [1_800_000_000.0]
    sup = Supervisor(memory, [Music()], settings={"music": {"play_log": str(log), "players": False}},
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
