"""A scripted LLM for tests: replays recorded answers, fails loudly on anything else.

    llm = ScriptedLLM([
        ("l2.phase1", lambda inputs: "Jiaxing" in inputs["events"][0]["text"], {...answer...}),
    ])

Each step is (task name, a predicate over the inputs or a substring of their
JSON, answer). Calls must come in script order; a call for another task, one
whose inputs do not match, or one after the script ends raises
:class:`UnexpectedLLMCall`. The answer is checked against the task's schema
like a real model's — a step may hold a malformed answer on purpose (or an
exception to raise) to test failure handling.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from .base import LLMOutputInvalid, Task, UnexpectedLLMCall
from .schema import SchemaError, validate

Matcher = Callable[[dict], bool] | str | None


class ScriptedLLM:
    name = "scripted"

    def __init__(self, steps: Sequence[tuple[str, Matcher, Any]]):
        self.steps = list(steps)
        self.position = 0
        self.calls: list[tuple[str, dict]] = []

    def run(self, task: Task, inputs: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((task.name, inputs))
        if self.position >= len(self.steps):
            raise UnexpectedLLMCall(f"unexpected LLM call {task.name} after the script ended: {_brief(inputs)}")
        name, matcher, answer = self.steps[self.position]
        if name != task.name:
            raise UnexpectedLLMCall(f"expected a {name} call, got {task.name}: {_brief(inputs)}")
        if matcher is not None and not (matcher(inputs) if callable(matcher) else matcher in json.dumps(
                inputs, ensure_ascii=False)):
            raise UnexpectedLLMCall(f"{task.name} inputs do not match script step {self.position}: {_brief(inputs)}")
        self.position += 1
        if isinstance(answer, BaseException):
            raise answer
        try:
            return validate(answer, task.schema)
        except SchemaError as exc:
            raise LLMOutputInvalid(f"{task.name}: {exc}") from None

    @property
    def finished(self) -> bool:
        return self.position == len(self.steps)

    def health(self) -> dict[str, Any]:
        return {"name": self.name}

    def model_for(self, tier: str) -> str:
        return self.name


def _brief(inputs: dict) -> str:
    text = json.dumps(inputs, ensure_ascii=False)
    return text if len(text) <= 300 else text[:299] + "…"
