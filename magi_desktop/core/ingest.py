"""Payload → MemoryEvent: redact, render, classify, route, pick the dedupe key.

Everything here is a pure function of the payload (plus the clock and the
template registry), so the write path is easy to test and to replay: the same
payload always yields the same content, class, route and idempotency key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from .contracts import (
    EVENT_TYPES,
    MIN_TIMESTAMP,
    EntityHint,
    MemoryEvent,
    Payload,
    validate_payload,
)
from .governance import Scope, Verdict, classify
from .ids import new_ulid
from .redact import CURRENT, RuleSet
from .render import TemplateRegistry
from .speakers import said_speaker, with_candidate

MEMORY_DOMAINS = {"chat": "conversation", "sensor": "external_activity", "runtime": "agent_runtime"}

L0_ONLY, L1_ONLY, L1_AND_L2, RUNTIME_TRACE = "l0_only", "l1_only", "l1_and_l2", "runtime_trace"


def route(payload: Payload, verdict: Verdict) -> str:
    """Where the write path sends the event (architecture §3.2 ``ingest_target``)."""
    if payload.ephemeral:
        return L0_ONLY
    policy = verdict.policy
    if policy.scope is Scope.AUDIT_ONLY:
        return RUNTIME_TRACE
    return L1_AND_L2 if policy.cognition_eligible else L1_ONLY


def map_free_text(payload: Payload, text: Callable[[str], str], data: Callable[[Any], Any]) -> Payload:
    """The payload with ``text`` applied to every free-text field and ``data`` to every JSON field.

    The one list of where a payload carries text: redaction uses it both to
    decide whether anything could need redacting and to redact, so the two
    cannot drift apart.
    """
    def opt(value: str | None) -> str | None:
        return text(value) if value else value

    changes: dict[str, Any] = {}
    for name in ("source_item_id", "session_id", "user_id", "l2_batch_owner", "natural_key"):
        changes[name] = opt(getattr(payload, name))
    changes["tags"] = tuple(text(tag) for tag in payload.tags)
    changes["entities"] = tuple(EntityHint(text(h.mention_text), text(h.entity_type)) for h in payload.entities)
    if payload.activity is not None:
        activity = payload.activity
        changes["activity"] = activity._replace(source_code=text(activity.source_code),
                                                action_code=text(activity.action_code),
                                                object_code=opt(activity.object_code))
    if payload.provenance:
        changes["provenance"] = data(payload.provenance)
    if payload.chat is not None:
        turn = payload.chat
        changes["chat"] = turn._replace(text=text(turn.text), speaker=opt(turn.speaker), tool_name=opt(turn.tool_name))
    if payload.action is not None:
        run = payload.action
        changes["action"] = run._replace(tool=text(run.tool), category=text(run.category), input=data(run.input),
                                         output=data(run.output), error=opt(run.error))
    changed = {name: value for name, value in changes.items() if value != getattr(payload, name)}
    return payload._replace(**changed) if changed else payload


_NO_TEXT = (int, float, bool, type(None))


def _collect_strings(value: Any, out: list[str]) -> list[str]:
    """Every string in ``value`` (dict keys included), appended to ``out``."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, _NO_TEXT):
        pass
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect_strings(item, out)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            out.append(str(key))
            _collect_strings(item, out)
    return out


def redact_payload(payload: Payload, counts: Counter, rules: RuleSet = CURRENT) -> Payload:
    """The payload with every free-text field redacted (the same object when nothing was)."""
    # The rules are chosen once, from every string anywhere in the payload (it is a tuple of tuples and
    # dicts) joined, so no field can be missed; each field is then read by those rules only.
    selected = rules.rules_for("\n".join(_collect_strings(payload, [])))
    if not selected:
        return payload
    return map_free_text(payload, lambda t: rules.redact_text(t, counts, rules=selected),
                         lambda v: rules.redact_value(v, counts, selected))


def _content(clean: Payload, templates: TemplateRegistry, rules: RuleSet, counts: Counter) -> str:
    """The event's text, rendered from redacted fields and redacted once more: a template can join fields
    into a line that only reads as a secret as a whole. A chat turn's text is its (redacted) field as is."""
    rendered = templates.render(clean)
    return rendered if clean.kind == "chat" else rules.redact_text(rendered, counts)


def _timeline(payload: Payload) -> dict[str, Any]:
    """The raw structured fields, kept beside the rendered content for later layers."""
    # validate_payload gives a payload exactly the body its kind names (chat, action or activity).
    fields: dict[str, Any]
    if (turn := payload.chat) is not None:
        fields = {"role": turn.role, "provenance": turn.provenance, "tool_name": turn.tool_name,
                  "speaker": turn.speaker}
    elif (run := payload.action) is not None:
        fields = {"tool": run.tool, "ok": run.ok, "category": run.category, "duration_ms": run.duration_ms,
                  "input": run.input, "output": run.output, "error": run.error}
    else:
        activity = payload.activity
        assert activity is not None
        return {"activity": {"source_code": activity.source_code, "action_code": activity.action_code,
                             "object_code": activity.object_code},
                "provenance": dict(payload.provenance)}
    return {key: value for key, value in fields.items() if value is not None}


def idempotency_keys(raw: Payload, clean: Payload, secret: bytes) -> tuple[str, tuple[str, ...]]:
    """The dedupe key of a payload, computed from what was *sent*, and its alias.

    A ``source_item_id`` is the key as is, unless redaction changed it: then two
    items that differed only in a secret would collide, so the key becomes a
    keyed hash of the original id (the secret is per database, so the hash of
    a short secret cannot be looked up). The other form is returned as an
    alias to look up too, so a replay still dedupes after the redaction rules
    grew. Without an id, the key is a keyed hash of everything the payload says.
    """
    if raw.source_item_id is None:
        return _keyed_hash(secret, _canonical(raw)), ()
    hashed = _keyed_hash(secret, raw.source_item_id.encode("utf-8"))
    if clean.source_item_id == raw.source_item_id:
        return raw.source_item_id, (hashed,)
    return hashed, (raw.source_item_id,)


def _keyed_hash(secret: bytes, data: bytes) -> str:
    return "hmac:" + hmac.new(secret, data, hashlib.sha256).hexdigest()[:40]


def _canonical(payload: Payload) -> bytes:
    canonical = {
        "kind": payload.kind,
        "source_type": payload.source_type,
        "occurred_at": round(payload.occurred_at, 6),
        "session_id": payload.session_id,
        "user_id": payload.user_id,
        "l2_batch_owner": payload.l2_batch_owner,
        "timeline": _timeline(payload),
        "text": payload.chat.text if payload.chat else None,
    }
    # Only when given, so the keys of payloads without them stay what they were.
    if payload.schedule is not None:
        canonical["schedule"] = payload.schedule.to_dict()
    if payload.natural_key is not None:
        canonical["natural_key"] = payload.natural_key
    return json.dumps(canonical, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")


def normalize(
    payload: Payload,
    templates: TemplateRegistry,
    *,
    user_id: str,
    key_secret: bytes,
    now: float | None = None,
    rules: RuleSet = CURRENT,
) -> tuple[MemoryEvent, str]:
    """Turn a validated payload into the MemoryEvent the core stores, and its route.

    ``key_secret`` keys the hashes that stand in for dedupe keys (see :func:`idempotency_key`); ``rules``
    redact the secrets (the memory's rule set).
    """
    now = time.time() if now is None else now
    redactions: Counter = Counter()
    clean = redact_payload(payload, redactions, rules)
    verdict = classify(clean)
    target = route(clean, verdict)
    policy = verdict.policy
    timeline = _timeline(clean)
    key, aliases = idempotency_keys(payload, clean, key_secret)
    if clean.chat is not None:   # after the key: a candidate is read from the text, it was not sent
        timeline = with_candidate(timeline, clean.chat.text)
    metadata: dict[str, Any] = {
        "structured_entity_hints": [h.to_dict() for h in clean.entities],
        "timeline": timeline,
        "classified_by": verdict.rule,
    }
    if clean.tags:
        metadata["tags"] = list(clean.tags)
    if clean.l2_batch_owner:
        metadata["l2_batch_owner"] = clean.l2_batch_owner
    if redactions:
        metadata["redactions"] = dict(sorted(redactions.items()))
    if clean.schedule is not None:
        metadata["schedule"] = clean.schedule.to_dict()
    event = MemoryEvent(
        event_id=new_ulid(now),
        timestamp=clean.occurred_at,
        event_type=EVENT_TYPES[clean.kind],
        source=clean.source_type,
        source_item_id=clean.source_item_id,
        idempotency_key=key,
        session_id=clean.session_id,
        user_id=clean.user_id or user_id,
        content=_content(clean, templates, rules, redactions),
        memory_domain=MEMORY_DOMAINS[clean.kind],
        ingest_target=target,
        cognition_eligible=target == L1_AND_L2,
        retention_class=policy.retention_class,
        author_type=verdict.author_type,
        content_type=verdict.content_type,
        evidence_class=verdict.evidence_class.value,
        l1_retrieval_scope=Scope.EPHEMERAL.value if target == L0_ONLY else policy.scope.value,
        metadata=metadata,
        ingested_at=now,
        dedupe_aliases=aliases,
        recorded_at=recorded_at(clean, now),
        natural_key=clean.natural_key,
        retire=clean.retire,
    )
    return event, target


def recorded_at(payload: Payload, ingested_at: float) -> float:
    """When the memory could first have known the event (architecture §16): a scheduled event from when it was
    collected (or its start, when that is earlier: a past meeting counts as recorded when it happened), any
    other at its occurred_at, so a replayed history asked "as of" a past date sees only what was said by then."""
    if payload.schedule is None:
        return payload.occurred_at
    return min(payload.occurred_at, ingested_at)


def _field(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def stored_payload(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The payload a stored event's own fields say was sent — the inverse of :func:`_timeline`, kept
    beside it so the two cannot drift. An import re-derives everything else from it (:func:`rederive`).

    ``fields`` are the stored columns (``source``, ``timestamp``, ``session_id``, ``user_id``,
    ``source_item_id``, ``content``) and the parsed ``metadata``. The kind of payload follows from the
    source, as validation requires (chat turns come only as source "chat", tool runs as "runtime"); a
    field that is missing or of the wrong type is left out or passed on as it is, so validation names it.
    """
    metadata = fields.get("metadata")
    timeline = _field(metadata, "timeline")
    raw: dict[str, Any] = {"source_type": fields.get("source"), "occurred_at": fields.get("timestamp")}
    for name in ("source_item_id", "session_id", "user_id"):
        if fields.get(name) is not None:
            raw[name] = fields[name]
    if fields.get("source") == "chat":
        said = {key: _field(timeline, key) for key in ("role", "provenance", "tool_name")} | {
            "speaker": said_speaker(timeline) if isinstance(timeline, Mapping) else None}
        raw["chat"] = {key: value for key, value in said.items() if value is not None} | {"text": fields.get("content")}
    elif fields.get("source") == "runtime":
        raw["action"] = {key: _field(timeline, key) for key in ("tool", "ok", "category", "duration_ms", "input",
                                                                "output", "error") if _field(timeline, key) is not None}
    else:
        raw["activity"] = _field(timeline, "activity")
        raw["provenance"] = _field(timeline, "provenance")
    hints = _field(metadata, "structured_entity_hints")
    if hints:
        raw["entities"] = hints
    if _field(metadata, "schedule") is not None:
        raw["schedule"] = _field(metadata, "schedule")
    if fields.get("natural_key") is not None:
        raw["natural_key"] = fields["natural_key"]
    for key in ("tags", "l2_batch_owner"):
        if _field(metadata, key) is not None:
            raw[key] = _field(metadata, key)
    return raw


def rederive(fields: Mapping[str, Any], templates: TemplateRegistry, *, key_secret: bytes,
             user_id: str) -> tuple[MemoryEvent, str]:
    """A stored event as the write path makes it today: its payload fields validated again
    (:class:`~.contracts.PayloadError` when they cannot be), redacted, rendered, classified and routed by
    :func:`normalize`. What identifies the stored event is kept: its id, dedupe key and record time.
    Nothing else of the stored row is read, so no stored class, scope or content is ever trusted."""
    ingested_at = fields["ingested_at"]
    event, target = normalize(validate_payload(stored_payload(fields)), templates, user_id=user_id,
                              key_secret=key_secret, now=ingested_at)
    metadata = dict(event.metadata)
    counted = _field(fields.get("metadata"), "redactions")
    if isinstance(counted, Mapping) and all(isinstance(k, str) and type(v) is int and v > 0
                                            for k, v in counted.items()):
        # What the first ingest redacted is gone from the text, and redacting it again may find its mark
        # again: the larger count of each kind stands (a count, never evidence).
        found = metadata.get("redactions", {})
        metadata["redactions"] = {k: max(counted.get(k, 0), found.get(k, 0)) for k in sorted({*counted, *found})}
    return event._replace(event_id=fields["event_id"], idempotency_key=fields["idempotency_key"],
                          metadata=metadata, dedupe_aliases=(),
                          recorded_at=_kept_record_time(fields.get("recorded_at"), event)), target


def _kept_record_time(stored: Any, event: MemoryEvent) -> float:
    """The stored record time of a scheduled event, when it can be one: a superseded plan keeps the time
    its first version was collected, which is earlier than its own ingest. Anything else is derived again."""
    derived = event.visible_from
    if ("schedule" in event.metadata and type(stored) in (int, float) and math.isfinite(stored)
            and MIN_TIMESTAMP <= stored <= derived):
        return float(stored)
    return derived


