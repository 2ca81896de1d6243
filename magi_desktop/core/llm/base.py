"""The LLM provider interface (architecture §13).

Work is asked of a model as a :class:`Task`: a name, a tier (fast /
reasoning / summarizer / compact), instructions and the JSON schema its answer
must match. A provider turns ``(task, inputs)`` into a dict that matches the
schema, or raises. Three providers implement it: ``rules`` (deterministic and
offline, the default), ``openai`` (any OpenAI-compatible HTTP endpoint) and
``scripted`` (tests only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidInput, MagiError

TIERS = ("fast", "reasoning", "summarizer", "compact")


class LLMError(MagiError, RuntimeError):
    """A call failed. ``retryable`` says whether trying again later may help."""

    def __init__(self, message: str, *, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


class ProviderUnavailable(LLMError):
    """The provider refuses calls for a while (its circuit breaker is open): no request was made."""


class LLMOutputInvalid(LLMError):
    """The model answered, but not with JSON matching the task's schema."""


class UnexpectedLLMCall(AssertionError):
    """The scripted provider was asked something its script does not hold.

    An AssertionError on purpose: job runners re-raise it instead of retrying,
    so a test fails at the call that went wrong.
    """


@dataclass(frozen=True)
class Task:
    name: str
    tier: str
    instructions: str
    schema: dict = field(hash=False)

    def __post_init__(self) -> None:
        if self.tier not in TIERS:
            raise ValueError(f"unknown LLM tier {self.tier!r}; one of {', '.join(TIERS)}")


@runtime_checkable
class LLMProvider(Protocol):
    #: "rules" for the offline rules; work asks a model only when it is another provider.
    name: str

    def run(self, task: Task, inputs: dict[str, Any]) -> dict[str, Any]:
        """The task's answer for ``inputs``, already checked against ``task.schema``."""
        ...

    def health(self) -> dict[str, Any]:
        """For status displays (``stats()["llm"]``): at least ``name``; an endpoint adds its requests and breaker."""
        ...

    def model_for(self, tier: str) -> str:
        """The model that answers ``tier``'s tasks, recorded with what it wrote (an L3 summary's ``model``)."""
        ...


class CompletedLLM:
    """A provider written against the older, smaller contract (name, run), given the members added since with
    their old behaviour (health: its name; model_for: its name), so a caller's own provider keeps working."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name: str = inner.name

    def run(self, task: Task, inputs: dict[str, Any]) -> dict[str, Any]:
        return self._inner.run(task, inputs)

    def health(self) -> dict[str, Any]:
        health = getattr(self._inner, "health", None)
        return health() if health is not None else {"name": self.name}

    def model_for(self, tier: str) -> str:
        model_for = getattr(self._inner, "model_for", None)
        return model_for(tier) if model_for is not None else self.name

    def __getattr__(self, name: str) -> Any:      # anything else the caller's provider offers (tests' call logs)
        return getattr(self._inner, name)


def completed_llm(spec: object) -> LLMProvider:
    """``spec`` as an LLMProvider: itself when complete, completed when it has ``name`` and ``run``; InvalidInput
    for anything else."""
    if isinstance(spec, LLMProvider):
        return spec
    if hasattr(spec, "name") and callable(getattr(spec, "run", None)):
        return CompletedLLM(spec)
    # InvalidInput (a ValueError), as a provider name that is not available is: a caller may catch either.
    raise InvalidInput(f"not an LLM provider: {spec!r} (needs name and run(task, inputs))")
