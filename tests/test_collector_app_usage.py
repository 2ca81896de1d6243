"""The app-usage collector: samples merged into hour blocks (pure), the X11 back-end via xprop on PATH."""

import os
import stat

from magi_plugins.app_usage import AppUsage, Window, active_window_x11, add_sample, finished

from magi_desktop.collectors import Supervisor
from magi_desktop.core.store.l1 import event_rows

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



def test_one_event_per_app_per_hour_once_the_hour_is_over(memory):
    now = [H + 30]
    windows = iter([Window("code", "a.py"), Window("keepassxc", "Passwords"), Window("code", "a.py"),
                    Window("firefox", "News"), None] + [Window("code", "b.py")] * 3)
    collector = AppUsage(sampler=lambda: next(windows), clock=lambda: now[0])
    sup = Supervisor(memory, [collector], clock=lambda: now[0], exclusions={"apps": ["keepassxc"]})
    for step in range(8):
        sup.tick()
        assert sup.wait_idle()
        now[0] += 61 if step < 6 else 3600
    rows = sorted(r["content"] for r in event_rows(memory.db.reader()))
    # code: 60 s (first sample) + 61 + 61 + 61 in the first hour; b.py was in front 122 s of it, a.py 121 s.
    assert rows == ["App usage: Used code for 4 min 3 s (“b.py”)",
                                    "App usage: Used firefox for 1 min 1 s (“News”)"]
    assert "keepassxc" not in str(sup.memory.plugin_cursor("app_usage"))     # an excluded app is not even kept
    sup.stop()


def test_x11_active_window_through_xprop(tmp_path, monkeypatch):
    fake = tmp_path / "xprop"
    fake.write_text('#!/bin/sh\nif [ "$1" = "-root" ]; then echo "_NET_ACTIVE_WINDOW(WINDOW): window id # 0x3a00007";'
                    ' else printf \'WM_CLASS(STRING) = "code", "Code"\\n_NET_WM_NAME(UTF8_STRING) = "main.py — magi"'
                    '\\n_NET_WM_PID(CARDINAL) = 4242\\n\'; fi\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert active_window_x11() == Window("Code", "main.py — magi")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert active_window_x11() is None
