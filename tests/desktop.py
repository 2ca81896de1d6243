"""Real desktop services for collector tests: a private D-Bus session bus with MPRIS players served on it
(jeepney, a real D-Bus service), and an Xvfb display with windows made by python-xlib. Each starts in a
fixture and is stopped (and waited for) when the test ends; a missing binary skips the test, saying which."""

from __future__ import annotations

import os
import select
import shutil
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT = 10.0


def need(binary: str, package: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.skip(f"{binary} is not installed (Debian package {package}); these tests need a real one")
    return path


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


# ------------------------------------------------------------------- D-Bus

@contextmanager
def session_bus(folder: Path) -> Iterator[str]:
    """A private session bus listening in ``folder``; yields its address."""
    daemon = need("dbus-daemon", "dbus-daemon")
    process = subprocess.Popen([daemon, "--session", "--nofork", "--nopidfile", "--print-address=1",
                                f"--address=unix:path={folder / 'bus'}"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT)
        address = process.stdout.readline().strip() if ready else ""
        if not address:
            raise RuntimeError("dbus-daemon printed no address")
        yield address
    finally:
        _stop(process)
        if process.stdout is not None:
            process.stdout.close()


def metadata(title: str | None = None, artists: list[str] | None = None, album: str | None = None,
             length_us: int | None = None) -> dict[str, tuple[str, Any]]:
    """MPRIS Metadata as a player sends it: each value a (signature, value) variant."""
    fields: dict[str, tuple[str, Any]] = {"mpris:trackid": ("o", "/org/mpris/MediaPlayer2/Track/1")}
    if title is not None:
        fields["xesam:title"] = ("s", title)
    if artists is not None:
        fields["xesam:artist"] = ("as", artists)
    if album is not None:
        fields["xesam:album"] = ("s", album)
    if length_us is not None:
        fields["mpris:length"] = ("x", length_us)
    return fields


class MprisPlayer:
    """An MPRIS player on the bus: it owns ``org.mpris.MediaPlayer2.<name>`` and answers Properties.Get/GetAll
    for the Player interface from :attr:`status` and :attr:`metadata`, which the test changes as it goes.
    ``broken`` answers every call with a D-Bus error, as a player that does not implement the interface;
    ``hung`` answers nothing, as a frozen app that still holds its bus name."""

    def __init__(self, address: str, name: str, status: str = "Playing",
                 meta: dict[str, tuple[str, Any]] | None = None, broken: bool = False, hung: bool = False):
        from jeepney import HeaderFields, MessageType, new_error, new_method_return
        from jeepney.bus_messages import message_bus
        from jeepney.io.blocking import Proxy, open_dbus_connection

        self._fields, self._types, self._new_error, self._new_return = (HeaderFields, MessageType, new_error,
                                                                        new_method_return)
        self.status, self.metadata, self.broken, self.hung = status, meta or {}, broken, hung
        self.calls = 0
        self._connection = open_dbus_connection(bus=address)
        reply = Proxy(message_bus, self._connection).RequestName(f"org.mpris.MediaPlayer2.{name}", 4)  # DO_NOT_QUEUE
        assert reply == (1,), f"could not own the player's name: {reply}"   # PRIMARY_OWNER
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                message = self._connection.receive(timeout=0.05)
            except TimeoutError:
                continue
            except OSError:
                return
            if message.header.message_type != self._types.method_call:
                continue
            self.calls += 1
            if self.hung:
                continue
            member = message.header.fields.get(self._fields.member)
            if self.broken:
                answer = self._new_error(message, "org.freedesktop.DBus.Error.UnknownInterface", "s",
                                         ("no such interface",))
            elif member == "GetAll":
                answer = self._new_return(message, "a{sv}", (self._properties(),))
            elif member == "Get":
                answer = self._new_return(message, "v", (self._properties()[message.body[1]],))
            else:
                answer = self._new_error(message, "org.freedesktop.DBus.Error.UnknownMethod", "s", (str(member),))
            self._connection.send(answer)

    def _properties(self) -> dict[str, tuple[str, Any]]:
        return {"PlaybackStatus": ("s", self.status), "Metadata": ("a{sv}", dict(self.metadata)),
                "CanPlay": ("b", True)}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._connection.close()


# ---------------------------------------------------------------------- X11

def _read_display_number(fd: int) -> str:
    number = b""
    while not number.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], START_TIMEOUT)
        chunk = os.read(fd, 16) if ready else b""
        if not chunk:
            raise RuntimeError("Xvfb printed no display number")
        number += chunk
    return ":" + number.decode().strip()


@contextmanager
def xvfb(auth_file: Path | None = None) -> Iterator[str]:
    """An Xvfb server on a free display number (its own choice, -displayfd); yields the display name."""
    binary = need("Xvfb", "xvfb")
    read, write = os.pipe()
    args = [binary, "-displayfd", str(write), "-nolisten", "tcp", "-screen", "0", "320x240x24"]
    if auth_file is not None:
        args += ["-auth", str(auth_file)]
    process = subprocess.Popen(args, pass_fds=[write], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        yield _read_display_number(read)
    finally:
        os.close(read)
        _stop(process)


def write_xauthority(path: Path, cookie: bytes) -> None:
    """An Xauthority file with one MIT-MAGIC-COOKIE-1 for this host, any display (the format of Xau)."""
    def counted(value: bytes) -> bytes:
        return struct.pack(">H", len(value)) + value

    family_local = 256
    path.write_bytes(struct.pack(">H", family_local) + counted(socket.gethostname().encode()) + counted(b"")
                     + counted(b"MIT-MAGIC-COOKIE-1") + counted(cookie))


class Desktop:
    """Windows on a display, and which is active — set on the root as an EWMH window manager would."""

    def __init__(self, display_name: str):
        from Xlib import display

        self.connection = display.Display(display_name)
        self.root = self.connection.screen().root

    def window(self, wm_class: tuple[str, str] | None = None, title: str | None = None, pid: int | None = None,
               legacy_title: str | None = None) -> int:
        from Xlib import Xatom

        window = self.root.create_window(0, 0, 10, 10, 0, self.connection.screen().root_depth)
        if wm_class is not None:
            window.set_wm_class(*wm_class)
        if title is not None:
            window.change_property(self.connection.intern_atom("_NET_WM_NAME"),
                                   self.connection.intern_atom("UTF8_STRING"), 8, title.encode())
        if legacy_title is not None:
            window.set_wm_name(legacy_title)
        if pid is not None:
            window.change_property(self.connection.intern_atom("_NET_WM_PID"), Xatom.CARDINAL, 32, [pid])
        self.connection.sync()
        return int(window.id)

    def activate(self, window_id: int) -> None:
        from Xlib import Xatom

        self.root.change_property(self.connection.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW, 32, [window_id])
        self.connection.sync()

    def close(self) -> None:
        self.connection.close()
