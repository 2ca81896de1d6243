"""The LLM layer: schema checks, the scripted provider, and the OpenAI-compatible client
against a real HTTP server started here."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from magi_desktop.core.llm import (
    LLMError,
    LLMOutputInvalid,
    OpenAICompatibleLLM,
    OpenAISettings,
    SchemaError,
    ScriptedLLM,
    Task,
    UnexpectedLLMCall,
    validate,
)
from magi_desktop.core.llm.openai import KEYRING_SERVICE, keyring_user, save_api_key

TASK = Task("test.echo", "fast", "Answer with a greeting.", {
    "type": "object", "required": ["greeting"], "additionalProperties": False,
    "properties": {"greeting": {"type": "string", "maxLength": 20}, "n": {"type": "integer", "minimum": 0}},
})


# ------------------------------------------------------------------ schema

@pytest.mark.parametrize("value, path", [
    ({}, "$.greeting"),
    ({"greeting": 3}, "$.greeting"),
    ({"greeting": "x" * 21}, "$.greeting"),
    ({"greeting": "hi", "extra": 1}, "$.extra"),
    ({"greeting": "hi", "n": -1}, "$.n"),
    ({"greeting": "hi", "n": True}, "$.n"),
    ([], "$"),
])
def test_schema_errors_name_the_bad_field(value, path):
    with pytest.raises(SchemaError) as caught:
        validate(value, TASK.schema)
    assert caught.value.path == path


def test_schema_accepts_nested_arrays_and_enums():
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"enum": ["a", "b", None]}}}}
    assert validate({"xs": ["a", None]}, schema)
    with pytest.raises(SchemaError, match=r"\$\.xs\[1\]"):
        validate({"xs": ["a", "c"]}, schema)


def test_unknown_tier_is_refused():
    with pytest.raises(ValueError, match="tier"):
        Task("x", "huge", "", {})


# ---------------------------------------------------------------- scripted

def test_scripted_llm_replays_in_order_and_fails_loudly():
    llm = ScriptedLLM([("test.echo", "Ana", {"greeting": "hi Ana"}), ("test.echo", None, {"greeting": 7})])
    assert llm.run(TASK, {"name": "Ana"}) == {"greeting": "hi Ana"}
    with pytest.raises(LLMOutputInvalid, match="greeting"):
        llm.run(TASK, {"name": "Bo"})          # the second step holds a malformed answer on purpose
    with pytest.raises(UnexpectedLLMCall, match="after the script ended"):
        llm.run(TASK, {"name": "Cy"})
    other = ScriptedLLM([("test.other", None, {})])
    with pytest.raises(UnexpectedLLMCall, match="expected a test.other call"):
        other.run(TASK, {})
    mismatch = ScriptedLLM([("test.echo", "Zed", {"greeting": "x"})])
    with pytest.raises(UnexpectedLLMCall, match="do not match"):
        mismatch.run(TASK, {"name": "Ana"})


# -------------------------------------------------------------------- HTTP

class _Server:
    """A local OpenAI-compatible endpoint whose replies the test queues."""

    def __init__(self):
        self.replies: list[tuple[int, object, dict]] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body,
                                        "authorization": self.headers.get("Authorization")})
                status, payload, headers = server.replies.pop(0)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, content, status=200, headers=None):
        payload = {"choices": [{"message": {"role": "assistant", "content": content}}]} if status == 200 else content
        self.replies.append((status, payload, headers or {}))

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def client(server, **settings):
    return OpenAICompatibleLLM(OpenAISettings(base_url=server.url, model="small", tier_models={"reasoning": "big"},
                                              backoff=0.0, **settings), api_key="sk-test", sleep=lambda s: None)


def test_http_provider_sends_a_chat_completion_and_checks_the_answer(server):
    server.answer(json.dumps({"greeting": "hello"}))
    llm = client(server)
    assert llm.run(TASK, {"name": "Ana"}) == {"greeting": "hello"}
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "small" and body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0
    assert "greeting" in body["messages"][0]["content"]          # the schema is in the instructions
    assert json.loads(body["messages"][1]["content"]) == {"name": "Ana"}


def test_http_provider_uses_the_tier_model_and_unwraps_a_fence(server):
    server.answer('```json\n{"greeting": "hi"}\n```')
    reasoning = Task("test.echo", "reasoning", TASK.instructions, TASK.schema)
    assert client(server).run(reasoning, {}) == {"greeting": "hi"}
    assert server.requests[0]["body"]["model"] == "big"


@pytest.mark.parametrize("content, message", [
    ("not json at all", "not JSON"),
    (json.dumps({"greeting": 5}), "$.greeting"),
    (json.dumps({"hello": "x"}), "$.greeting: missing"),
])
def test_http_provider_rejects_malformed_answers(server, content, message):
    server.answer(content)
    with pytest.raises(LLMOutputInvalid) as caught:
        client(server).run(TASK, {})
    assert message in str(caught.value)


def test_http_provider_retries_server_errors_then_succeeds(server):
    server.answer({"error": {"message": "overloaded"}}, status=503)
    server.answer({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "0"})
    server.answer(json.dumps({"greeting": "finally"}))
    llm = client(server, retries=2)
    assert llm.run(TASK, {}) == {"greeting": "finally"}
    assert len(server.requests) == 3


def test_http_provider_gives_up_after_its_retries(server):
    for _ in range(3):
        server.answer({"error": {"message": "down"}}, status=500)
    with pytest.raises(LLMError, match="HTTP 500: down") as caught:
        client(server, retries=2).run(TASK, {})
    assert caught.value.retryable and len(server.requests) == 3


def test_http_provider_does_not_retry_a_client_error(server):
    server.answer({"error": {"message": "bad model"}}, status=400)
    with pytest.raises(LLMError, match="bad model") as caught:
        client(server).run(TASK, {})
    assert not caught.value.retryable and len(server.requests) == 1


def test_unreachable_endpoint_is_a_retryable_error():
    llm = OpenAICompatibleLLM(OpenAISettings(base_url="http://127.0.0.1:9/v1", model="m", timeout=2, retries=1,
                                             backoff=0), api_key="", sleep=lambda s: None)
    with pytest.raises(LLMError, match="cannot reach") as caught:
        llm.run(TASK, {})
    assert caught.value.retryable


def test_the_key_comes_from_the_keyring(server, memory_keyring, monkeypatch):
    monkeypatch.delenv("MAGI_LLM_API_KEY", raising=False)
    save_api_key(server.url, "sk-from-keyring")
    assert memory_keyring.store[(KEYRING_SERVICE, keyring_user(server.url))] == "sk-from-keyring"
    server.answer(json.dumps({"greeting": "hi"}))
    OpenAICompatibleLLM(OpenAISettings(base_url=server.url, model="m")).run(TASK, {})
    assert server.requests[0]["authorization"] == "Bearer sk-from-keyring"


def test_settings_from_environment_are_checked():
    settings = OpenAISettings.from_env({"MAGI_LLM_BASE_URL": "http://localhost:11434/v1", "MAGI_LLM_MODEL": "qwen",
                                        "MAGI_LLM_MODEL_REASONING": "qwen-big"})
    assert settings.model_for("fast") == "qwen" and settings.model_for("reasoning") == "qwen-big"
    with pytest.raises(ValueError, match="MAGI_LLM_BASE_URL"):
        OpenAISettings.from_env({})
    with pytest.raises(ValueError, match="http"):
        OpenAISettings(base_url="localhost:1234", model="m")
    with pytest.raises(ValueError, match="model"):
        OpenAISettings(base_url="http://x", model="")
