"""Screenshots of the app for docs/screenshots/, from a demo memory built here.

    xvfb-run -a -s "-screen 0 1400x1000x24" .venv/bin/python scripts/screenshots.py

Builds a memory in a temporary folder with the real core (chat turns in English and
Chinese, browser visits, commits, plays over two weeks), opens the main window, the
viewer (with a belief's evidence trail selected, the timeline, an answered question)
and the settings, and saves each as PNG.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
DAY = 86400.0


def chat(text, at, session, item):
    return {"source_type": "chat", "session_id": session, "occurred_at": at, "source_item_id": item,
            "chat": {"role": "user", "text": text, "provenance": "human_input"}}


def activity(source, action, at, provenance, item, entities=()):
    payload = {"source_type": source, "occurred_at": at, "source_item_id": item,
               "activity": {"source_code": source, "action_code": action}, "provenance": provenance}
    if entities:
        payload["entities"] = [{"mention_text": name, "entity_type": kind} for name, kind in entities]
    return payload


def demo_payloads(now: float) -> list[dict]:
    start = now - 60 * DAY
    out = [
        chat("I live in Shanghai.", start, "s1", "c1"),
        chat("I work at Alibaba as a data engineer.", start + 2 * DAY, "s1", "c2"),
        chat("I love jazz, especially Bill Evans.", start + 5 * DAY, "s2", "c3"),
        chat("我很喜欢龙井茶。", start + 9 * DAY, "s3", "c4"),
        chat("I moved to Hangzhou last week.", now - 20 * DAY, "s4", "c5"),
        chat("I have a cat named Miso.", now - 12 * DAY, "s5", "c6"),
        chat("我最近压力很大。", now - 2 * 3600, "s6", "c7"),
    ]
    sites = [("https://docs.python.org/3/library/sqlite3.html", "sqlite3 — Python docs"),
             ("https://github.com/asg017/sqlite-vec", "sqlite-vec"), ("https://news.ycombinator.com/", "Hacker News"),
             ("https://www.bilibili.com/video/BV1", "西湖十景 — bilibili")]
    tracks = [("Waltz for Debby", "Bill Evans"), ("So What", "Miles Davis"), ("Blue in Green", "Bill Evans")]
    midnight = time.mktime(time.localtime(now)[:3] + (0, 0, 0, 0, 0, -1))
    for day in range(14):
        base = midnight - (13 - day) * DAY
        for i in range((day * 7) % 9 + 2):
            url, title = sites[(day + i) % len(sites)]
            out.append(activity("chrome", "visit_page", base + 3600 * (9 + i % 8), {"url": url, "title": title},
                                f"v{day}-{i}"))
        for i in range(day % 4):
            out.append(activity("git", "git_commit", base + 3600 * (14 + i),
                                {"repo": "magi", "branch": "main", "message": f"Viewer: step {day}.{i}",
                                 "files_changed": 2 + i}, f"g{day}-{i}", [("magi", "project")]))
        if day % 2 == 0:
            name, artist = tracks[day % len(tracks)]
            out.append(activity("music", "listen_music", base + 3600 * 21,
                                {"track_name": name, "artist_name": artist, "play_duration_sec": 240},
                                f"m{day}", [(artist, "person")]))
    return [p for p in out if p["occurred_at"] <= now]       # nothing from the future


def main() -> int:
    if os.environ.get("QT_QPA_PLATFORM") == "offscreen":
        print("run under Xvfb (xvfb-run), not offscreen: offscreen renders without the desktop's fonts",
              file=sys.stderr)
    from magi_desktop.core import Memory
    from magi_desktop.ui.app import DesktopApp
    from magi_desktop.ui.qt import QApplication

    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="magi-demo-"))
    os.environ["MAGI_DATA_DIR"] = str(folder)
    os.environ["XDG_CONFIG_HOME"] = str(folder / "config")
    os.environ["MAGI_LOAD_PLUGINS"] = "git,browser,terminal,calendar,music,app_usage"
    (folder / "collectors.json").write_text(
        '{"exclusions": {"domains": ["bank.example"], "apps": ["keepassxc"], "repositories": [], "paths": []},'
        ' "collectors": {"git": {"enabled": true, "settings": {"repositories": ["~/src/magi"]}},'
        ' "terminal": {"enabled": true}}}')
    memory = Memory.open(folder, embedder="default")
    now = time.time()
    memory.ingest_many(demo_payloads(now))
    # An agent's conversation: the user accepts its conclusion and states a fact; once the session
    # ends, the background extraction saves both, each with its evidence.
    turns = [("user", "Which database should the notes app use?"),
             ("assistant", "SQLite in WAL mode: one writer, many readers, nothing to run."),
             ("user", "Sounds good."), ("user", "Remember that my laptop is a ThinkPad X1 Carbon.")]
    for i, (role, text) in enumerate(turns):
        memory.ingest({"source_type": "chat", "session_id": "agent-1", "occurred_at": now - 3 * DAY + 30 * i,
                       "source_item_id": f"a{i}", "chat": {"role": role, "text": text, **(
                           {"provenance": "human_input"} if role == "user" else {})}})
    memory.end_session("agent-1")
    memory.process_pending()
    memory.forget(source_item_ids=["v0-0", "v0-1"])
    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    app = DesktopApp(qapp, memory)

    def settle(ms: int = 400) -> None:
        deadline = time.monotonic() + ms / 1000
        while time.monotonic() < deadline:
            qapp.processEvents()
            time.sleep(0.02)

    def save(widget, name: str) -> None:
        settle()
        path = OUT / f"{name}.png"
        widget.grab().save(str(path))
        print(path)

    app.start()
    app.show_window()
    app.window.resize(760, 460)
    save(app.window, "main-window")
    app.show_viewer()
    viewer = app.viewer
    viewer.resize(1200, 760)
    page = viewer.pages["assertions"]
    page.state.setCurrentIndex(page.state.findText("All"))
    row = next(i for i, b in enumerate(page.model.records) if b.value.lower().startswith("hangzhou"))
    page.table.selectRow(row)
    save(viewer, "viewer-evidence-trail")
    viewer.tabs.setCurrentWidget(viewer.pages["facts"])
    save(viewer, "viewer-facts")
    viewer.tabs.setCurrentWidget(viewer.remembered)
    viewer.remembered.table.selectRow(0)
    save(viewer, "viewer-remembered")
    viewer.tabs.setCurrentWidget(viewer.forgotten)
    viewer.forgotten.table.selectRow(0)
    save(viewer, "viewer-forgotten")
    viewer.tabs.setCurrentWidget(viewer.timeline)
    save(viewer, "viewer-timeline")
    viewer.tabs.setCurrentWidget(viewer.ask)
    viewer.ask.question.setText("where do I live now?")
    viewer.ask.ask()
    deadline = time.monotonic() + 30
    while not viewer.ask.ask_button.isEnabled() and time.monotonic() < deadline:
        settle(100)
    save(viewer, "viewer-ask")
    dialog = app.settings_dialog()
    dialog.resize(760, 680)
    dialog.show()
    save(dialog, "settings-collectors")
    dialog.tabs.setCurrentIndex(2)
    save(dialog, "settings-llm")
    dialog.tabs.setCurrentIndex(4)
    save(dialog, "settings-agents")
    dialog.close()
    app.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
