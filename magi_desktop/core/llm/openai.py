"""An OpenAI-compatible chat-completions client (Ollama, llama.cpp server, vLLM,
LM Studio, DashScope, OpenAI …) on the standard library's HTTP client.

The answer must be one JSON object (JSON mode is requested; a reply wrapped in
a Markdown fence is unwrapped); it is checked against the task's schema, so a
malformed answer raises :class:`LLMOutputInvalid` and the caller's job is
retried rather than writing garbage. Connection errors, timeouts, 429 and 5xx
are retried here with backoff (a 429's ``Retry-After`` is honoured up to a cap);
other 4xx are not retryable. A reply that is not a chat completion at all (not
JSON, no ``choices``) is the endpoint's fault, not the model's: a retryable
:class:`LLMError`, so the jobs wait instead of being charged an attempt.

A circuit breaker stops hammering an endpoint that keeps failing: after
``BREAKER_AFTER`` failed requests in a row, calls are refused without a request
(:class:`ProviderUnavailable`) for a cool-down that doubles after each failed probe
(up to ``BREAKER_MAX_COOLDOWN``) and resets when a request succeeds; a 429 whose
``Retry-After`` is longer than the in-call cap opens it for that long. ``health()``
reports it (``magi status``, the app).

The API key comes from the OS keyring (service ``magi-desktop``, user
``llm:<base_url>``) or ``MAGI_LLM_API_KEY``. It is only ever sent to the configured
address: a redirect is never followed (urllib would re-send the ``Authorization``
header to whatever host the ``Location`` names); it fails with an error naming the
target, so the user can configure the final address instead.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from ..errors import InvalidInput
from ..redact import MARK, redact_text
from .base import TIERS, LLMError, LLMOutputInvalid, ProviderUnavailable, Task
from .schema import SchemaError, validate

log = logging.getLogger(__name__)

KEYRING_SERVICE = "magi-desktop"
MAX_RETRY_AFTER_SECONDS = 30.0
# The provider-level breaker (architecture §13/§14): failed requests in a row before calls are refused, the
# first cool-down and its cap (it doubles after each failed probe).
BREAKER_AFTER = 5
BREAKER_COOLDOWN = 30.0
BREAKER_MAX_COOLDOWN = 1800.0
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
            raise InvalidInput(f"LLM base_url must be an http(s) URL, got {self.base_url!r}")
        if not self.model:
            raise InvalidInput("an LLM model name is required")
        unknown = set(self.tier_models) - set(TIERS)
        if unknown:
            raise InvalidInput(f"unknown LLM tier(s) {', '.join(sorted(unknown))}; tiers are {', '.join(TIERS)}")

    def model_for(self, tier: str) -> str:
        return self.tier_models.get(tier) or self.model

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OpenAISettings:
        """``MAGI_LLM_BASE_URL``, ``MAGI_LLM_MODEL``, ``MAGI_LLM_MODEL_<TIER>``, ``MAGI_LLM_TIMEOUT``."""
        env = os.environ if env is None else env
        base_url = env.get("MAGI_LLM_BASE_URL", "")
        if not base_url:
            raise InvalidInput("set MAGI_LLM_BASE_URL (and MAGI_LLM_MODEL) to use an OpenAI-compatible LLM")
        return cls(
            base_url=base_url, model=env.get("MAGI_LLM_MODEL", ""),
            tier_models={t: env[f"MAGI_LLM_MODEL_{t.upper()}"] for t in TIERS
                         if env.get(f"MAGI_LLM_MODEL_{t.upper()}")},
            timeout=_seconds(env.get("MAGI_LLM_TIMEOUT"), "MAGI_LLM_TIMEOUT", 60.0),
        )


def _seconds(value: str | None, name: str, default: float) -> float:
    """A number of seconds from the environment; a caller's typo ("60s") is their input, named."""
    if value is None or not value.strip():
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a number of seconds, not {value!r}") from None
    if not seconds > 0:
        raise InvalidInput(f"{name} must be more than 0 seconds, not {value!r}")
    return seconds


class Breaker:
    """Closed → open after ``after`` failed requests in a row → after the cool-down one probe request
    is let through (half-open): success closes it, failure opens it again for twice as long."""

    def __init__(self, after: int = BREAKER_AFTER, cooldown: float = BREAKER_COOLDOWN,
                 max_cooldown: float = BREAKER_MAX_COOLDOWN, clock: Callable[[], float] = time.time):
        self.after, self.first_cooldown, self.max_cooldown, self.clock = after, cooldown, max_cooldown, clock
        self.failures = 0             # failed requests in a row
        self.cooldown = cooldown
        self.open_until: float | None = None
        self.opened = 0               # how many times it opened
        self.refused = 0              # calls refused while open
        self.last_error: str | None = None
        self._probing = False
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        if self.open_until is None:
            return "closed"
        return "half_open" if self.clock() >= self.open_until else "open"

    def allow(self, url: str) -> None:
        """Raise :class:`ProviderUnavailable` instead of letting a request through while open."""
        with self._lock:
            if self.open_until is None:
                return
            now = self.clock()
            if now < self.open_until or self._probing:
                self.refused += 1
                wait = max(0.0, self.open_until - now)
                raise ProviderUnavailable(f"{url} failed {self.failures} time(s) in a row (last: {self.last_error}); "
                                          f"no calls for another {wait:.0f} s")
            self._probing = True       # this request is the probe

    def succeeded(self) -> None:
        with self._lock:
            self.failures, self.open_until, self.cooldown, self._probing = 0, None, self.first_cooldown, False

    def failed(self, error: str, at_least: float = 0.0) -> None:
        """Count a failed request; ``at_least`` keeps it open that long whatever the count (Retry-After)."""
        with self._lock:
            self.failures += 1
            self.last_error = error[:300]
            probe_failed = self._probing
            self._probing = False
            if not (probe_failed or self.failures >= self.after or at_least):
                return
            if self.open_until is None:
                self.opened += 1
            elif probe_failed:
                self.cooldown = min(self.max_cooldown, self.cooldown * 2)
            pause = max(self.cooldown, min(self.max_cooldown, at_least))
            self.open_until = self.clock() + pause
            log.warning("LLM endpoint failing (%s): no calls for %.0f s", self.last_error, pause)

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "failures_in_a_row": self.failures, "open_until": self.open_until,
                "cooldown_seconds": self.cooldown, "opened": self.opened, "refused": self.refused,
                "last_error": self.last_error}


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects are answered, not followed: urllib copies every header, the key included, to the new
    host, and turns a POST into a GET without its body. The 3xx then surfaces as an ``HTTPError``."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_RefuseRedirects)


class OpenAICompatibleLLM:
    """``run(task, inputs)`` over ``POST {base_url}/chat/completions``."""

    name = "openai"

    def __init__(self, settings: OpenAISettings, api_key: str | None = None,
                 sleep: Callable[[float], None] = time.sleep, breaker: Breaker | None = None):
        self.settings = settings
        self._api_key = api_key if api_key is not None else stored_api_key(settings.base_url)
        self._sleep = sleep
        self.calls = 0                # HTTP requests made
        self.breaker = breaker or Breaker()

    def health(self) -> dict[str, Any]:
        """For status displays: the endpoint, requests made and the breaker's state."""
        return {"name": self.name, "base_url": self.settings.base_url, "requests": self.calls,
                "breaker": self.breaker.to_dict()}

    def model_for(self, tier: str) -> str:
        return self.settings.model_for(tier)

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
        reply = self._post("/chat/completions", body, _is_completion)
        content = reply["choices"][0]["message"]["content"]
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

    def _post(self, route: str, body: dict, valid: Callable[[Any], bool] = lambda reply: True) -> dict:
        """POST with retries; a reply that is not JSON, or not ``valid``, is the endpoint failing (a proxy's
        error page, a wrong route) and is retried like a 5xx."""
        url = self.settings.base_url.rstrip("/") + route
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        attempt = 0
        while True:
            attempt += 1
            self.breaker.allow(url)
            self.calls += 1
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with _OPENER.open(request, timeout=self.settings.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                if 300 <= exc.code < 400:
                    error = self._redirected(url, exc)
                    self.breaker.failed(str(error))
                    raise error from None
                detail = self._scrub(_error_detail(exc))     # a server may echo the key it refused
                retryable = exc.code == 429 or exc.code >= 500
                error = LLMError(f"{url} answered HTTP {exc.code}: {detail}", retryable=retryable)
                asked = _retry_after(exc, cap=None) if exc.code == 429 else None
                if asked is not None and asked > MAX_RETRY_AFTER_SECONDS:
                    self.breaker.failed(str(error), at_least=asked)   # longer than we wait in a call
                    raise error from None
                self.breaker.failed(str(error))
                if not retryable or attempt > self.settings.retries:
                    raise error from None
                delay = asked if asked is not None else self.settings.backoff * 2 ** (attempt - 1)
            except (OSError, http.client.HTTPException) as exc:   # refused, reset, timed out, cut short
                reason = getattr(exc, "reason", exc)
                self.breaker.failed(f"cannot reach {url}: {reason}")
                if attempt > self.settings.retries:
                    raise LLMError(f"cannot reach {url}: {reason}") from None
                delay = self.settings.backoff * 2 ** (attempt - 1)
            else:
                try:
                    reply = json.loads(raw)
                    problem = None if valid(reply) else "is not a chat completion (no choices[0].message.content)"
                except (json.JSONDecodeError, UnicodeDecodeError):
                    problem = "did not return JSON"
                if problem is None:
                    self.breaker.succeeded()
                    return reply
                self.breaker.failed(f"{url} {problem}")
                if attempt > self.settings.retries:
                    raise LLMError(f"{url} {problem}")
                delay = self.settings.backoff * 2 ** (attempt - 1)
            log.info("LLM call to %s failed (attempt %d); retrying in %.1f s", url, attempt, delay)
            self._sleep(delay)

    def _redirected(self, url: str, exc: urllib.error.HTTPError) -> LLMError:
        target = urljoin(url, exc.headers.get("Location") or "") if exc.headers else ""
        return LLMError(self._scrub(f"{url} answered HTTP {exc.code}, a redirect to {target or 'nowhere'}; "
                                    "redirects are not followed, so the API key is sent to the configured address "
                                    "only: set the LLM base URL to the final address"), retryable=False)

    def _scrub(self, text: str) -> str:
        """Server text without the API key or other secrets: it ends up in errors, logs and the job tables."""
        if self._api_key and len(self._api_key) >= 4:
            text = text.replace(self._api_key, MARK)
        return redact_text(text)


def _is_completion(reply: Any) -> bool:
    try:
        reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return False
    return True


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


def _retry_after(exc: urllib.error.HTTPError, cap: float | None = MAX_RETRY_AFTER_SECONDS) -> float | None:
    """A 429's Retry-After in seconds (a number; an HTTP date is not honoured), at most ``cap``."""
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        seconds = max(0.0, float(value)) if value else None
    except ValueError:
        return None
    return seconds if seconds is None or cap is None else min(cap, seconds)
