"""The app-usage collector: samples merged into hour blocks (pure), the running hour stored and replaced by
natural key, the X11 back-end on a real Xvfb (python-xlib), each reason it cannot see the window in front, and
the back-end chosen per platform."""

import os
import stat

import pytest
from desktop import Desktop, write_xauthority, xvfb
from magi_plugins.active_window import (
    WAYLAND_FIX,
    WAYLAND_REASON,
    ForegroundWindow,
    FrontApplication,
    window_backend,
)
from magi_plugins.app_usage import LIVE_STEP_SECONDS, AppUsage, add_sample, due_for_update, finished
from magi_plugins.window import Window
from magi_plugins.x11_window import X11ActiveWindow

from magi_desktop.collectors import Supervisor
from magi_desktop.collectors.health import describe
from magi_desktop.core.store.l1 import event_rows
from magi_desktop.plugin_api import Unavailable

H = 1_764_000_000 // 3600 * 3600      # the start of an hour


def test_samples_merge_into_hour_blocks():
    blocks = {}
    add_sample(blocks, Window("code", "main.py — magi"), H + 10, 60)
    add_sample(blocks, Window("code", "README.md — magi"), H + 70, 60)
    add_sample(blocks, Window("code", "main.py — magi"), H + 130, 60)
    add_sample(blocks, Window("firefox", "Docs"), H + 190, 60)
    add_sample(blocks, Window("code", "main.py — magi"), H + 3600 + 5, 60)      # the next hour
    assert finished(blocks, H + 3599) == []
    done = finished(blocks, H + 3600)
    assert [(b["app"], b["seconds"]) for b in done] == [("code", 180.0), ("firefox", 60.0)]
    assert list(blocks) == [f"{H + 3600}|code"]


def test_a_running_block_is_stored_when_new_and_again_once_it_grew_a_step():
    blocks = {}
    add_sample(blocks, Window("code", ""), H + 10, 60)
    assert [b["app"] for b in due_for_update(blocks)] == ["code"]
    blocks[f"{H}|code"]["stored_seconds"] = 60.0
    add_sample(blocks, Window("code", ""), H + 70, LIVE_STEP_SECONDS - 1)
    assert due_for_update(blocks) == []
    add_sample(blocks, Window("code", ""), H + 400, 1)
    assert [b["seconds"] for b in due_for_update(blocks)] == [60.0 + LIVE_STEP_SECONDS]


# --------------------------------------------------------------------- X11

@pytest.fixture
def display():
    with xvfb() as name:
        yield name


@pytest.fixture
def desktop(display):
    screen = Desktop(display)
    yield screen
    screen.close()


def test_the_active_x11_window_is_read_with_its_class_and_title(display, desktop):
    editor = desktop.window(("code", "Code"), "main.py — magi")
    browser = desktop.window(("Navigator", "firefox"), legacy_title="Docs (legacy WM_NAME)")
    no_class = desktop.window(title="a window without WM_CLASS", pid=os.getpid())
    bare = desktop.window()
    backend = X11ActiveWindow(display)
    desktop.activate(editor)
    assert backend.active() == Window("Code", "main.py — magi")
    desktop.activate(browser)
    assert backend.active() == Window("firefox", "Docs (legacy WM_NAME)")
    desktop.activate(no_class)                      # named by its process, as _NET_WM_PID says
    assert backend.active() == Window(_own_name(), "a window without WM_CLASS")
    desktop.activate(bare)                          # nothing to name it by
    assert backend.active() is None
    desktop.activate(0)                             # no window has the focus
    assert backend.active() is None
    desktop.activate(0x3FFFFF)                      # a window that closed since: not an error
    assert backend.active() is None


def _own_name():
    import psutil

    return psutil.Process().name()


def test_without_an_ewmh_window_manager_it_says_so(display):
    with pytest.raises(Unavailable) as caught:
        X11ActiveWindow(display).active()            # nobody set _NET_ACTIVE_WINDOW on the root
    assert "_NET_ACTIVE_WINDOW" in caught.value.reason and "EWMH" in caught.value.fix


def test_an_x_server_that_refuses_the_connection_is_unavailable_with_what_it_said(tmp_path, monkeypatch):
    cookie = os.urandom(16)
    write_xauthority(tmp_path / "server-auth", cookie)
    with xvfb(auth_file=tmp_path / "server-auth") as name:
        monkeypatch.setenv("XAUTHORITY", str(tmp_path / "no-such-file"))
        with pytest.raises(Unavailable) as caught:
            X11ActiveWindow(name).active()
        assert caught.value.reason.startswith(f"the X server at DISPLAY={name} refused the connection: ")
        assert "Authorization required" in caught.value.reason and "XAUTHORITY" in caught.value.fix
        write_xauthority(tmp_path / "client-auth", cookie)       # the right cookie: the same server lets it in
        monkeypatch.setenv("XAUTHORITY", str(tmp_path / "client-auth"))
        with pytest.raises(Unavailable, match="_NET_ACTIVE_WINDOW"):
            X11ActiveWindow(name).active()


def test_a_display_nobody_serves_and_a_bad_display_name_are_unavailable(display):
    stopped = f"{display}9"                 # a display number no server here listens on
    with pytest.raises(Unavailable, match=f"the X server at DISPLAY={stopped} refused the connection"):
        X11ActiveWindow(stopped).active()
    with pytest.raises(Unavailable, match="is not an X display name"):
        X11ActiveWindow("no-colon-here").active()


def run_once(sup, name="app_usage"):
    sup.status[name].next_run_at = 0
    assert name in sup.tick()
    assert sup.wait_idle()


def test_the_running_hour_is_visible_and_replaced_not_duplicated_when_it_closes(memory, display, desktop):
    editor = desktop.window(("code", "Code"), "main.py — magi")
    passwords = desktop.window(("keepassxc", "KeePassXC"), "Passwords")
    now = [H + 30.0]
    collector = AppUsage(backend=lambda: window_backend("linux", {"DISPLAY": display}), clock=lambda: now[0])
    sup = Supervisor(memory, [collector], clock=lambda: now[0], exclusions={"apps": ["KeePassXC"]})
    desktop.activate(editor)
    run_once(sup)                                     # 12:00:30 — the block starts: stored at once
    rows = event_rows(memory.db.reader())
    assert [r["content"] for r in rows] == ["App usage: Used Code for 1 min (“main.py — magi”)"]
    assert rows[0]["natural_key"] == f"Code:{H}"
    found = memory.query("Which apps did I use?", mode="event_stream", now=H + 200).findings
    assert any("Used Code" in f.text for f in found)          # visible while the hour runs
    desktop.activate(passwords)
    now[0] += 61
    run_once(sup)                                     # an excluded app: neither counted nor named
    now[0] += 61
    desktop.activate(editor)
    run_once(sup)                                     # Code grew 61 s: less than a step, not stored again
    assert [r["content"] for r in event_rows(memory.db.reader())] == [
        "App usage: Used Code for 1 min (“main.py — magi”)"]
    now[0] = H + 3600 + 10
    run_once(sup)                                     # the hour is over: the closed block replaces the running one
    rows = [r for r in event_rows(memory.db.reader()) if r["timestamp"] == H]
    assert [r["content"] for r in rows] == ["App usage: Used Code for 2 min 1 s (“main.py — magi”)"]
    assert rows[0]["source_item_id"] == f"Code:{H}" and rows[0]["natural_key"] == f"Code:{H}"
    assert "hour_in_progress" not in rows[0]["metadata"]["timeline"]["provenance"]
    assert "keepassxc" not in str(memory.plugin_cursor("app_usage")).lower()
    assert "KeePassXC" not in str(event_rows(memory.db.reader()))
    assert sup.status["app_usage"].health["sources"] == {f"X11 display {display}": {"state": "collecting",
                                                                                      "stored": 2}}
    sup.stop()


# ------------------------------------------------------------ which back-end, or why none

@pytest.mark.parametrize("environ, reason, fix", [
    ({}, "no window system", "DISPLAY is not set"),
    ({"DISPLAY": "  "}, "no window system", "DISPLAY is not set"),
    ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, WAYLAND_REASON, WAYLAND_FIX),     # XWayland's is no help
    ({"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"}, WAYLAND_REASON, WAYLAND_FIX),
])
def test_linux_without_a_window_it_can_read_says_why(environ, reason, fix):
    with pytest.raises(Unavailable) as caught:
        window_backend("linux", environ)
    assert caught.value.reason == reason and fix in caught.value.fix


def test_each_platform_has_its_back_end():
    assert isinstance(window_backend("linux", {"DISPLAY": ":7"}), X11ActiveWindow)
    assert isinstance(window_backend("linux", {"XDG_SESSION_TYPE": "x11", "WAYLAND_DISPLAY": "w", "DISPLAY": ":7"}),
                      X11ActiveWindow)      # an X11 session with a nested Wayland compositor running
    assert isinstance(window_backend("darwin", {}), FrontApplication)
    assert isinstance(window_backend("win32", {}), ForegroundWindow)


def test_no_window_system_is_unavailable_and_the_hours_over_still_close(memory):
    now = [H + 30.0]
    environ = {"DISPLAY": ":7"}

    class Desk:      # a window system that is there, then gone (the user logged out to a console)
        source = "desk"

        def active(self):
            return Window("code", "a.py")

    collector = AppUsage(backend=lambda: Desk() if environ else window_backend("linux", environ),
                         clock=lambda: now[0])
    sup = Supervisor(memory, [collector], clock=lambda: now[0], quarantine_after=1)
    run_once(sup)
    environ.clear()
    now[0] = H + 3600 + 5
    run_once(sup)
    run_once(sup)
    status = sup.status["app_usage"]
    assert status.failures == 0 and not status.quarantined
    assert describe(memory.collector_statuses()["app_usage"]) == [
        "unavailable: no window system — app usage is read from a desktop session: DISPLAY is not set here "
        "(start Magi on your desktop)"]
    assert [r["content"] for r in event_rows(memory.db.reader())] == ["App usage: Used code for 1 min (“a.py”)"]
    assert memory.plugin_cursor("app_usage")["blocks"] == {}
    sup.stop()


def test_macos_names_the_front_application_through_lsappinfo(tmp_path, monkeypatch):
    fake = tmp_path / "lsappinfo"       # lsappinfo exists on macOS only: a script with its interface here
    fake.write_text('#!/bin/sh\nif [ "$1" = front ]; then echo "ASN:0x0-0x1a01a:"; '
                    'elif [ "$4" = "ASN:0x0-0x1a01a:" ]; then echo \'"LSDisplayName"="Safari"\'; fi\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert window_backend("darwin", {}).active() == Window("Safari", "")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(Unavailable, match="neither lsappinfo nor osascript"):
        window_backend("darwin", {}).active()
