"""What the MCP tools answer: compact, answer-oriented text for the model and the same as data for
programs — findings with their ids, times, authors and evidence class, and the hints — never raw rows.

Recalled memory that an agent may paste into a turn comes wrapped in ``<magi-recalled>`` markers
(:func:`~magi_desktop.core.recalled.recalled_block`): when such text comes back in a logged turn, the
memory cuts it out before storing, so what it recalled is never learnt again as new testimony. Every
text and every string of data here is made safe on the way out (``core/outbound.py``): the stored text
inside cannot close a block early, and carries no control or invisible characters.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core.outbound import neutralise, safe
from ..core.recalled import recalled_block
from ..core.retrieval import EvidencePack, Finding
from ..core.session_constants import SESSION_IDLE_SECONDS

TEXT_CHARS = 600            # a finding's text in the answer (the full event is one memory.get_event away)
SUPPORTING_SHOWN = 5


def when(ts: float | None) -> str | None:
    """Local time with its UTC offset, to the minute: what "yesterday" is measured against."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="minutes")


def clip(text: str, limit: int = TEXT_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def block(lines: list[str]) -> str:
    """The lines as one recalled block: markers inside made inert (by recalled_block), controls shown."""
    return recalled_block(neutralise("\n".join(lines)))


def finding_data(number: int, f: Finding) -> dict[str, Any]:
    data: dict[str, Any] = {"n": number, "id": f.event_id, "layer": f.layer, "at": when(f.occurred_at),
                            "author": f.speaker or f.author, "source": f.source, "evidence_class": f.evidence_class,
                            "text": clip(f.text), "session_id": f.session_id, "source_item_id": f.source_item_id,
                            "status": f.status, "indirect": f.indirect or None, "answers": f.answers}
    if f.layer != "L1":
        data["supporting"] = (f.supporting_source_item_ids or f.supporting_event_ids)[:SUPPORTING_SHOWN]
    return {key: value for key, value in data.items() if value not in (None, [], "")}


def pack_data(pack: EvidencePack) -> dict[str, Any]:
    return safe({"status": pack.status, "query_mode": pack.query_mode,
                 "insufficient_evidence": pack.insufficient_evidence,
                 "findings": [finding_data(i, f) for i, f in enumerate(pack.findings, start=1)],
                 "hints": list(pack.answering_hints)})


def pack_text(pack: EvidencePack) -> str:
    lines = [f"Memory answer ({pack.query_mode} mode, {pack.status}): {len(pack.findings)} finding(s)."]
    if not pack.findings:
        lines.append("No stored evidence answers this: do not guess; say you do not know or ask the user.")
    elif pack.insufficient_evidence:
        lines.append("None of these findings answers this (they are only related): do not guess; say you do not "
                     "know or ask the user.")
    for i, f in enumerate(pack.findings, start=1):
        data = finding_data(i, f)
        head = [f"[{i}] {data['layer']}", data.get("at") or "", data["author"], data["source"], data["evidence_class"]]
        if f.status:
            head.append(f.status)
        if f.indirect:
            head.append("indirect")
        if not f.answers:
            head.append("related: does not answer")
        head.append(f"id {f.event_id}")
        lines.append(" · ".join(part for part in head if part))
        lines.append(f"    {data['text']}")
        if data.get("supporting"):
            lines.append(f"    from {len(f.supporting_event_ids)} event(s): {', '.join(data['supporting'])}")
    if pack.answering_hints:
        lines.append("Hints:")
        lines.extend(f"- {hint}" for hint in pack.answering_hints)
    return block(lines)


def working_text(session_id: str, workbench: dict[str, Any] | None) -> str:
    if workbench is None:
        return (f"No working memory for session {session_id!r} in this server: it ended (idle "
                f"{SESSION_IDLE_SECONDS // 60:.0f} min) or no turn "
                "of it was logged here. Log the session's turns with log_turn first.")
    lines = [f"Session {clip(session_id, 200)}: {clip(workbench['running_summary'], 1500)}"]
    if workbench["focus_entities"]:
        lines.append("Focus: " + ", ".join(workbench["focus_entities"]))
    for run in workbench["tool_context"]:
        outcome = "ok" if run["ok"] else f"failed ({run['error']})" if run.get("error") else "failed"
        lines.append(f"Tool {run['tool']} [{run['category']}] {outcome} at {when(run['at'])}")
    for thread in workbench["threads"]:
        topic = clip(thread["topic"], 120)
        lines.append(f"Thread {thread['thread_id']}: {len(thread['turns'])} turn(s), on \"{topic}\"")
    return block(lines)


def snapshot_text(snapshot: dict[str, Any]) -> str:
    lines = [f"# What the memory believes about the user (as of {when(snapshot['as_of'])})"]
    if snapshot["states"]:
        lines.append("\n## Current states")
        lines.extend(f"- {trait}: {clip(s['value'], 300)} (since {when(s['since'])})"
                     for trait, s in snapshot["states"].items())
    if snapshot["traits"]:
        lines.append("\n## Traits")
        for trait, values in snapshot["traits"].items():
            lines.append(f"- {trait}: " + "; ".join(f"{clip(v['value'], 300)} ({v['status']})" for v in values))
    if snapshot["relations"]:
        lines.append("\n## Relationships")
        lines.extend(f"- {r['predicate']} {clip(r['object'], 300)} (seen {r['observations']}×)"
                     for r in snapshot["relations"])
    if snapshot["facts"]:
        lines.append("\n## Saved facts")
        lines.extend(f"- {clip(f['content'], 600)} ({f['category']}, {f['evidence_type']}, fact {f['fact_id']})"
                     for f in snapshot["facts"])
    if len(lines) == 1:
        lines.append("\nNothing yet: the memory has no beliefs about the user.")
    return block(lines)


def summaries_text(summaries: list[dict[str, Any]]) -> str:
    if not summaries:
        return block(["No summaries yet: they are written when an hour, day, week or month with events "
                              "has closed (the Magi Desktop app or `magi mcp` runs them)."])
    lines = ["# Recent summaries"]
    for s in summaries:
        kind = s["granularity"] or s["summary_type"]
        lines.append(f"\n## {s['title']} ({kind}, {when(s['window_start'])} – {when(s['window_end'])}, "
                     f"{s['event_count']} event(s), summary {s['summary_id']})")
        lines.append(clip(s["content"], 1500))
    return block(lines)
