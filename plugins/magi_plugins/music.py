"""Music: what MPRIS players play (Linux, through ``playerctl``) and a play-log file.

Players are sampled each run; samples of the same track that follow each other
within ``pulse_seconds`` extend one play (:func:`merge_heartbeat`, a pure
function in the style of ActivityWatch's heartbeats), and a play becomes one
``listen_music`` event when it ends — a new track, a pause, or silence — and
lasted at least ``min_play_seconds``. The play log is a JSON-lines file
(``{"played_at", "artist", "track", "album", "duration_sec", "player"}``) read
from its stored offset.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from magi_desktop.plugin_api import activity, entity, hookimpl

PULSE_SECONDS = 90.0
MIN_PLAY_SECONDS = 30.0
_FIELDS = "{{playerName}}\t{{status}}\t{{artist}}\t{{title}}\t{{album}}"


@dataclass(frozen=True)
class Play:
    player: str
    artist: str
    track: str
    album: str
    start: float
    last: float

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
        return Play(current.player, current.artist, current.track, current.album, current.start, beat.last), None
    return beat, current


def sample_players(run=subprocess.run) -> list[Play]:
    """What MPRIS players are playing now, via ``playerctl`` (empty when it is missing or nothing plays)."""
    import time

    if shutil.which("playerctl") is None:
        return []
    try:
        out = run(["playerctl", "--all-players", "metadata", "--format", _FIELDS], capture_output=True, text=True,
                  timeout=5)
    except (OSError, subprocess.SubprocessError):
        return []
    now = time.time()
    plays = []
    for line in out.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 5 and parts[1] == "Playing" and parts[3]:
            plays.append(Play(parts[0], parts[2], parts[3], parts[4], now, now))
    return plays


def play_payload(play: Play, duration: float | None = None) -> dict[str, Any]:
    seconds = round(duration if duration is not None else play.seconds)
    digest = hashlib.sha1(f"{play.player}\0{play.artist}\0{play.track}\0{int(play.start)}".encode()).hexdigest()[:16]
    provenance = {"track_name": play.track, "artist_name": play.artist, "play_duration_sec": seconds,
                  "player": play.player}
    if play.album:
        provenance["album_name"] = play.album
    return activity("music", "listen_music", play.start, provenance, item_id=f"play:{digest}",
                    entities=[entity(play.artist, "creator")] if play.artist else [])


class Music:
    name = "music"
    source_type = "music"
    interval_seconds = 30
    settings_schema = {
        "play_log": {"type": "string", "description": "A JSON-lines play log to import (optional)"},
        "players": {"type": "boolean", "default": True, "description": "Sample MPRIS players via playerctl"},
        "min_play_seconds": {"type": "number", "default": MIN_PLAY_SECONDS},
    }
    privacy_note = ("Reads the track, artist and album your music players report (MPRIS, Linux) and an optional "
                    "play-log file. Excluded apps are skipped. Nothing leaves this machine.")

    def __init__(self, sampler=sample_players):
        self.sampler = sampler

    def collect(self, since, ctx):
        state = dict(since or {})
        minimum = float(ctx.settings.get("min_play_seconds", MIN_PLAY_SECONDS))
        if ctx.settings.get("players", True):
            playing = {key: Play(**value) for key, value in (state.get("playing") or {}).items()}
            beats = {p.player: p for p in self.sampler() if not ctx.excluded("apps", p.player)}
            for player in sorted(set(playing) | set(beats)):
                current, ended = merge_heartbeat(playing.get(player), beats.get(player))
                if ended is not None and ended.seconds >= minimum:
                    yield play_payload(ended)
                if current is None:
                    playing.pop(player, None)
                else:
                    playing[player] = current
            state["playing"] = {k: asdict(v) for k, v in playing.items()}
        log = ctx.settings.get("play_log")
        if log and Path(log).expanduser().is_file():
            path = Path(log).expanduser()
            offset = state.get("log_offset", 0)
            if offset > path.stat().st_size:
                offset = 0                         # a new log: read it from the start (ids dedupe)
            with path.open("rb") as f:
                f.seek(offset)
                data = f.read()
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
        ctx.save_cursor(state)


@hookimpl
def register_collectors(register):
    register(Music())
