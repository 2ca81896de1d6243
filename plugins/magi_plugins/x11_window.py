"""The active window of an X11 display, read with python-xlib (pure Python; no ``xprop``).

EWMH window managers (GNOME on Xorg, KDE, Xfce, i3, openbox…) keep the active client window in the root
window's ``_NET_ACTIVE_WINDOW``; the application is that window's ``WM_CLASS`` class ("firefox", "Code"), or
the name of the process in ``_NET_WM_PID``, and its title ``_NET_WM_NAME`` (UTF-8), else ``WM_NAME``. One
connection per sample: a display that went away (a logout, a restarted server) is simply met again next time.
"""

from __future__ import annotations

from typing import Any

from magi_desktop.plugin_api import Unavailable

from .window import Window, process_name

DISPLAY_FIX = ("check DISPLAY and XAUTHORITY in the environment Magi starts from (start it from your desktop "
               "session)")


class X11ActiveWindow:
    def __init__(self, display_name: str):
        self.display_name = display_name
        self.source = f"X11 display {display_name}"

    def active(self) -> Window | None:
        try:
            from Xlib import X, display, error
        except ModuleNotFoundError as exc:
            if exc.name != "Xlib":
                raise
            raise Unavailable("python-xlib is not installed", "reinstall Magi Desktop") from None
        try:
            connection = display.Display(self.display_name)
        except error.DisplayNameError:
            raise Unavailable(f"DISPLAY={self.display_name!r} is not an X display name", DISPLAY_FIX) from None
        except (error.DisplayConnectionError, OSError) as exc:
            raise Unavailable(f"the X server at DISPLAY={self.display_name} refused the connection: {_why(exc)}",
                              DISPLAY_FIX) from None
        try:
            root = connection.screen().root
            active = root.get_full_property(connection.intern_atom("_NET_ACTIVE_WINDOW"), X.AnyPropertyType)
            if active is None:
                raise Unavailable("the window manager does not say which window is active (no _NET_ACTIVE_WINDOW)",
                                  "use an EWMH window manager: GNOME, KDE, Xfce, Cinnamon, i3, openbox, …")
            if not len(active.value) or not active.value[0]:
                return None          # no window has the focus: the desktop, a locked screen
            return _describe(connection, connection.create_resource_object("window", int(active.value[0])))
        except error.XError:
            return None              # the window closed between the two requests: nothing is in front now
        except error.ConnectionClosedError as exc:
            raise Unavailable(f"the X server at DISPLAY={self.display_name} closed the connection: {exc}",
                              DISPLAY_FIX) from None
        finally:
            connection.close()


def _describe(connection: Any, window: Any) -> Window | None:
    klass = window.get_wm_class()
    app = (klass[1] or klass[0]) if klass else None
    if not app:
        pid = window.get_full_property(connection.intern_atom("_NET_WM_PID"), 0)   # 0: AnyPropertyType
        app = process_name(int(pid.value[0])) if pid is not None and len(pid.value) else None
    if not app:
        return None
    title = window.get_full_text_property(connection.intern_atom("_NET_WM_NAME"), connection.intern_atom("UTF8_STRING"))
    if not title:
        title = window.get_full_text_property(connection.intern_atom("WM_NAME"))
    if isinstance(title, bytes):        # COMPOUND_TEXT, which python-xlib leaves undecoded
        title = title.decode("utf-8", "replace")
    return Window(app, title if isinstance(title, str) else "")


def _why(exc: BaseException) -> str:
    """What the server said ("Authorization required, …"), without python-xlib's wrapping."""
    message = getattr(exc, "msg", exc)
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    return str(message).strip()
