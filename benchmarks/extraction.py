"""Background fact extraction over real conversations: throughput and what the rules commit. Prints one JSON line.

The LoCoMo development conversations (0–4) go into one memory as chat turns (both speakers are
people: every turn is human input), every session is ended, and ``Memory.extract_facts`` runs until
nothing is due. Reported: conversations (session generations) read, messages, segments, facts by
evidence, candidates refused, wall time and milliseconds per message. The rules extractor only
commits what a pattern vouches for, so the interesting number besides speed is how few facts two
people chatting produce — no agent proposes anything there, so nothing can be "accepted".

    .venv/bin/python benchmarks/extraction.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.locomo import DATA, payloads
from magi_desktop.core import Memory

CONVERSATIONS = range(0, 5)


def main() -> None:
    samples = json.loads(DATA.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory.open(Path(tmp) / "m", embedder="hashing")
        rows = [p for i in CONVERSATIONS for p in payloads(samples[i])]
        memory.ingest_many(rows)
        for session in sorted({p["session_id"] for p in rows}):
            memory.end_session(session)
        started = time.perf_counter()
        totals: Counter = Counter()
        while True:
            report = memory.extract_facts(limit=50)
            if report["runs"] == 0 and report["failed"] == 0:
                break
            totals.update({k: report[k] for k in ("runs", "facts", "rejected", "failed")})
        seconds = time.perf_counter() - started
        extractions = memory.extractions(limit=10_000)
        facts = Counter(f["evidence_type"] for f in memory.facts())
        refused = Counter(r["reason"] for e in extractions for r in e["report"]["rejected"])
        memory.close()
    print(json.dumps({
        "conversations": len(CONVERSATIONS), "session_generations": totals["runs"], "messages": len(rows),
        "segments": sum(e["segments"] for e in extractions), "facts": dict(facts), "refused": dict(refused),
        "failed": totals["failed"], "seconds": round(seconds, 2),
        "ms_per_message": round(seconds * 1000 / max(1, len(rows)), 3)}))


if __name__ == "__main__":
    main()
