"""An OpenAI-compatible chat-completions client (Ollama, llama.cpp server, vLLM,
LM Studio, DashScope, OpenAI …) on the standard library's HTTP client.

The answer must be one JSON object (JSON mode is requested; a reply wrapped in
a Markdown fence is unwrapped); it is checked against the task's schema, so a
malformed answer raises :class:`LLMOutputInvalid` and the caller's job is
retried rather than writing garbage. Connection errors, timeouts, 429 and 5xx
are retried here with backoff (a 429's ``Retry-After`` is honoured up to a cap);
other 4xx are not retryable. The API key comes from the OS keyring
(service ``magi-desktop``, user ``llm:<base_url>``) or ``MAGI_LLM_API_KEY``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .base import TIERS, LLMError, LLMOutputInvalid, Task
from .schema import SchemaError, validate

log = logging.getLogger(__name__)

KEYRING_SERVICE = "magi-desktop"
MAX_RETRY_AFTER_SECONDS = 30.0
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def keyring_user(base_url: str) -> str:
    return f"llm:{base_url.rstrip('/')}"


def stored_api_key(base_url: str) -> str | None:
    """The key for an endpoint: the OS keyring first, then ``MAGI_LLM_API_KEY``."""
    try:
        import keyring
        from keyring.errors import KeyringError

        try:
            key = keyring.get_password(KEYRING_SERVICE, keyring_user(base_url))
        except KeyringError as exc:
            log.warning("the OS keyring is unavailable (%s); using MAGI_LLM_API_KEY if set", exc)
            key = None
    except ImportError:  # pragma: no cover - keyring is a declared dependency
        key = None
    return key or os.environ.get("MAGI_LLM_API_KEY") or None


def save_api_key(base_url: str, key: str) -> None:
    import keyring

    keyring.set_password(KEYRING_SERVICE, keyring_user(base_url), key)


@dataclass
class OpenAISettings:
    base_url: str                                  # e.g. http://localhost:11434/v1
    model: str                                     # the model for every tier without its own
    tier_models: dict[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    retries: int = 2
    backoff: float = 1.0
    json_mode: bool = True
    temperature: float = 0.0

    def __post_init__(self) -> None:
        if not re.match(r"^https?://[^\s/]+", self.base_url or ""):
            raise ValueError(f"LLM base_url must be an http(s) URL, got {self.base_url!r}")
        if not self.model:
            raise ValueError("an LLM model name is required")
        unknown = set(self.tier_models) - set(TIERS)
        if unknown:
            raise ValueError(f"unknown LLM tier(s) {', '.join(sorted(unknown))}; tiers are {', '.join(TIERS)}")

    def model_for(self, tier: str) -> str:
        return self.tier_models.get(tier) or self.model

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OpenAISettings:
        """``MAGI_LLM_BASE_URL``, ``MAGI_LLM_MODEL``, ``MAGI_LLM_MODEL_<TIER>``, ``MAGI_LLM_TIMEOUT``."""
        env = os.environ if env is None else env
        base_url = env.get("MAGI_LLM_BASE_URL", "")
        if not base_url:
            raise ValueError("set MAGI_LLM_BASE_URL (and MAGI_LLM_MODEL) to use an OpenAI-compatible LLM")
        return cls(
            base_url=base_url, model=env.get("MAGI_LLM_MODEL", ""),
            tier_models={t: env[f"MAGI_LLM_MODEL_{t.upper()}"] for t in TIERS
                         if env.get(f"MAGI_LLM_MODEL_{t.upper()}")},
            timeout=float(env.get("MAGI_LLM_TIMEOUT", 60.0)),
        )


class OpenAICompatibleLLM:
    """``run(task, inputs)`` over ``POST {base_url}/chat/completions``."""

    name = "openai"

    def __init__(self, settings: OpenAISettings, api_key: str | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.settings = settings
        self._api_key = api_key if api_key is not None else stored_api_key(settings.base_url)
        self._sleep = sleep
        self.calls = 0

    def run(self, task: Task, inputs: dict[str, Any]) -> dict[str, Any]:
        body = {
            "model": self.settings.model_for(task.tier),
            "temperature": self.settings.temperature,
            "messages": [
                {"role": "system", "content": f"{task.instructions}\n\nReply with one JSON object only, matching "
                                              f"this JSON schema:\n{json.dumps(task.schema, ensure_ascii=False)}"},
                {"role": "user", "content": json.dumps(inputs, ensure_ascii=False)},
            ],
        }
        if self.settings.json_mode:
            body["response_format"] = {"type": "json_object"}
        reply = self._post("/chat/completions", body)
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMOutputInvalid(f"{task.name}: the endpoint's reply has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise LLMOutputInvalid(f"{task.name}: choices[0].message.content is not text")
        fenced = _FENCE.match(content)
        try:
            answer = json.loads(fenced.group(1) if fenced else content)
        except json.JSONDecodeError as exc:
            raise LLMOutputInvalid(f"{task.name}: the answer is not JSON ({exc.msg} at {exc.pos})") from None
        try:
            return validate(answer, task.schema)
        except SchemaError as exc:
            raise LLMOutputInvalid(f"{task.name}: {exc}") from None

    def _post(self, route: str, body: dict) -> dict:
        url = self.settings.base_url.rstrip("/") + route
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        attempt = 0
        while True:
            attempt += 1
            self.calls += 1
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.settings.timeout) as response:
                    raw = response.read()
                try:
                    return json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise LLMOutputInvalid(f"{url} did not return JSON") from None
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc)
                retryable = exc.code == 429 or exc.code >= 500
                if not retryable or attempt > self.settings.retries:
                    raise LLMError(f"{url} answered HTTP {exc.code}: {detail}", retryable=retryable) from None
                delay = _retry_after(exc) or self.settings.backoff * 2 ** (attempt - 1)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                if attempt > self.settings.retries:
                    raise LLMError(f"cannot reach {url}: {reason}") from None
                delay = self.settings.backoff * 2 ** (attempt - 1)
            log.info("LLM call to %s failed (attempt %d); retrying in %.1f s", url, attempt, delay)
            self._sleep(delay)


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the status code is enough
        return exc.reason or ""
    try:
        message = json.loads(text).get("error", {})
        return (message.get("message") if isinstance(message, dict) else str(message)) or text[:200]
    except (json.JSONDecodeError, AttributeError):
        return text[:200]


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return min(MAX_RETRY_AFTER_SECONDS, max(0.0, float(value))) if value else None
    except ValueError:
        return None
