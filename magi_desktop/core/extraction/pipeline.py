"""Background extraction of whole conversations: claim, read in segments, check, commit once.

A session generation is due when it has messages no extraction consumed and it is over — ended
(``Memory.end_session`` starts the next generation) or idle for ``IDLE_SECONDS``. Its run:

1. claims the pending messages (a lease; messages another live claim holds are left alone);
2. asks the extractor segment by segment, each answer the complete revised candidate set;
3. checks the final set's pointers (validate.py) — the extractor's word is not enough;
4. commits, in ONE transaction, the facts, the episode and the "extracted" marks — but only if
   its claim still holds and no new message of that generation arrived meanwhile (then nothing is
   written and the generation is read again, whole, next time).

A failure anywhere before the commit writes nothing: the messages stay pending, the claim is
released, and the generation is retried with backoff (dead after MAX_ATTEMPTS, as the queues). When
the LLM endpoint itself is down (unreachable, 5xx, its breaker open) no attempt is charged: the
generation waits ``PROVIDER_BACKOFF_SECONDS`` and the run stops (the others would fail the same way).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import MemoryUnavailable
from ..llm import LLMError, LLMOutputInvalid, LLMProvider, UnexpectedLLMCall
from ..remember import normalise
from ..session_constants import SESSION_IDLE_SECONDS as IDLE_SECONDS
from ..store import Database, extractions
from ..store import facts as stored_facts
from ..store.connection import Connection
from ..store.queue import EXTRACTION_RETRIES as RETRIES
from ..store.queue import LEASE_SECONDS, PROVIDER_BACKOFF_SECONDS
from .task import (
    CONTEXT_MESSAGES,
    EPISODE_MAX_CHARS,
    EXTRACT_SEGMENT,
    MESSAGE_MAX_CHARS,
    SEGMENT_MAX_CHARS,
    SEGMENT_MAX_MESSAGES,
)
from .validate import Message, final_set

log = logging.getLogger(__name__)

BATCH = 10                   # session generations per run


@dataclass
class ExtractionReport:
    runs: int = 0
    facts: int = 0
    rejected: int = 0
    aborted: dict[str, int] = field(default_factory=dict)   # reason -> generations left for next time
    failed: int = 0
    dead: int = 0
    provider_unavailable: str | None = None
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "facts": self.facts, "rejected": self.rejected, "aborted": dict(self.aborted),
                "failed": self.failed, "dead": self.dead, "provider_unavailable": self.provider_unavailable,
                "errors": self.errors[:10]}


class Aborted(Exception):
    """The commit found the world changed (claim lost, new messages): nothing was written."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def due(conn: Connection, now: float, limit: int | None = None) -> list[tuple[str, int]]:
    """Session generations ready for extraction (ended or idle, not waiting out a backoff)."""
    return extractions.due_generations(conn, now, now - IDLE_SECONDS, limit)


def pending_count(conn: Connection, now: float) -> int:
    return extractions.due_count(conn, now, now - IDLE_SECONDS)


def held_count(conn: Connection, now: float) -> int:
    """Session generations an extractor has claimed and whose claim is live."""
    return extractions.held_count(conn, now)


def revive_dead(db: Database) -> int:
    """Dead-lettered session generations get their attempts back."""
    return RETRIES.revive(db)


def run(db: Database, llm: LLMProvider, now: float | None = None, limit: int = BATCH) -> ExtractionReport:
    """Extract every due session generation (up to ``limit``)."""
    now = time.time() if now is None else now
    started = time.monotonic()
    report = ExtractionReport()
    for session_id, generation in due(db.reader(), now, limit):
        # The clock moves on while the model reads: each claim's lease starts when it is taken.
        extract(db, llm, session_id, generation, now + (time.monotonic() - started), report)
        if report.provider_unavailable:
            break
    return report


def extract(db: Database, llm: LLMProvider, session_id: str, generation: int, now: float,
            report: ExtractionReport) -> int | None:
    """One session generation, start to end; returns the extraction id when something was committed."""
    claim = uuid.uuid4().hex
    claimed = _claim(db, session_id, generation, claim, now)
    if not claimed:
        report.aborted["claimed_elsewhere"] = report.aborted.get("claimed_elsewhere", 0) + 1
        return None
    started = time.monotonic()

    def renew() -> None:
        """Hold the claim for another lease: a long conversation may take several model calls."""
        with db.transaction() as conn:
            extractions.renew_claim(conn, claim, now + (time.monotonic() - started) + LEASE_SECONDS)

    try:
        messages = _messages(db.reader(), session_id, generation)
        pending = [m for m in messages if m.rowid in claimed]
        if not pending:
            raise Aborted("claim_lost")              # forgotten between the claim and the read
        candidates, episode, segments = _segments(llm, session_id, messages, pending, renew)
        kept, rejected = final_set(candidates, {m.event_id: m for m in messages})
        with db.transaction() as conn:
            extraction_id, committed = _commit(conn, llm, session_id, generation, claim, claimed, pending, kept,
                                               rejected, episode, segments, now)
    except Aborted as exc:
        _release(db, claim)
        report.aborted[exc.reason] = report.aborted.get(exc.reason, 0) + 1
        return None
    except UnexpectedLLMCall:
        _release(db, claim)
        raise                       # a test's script went wrong: fail there, not in a retry
    except MemoryUnavailable:
        with contextlib.suppress(MemoryUnavailable):
            _release(db, claim)     # a full disk: the claim's lease runs out if even this cannot be written
        raise
    except LLMError as exc:
        if isinstance(exc, LLMOutputInvalid):
            _charge(db, session_id, generation, claim, exc, now, report)
            return None
        _release(db, claim)
        error = f"{type(exc).__name__}: {exc}"
        RETRIES.postpone(db, [(session_id, generation)], error, now)    # a first failure starts at 0 attempts
        report.provider_unavailable = error
        report.errors.append(f"{session_id}: {error}")
        log.warning("fact extraction paused: the LLM provider failed (%s); retrying in %.0f s", error,
                    PROVIDER_BACKOFF_SECONDS)
        return None
    except Exception as exc:  # noqa: BLE001 - any failure: nothing written, retried later
        _charge(db, session_id, generation, claim, exc, now, report)
        return None
    report.runs += 1
    report.facts += committed
    report.rejected += sum(1 for r in rejected if r["reason"] != "not_accepted")
    return extraction_id


def _charge(db: Database, session_id: str, generation: int, claim: str, exc: Exception, now: float,
            report: ExtractionReport) -> None:
    """A failed attempt of this generation: release the claim, count it, back off (or dead-letter)."""
    _release(db, claim)
    report.failed += 1
    report.errors.append(f"{session_id}: {type(exc).__name__}: {exc}")
    report.dead += RETRIES.fail(db, [(session_id, generation)], f"{type(exc).__name__}: {exc}", now)
    log.warning("fact extraction of session %s failed: %s", session_id, exc)


def _claim(db: Database, session_id: str, generation: int, claim: str, now: float) -> set[int]:
    with db.transaction() as conn:
        rows = extractions.unextracted_claims(conn, session_id, generation)
        if not rows or any(c is not None and until is not None and until > now for _, c, until in rows):
            return set()
        extractions.claim(conn, session_id, generation, claim, now + LEASE_SECONDS)
    return {r[0] for r in rows}


def _release(db: Database, claim: str) -> None:
    with db.transaction() as conn:
        extractions.release_claim(conn, claim)


def _messages(conn: Connection, session_id: str, generation: int) -> list[Message]:
    """Every message of the generation, in order (earlier extracted ones are context only)."""
    rows = extractions.generation_messages(conn, session_id, generation)
    out = []
    for rowid, event_id, at, kind, content, metadata, extraction_id in rows:
        timeline = json.loads(metadata).get("timeline", {})
        out.append(Message(rowid, event_id, at, timeline.get("role", ""), timeline.get("provenance"), kind, content,
                           extraction_id is not None))
    return out


def _split(pending: list[Message]) -> list[list[Message]]:
    segments: list[list[Message]] = [[]]
    chars = 0
    for message in pending:
        size = min(len(message.text), MESSAGE_MAX_CHARS)
        if segments[-1] and (len(segments[-1]) >= SEGMENT_MAX_MESSAGES or chars + size > SEGMENT_MAX_CHARS):
            segments.append([])
            chars = 0
        segments[-1].append(message)
        chars += size
    return segments


def _segments(llm: LLMProvider, session_id: str, messages: list[Message], pending: list[Message],
              renew: Callable[[], None]) -> tuple[list[dict[str, Any]], str, int]:
    """Ask the extractor segment by segment; the last answer is the final candidate set."""
    candidates: list[dict[str, Any]] = []
    episode = ""
    segments = _split(pending)
    for number, segment in enumerate(segments, 1):
        start = messages.index(segment[0])
        context = messages[max(0, start - CONTEXT_MESSAGES):start]
        answer = llm.run(EXTRACT_SEGMENT, {
            "session_id": session_id, "segment": number, "segments": len(segments),
            "context": [m.to_input(MESSAGE_MAX_CHARS) for m in context],
            "messages": [m.to_input(MESSAGE_MAX_CHARS) for m in segment],
            "candidates": candidates, "episode": episode})
        candidates, episode = answer["candidates"], answer["episode"]
        if number < len(segments):
            renew()
    return candidates, episode, len(segments)


def _commit(conn: Connection, llm: LLMProvider, session_id: str, generation: int, claim: str, claimed: set[int],
            pending: list[Message], kept: list[dict], rejected: list[dict], episode: str, segments: int,
            now: float) -> tuple[int, int]:
    held = extractions.claimed_count(conn, claim)
    if held != len(claimed):
        raise Aborted("claim_lost")                # a lease ran out and another took it, or messages were forgotten
    arrived = extractions.unclaimed_count(conn, session_id, generation, claim)
    if arrived:
        raise Aborted("new_messages")              # the discussion went on: read it again, whole
    report = {"committed": [], "rejected": rejected}
    extraction_id = extractions.add_extraction(
        conn, session_id, generation, llm.name, segments, len(pending), pending[0].at, pending[-1].at,
        normalise(episode)[:EPISODE_MAX_CHARS] or f"{len(pending)} messages", now)
    for candidate in kept:
        content = normalise(candidate["content"])
        duplicate = stored_facts.active_fact_with_content(conn, content.lower(), candidate.get("project") or "")
        if duplicate is not None:
            report["rejected"].append(dict(candidate, reason="already_known", fact_id=duplicate))
            continue
        fact_id = stored_facts.add_extracted_fact(
            conn,
            # Only a stated fact keeps a quote: anything else shown in quotes would pass for the user's words.
            (content, (normalise(candidate.get("quote") or "") or None) if candidate["evidence"] == "stated" else None,
             "project" if candidate.get("project") else "user", candidate.get("category") or "knowledge",
             candidate.get("project") or None, candidate["evidence"], candidate["source_message_id"],
             candidate.get("accepting_message_id") if candidate["evidence"] == "accepted" else None,
             candidate.get("proposal_message_id") if candidate["evidence"] == "accepted" else None,
             session_id, generation, extraction_id, now, now))
        report["committed"].append(dict(candidate, fact_id=fact_id))
    extractions.save_report(conn, extraction_id, json.dumps(report, ensure_ascii=False))
    extractions.mark_extracted(conn, claim, extraction_id)
    RETRIES.finish(conn, [(session_id, generation)], now)
    return extraction_id, len(report["committed"])


