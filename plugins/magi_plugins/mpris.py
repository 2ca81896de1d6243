"""MPRIS over D-Bus: the media players on the session bus and what each plays, read with jeepney (pure Python).

Every MPRIS 2 player owns a bus name ``org.mpris.MediaPlayer2.<player>`` and serves ``/org/mpris/MediaPlayer2``,
whose ``org.mpris.MediaPlayer2.Player`` interface has ``PlaybackStatus`` ("Playing", "Paused", "Stopped") and
``Metadata`` (``xesam:title``, ``xesam:artist`` — a list —, ``xesam:album``, ``mpris:length`` in microseconds).
A sample is one connection, ``ListNames`` and one ``GetAll`` per player. A player that does not answer is
reported by name and the others are still read; no bus at all is :class:`Unavailable`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from magi_desktop.plugin_api import Unavailable

BUS_PREFIX = "org.mpris.MediaPlayer2."
OBJECT_PATH = "/org/mpris/MediaPlayer2"
PLAYER_INTERFACE = "org.mpris.MediaPlayer2.Player"
CALL_TIMEOUT_SECONDS = 2.0     # a player slower than this to answer is reported and skipped this sample
SAMPLE_SECONDS = 5.0           # all players of one sample: hung players (a frozen app keeps its name) cost no more
_INSTANCE = re.compile(r"\.instance[^.]*$")    # "firefox.instance_1_84", "chromium.instance4242"

NO_BUS_FIX = ("players are read over the desktop session's D-Bus (DBUS_SESSION_BUS_ADDRESS is not set here); "
              "run Magi inside your desktop session, or import a play log in Settings → Music")
GONE_BUS_FIX = ("the session that bus belonged to may have ended: run Magi inside your current desktop session, or "
                "import a play log in Settings → Music")


class PlayerState(NamedTuple):
    player: str                  # the bus name without the prefix and the instance: "spotify", "vlc", "firefox"
    status: str                  # as the player says it: "Playing", "Paused", "Stopped"
    title: str
    artists: tuple[str, ...]
    album: str
    length_seconds: float | None


class Reading(NamedTuple):
    players: list[PlayerState]
    errors: dict[str, str]       # player -> why it could not be read this time


def session_bus_address(environ: Mapping[str, str]) -> str | None:
    """The session bus's address: ``DBUS_SESSION_BUS_ADDRESS``, else systemd's ``$XDG_RUNTIME_DIR/bus`` (where
    libdbus and sd-bus look too), else None."""
    address = environ.get("DBUS_SESSION_BUS_ADDRESS", "").strip()
    if address:
        return address
    runtime = environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and (Path(runtime) / "bus").is_socket():
        return f"unix:path={Path(runtime) / 'bus'}"
    return None


def read_players(address: str, timeout: float = CALL_TIMEOUT_SECONDS, budget: float = SAMPLE_SECONDS) -> Reading:
    """Every MPRIS player on the bus at ``address`` and its state, in bus-name order; the players left when
    ``budget`` seconds are spent are reported, not read."""
    try:
        from jeepney import DBusAddress, DBusErrorResponse, Properties, message_bus
        from jeepney.io.blocking import Proxy, open_dbus_connection
        from jeepney.wrappers import unwrap_msg
    except ModuleNotFoundError as exc:
        if exc.name != "jeepney":
            raise
        raise Unavailable("jeepney (the D-Bus client) is not installed", "reinstall Magi Desktop") from None
    try:
        connection = open_dbus_connection(bus=address, auth_timeout=timeout)
    except (OSError, RuntimeError, ValueError, KeyError) as exc:     # no socket, refused, an unusable address
        raise Unavailable(f"cannot reach the D-Bus session bus at {address}: {exc}", GONE_BUS_FIX) from None
    players: list[PlayerState] = []
    errors: dict[str, str] = {}
    with connection:
        try:
            names = Proxy(message_bus, connection, timeout=timeout).ListNames()[0]
            deadline = time.monotonic() + budget
            for bus_name in sorted(n for n in names if n.startswith(BUS_PREFIX)):
                player = player_name(bus_name)
                left = deadline - time.monotonic()
                if left <= 0:
                    errors[player] = f"not read: the players before it took this sample's {budget:g} s"
                    continue
                request = Properties(DBusAddress(OBJECT_PATH, bus_name=bus_name, interface=PLAYER_INTERFACE))
                wait = min(timeout, left)
                try:
                    reply = connection.send_and_get_reply(request.get_all(), timeout=wait)
                    players.append(player_state(player, unwrap_msg(reply)[0]))
                except TimeoutError:
                    errors[player] = f"does not answer over MPRIS (nothing in {wait:.1f} s)"
                except DBusErrorResponse as exc:
                    errors[player] = f"does not answer over MPRIS: {exc.name}"
        except (OSError, DBusErrorResponse) as exc:       # the bus went away in the middle
            raise Unavailable(f"the D-Bus session bus at {address} stopped answering: {exc}", GONE_BUS_FIX) from None
    return Reading(players, errors)


def player_name(bus_name: str) -> str:
    """``org.mpris.MediaPlayer2.chromium.instance4242`` → ``chromium``: one name per player, whichever process."""
    return _INSTANCE.sub("", bus_name.removeprefix(BUS_PREFIX))


def player_state(player: str, properties: Mapping[str, Any]) -> PlayerState:
    """A player's state from its ``GetAll`` answer (property → (signature, value)), whatever it left out."""
    status = _unwrap(properties.get("PlaybackStatus"))
    fields = _unwrap(properties.get("Metadata"))
    if not isinstance(fields, Mapping):
        fields = {}
    return PlayerState(player, status if isinstance(status, str) else "", _text(fields.get("xesam:title")),
                       _texts(fields.get("xesam:artist")), _text(fields.get("xesam:album")),
                       _seconds(fields.get("mpris:length")))


def _unwrap(value: Any) -> Any:
    """A D-Bus variant as jeepney gives it, (signature, value), down to the value."""
    while isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        value = value[1]
    return value


def _text(value: Any) -> str:
    value = _unwrap(value)
    return value.strip() if isinstance(value, str) else ""


def _texts(value: Any) -> tuple[str, ...]:
    value = _unwrap(value)
    if isinstance(value, str):            # the spec says a list of strings; some players send one string
        value = [value]
    return tuple(t for t in (_text(v) for v in value) if t) if isinstance(value, list) else ()


def _seconds(microseconds: Any) -> float | None:
    """``mpris:length``: microseconds, an int64 by the spec (some players send t or d); none or ≤ 0 is unknown."""
    value = _unwrap(microseconds)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    return value / 1e6
