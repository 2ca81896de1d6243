"""The desktop app's first window (pytest-qt, offscreen)."""

import time

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory

pytest.importorskip("pytestqt")

from magi_desktop.ui.app import DesktopApp
from magi_desktop.ui.qt import QApplication, QSystemTrayIcon


@pytest.fixture
def desktop(qtbot, tmp_path):
    memory = Memory.open(tmp_path / "data", embedder="hashing")
    app = DesktopApp(QApplication.instance(), memory)
    qtbot.addWidget(app.window)
    yield app
    app.shutdown()


def test_without_a_tray_the_main_window_opens(desktop, qtbot):
    assert not QSystemTrayIcon.isSystemTrayAvailable()  # offscreen has no tray
    desktop.start()
    qtbot.waitUntil(desktop.window.isVisible)
    assert desktop.tray is None
    assert not desktop.window.hide_on_close  # closing the only window quits


def test_window_shows_what_the_memory_holds(desktop, qtbot):
    desktop.memory.ingest_many([chat("I have a cat"), chat("Nice!", role="assistant"),
                                sensor("visit_page", {"url": "https://example.com"})])
    desktop.start()
    qtbot.waitUntil(lambda: desktop.memory.pending_work() == 0, timeout=10_000)  # background worker embeds
    desktop.window.refresh()
    fields = desktop.window.fields
    assert fields["events"].text() == "3"
    assert "user_self_report 1" in fields["classes"].text()
    assert "assistant_response 1" in fields["classes"].text()
    assert fields["queue"].text().startswith("0 to embed")
    assert "3 chunks" in fields["embedding"].text()


def test_collectors_are_off_by_default_and_run_when_enabled(qtbot, tmp_path, monkeypatch):
    import json

    import git

    repo = git.Repo.init(tmp_path / "proj", initial_branch="main")
    (tmp_path / "proj" / "a.txt").write_text("a\n")
    repo.index.add([str(tmp_path / "proj" / "a.txt")])
    repo.index.commit("Initial import", author=git.Actor("Ana", "a@x"), committer=git.Actor("Ana", "a@x"))
    memory = Memory.open(tmp_path / "off", embedder="hashing")
    off = DesktopApp(QApplication.instance(), memory)
    assert off.supervisor is None
    off.shutdown()
    data = tmp_path / "on"
    data.mkdir()
    (data / "collectors.json").write_text(json.dumps({"collectors": {"git": {
        "enabled": True, "settings": {"repositories": [str(tmp_path / "proj"), str(tmp_path / "gone")]}}}}))
    monkeypatch.setenv("MAGI_LOAD_PLUGINS", "git")
    on = DesktopApp(QApplication.instance(), Memory.open(data, embedder="hashing"))
    qtbot.addWidget(on.window)
    on.start()
    qtbot.waitUntil(lambda: on.supervisor.status["git"].counts["stored"] == 1, timeout=20_000)
    # The folder that is not a repository is unavailable, says why, and is shown in the window's git row; it is
    # no failure.
    gone = str(tmp_path / "gone")
    qtbot.waitUntil(lambda: (on.supervisor.status["git"].health or {}).get("sources", {}).get(gone, {}).get("state")
                    == "unavailable", timeout=20_000)
    assert on.supervisor.status["git"].health["sources"][gone]["reason"] == f"no such repository: {gone}"
    assert on.supervisor.status["git"].failures == 0
    view = on.window.collector_health["git"]

    def shown_in_the_window():
        on.window.refresh()
        return gone in view.details.text() and view.state.text() == "collecting"

    qtbot.waitUntil(shown_in_the_window, timeout=20_000)
    assert on.collectors_status() == "1 enabled, 0 running; needs you: git (1 source unavailable)"
    on.shutdown()


def test_the_main_window_opens_the_viewer_and_pauses_collection(desktop, qtbot):
    desktop.memory.ingest(chat("I live in Shanghai.", at=1_760_000_000.0))
    desktop.start()
    qtbot.waitUntil(lambda: desktop.scheduler.runs["process"] >= 1, timeout=10_000)   # on the pool
    qtbot.waitUntil(lambda: desktop.memory.pending_work() == 0, timeout=10_000)
    desktop.window.viewer_button.click()
    qtbot.waitUntil(lambda: desktop.viewer is not None and desktop.viewer.isVisible())
    assert [b.value for b in desktop.viewer.pages["assertions"].model.records] == ["Shanghai"]
    desktop.window.pause_button.click()
    assert desktop.paused is False            # no collector is enabled: nothing to pause, but it is kept
    from magi_desktop.collectors import load_settings

    assert load_settings(desktop.memory.path.parent).paused
    assert "Resume" in desktop.window.pause_button.text()
    assert "none enabled" in desktop.status_line()


def test_shutdown_waits_for_the_running_batch(desktop, qtbot):
    desktop.memory.ingest_many([chat(f"line {i} about the garden", at=1_760_000_000.0 + i) for i in range(300)])
    desktop.start()
    qtbot.waitUntil(lambda: desktop.scheduler.busy, timeout=10_000)
    running = list(desktop.scheduler.tasks.values())
    assert desktop.scheduler.stop()                      # the pool finished: the batch committed whole
    assert all(task.cancel_event.is_set() for task in running)
    # Whatever was not processed is still queued; nothing is half-written.
    stats = desktop.memory.stats()
    assert stats["embedding"]["chunks"] + stats["embedding"]["pending"] == 300


def test_rebuilding_the_index_shows_progress_and_can_be_cancelled(desktop, qtbot):
    desktop.memory.ingest_many([chat(f"note {i} about tea", at=1_760_000_000.0 + i) for i in range(400)])
    desktop.memory.process_pending()
    desktop.start()
    desktop.window.reindex_button.click()
    assert desktop.window.progress.isVisibleTo(desktop.window) and not desktop.window.reindex_button.isEnabled()
    qtbot.waitUntil(lambda: desktop.long_task is None, timeout=30_000)
    assert desktop.window.reindex_button.isEnabled() and not desktop.window.progress.isVisibleTo(desktop.window)
    assert "Search index rebuilt: 400 events" in desktop.window.statusBar().currentMessage()
    assert desktop.memory.query("tea", limit=3).findings            # the rebuilt full-text index answers
    desktop.window.reindex_button.click()
    desktop.window.cancel_button.click()                             # stops between batches
    qtbot.waitUntil(lambda: desktop.long_task is None, timeout=30_000)
    assert desktop.window.reindex_button.isEnabled()


def test_each_periodic_job_runs_on_its_own_schedule_on_the_pool(desktop, qtbot):
    from magi_desktop.ui.scheduler import PERIODIC_SECONDS

    time.sleep(1.5)               # a slow start: the start-up runs are late, and must run all the same
    desktop.start()
    qtbot.waitUntil(lambda: all(desktop.scheduler.runs[job] >= 1 for job in PERIODIC_SECONDS), timeout=60_000)
    jobs = {job.id: job.trigger.interval.total_seconds() for job in desktop.scheduler.scheduler.get_jobs()}
    assert {job: jobs[job] for job in PERIODIC_SECONDS} == PERIODIC_SECONDS
    assert desktop.scheduler.last_error is None


def test_the_app_serves_mcp_over_http_when_the_settings_say_so_and_stops_on_quit(qtbot, tmp_path):
    import json
    import socket

    import httpx2

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"mcp_http": {"enabled": True, "port": port}}))
    app = DesktopApp(QApplication.instance(), Memory.open(data, embedder="hashing"))
    qtbot.addWidget(app.window)
    app.start()
    try:
        assert app.http.url == f"http://127.0.0.1:{port}/mcp"
        assert httpx2.post(app.http.url, json={}, timeout=30).status_code == 401     # up, and wants its token
    finally:
        app.shutdown()
    with pytest.raises(httpx2.ConnectError):
        httpx2.post(f"http://127.0.0.1:{port}/mcp", json={}, timeout=5)
