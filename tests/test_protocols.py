"""Every shipped embedder and LLM provider satisfies its Protocol (issue 18, item 6): the callers read
``similarity_floor``, ``loaded``, ``stands_in_for``, ``health()`` and ``model_for()`` directly, so each
implementation must have them, with the types the Protocol declares."""

from __future__ import annotations

import numpy as np
import pytest

from magi_desktop.core.embed import Embedder, HashingEmbedder, MiniLMEmbedder
from magi_desktop.core.llm import LLMProvider, OpenAICompatibleLLM, OpenAISettings, RulesLLM, ScriptedLLM
from magi_desktop.core.llm.base import TIERS


def _embedders() -> list[Embedder]:
    return [HashingEmbedder(), HashingEmbedder(stands_in_for=MiniLMEmbedder.name), MiniLMEmbedder(idle_seconds=None)]


def _providers() -> list[LLMProvider]:
    openai = OpenAICompatibleLLM(OpenAISettings(base_url="http://127.0.0.1:9/v1", model="m",
                                                tier_models={"summarizer": "s"}), api_key="")
    return [RulesLLM({}), ScriptedLLM([]), openai]


@pytest.mark.parametrize("embedder", _embedders(), ids=lambda e: f"{type(e).__name__}")
def test_each_embedder_satisfies_the_embedder_protocol(embedder):
    assert isinstance(embedder, Embedder)
    assert isinstance(embedder.name, str) and isinstance(embedder.dimension, int)
    assert isinstance(embedder.max_units, int) and embedder.max_units > 0
    assert isinstance(embedder.similarity_floor, float) and 0 < embedder.similarity_floor < 1
    assert embedder.stands_in_for is None or isinstance(embedder.stands_in_for, str)
    assert embedder.loaded is False                      # nothing loaded before the first embed
    vectors = embedder.embed(["a cat called Miso"])
    assert vectors.shape == (1, embedder.dimension) and vectors.dtype == np.float32
    assert isinstance(embedder.loaded, bool)
    embedder.release()
    assert embedder.loaded is False


def test_the_real_model_reports_loading_and_the_fallback_says_what_it_stands_in_for():
    model = MiniLMEmbedder(idle_seconds=None)
    model.embed(["hello"])
    assert model.loaded and model.stands_in_for is None
    model.release()
    assert HashingEmbedder(stands_in_for=MiniLMEmbedder.name).stands_in_for == MiniLMEmbedder.name


@pytest.mark.parametrize("llm", _providers(), ids=lambda p: f"{type(p).__name__}")
def test_each_llm_provider_satisfies_the_provider_protocol(llm):
    assert isinstance(llm, LLMProvider)
    assert isinstance(llm.name, str)
    health = llm.health()
    assert isinstance(health, dict) and health["name"] == llm.name
    assert all(isinstance(llm.model_for(tier), str) for tier in TIERS)


def test_model_for_names_the_tiers_model_or_the_provider():
    rules, scripted, openai = _providers()
    assert (rules.model_for("summarizer"), scripted.model_for("fast")) == ("rules", "scripted")
    assert (openai.model_for("summarizer"), openai.model_for("fast")) == ("s", "m")
    assert set(openai.health()) == {"name", "base_url", "requests", "breaker"}


def test_an_object_missing_a_protocol_member_is_not_an_embedder():
    class Partial:                      # what a third-party embedder without the new members looks like
        name, dimension, max_units = "partial", 8, 100

        def embed(self, texts):
            return np.zeros((len(texts), 8), dtype=np.float32)

        def release(self):
            pass

    assert not isinstance(Partial(), Embedder)
