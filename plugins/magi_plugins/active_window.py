"""Which window is in front: one back-end per platform, chosen in :func:`window_backend` alone.

- Linux and the other Unix desktops on X11: python-xlib (:mod:`.x11_window`), no ``xprop``.
- Wayland: unavailable. A Wayland compositor tells no other program which window has the focus, and GNOME
  and KDE offer no general API for it; XWayland's DISPLAY is no way round, since its root window knows only
  the X11 programs — every native Wayland window would be missed, and the hours credited to the wrong app.
- macOS: ``lsappinfo`` (part of the OS; no permission needed) names the front application, ``osascript``
  where it is missing. Window titles would need the Accessibility permission, which Magi does not ask for.
- Windows: the Win32 API through ctypes (GetForegroundWindow, GetWindowTextW), the process name via psutil.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import Protocol

from magi_desktop.plugin_api import Unavailable

from .window import Window, process_name
from .x11_window import X11ActiveWindow

WAYLAND_REASON = ("Wayland session without an X server view of its windows: Wayland shows no program which window "
                  "is in front (XWayland sees only X11 programs)")
WAYLAND_FIX = "to record app usage, log in with an X11 (Xorg) session"
NO_WINDOW_SYSTEM_FIX = "app usage is read from a desktop session: DISPLAY is not set here (start Magi on your desktop)"


class WindowBackend(Protocol):
    source: str            # what health calls it: "X11 display :0"

    def active(self) -> Window | None:
        """The window in front now, None when none is (a locked screen); raises :class:`Unavailable` when this
        machine cannot say."""
        ...


def window_backend(platform: str = sys.platform, environ: Mapping[str, str] | None = None) -> WindowBackend:
    """This platform's back-end (raises :class:`Unavailable` where none fits)."""
    env = os.environ if environ is None else environ
    if platform == "win32":
        return ForegroundWindow()
    if platform == "darwin":
        return FrontApplication()
    session = env.get("XDG_SESSION_TYPE", "").strip().lower()
    if session == "wayland" or (session != "x11" and env.get("WAYLAND_DISPLAY")):
        raise Unavailable(WAYLAND_REASON, WAYLAND_FIX)
    display = env.get("DISPLAY", "").strip()
    if not display:
        raise Unavailable("no window system", NO_WINDOW_SYSTEM_FIX)
    return X11ActiveWindow(display)


# -------------------------------------------------------------------- macOS

_DISPLAY_NAME = re.compile(r'"LSDisplayName"="(.*)"')
_FRONT_BY_APPLESCRIPT = ('tell application "System Events" to get name of first application process '
                         "whose frontmost is true")


class FrontApplication:
    source = "macOS front application"

    def __init__(self, run=subprocess.run):
        self.run = run

    def active(self) -> Window | None:
        if shutil.which("lsappinfo"):
            front = self._output(["lsappinfo", "front"]).strip()
            if not front or front == "[ NULL ]":
                return None
            match = _DISPLAY_NAME.search(self._output(["lsappinfo", "info", "-only", "name", front]))
            return Window(match.group(1), "") if match and match.group(1) else None
        if shutil.which("osascript"):
            name = self._output(["osascript", "-e", _FRONT_BY_APPLESCRIPT]).strip()
            return Window(name, "") if name else None
        raise Unavailable("neither lsappinfo nor osascript found", "both are part of macOS: check that /usr/bin is "
                                                                   "on PATH")

    def _output(self, args: list[str]) -> str:
        try:
            return self.run(args, capture_output=True, text=True, timeout=3).stdout
        except (OSError, subprocess.SubprocessError):
            return ""


# ------------------------------------------------------------------ Windows

class ForegroundWindow:
    source = "Windows foreground window"

    def active(self) -> Window | None:  # pragma: no cover - exercised on Windows only
        if sys.platform != "win32":   # ctypes.windll exists only there (mypy checks the rest for Windows alone)
            raise Unavailable("the Win32 API exists on Windows only")
        import ctypes
        from ctypes import wintypes

        user32 = ctypes.windll.user32
        hwnd = user32.GetForegroundWindow()
        if not hwnd:
            return None               # a locked screen, the secure desktop
        length = user32.GetWindowTextLengthW(hwnd)
        buffer = ctypes.create_unicode_buffer(length + 1)
        user32.GetWindowTextW(hwnd, buffer, length + 1)
        pid = wintypes.DWORD()
        user32.GetWindowThreadProcessId(hwnd, ctypes.byref(pid))
        app = process_name(pid.value)
        return Window(app, buffer.value) if app else None
