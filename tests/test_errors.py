"""The exception families (issue 18, item 6): one root, the caller's bad input apart from the environment,
every error keeping the base its callers already catch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from magi_desktop.app_settings import AppSettingsError
from magi_desktop.collectors.settings import SettingsError
from magi_desktop.core import (
    DatabaseCorrupt,
    DiskFull,
    InvalidInput,
    MagiError,
    Memory,
    MemoryBusy,
    MemoryUnavailable,
    PayloadError,
    RememberRejected,
    ReviewError,
)
from magi_desktop.core.embed import ModelNotInstalled
from magi_desktop.core.export import ImportFailed
from magi_desktop.core.export_markdown import MarkdownTargetError
from magi_desktop.core.llm import LLMError, LLMOutputInvalid, ProviderUnavailable
from magi_desktop.core.store import SchemaTooNew

INPUT_ERRORS = (PayloadError, RememberRejected, ReviewError, ImportFailed, MarkdownTargetError, SettingsError,
                AppSettingsError)
ENVIRONMENT_ERRORS = (MemoryUnavailable, DiskFull, DatabaseCorrupt, MemoryBusy, SchemaTooNew)
ENDPOINT_ERRORS = (LLMError, ProviderUnavailable, LLMOutputInvalid, ModelNotInstalled)


@pytest.mark.parametrize("error", INPUT_ERRORS)
def test_the_callers_bad_input_is_invalid_input_and_still_a_value_error(error):
    assert issubclass(error, InvalidInput) and issubclass(error, MagiError) and issubclass(error, ValueError)


@pytest.mark.parametrize("error", ENVIRONMENT_ERRORS)
def test_the_storage_errors_are_one_family_under_the_root(error):
    assert issubclass(error, MemoryUnavailable) and issubclass(error, MagiError)
    assert issubclass(error, RuntimeError) and not issubclass(error, ValueError)


@pytest.mark.parametrize("error", ENDPOINT_ERRORS)
def test_the_model_and_endpoint_errors_are_under_the_root_and_still_runtime_errors(error):
    assert issubclass(error, MagiError) and issubclass(error, RuntimeError) and not issubclass(error, InvalidInput)


def test_payload_error_keeps_its_field_and_message():
    error = PayloadError("chat.role", "must be user, assistant or tool", index=3)
    assert (error.field, error.reason, str(error)) == ("chat.role", "must be user, assistant or tool",
                                                       "payloads[3].chat.role: must be user, assistant or tool")
    assert isinstance(error.at(4), InvalidInput) and error.at(4).index == 4


def test_the_memorys_own_argument_checks_raise_invalid_input(tmp_path):
    with Memory.open(tmp_path / "data", embedder="hashing") as memory:
        for bad in (lambda: memory.query("  "), lambda: memory.query("cat?", mode="guess"),
                    lambda: memory.query("cat?", limit=0), lambda: memory.set_goal("s", " "),
                    lambda: memory.forget(), lambda: memory.process_pending(queues=("nope",)),
                    lambda: memory.run_due(jobs=("nope",)), lambda: memory.ingest_many([], on_error="ignore")):
            with pytest.raises(InvalidInput):
                bad()
    with pytest.raises(InvalidInput, match="not available"):
        Memory.open(tmp_path / "other", embedder="hashing", llm="gpt-9")
    with pytest.raises(InvalidInput, match="unknown embedder"):
        Memory.open(tmp_path / "other", embedder="word2vec")


@pytest.mark.slow
def test_the_cli_says_what_is_wrong_with_an_argument_without_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "--data-dir", str(tmp_path / "data"), "query",
                           "   "], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == "magi query: the question is empty", done.stderr


@pytest.mark.parametrize("value", ["60s", "soon", "0", "-5"])
def test_a_bad_llm_timeout_is_the_callers_input_named(value):
    from magi_desktop.core.llm import OpenAISettings

    with pytest.raises(InvalidInput, match="MAGI_LLM_TIMEOUT"):
        OpenAISettings.from_env({"MAGI_LLM_BASE_URL": "http://127.0.0.1:9/v1", "MAGI_LLM_MODEL": "m",
                                 "MAGI_LLM_TIMEOUT": value})


def test_a_bad_llm_timeout_leaves_the_mcp_server_on_the_offline_rules(tmp_path):
    import os

    env = {**os.environ, "MAGI_LLM_BASE_URL": "http://127.0.0.1:9/v1", "MAGI_LLM_MODEL": "m",
           "MAGI_LLM_TIMEOUT": "60s", "MAGI_EMBEDDER": "hashing"}
    done = subprocess.run([sys.executable, "-m", "magi_desktop.cli", "--data-dir", str(tmp_path / "d"), "mcp"],
                          input="", capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in done.stderr and "MAGI_LLM_TIMEOUT" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("now", ["²", "1e400x", "12:00"])
def test_a_bad_now_through_mcp_is_an_invalid_argument(tmp_path, now):
    from magi_desktop.agents.calls import Refused, as_of

    with pytest.raises(Refused):
        as_of(now)


def test_a_callers_own_embedder_and_llm_of_the_older_contract_still_work(tmp_path):
    import numpy as np

    class Plain:                      # name, dimension, max_units, embed, release: the contract before issue 18
        name, dimension, max_units = "plain-8", 8, 256

        def embed(self, texts):
            rows = np.ones((len(texts), 8), dtype=np.float32)
            return rows / np.linalg.norm(rows, axis=1, keepdims=True)

        def release(self):
            pass

    class Echo:                        # name and run only
        name = "echo"

        def run(self, task, inputs):
            raise AssertionError("not asked in this test")

    memory = Memory.open(tmp_path / "m", embedder=Plain(), llm=Echo())
    try:
        assert memory.stats()["llm"] == {"name": "echo"}
        assert memory.embedder.similarity_floor == 0.3 and memory.embedder.stands_in_for is None
    finally:
        memory.close()
    with pytest.raises(TypeError, match="needs name, dimension and embed"):
        Memory.open(tmp_path / "n", embedder=object())
    with pytest.raises(ValueError, match="not an LLM provider"):    # a ValueError, as before issue 18
        Memory.open(tmp_path / "o", embedder="hashing", llm=object())
