"""The small local sources ``load.py`` gives the six first-party collectors (a Git repository, a shell history,
an .ics file, a play log, a Chromium History file), and the thread that keeps adding to them while the load runs."""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
import time
from pathlib import Path


class Sources:
    """Small local sources for the collectors, and a thread that keeps adding to them."""

    def __init__(self, folder: Path):
        import git

        folder.mkdir(parents=True)
        self.folder = folder
        self.repo = git.Repo.init(folder / "repo", initial_branch="main")
        self.author = git.Actor("Ana", "ana@example.com")
        self._commit("Initial import")
        now = time.time()
        (folder / "zsh_history").write_text(f": {int(now) - 60}:0;make test\n: {int(now) - 30}:0;git push\n")
        (folder / "cal.ics").write_text("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//bench//EN\nBEGIN:VEVENT\n"
                                        "UID:w@x\nDTSTART:20261201T090000Z\nDTEND:20261201T091500Z\n"
                                        "RRULE:FREQ=WEEKLY\nSUMMARY:Standup\nEND:VEVENT\nEND:VCALENDAR\n")
        (folder / "plays.jsonl").write_text("")
        self._play()
        conn = sqlite3.connect(folder / "History")
        conn.executescript("CREATE TABLE urls(id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER, "
                           "typed_count INTEGER, last_visit_time INTEGER, hidden INTEGER);"
                           "CREATE TABLE visits(id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER, "
                           "from_visit INTEGER, transition INTEGER, segment_id INTEGER, visit_duration INTEGER);")
        conn.close()
        self._visit()
        self.appended = {"commands": 2, "plays": 1, "visits": 1, "commits": 1}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._grow, name="load-sources", daemon=True)

    def settings(self) -> dict:
        f = self.folder
        return {"git": {"enabled": True, "settings": {"repositories": [str(f / "repo")]}},
                "terminal": {"enabled": True, "settings": {"files": [str(f / "zsh_history")]}},
                "calendar": {"enabled": True, "settings": {"paths": [str(f / "cal.ics")]}},
                "music": {"enabled": True, "settings": {"play_log": str(f / "plays.jsonl"), "players": False}},
                "browser": {"enabled": True, "settings": {"profiles": [str(f / "History")]}},
                "app_usage": {"enabled": True}}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def _grow(self) -> None:
        """A command every 2 s, a play every 5 s, a page visit every 10 s, a commit every 60 s."""
        for second in itertools.count(1):
            if self._stop.wait(1.0):
                return
            if second % 2 == 0:
                with open(self.folder / "zsh_history", "a") as f:
                    f.write(f": {int(time.time())}:0;pytest -q tests/test_{second % 40}.py\n")
                self.appended["commands"] += 1
            if second % 5 == 0:
                self._play()
                self.appended["plays"] += 1
            if second % 10 == 0:
                self._visit()
                self.appended["visits"] += 1
            if second % 60 == 0:
                self._commit(f"Fix flaky test {second // 60}")
                self.appended["commits"] += 1

    def _commit(self, message: str) -> None:
        path = self.folder / "repo" / "notes.txt"
        with open(path, "a") as f:
            f.write(message + "\n")
        self.repo.index.add([str(path)])
        self.repo.index.commit(message, author=self.author, committer=self.author)

    def _play(self) -> None:
        with open(self.folder / "plays.jsonl", "a") as f:
            f.write(json.dumps({"played_at": time.time() - 200, "track": "So What", "artist": "Miles Davis",
                                "duration_sec": 200}) + "\n")

    def _visit(self) -> None:
        raw = int((time.time() + 11_644_473_600) * 1e6)   # Chromium time: µs since 1601
        conn = sqlite3.connect(self.folder / "History")
        with conn:
            rowid = conn.execute("INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                                 "VALUES (?, 'Example page', 1, 0, ?, 0)",
                                 (f"https://example.com/p/{raw}", raw)).lastrowid
            conn.execute("INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                         "VALUES (?, ?, 0, 0, 0, 0)", (rowid, raw))
        conn.close()
