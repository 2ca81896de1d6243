"""Payload builders shared by the tests."""


def chat(text, *, role="user", session="s1", at=1_700_000_000.0, provenance=None, item=None,
         tool_name=None, speaker=None, **extra):
    """A chat-turn payload."""
    if provenance is None and role == "user":
        provenance = "human_input"
    turn = {"role": role, "text": text}
    for key, value in (("provenance", provenance), ("tool_name", tool_name), ("speaker", speaker)):
        if value is not None:
            turn[key] = value
    payload = {"source_type": "chat", "session_id": session, "occurred_at": at, "chat": turn, **extra}
    if item is not None:
        payload["source_item_id"] = item
    return payload


def sensor(action, provenance, *, source="browser", at=1_700_000_000.0, item=None, **extra):
    """A sensor payload."""
    payload = {"source_type": source, "occurred_at": at,
               "activity": {"source_code": source, "action_code": action}, "provenance": provenance, **extra}
    if item is not None:
        payload["source_item_id"] = item
    return payload


def mixed_stream(n, *, start=1_700_000_000.0):
    """A deterministic mix of sensor events (with item ids) and chat turns (without), some Chinese."""
    for i in range(n):
        at = start + i * 7.0
        kind = i % 4
        if kind == 0:
            yield sensor("visit_page", {"url": f"https://example.com/page/{i}", "title": f"Page {i}"},
                         source="chrome", item=f"chrome-visit-{i}", at=at)
        elif kind == 1:
            yield chat(f"I logged entry number {i} about my garden", session=f"s{i // 40}", at=at)
        elif kind == 2:
            yield chat(f"第{i}条：我今天去了西湖", session=f"s{i // 40}", at=at)
        else:
            yield chat(f"Noted entry {i}.", role="assistant", session=f"s{i // 40}", at=at)


def without_blocks(memory):
    """Turn off every activity-block rule, for tests that count the events they stored (a block is a row too)."""
    for rule in memory.aggregation_settings():
        memory.set_aggregation(rule, False)
    return memory
