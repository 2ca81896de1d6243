"""A collector context for tests that call ``collect`` directly (the supervisor makes the real one)."""

import shutil
import tempfile
import weakref
from collections import Counter
from pathlib import Path


class Ctx:
    def __init__(self, settings, exclusions=None, temp_dir=None):
        self.settings = settings
        self.exclusions = exclusions or {}
        self.cursor = None
        self.progressed = []
        self.stopping = False
        self.skips = Counter()             # reason -> count
        self.details = []                  # (reason, detail) in order
        self.current = None                # the source ctx.source named last
        self.sources = {}                  # source -> (state, reason, fix) said by unavailable / failing / source
        self._temp_dir = Path(temp_dir) if temp_dir is not None else None

    @property
    def temp_dir(self):
        if self._temp_dir is None:          # made when a collector first asks, removed with the context
            self._temp_dir = Path(tempfile.mkdtemp(prefix="magi-ctx-"))
            weakref.finalize(self, shutil.rmtree, self._temp_dir, True)
        return self._temp_dir

    def excluded(self, kind, value):
        return any(item in value for item in self.exclusions.get(kind, ()))

    def save_cursor(self, value):
        self.cursor = value

    def progress(self, done, total=None):
        self.progressed.append((done, total))

    def skipped(self, reason, detail=None):
        self.skips[reason] += 1
        self.details.append((reason, detail))

    def source(self, name):
        self.current = name
        self.sources.setdefault(name, ("read", None, None))

    def unavailable(self, source, reason, fix=None):
        self.sources[source] = ("unavailable", reason, fix)

    def failing(self, source, error):
        self.sources[source] = ("failing", error, None)
