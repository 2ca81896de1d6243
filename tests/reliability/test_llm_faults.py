"""A failing LLM endpoint (architecture §13, §14): a real local HTTP server that times out, answers 500 or 429,
or answers garbage. L2 projection, fact extraction and L3 summaries retry with backoff, never write
half a result (the derived rows are counted before and after), and the provider's circuit breaker
stops hammering the endpoint — the tests count the requests the server received."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.extraction import pipeline as extraction
from magi_desktop.core.l2 import jobs as l2_jobs
from magi_desktop.core.l3.jobs import LLM_PENDING
from magi_desktop.core.llm import OpenAICompatibleLLM, OpenAISettings, ProviderUnavailable
from magi_desktop.core.llm.openai import BREAKER_AFTER, BREAKER_COOLDOWN, Breaker
from magi_desktop.core.store.extractions import extraction_marks
from magi_desktop.core.store.queue import EXTRACTION_RETRIES, L2_PROJECTION_JOBS
from magi_desktop.core.store.summaries import stored_summaries
from magi_desktop.core.store.tables import row_count

T0 = 1_700_000_000.0
NOW = T0 + 7 * 86400           # the clock the queues run on
DERIVED = ("entity_catalog", "l1_event_entities", "entity_mentions", "kg_edges", "tom_trait_assertions",
           "tom_snapshots", "l2_episodes", "l2_evidence", "l3_summaries", "summary_event_links", "memory_facts",
           "fact_extractions")
ANSWERS = {"fast": {"entities": [], "fact_claims": []},
           "reasoning": {"candidates": [], "episode": "We talked about the garden."},
           "summarizer": {"summary": "Mostly gardening, from the model.", "topics": ["garden"]},
           "compact": {"strategy": "", "hints": []}}


class FaultyEndpoint:
    """An OpenAI-compatible endpoint whose failure mode the test sets; it counts every request."""

    def __init__(self):
        self.mode = "ok"
        self.requests: list[str] = []        # the model each request asked for
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append(body["model"])
                mode = endpoint.mode
                if mode == "timeout":
                    time.sleep(0.6)              # the client gives up after 0.2 s
                    return self._send(200, b"{}")
                if mode == "500":
                    return self._send(500, b'{"error": {"message": "model crashed"}}')
                if mode == "429":
                    return self._send(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0"})
                if mode == "429-long":
                    return self._send(429, b'{"error": {"message": "quota"}}', {"Retry-After": "120"})
                if mode == "garbage":
                    return self._send(200, b"<html>502 Bad Gateway</html>")
                if mode == "not-completion":
                    return self._send(200, b'{"object": "error", "detail": "no such route"}')
                answer = ANSWERS[body["model"]] if mode == "ok" else {"unexpected": "shape"}   # "bad-answer"
                return self._send(200, json.dumps({"choices": [{"message": {"content": json.dumps(answer)}}]}
                                                  ).encode())

            def _send(self, status, data, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass                          # the client timed out and left

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def endpoint():
    server = FaultyEndpoint()
    yield server
    server.close()


@pytest.fixture
def clock():
    return Clock()


def provider(endpoint, clock, url=None):
    settings = OpenAISettings(base_url=url or endpoint.url, model="fast", timeout=0.2, retries=2, backoff=0.0,
                              tier_models={t: t for t in ANSWERS})
    return OpenAICompatibleLLM(settings, api_key="", sleep=lambda s: None, breaker=Breaker(clock=clock))


def counts(memory):
    conn = memory.db.reader()
    return {table: row_count(conn, table) for table in DERIVED}


def jobs(memory):
    return [(job.state, job.attempts, job.next_attempt_at)
            for job in L2_PROJECTION_JOBS.jobs(memory.db.reader()).values()]


def conversations(memory, sessions=3, turns=6):
    for s in range(sessions):
        for t in range(turns):
            memory.ingest(chat(f"I planted {t + 1} rows of basil in bed {s}", session=f"s{s}", at=T0 + s * 3600 + t))


@pytest.mark.parametrize("mode", ["timeout", "500", "429", "garbage", "not-completion", "refused"])
def test_an_endpoint_down_pauses_l2_without_charging_the_events_or_half_writing(tmp_path, endpoint, clock, mode):
    url = None
    if mode == "refused":
        url = "http://127.0.0.1:9/v1"                       # nothing listens there
    else:
        endpoint.mode = mode
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=provider(endpoint, clock, url))
    conversations(memory)
    before = counts(memory)
    report = memory.process_pending(queues=("l2",), now=NOW)["l2"]
    assert report["provider_unavailable"] and report["failed"] == 0 and report["events"] == 0
    assert counts(memory) == before                                  # nothing half-written
    # The whole queue waits for the endpoint; no event was charged an attempt.
    assert {(state, attempts) for state, attempts, _ in jobs(memory)} == {("pending", 0)}
    assert min(at for _, _, at in jobs(memory)) == NOW + l2_jobs.PROVIDER_BACKOFF_SECONDS
    assert len(endpoint.requests) == (0 if mode == "refused" else 3)  # one call and its two retries
    # Before the backoff ends nothing is asked; after it, with the endpoint back, everything projects.
    assert memory.process_pending(queues=("l2",), now=NOW + 1)["l2"]["batches"] == 0
    endpoint.mode = "ok"
    report = memory.process_pending(queues=("l2",), now=NOW + l2_jobs.PROVIDER_BACKOFF_SECONDS)["l2"]
    if mode == "refused":
        assert report["provider_unavailable"]                        # still nothing listening: still waiting
    else:
        assert report["events"] == 18 and {s for s, _, _ in jobs(memory)} == {"done"}
    memory.close()


def test_a_malformed_answer_is_charged_to_the_batch_and_retried_with_backoff(tmp_path, endpoint, clock):
    endpoint.mode = "bad-answer"
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=provider(endpoint, clock))
    conversations(memory)
    before = counts(memory)
    report = memory.process_pending(queues=("l2",), now=NOW)["l2"]
    assert report["failed"] == 18 and report["events"] == 0 and "unexpected" not in str(counts(memory))
    assert counts(memory) == before
    assert {(s, a, at) for s, a, at in jobs(memory)} == {("pending", 1, NOW + 30.0)}   # retry.backoff_delay(1)
    assert len(endpoint.requests) == 3                               # one request per session batch
    endpoint.mode = "ok"
    assert memory.process_pending(queues=("l2",), now=NOW + 30)["l2"]["events"] == 18
    memory.close()


def test_the_breaker_stops_hammering_a_failing_endpoint_and_backs_off_doubling(tmp_path, endpoint, clock):
    endpoint.mode = "500"
    llm = provider(endpoint, clock)
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=llm)
    conversations(memory)
    now = NOW
    for _ in range(5):                                              # the queue retries every minute …
        memory.process_pending(queues=("l2",), now=now)
        now += l2_jobs.PROVIDER_BACKOFF_SECONDS
    assert len(endpoint.requests) == BREAKER_AFTER                   # … but after 5 failed requests, none
    health = memory.stats()["llm"]
    assert health["breaker"]["state"] == "open" and health["breaker"]["opened"] == 1
    assert health["breaker"]["refused"] >= 3 and "HTTP 500" in health["breaker"]["last_error"]
    assert {(s, a) for s, a, _ in jobs(memory)} == {("pending", 0)}  # still nobody's fault

    clock.now += BREAKER_COOLDOWN                                   # cool-down over: one probe
    memory.process_pending(queues=("l2",), now=now)
    assert len(endpoint.requests) == BREAKER_AFTER + 1
    assert memory.stats()["llm"]["breaker"]["cooldown_seconds"] == 2 * BREAKER_COOLDOWN   # it failed: doubled
    clock.now += BREAKER_COOLDOWN                                   # not yet
    memory.process_pending(queues=("l2",), now=now + 60)
    assert len(endpoint.requests) == BREAKER_AFTER + 1
    clock.now += BREAKER_COOLDOWN
    endpoint.mode = "ok"                                            # the endpoint is back: the probe succeeds
    report = memory.process_pending(queues=("l2",), now=now + 120)["l2"]
    assert report["events"] == 18 and memory.stats()["llm"]["breaker"]["state"] == "closed"
    assert memory.stats()["llm"]["breaker"]["cooldown_seconds"] == BREAKER_COOLDOWN
    memory.close()


def test_a_long_retry_after_opens_the_breaker_for_that_long(endpoint, clock):
    from magi_desktop.core.l3.summarize import SUMMARIZE
    from magi_desktop.core.llm.base import LLMError

    endpoint.mode = "429-long"
    llm = provider(endpoint, clock)
    with pytest.raises(LLMError, match="HTTP 429"):
        llm.run(SUMMARIZE, {})
    assert len(endpoint.requests) == 1                               # no in-call retry for a 120 s wait
    clock.now += 119
    with pytest.raises(ProviderUnavailable, match="no calls for another 1 s"):
        llm.run(SUMMARIZE, {})
    clock.now += 1
    endpoint.mode = "ok"
    assert llm.run(SUMMARIZE, {})["summary"].startswith("Mostly gardening")
    assert len(endpoint.requests) == 2


def _extraction_state(memory):
    conn = memory.db.reader()
    return {"facts": row_count(conn, "memory_facts"),
            "extractions": row_count(conn, "fact_extractions"),
            "claimed": extraction_marks(conn).claimed,
            "retries": [(job.attempts, job.state) for job in EXTRACTION_RETRIES.jobs(conn).values()]}


@pytest.mark.parametrize("mode, charged", [("500", 0), ("timeout", 0), ("garbage", 0), ("bad-answer", 1)])
def test_fact_extraction_commits_nothing_on_a_fault_and_is_retried(tmp_path, endpoint, clock, mode, charged):
    endpoint.mode = mode
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=provider(endpoint, clock))
    conversations(memory, sessions=2)
    for s in range(2):
        memory.end_session(f"s{s}")
    later = time.time() + 3600
    report = memory.process_pending(queues=("facts",), now=later)["facts"]
    assert report["runs"] == 0 and report["failed"] == 2 * charged
    assert bool(report["provider_unavailable"]) == (charged == 0)
    # An endpoint fault stops the run after one call and its two retries (the next conversation would
    # fail the same way); a bad answer is that conversation's own failure, and the run goes on.
    assert len(endpoint.requests) == (3 if charged == 0 else 2)
    state = _extraction_state(memory)
    assert (state["facts"], state["extractions"], state["claimed"]) == (0, 0, 0)
    assert {attempts for attempts, _ in state["retries"]} == {charged}
    endpoint.mode = "ok"
    wait = extraction.PROVIDER_BACKOFF_SECONDS if charged == 0 else 30.0   # (+1: the run's clock moved on)
    report = memory.process_pending(queues=("facts",), now=later + wait + 1)["facts"]
    assert report["runs"] == 2 and _extraction_state(memory)["extractions"] == 2
    memory.close()


def test_summaries_fall_back_to_extractive_and_are_asked_again_when_the_model_is_back(tmp_path, endpoint, clock):
    endpoint.mode = "500"
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=provider(endpoint, clock))
    for hour in range(12):
        memory.ingest_many([sensor("visit_page", {"url": f"https://garden.example/{hour}/{i}", "title": "Basil care"},
                                   source="chrome", item=f"v{hour}-{i}", at=T0 + hour * 3600 + i * 60)
                            for i in range(3)])
    end = T0 + 86400
    report = memory.run_due(now=end, jobs=("l3:hour", "l3:day"))["l3"]
    written = report["hour"] + report["day"]
    assert written >= 12
    rows = [(s.model, s.fingerprint) for s in stored_summaries(memory.db.reader())]
    assert len(rows) == written and all(m == "extractive" and f.endswith(LLM_PENDING) for m, f in rows)
    assert len(endpoint.requests) == BREAKER_AFTER          # a dozen windows, but the breaker cut it at five
    links = counts(memory)["summary_event_links"]
    # Nothing new to ask while the breaker is open: no request, no rewrite.
    assert memory.run_due(now=end, jobs=("l3:hour", "l3:day"))["l3"] == {"hour": 0, "day": 0}
    assert len(endpoint.requests) == BREAKER_AFTER
    endpoint.mode = "ok"
    clock.now += BREAKER_COOLDOWN
    report = memory.run_due(now=end, jobs=("l3:hour", "l3:day"))["l3"]
    assert report["hour"] + report["day"] == written                # every waiting window asked again
    rows = [(s.model, s.fingerprint, s.content) for s in stored_summaries(memory.db.reader())]
    assert all(m == "summarizer" and not f.endswith(LLM_PENDING) and c.startswith("Mostly gardening")
               for m, f, c in rows)
    assert counts(memory)["summary_event_links"] == links and len(rows) == written
    assert memory.run_due(now=end, jobs=("l3:hour", "l3:day"))["l3"] == {"hour": 0, "day": 0}   # settled
    memory.close()
