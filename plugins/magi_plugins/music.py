"""Music: what media players play (MPRIS on Linux, Music and Spotify on macOS) and a play-log file.

Players are sampled each run through this platform's back-end (:mod:`.music_players`); samples of the same
track that follow each other within ``pulse_seconds`` extend one play (:func:`merge_heartbeat`, a pure
function in the style of ActivityWatch's heartbeats), and a play becomes one ``listen_music`` event when it
ends — a new track, a pause, silence, or the players going out of reach — and lasted at least
``min_play_seconds``. The play log is a JSON-lines file (``{"played_at", "artist", "track", "album",
"duration_sec", "player"}``) read from its stored offset; it works on every platform.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from magi_desktop.plugin_api import CollectContext, Unavailable, activity, entity, hookimpl

from .music_players import PlayerBackend, player_backend

PULSE_SECONDS = 90.0
MIN_PLAY_SECONDS = 30.0


@dataclass(frozen=True)
class Play:
    player: str
    artist: str
    track: str
    album: str
    start: float
    last: float
    length: float | None = None      # the track's length as the player tells it, in seconds

    @property
    def seconds(self) -> float:
        return self.last - self.start

    def same_song(self, other: Play) -> bool:
        return (self.player, self.artist, self.track, self.album) == (other.player, other.artist, other.track,
                                                                       other.album)


def merge_heartbeat(current: Play | None, beat: Play | None, pulse: float = PULSE_SECONDS
                    ) -> tuple[Play | None, Play | None]:
    """(the play going on, a play that just ended) after one sample; ``beat`` None means nothing plays."""
    if beat is None:
        return None, current
    if current is not None and current.same_song(beat) and beat.start - current.last <= pulse:
        return Play(current.player, current.artist, current.track, current.album, current.start, beat.last,
                    beat.length or current.length), None
    return beat, current


def play_payload(play: Play, duration: float | None = None) -> dict[str, Any]:
    seconds = round(duration if duration is not None else play.seconds)
    digest = hashlib.sha1(f"{play.player}\0{play.artist}\0{play.track}\0{int(play.start)}".encode()).hexdigest()[:16]
    provenance: dict[str, Any] = {"track_name": play.track, "artist_name": play.artist, "play_duration_sec": seconds,
                                  "player": play.player}
    if play.album:
        provenance["album_name"] = play.album
    if play.length:
        provenance["track_length_sec"] = round(play.length)
    return activity("music", "listen_music", play.start, provenance, item_id=f"play:{digest}",
                    entities=[entity(play.artist, "creator")] if play.artist else [])


class Music:
    name = "music"
    source_type = "music"
    interval_seconds = 30
    settings_schema = {
        "players": {"type": "boolean", "default": True, "title": "Listen to media players",
                    "description": "Note what your media players play: MPRIS players over D-Bus on Linux, Music and "
                                   "Spotify on macOS (asks once for permission). Not available on Windows."},
        "play_log": {"type": "string", "title": "Play log",
                     "description": "A JSON-lines file of plays to import, one object a line with played_at, artist, "
                                    "track, album, duration_sec and player (optional; works on every platform)"},
        "min_play_seconds": {"type": "number", "default": MIN_PLAY_SECONDS, "title": "Shortest play (seconds)",
                             "description": "A track heard for less than this is not stored as a play"},
    }
    privacy_note = ("Reads the track, artist and album your media players report (MPRIS on Linux, Music and "
                    "Spotify on macOS) and an optional play-log file. Excluded apps are skipped. Nothing leaves "
                    "this machine.")

    def __init__(self, backend: Callable[[], PlayerBackend] = player_backend,
                 clock: Callable[[], float] = time.time):
        self.backend, self.clock = backend, clock

    def collect(self, since: Any, ctx: CollectContext) -> Iterator[dict[str, Any]]:
        state = dict(since or {})
        log = ctx.settings.get("play_log")
        players = ctx.settings.get("players", True)
        if not players and not log:
            raise Unavailable("media players are turned off and no play log is set",
                              "turn on “Listen to media players” or choose a play log in Settings → Music")
        if players:
            yield from self._players(state, ctx, alone=not log)
        if log:
            yield from self._play_log(Path(log).expanduser(), state, ctx)
        ctx.save_cursor(state)

    def _players(self, state: dict[str, Any], ctx: CollectContext, alone: bool) -> Iterator[dict[str, Any]]:
        minimum = float(ctx.settings.get("min_play_seconds", MIN_PLAY_SECONDS))
        playing = {key: Play(**value) for key, value in (state.get("playing") or {}).items()}
        source = "media players"
        try:
            backend = self.backend()
            source = backend.source
            sample = backend.sample()
        except Unavailable as exc:
            # What was playing ended when the players went out of reach: it is stored now, not lost.
            for play in playing.values():
                if play.seconds >= minimum:
                    yield play_payload(play)
            state["playing"] = {}
            if alone:
                ctx.save_cursor(state)
                raise
            ctx.unavailable(source, exc.reason, exc.fix)
            return
        ctx.source(source)
        for trouble in sample.troubles:
            if trouble.failing:
                ctx.failing(trouble.source, trouble.reason)
            else:
                ctx.unavailable(trouble.source, trouble.reason, trouble.fix)
        now = self.clock()
        beats: dict[str, Play] = {}
        for heard in sample.heard:
            if heard.player not in beats and not ctx.excluded("apps", heard.player):
                beats[heard.player] = Play(heard.player, heard.artist, heard.track, heard.album, now, now,
                                           heard.length_seconds)
        for player in sorted(set(playing) | set(beats)):
            current, ended = merge_heartbeat(playing.get(player), beats.get(player))
            if ended is not None and ended.seconds >= minimum:
                yield play_payload(ended)
            if current is None:
                playing.pop(player, None)
            else:
                playing[player] = current
        state["playing"] = {k: asdict(v) for k, v in playing.items()}

    def _play_log(self, path: Path, state: dict[str, Any], ctx: CollectContext) -> Iterator[dict[str, Any]]:
        source = f"play log {path}"
        ctx.source(source)
        try:
            size = path.stat().st_size
            offset = state.get("log_offset", 0)
            if offset > size:
                offset = 0                         # a new log: read it from the start (ids dedupe)
            with path.open("rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            ctx.unavailable(source, f"no such file: {path}", "check the play log's path in Settings → Music")
            return
        except IsADirectoryError:
            ctx.unavailable(source, f"not a file: {path}", "choose the play log file itself in Settings → Music")
            return
        except PermissionError:
            ctx.unavailable(source, f"permission denied: {path}", "let your user read the file, or choose another")
            return
        except OSError as exc:
            ctx.failing(source, f"cannot read {path}: {exc}")
            return
        end = data.rfind(b"\n") + 1
        for number, line in enumerate(data[:end].decode("utf-8", "replace").split("\n"), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                played_at = float(row["played_at"])
                if not math.isfinite(played_at):
                    raise ValueError("played_at is not a time")
                play = Play(str(row.get("player", "log")), str(row.get("artist", "")), str(row["track"]),
                            str(row.get("album", "")), played_at, played_at)
                payload = play_payload(play, float(row.get("duration_sec") or 0))
            except Exception as exc:  # noqa: BLE001 - a damaged line is skipped, whatever is wrong with it
                ctx.skipped("bad_line", f"{path} line {number} after byte {offset}: {type(exc).__name__}")
                continue
            if not ctx.excluded("apps", play.player):
                yield payload
        state["log_offset"] = offset + end


@hookimpl
def register_collectors(register):
    register(Music())
