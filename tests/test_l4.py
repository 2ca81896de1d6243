"""L4 procedural experience (architecture §8): skill statistics, traces, the circuit breaker, distillation."""

import pytest

from magi_desktop.core import Memory
from magi_desktop.core.l4.skills import OPEN_SECONDS, TRACES_KEPT, distill_threshold
from magi_desktop.core.llm import ScriptedLLM
from magi_desktop.core.store.l1 import trace_rows
from magi_desktop.core.store.skills import oldest_trace_at
from magi_desktop.core.store.tables import row_count

T0 = 1_765_000_000.0


def run(tool, ok, at, *, category="search", error=None, duration=120.0, query="tea prices", item=None):
    action = {"tool": tool, "category": category, "ok": ok, "duration_ms": duration, "input": {"q": query},
              "output": "3 results" if ok else None}
    if error:
        action["error"] = error
    payload = {"source_type": "runtime", "session_id": "agent-1", "occurred_at": at, "action": action}
    if item:
        payload["source_item_id"] = item
    return payload


def skill(memory, tool="web_search"):
    return next(s for s in memory.skills() if s["tool"] == tool)


def test_every_execution_updates_the_skill_synchronously(memory):
    memory.ingest(run("web_search", True, T0, duration=100))
    memory.ingest(run("web_search", False, T0 + 10, error="timeout after 30 s", duration=300))
    s = skill(memory)
    assert (s["runs"], s["successes"], s["failures"]) == (2, 1, 1)
    assert s["mean_duration_ms"] == pytest.approx(200.0)
    assert s["breaker_state"] == "closed"


def test_a_duplicate_execution_is_counted_once(memory):
    memory.ingest(run("web_search", True, T0, item="call-1"))
    memory.ingest(run("web_search", True, T0, item="call-1"))          # the same call sent twice
    memory.ingest(run("web_search", True, T0 + 5))
    memory.ingest(run("web_search", True, T0 + 5))                     # the same payload twice
    assert skill(memory)["runs"] == 2


def test_the_breaker_opens_refuses_half_opens_and_closes(memory):
    for i in range(3):
        memory.ingest(run("web_search", False, T0 + i, error="HTTP 503"))
    refused = memory.tool_decision("web_search", "search", now=T0 + 60)
    assert not refused.allowed and refused.state == "open" and 0 < refused.retry_after <= OPEN_SECONDS
    assert memory.tool_decision("other_tool", now=T0 + 60).allowed
    later = T0 + 2 + OPEN_SECONDS + 1                      # time passes (an injected clock)
    probation = memory.tool_decision("web_search", "search", now=later)
    assert probation.allowed and probation.state == "half_open"
    memory.ingest(run("web_search", True, later))
    assert memory.tool_decision("web_search", "search", now=later + 1).state == "half_open"
    memory.ingest(run("web_search", True, later + 5))
    assert memory.tool_decision("web_search", "search", now=later + 6).state == "closed"


def test_a_failure_on_probation_opens_the_breaker_again(memory):
    for i in range(3):
        memory.ingest(run("web_search", False, T0 + i, error="HTTP 503"))
    later = T0 + OPEN_SECONDS + 10
    memory.ingest(run("web_search", False, later, error="HTTP 503"))
    decision = memory.tool_decision("web_search", "search", now=later + 1)
    assert decision.state == "open" and decision.retry_after == pytest.approx(OPEN_SECONDS - 1, abs=0.2)


def test_traces_are_capped_at_fifty(memory):
    memory.ingest_many([run("web_search", i % 3 != 0, T0 + i, error=None if i % 3 else "HTTP 500")
                        for i in range(80)])
    count = row_count(memory.db.reader(), "l4_execution_traces")
    assert count == TRACES_KEPT == 50
    oldest = oldest_trace_at(memory.db.reader())
    assert oldest == T0 + 30


def test_distillation_triggers_at_the_threshold_with_the_rules(memory):
    assert distill_threshold(0) == 5 and distill_threshold(200) > 5
    for i in range(4):
        memory.ingest(run("web_search", True, T0 + i * 60))
    assert memory.pending_by_queue()["l4"] == 0
    memory.ingest(run("web_search", False, T0 + 300, error="rate limited (429)"))
    assert memory.pending_by_queue()["l4"] == 1
    assert memory.process_pending()["l4"]["distilled"] == 1
    s = skill(memory)
    assert "5 runs, 4 succeeded (80%)" in s["optimized_prompt"] and "rate limited (429)" in s["optimized_prompt"]
    assert memory.pending_by_queue()["l4"] == 0


def test_distillation_with_an_llm_uses_the_compact_tier(tmp_path):
    answer = {"summary": "Works for short queries.", "failure_modes": ["HTTP 503 when the service is down"],
              "tips": ["Retry after a minute; keep queries under 10 words."], "when_to_use": "price lookups"}
    llm = ScriptedLLM([("l4_distill", lambda inputs: inputs["tool"] == "web_search"
                        and len(inputs["traces"]) == 3 and not inputs["traces"][-1]["ok"], answer)])
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=llm)
    for i in range(3):
        memory.ingest(run("web_search", False, T0 + i, error="HTTP 503"))   # the breaker opens: distil now
    memory.process_pending(queues=("l4",))
    assert llm.finished
    s = skill(memory)
    assert "Retry after a minute" in s["optimized_prompt"] and "price lookups" in s["optimized_prompt"]
    memory.close()


def test_how_did_we_handle_it_last_time_finds_the_skill(memory):
    for i in range(5):
        memory.ingest(run("web_search", i != 2, T0 + i * 60, error=None if i != 2 else "timeout"))
    memory.process_pending()
    pack = memory.query("How did we handle web search last time?", now=T0 + 3600)
    assert pack.query_mode == "strategy"
    first = pack.findings[0]
    assert first.layer == "L4" and "web_search" in first.text and "Strategy:" in first.text
    assert len(first.supporting_event_ids) == 5
    stored = {t["trace_id"] for t in trace_rows(memory.db.reader())}
    assert set(first.supporting_event_ids) <= stored


def test_the_threshold_calls_the_scripted_llm_once_per_five_new_traces(tmp_path):
    answer = {"summary": "Reliable for price lookups.", "failure_modes": [], "tips": ["Keep queries short."]}
    llm = ScriptedLLM([("l4_distill", lambda inputs: len(inputs["traces"]) == 5, answer)])
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=llm)
    for i in range(4):
        memory.ingest(run("web_search", True, T0 + i * 60))
    memory.process_pending(queues=("l4",))
    assert llm.position == 0                                  # four traces: below the threshold, no call
    memory.ingest(run("web_search", True, T0 + 300))
    memory.process_pending(queues=("l4",))
    assert llm.finished and "Keep queries short." in skill(memory)["optimized_prompt"]
    memory.process_pending(queues=("l4",))                    # nothing new: no further call (the script is over)
    memory.close()
