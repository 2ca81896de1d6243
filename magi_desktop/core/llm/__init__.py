"""LLM providers behind one interface (architecture §13): rules (default), OpenAI-compatible HTTP, scripted (tests)."""

from .base import TIERS, LLMError, LLMOutputInvalid, LLMProvider, ProviderUnavailable, Task, UnexpectedLLMCall
from .openai import OpenAICompatibleLLM, OpenAISettings
from .rules import RulesLLM
from .schema import SchemaError, validate
from .scripted import ScriptedLLM

__all__ = ["TIERS", "LLMError", "LLMOutputInvalid", "LLMProvider", "OpenAICompatibleLLM", "OpenAISettings",
           "ProviderUnavailable", "RulesLLM", "SchemaError", "ScriptedLLM", "Task", "UnexpectedLLMCall", "validate"]
