"""The ``rules`` provider: answers tasks with deterministic handlers, no model, no network.

Each task name maps to a function of the inputs (the L2 handlers live in
``core/l2/rules.py``). Answers are checked against the task's schema like a
model's, so the rules cannot drift from the contract either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .base import LLMError, Task
from .schema import validate


class RulesLLM:
    name = "rules"

    def __init__(self, handlers: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]):
        self.handlers = dict(handlers)

    def run(self, task: Task, inputs: dict[str, Any]) -> dict[str, Any]:
        handler = self.handlers.get(task.name)
        if handler is None:
            raise LLMError(f"the rules provider has no handler for {task.name}", retryable=False)
        return validate(handler(inputs), task.schema)

    def health(self) -> dict[str, Any]:
        return {"name": self.name}

    def model_for(self, tier: str) -> str:
        return self.name
