"""The LLM key never crosses origins (issue 16, defect 7): a configured endpoint that answers a redirect
is refused with an error naming the target, and the key is never sent anywhere else. Two real local HTTP
servers on different ports: the second one records every request it gets, whatever the method."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from magi_desktop.core.llm import LLMError, OpenAICompatibleLLM, OpenAISettings, Task

KEY = "sk-live-4f9c2b7e1d8a6035"
TASK = Task("test.echo", "fast", "Answer with a greeting.", {
    "type": "object", "required": ["greeting"], "properties": {"greeting": {"type": "string"}}})


class Recorder:
    """An HTTP server that answers every method with ``reply(handler)`` and records what it was sent."""

    def __init__(self, reply):
        self.requests: list[dict] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                recorder.requests.append({"method": self.command, "path": self.path,
                                          "headers": dict(self.headers.items()), "body": self.rfile.read(length)})
                status, headers, data = reply(self)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_HEAD = _any  # noqa: N815 - http.server's names

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(handler):
    answer = {"choices": [{"message": {"content": json.dumps({"greeting": "hi"})}}]}
    return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()


@pytest.fixture
def elsewhere():
    server = Recorder(completion)
    yield server
    server.close()


def redirecting(code, location):
    server = Recorder(lambda handler: (code, {"Location": location, "Content-Type": "text/plain"}, b"moved"))
    return server


def llm_for(server):
    return OpenAICompatibleLLM(OpenAISettings(base_url=f"http://127.0.0.1:{server.port}/v1", model="m", retries=2,
                                              backoff=0.0, timeout=5), api_key=KEY, sleep=lambda s: None)


def everything_sent(server) -> str:
    return json.dumps([{**r, "body": r["body"].decode("utf-8", "replace")} for r in server.requests])


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_refused_and_the_key_never_reaches_it(elsewhere, code):
    target = f"http://127.0.0.1:{elsewhere.port}/v1/chat/completions"
    origin = redirecting(code, target)
    try:
        llm = llm_for(origin)
        with pytest.raises(LLMError) as caught:
            llm.run(TASK, {"name": "Ana"})
    finally:
        origin.close()
    assert elsewhere.requests == []                    # not followed at all: no key, no body, no request
    assert KEY not in everything_sent(elsewhere)
    message = str(caught.value)
    assert f"HTTP {code}" in message and target in message and "redirect" in message
    assert KEY not in message
    assert not caught.value.retryable                  # a configuration to fix, not a blip to retry
    assert len(origin.requests) == 1                   # and not hammered with retries either
    assert origin.requests[0]["headers"].get("Authorization") == f"Bearer {KEY}"   # the configured one had it


def test_a_same_origin_redirect_is_refused_too_with_the_address_to_configure():
    # A POST redirect would lose its body (301–303) or re-post it somewhere unconfigured: the user sets the
    # final address instead. The error says which.
    origin = Recorder(lambda handler: (307, {"Location": "/v2/chat/completions"}, b""))
    try:
        with pytest.raises(LLMError) as caught:
            llm_for(origin).run(TASK, {})
        assert len(origin.requests) == 1 and origin.requests[0]["path"] == "/v1/chat/completions"
        assert f"http://127.0.0.1:{origin.port}/v2/chat/completions" in str(caught.value)
    finally:
        origin.close()


def test_a_redirect_that_echoes_the_key_does_not_put_it_in_the_error(elsewhere):
    origin = redirecting(302, f"http://127.0.0.1:{elsewhere.port}/steal?key={KEY}")
    try:
        with pytest.raises(LLMError) as caught:
            llm_for(origin).run(TASK, {})
    finally:
        origin.close()
    assert KEY not in str(caught.value) and elsewhere.requests == []


def test_a_plain_answer_still_carries_the_key(elsewhere):
    assert llm_for(elsewhere).run(TASK, {}) == {"greeting": "hi"}
    assert elsewhere.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
