import os

# Before anything imports Qt: pytest-qt aborts without a platform on a headless machine.
# Forced, not defaulted: the app tests assume a desktop without a system tray.
os.environ["QT_QPA_PLATFORM"] = "offscreen"

import gc
import json
import sys
from functools import cache
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def _model_cache(tmp_path_factory):
    """One cache folder for the session: the onnxruntime MiniLM graph is built into it once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory, monkeypatch, _model_cache):
    """No test may touch the user's real data folder, config folder, cache or login items."""
    monkeypatch.setenv("MAGI_DATA_DIR", str(tmp_path_factory.mktemp("default-data")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("MAGI_CACHE_DIR", str(_model_cache))


@cache
def _uses_qt(path: str) -> bool:
    return "magi_desktop.ui" in Path(path).read_text("utf-8")


@pytest.fixture(autouse=True)
def _qt_garbage_collected_on_this_thread(request):
    """After a test that made widgets, collect its reference cycles here, on the GUI thread: left to the
    automatic collector, a later test's worker thread would destroy them, which Qt does not survive
    (as the app does, with ui/gc_main_thread.py)."""
    yield
    if "PySide6.QtWidgets" in sys.modules and _uses_qt(str(request.path)):
        gc.collect()


@pytest.fixture
def memory_keyring():
    """An in-memory keyring (a headless machine has no keyring backend)."""
    import keyring
    from keyring.backend import KeyringBackend

    class MemoryKeyring(KeyringBackend):
        priority = 1

        def __init__(self):
            super().__init__()
            self.store = {}

        def get_password(self, service, username):
            return self.store.get((service, username))

        def set_password(self, service, username, password):
            self.store[(service, username)] = password

        def delete_password(self, service, username):
            self.store.pop((service, username), None)

    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture
def memory(tmp_path):
    """A fresh memory with the hashing embedder (fast; the model has its own tests)."""
    from magi_desktop.core import Memory

    mem = Memory.open(tmp_path / "data", embedder="hashing")
    yield mem
    mem.close()


@pytest.fixture(scope="session")
def minilm():
    from magi_desktop.core.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder(idle_seconds=None)
    yield embedder
    embedder.release()


@pytest.fixture(scope="session")
def minilm_reference():
    return json.loads((FIXTURES / "minilm_reference.json").read_text("utf-8"))
