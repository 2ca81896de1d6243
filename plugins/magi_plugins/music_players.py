"""Where the music collector hears what plays: one back-end per platform, chosen in :func:`player_backend` alone.

- Linux and the other Unix desktops: MPRIS players on the D-Bus session bus (:mod:`.mpris`, pure Python).
- macOS: Music and Spotify through ``osascript`` (part of the OS); each asks the user once for the Automation
  permission ("Magi wants to control Music").
- Windows: unavailable. Its media sessions (GlobalSystemMediaTransportControls) are reached only through the
  WinRT packages, a heavy dependency Magi does not ship; the play log works there.

A back-end samples what is *playing* now; the collector merges samples into plays.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import NamedTuple, Protocol

from magi_desktop.plugin_api import Unavailable

from . import mpris


class Heard(NamedTuple):
    """A track a player is playing now."""

    player: str
    artist: str
    track: str
    album: str
    length_seconds: float | None = None


class Trouble(NamedTuple):
    """A player that could not be read this time, while others could: ``failing`` when it should have worked."""

    source: str
    reason: str
    fix: str | None = None
    failing: bool = False


class Sample(NamedTuple):
    heard: list[Heard]
    troubles: list[Trouble]


class PlayerBackend(Protocol):
    source: str            # what health calls it: "MPRIS players (D-Bus session bus)"

    def sample(self) -> Sample:
        """What plays now; raises :class:`Unavailable` when no player can be read on this machine."""
        ...


def player_backend(platform: str = sys.platform, environ: Mapping[str, str] | None = None) -> PlayerBackend:
    """This platform's back-end (raises :class:`Unavailable` where none fits)."""
    if platform == "win32":
        raise Unavailable("Windows media players cannot be read: their media session API needs the WinRT packages, "
                          "which Magi does not ship", "import a play log instead (Settings → Music → Play log)")
    if platform == "darwin":
        return AppleScriptPlayers()
    return MprisPlayers(os.environ if environ is None else environ)


class MprisPlayers:
    source = "MPRIS players (D-Bus session bus)"

    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ

    def sample(self) -> Sample:
        address = mpris.session_bus_address(self.environ)
        if address is None:
            raise Unavailable("no D-Bus session bus", mpris.NO_BUS_FIX)
        reading = mpris.read_players(address)
        heard = [Heard(p.player, ", ".join(p.artists), p.title, p.album, p.length_seconds)
                 for p in reading.players if p.status == "Playing" and p.title]
        troubles = [Trouble(f"MPRIS player {player}", error, failing=True) for player, error in reading.errors.items()]
        return Sample(heard, troubles)


# -------------------------------------------------------------------- macOS

# What each app is asked, only when it runs (asking a stopped app would start it). Fields are tab-separated;
# Music gives the duration in seconds, Spotify in milliseconds.
APPLESCRIPT_APPS = {"Music": 1.0, "Spotify": 1000.0}      # app -> its duration units per second
_NOW_PLAYING = ('tell application "{app}" to if player state is playing then return (name of current track) & tab & '
                '(artist of current track) & tab & (album of current track) & tab & (duration of current track)')
_NOT_ALLOWED = "-1743"      # errAEEventNotPermitted: the user has not allowed Magi to control the app


class AppleScriptPlayers:
    source = "Music and Spotify (osascript)"

    def __init__(self, run=subprocess.run):
        self.run = run

    def sample(self) -> Sample:
        if shutil.which("osascript") is None:
            raise Unavailable("osascript not found", "it is part of macOS: check that /usr/bin is on PATH")
        heard, troubles = [], []
        for app, per_second in APPLESCRIPT_APPS.items():
            running = self._osascript(f'application "{app}" is running')
            if running is None or running.stdout.strip() != "true":
                continue
            answer = self._osascript(_NOW_PLAYING.format(app=app))
            if answer is None or answer.returncode != 0:
                error = (answer.stderr.strip() if answer is not None else "") or "no answer"
                if _NOT_ALLOWED in error:
                    troubles.append(Trouble(app, f"Magi is not allowed to ask {app} what it plays",
                                            f"System Settings → Privacy & Security → Automation: allow Magi to "
                                            f"control {app}"))
                else:
                    troubles.append(Trouble(app, f"osascript: {error[:200]}", failing=True))
                continue
            parsed = now_playing(app, answer.stdout, per_second)
            if parsed is not None:
                heard.append(parsed)
        return Sample(heard, troubles)

    def _osascript(self, script: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return self.run(["osascript", "-e", script], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None


def now_playing(player: str, answer: str, per_second: float) -> Heard | None:
    """``name<TAB>artist<TAB>album<TAB>duration`` as the script returns it; empty (nothing plays) is None."""
    parts = answer.rstrip("\n").split("\t")
    if len(parts) != 4 or not parts[0].strip():
        return None
    try:
        length: float | None = float(parts[3].replace(",", ".")) / per_second    # a decimal comma in some locales
    except ValueError:
        length = None
    return Heard(player, parts[1].strip(), parts[0].strip(), parts[2].strip(), length if length and length > 0
                 else None)
