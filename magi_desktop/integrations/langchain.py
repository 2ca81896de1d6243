"""LangChain over the memory (the ``[langchain]`` extra: ``langchain-core`` only, nothing that reaches the network).

- :class:`MagiRetriever` answers a question with documents: a first one that states the evidence pack
  (status, mode, hints — an ``insufficient`` pack says so to whoever reads the documents), then one per
  finding, with the finding's id, time, author, source and evidence class in its metadata.

A rule of the memory holds here as everywhere (README, "Agents: the MCP server"):

- **Recalled text cannot come back as testimony.** Every document's text is a
  ``<magi-recalled>…</magi-recalled>`` block (:func:`~magi_desktop.core.recalled.recalled_block`). A chain
  pastes it into a prompt; if that prompt, or a reply copying it, is stored again (through the MCP server or
  ``Memory.ingest``), the memory cuts the block out instead of learning it a second time as
  what the user said. Keep the markers when you format the documents.

Only the public :class:`~magi_desktop.core.Memory` API is used (``tests/test_layering.py``).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:      # the extra is optional: say how to get it
    raise ImportError("magi_desktop.integrations.langchain needs langchain-core: "
                      "pip install 'magi-desktop[langchain]'") from exc

from ..core import EvidencePack, Finding, Memory
from ..core.recalled import recalled_block

__all__ = ["MagiRetriever", "pack_documents"]

#: ``Document.metadata["kind"]`` of the first document (the pack) and of the others (its findings).
PACK_KIND, FINDING_KIND = "magi_pack", "finding"


# --- the retriever ----------------------------------------------------------------------------------------------


class MagiRetriever(BaseRetriever):
    """Documents from :meth:`Memory.query`: the pack first (``metadata["kind"] == "magi_pack"``), then each
    finding (``"finding"``, ``Document.id`` = the finding's event id). See :func:`pack_documents`.

    ``mode``, ``limit``, ``session_id`` (the asking conversation: a turn of it that repeats the question is not
    evidence), ``now`` (as of then: later events are invisible) and ``tz`` are ``Memory.query``'s; each may
    also be given per call, ``retriever.invoke(question, now=...)``.
    """

    memory: Memory
    mode: str | None = None
    limit: int = 10
    session_id: str | None = None
    now: float | None = None
    tz: tzinfo | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **options: Any) -> list[Document]:
        asked = {"mode": self.mode, "limit": self.limit, "session_id": self.session_id, "now": self.now,
                 "tz": self.tz} | options
        return pack_documents(self.memory.query(query, **asked))


def pack_documents(pack: EvidencePack) -> list[Document]:
    """The pack as documents: first the pack itself, then one per finding, best first.

    The first document always comes: its text says how many findings there are, whether they answer (an
    ``insufficient`` pack: "do not guess") and the answering hints; its metadata holds ``status``,
    ``insufficient_evidence``, ``query_mode``, ``hints`` and ``finding_ids``. A finding's metadata holds
    ``id``, ``layer``, ``occurred_at`` (UNIX seconds) and ``at`` (local time), ``author``, ``source``,
    ``source_item_id``, ``session_id``, ``evidence_class``, ``answers`` (does it answer the question, or is it
    only related), ``status`` ("current"/"history" or None), ``indirect``, ``score``, ``supporting_event_ids``
    (what a derived finding rests on) and the pack's ``pack_status`` and ``insufficient_evidence``, so a
    finding taken out of the list still says whether the pack answered. Every text is a recalled block.
    """
    about_pack = {"pack_status": pack.status, "insufficient_evidence": pack.insufficient_evidence,
                  "query_mode": pack.query_mode}
    summary = Document(page_content=recalled_block(_pack_text(pack)),
                       metadata={"kind": PACK_KIND, "status": pack.status,
                                 "insufficient_evidence": pack.insufficient_evidence, "query_mode": pack.query_mode,
                                 "hints": list(pack.answering_hints),
                                 "finding_ids": [f.event_id for f in pack.findings]})
    return [summary, *(Document(id=f.event_id, page_content=recalled_block(f.text),
                                metadata=_finding_metadata(f) | about_pack) for f in pack.findings)]


def _pack_text(pack: EvidencePack) -> str:
    lines = [f"Memory answer ({pack.query_mode} mode, {pack.status}): {len(pack.findings)} finding(s)."]
    if not pack.findings:
        lines.append("No stored evidence answers this: do not guess; say you do not know or ask the user.")
    elif pack.insufficient_evidence:
        lines.append("None of these findings answers this (they are only related): do not guess; say you do not "
                     "know or ask the user.")
    if pack.answering_hints:
        lines.append("Hints:")
        lines.extend(f"- {hint}" for hint in pack.answering_hints)
    return "\n".join(lines)


def _finding_metadata(f: Finding) -> dict[str, Any]:
    return {"kind": FINDING_KIND, "id": f.event_id, "layer": f.layer, "occurred_at": f.occurred_at,
            "at": datetime.fromtimestamp(f.occurred_at).astimezone().isoformat(timespec="minutes"),
            "author": f.speaker or f.author, "source": f.source, "source_item_id": f.source_item_id,
            "session_id": f.session_id, "evidence_class": f.evidence_class, "answers": f.answers,
            "status": f.status, "indirect": f.indirect, "score": f.score,
            "supporting_event_ids": list(f.supporting_event_ids)}
