"""LoCoMo answerability (issue 17, Must show): does the pack's ``status`` mean something? One JSON line.

Each conversation goes into its own memory twice (``benchmarks/locomo.py`` ingests the turns):

* ``speaker``  — each turn with ``chat.speaker`` set (the speaker's name), the text as said;
* ``labelled`` — without the field, the turn written "Name: text", as clients often log transcripts.

Every question with evidence is asked as of the day after the last session (rule-chosen mode, limit 10),
after the embedding and L2 (rules) queues have run. Category 5 (adversarial: it asks about one speaker
what only the other said or did; the right answer is "not mentioned") should come back ``insufficient``;
categories 1–4 should not. Per split (dev = conversations 0–4, tune here; test = 5–9, report only) and run:

* ``cat5_insufficient``        — share of category 5 questions answered ``insufficient``
* ``cat1_4_wrong_insufficient`` — share of category 1–4 questions answered ``insufficient``
* ``recall_all@10_ok``          — recall_all@10 over the category 1–4 questions answered ``ok``
* ``recall_all@10`` / ``session_all@10`` — over *every* category 1–4 question, an ``insufficient`` pack
  scored on the related findings it returns (abstaining cannot raise recall)

``--dump FILE`` writes one JSON line per question with each finding's sufficiency features (whose, the
asked words it says, similarity, source plausibility, whether it is an evidence turn): the calibration
input for ``core/retrieval/sufficiency.py``'s thresholds, read on dev only; ``answerability_rejudge.py DUMP``
re-judges it with the current decision, per dev half (tune on 0–2, check on 3–4), without a rebuild.

    .venv/bin/python benchmarks/answerability.py                    # dev: tune here
    .venv/bin/python benchmarks/answerability.py --split test       # report only; never tune on it
    .venv/bin/python benchmarks/answerability.py --keep /tmp/memories --dump dev.jsonl   # tuning: ingest once
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.locomo import DATA, SPLITS, evidence_ids, payloads, ranked_items, session_of
from magi_desktop.core import Memory
from magi_desktop.core.embed import MiniLMEmbedder

K = 10
RUNS = ("speaker", "labelled")


def labelled(items: list[dict]) -> list[dict]:
    """The same turns without ``chat.speaker``, written "Name: text" (what the recall part recognises)."""
    out = []
    for item in items:
        chat = dict(item["chat"])
        speaker = chat.pop("speaker")
        chat["text"] = f"{speaker}: {chat['text']}"
        out.append({**item, "chat": chat})
    return out


def features(pack, evidence: set[str]) -> list[dict]:
    """Each finding's sufficiency checks (the pack's trace) and whether it is an evidence turn (``--dump``)."""
    checks = pack.trace.get("sufficiency", {}).get("findings", [])
    rows = []
    for rank, (finding, checked) in enumerate(zip(pack.findings, checks, strict=False)):
        items = [finding.source_item_id] if finding.source_item_id else finding.supporting_source_item_ids
        rows.append({"rank": rank, "layer": finding.layer, **checked, "evidence": bool(evidence & set(items)),
                     "text": finding.text, "speaker": finding.speaker, "source": finding.source,
                     "author": finding.author, "status": finding.status, "kind": finding.kind})
    return rows


def ask_all(memory: Memory, questions: list[dict], now: float, dump) -> list[dict]:
    rows = []
    for question in questions:
        pack = memory.query(question["question"], now=now, limit=K, tz=timezone.utc)
        evidence = evidence_ids(question["evidence"])
        ranked = ranked_items(pack.findings)[:K]
        row = {"category": question["category"], "insufficient": pack.insufficient_evidence,
               "all": float(all(e in ranked for e in evidence)),
               "session_all": float({session_of(e) for e in evidence} <= {session_of(d) for d in ranked})}
        rows.append(row)
        if dump is not None:
            judged = pack.trace.get("sufficiency", {})
            dump.write(json.dumps({**row, "question": question["question"], "mode": pack.query_mode,
                                   "persons": judged.get("persons"), "now": now,
                                   "window_fallback": pack.trace.get("window_fallback", False),
                                   "findings": features(pack, set(evidence))}) + "\n")
    return rows


def run_conversation(sample: dict, embedder: MiniLMEmbedder, folder: Path, dump) -> dict[str, list[dict]]:
    items = payloads(sample, speaker_field=True)
    now = max(p["occurred_at"] for p in items) + 86400
    questions = [q for q in sample["qa"] if q["category"] in (1, 2, 3, 4, 5) and evidence_ids(q["evidence"])]
    results = {}
    for run, turns in (("speaker", items), ("labelled", labelled(items))):
        fresh = not (folder / run).exists()
        memory = Memory.open(folder / run, embedder=embedder)
        try:
            if fresh:
                memory.ingest_many(turns)
                memory.process_pending(queues=("embedding", "l2"))
            if dump is not None:
                dump.write(json.dumps({"run": run, "sample": sample["sample_id"]}) + "\n")
            results[run] = ask_all(memory, questions, now, dump)
        finally:
            memory.close()
    return results


def summarise(rows: list[dict]) -> dict:
    adversarial = [r for r in rows if r["category"] == 5]
    answerable = [r for r in rows if r["category"] != 5]
    answered = [r for r in answerable if not r["insufficient"]]

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    return {"cat5_insufficient": mean([float(r["insufficient"]) for r in adversarial]),
            "cat1_4_wrong_insufficient": mean([float(r["insufficient"]) for r in answerable]),
            "recall_all@10_ok": mean([r["all"] for r in answered]),
            "recall_all@10": mean([r["all"] for r in answerable]),
            "session_all@10": mean([r["session_all"] for r in answerable]),
            "questions": {"cat5": len(adversarial), "cat1_4": len(answerable), "cat1_4_ok": len(answered)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev",
                        help="dev (default) for tuning; test or all only to report")
    parser.add_argument("--conversations", help="comma-separated indexes (overrides --split)")
    parser.add_argument("--dump", type=Path, help="write per-question sufficiency features here (JSON lines)")
    parser.add_argument("--keep", type=Path, help="keep each conversation's memories in this folder and reuse them "
                                                  "on the next run (ingest once while tuning the decision)")
    args = parser.parse_args()
    data = json.loads(DATA.read_text("utf-8"))
    if args.conversations:
        chosen = {"custom": [int(i) for i in args.conversations.split(",")]}
    elif args.split == "all":
        chosen = {name: list(r) for name, r in SPLITS.items()}
    else:
        chosen = {args.split: list(SPLITS[args.split])}
    embedder = MiniLMEmbedder(idle_seconds=None)
    started = time.perf_counter()
    report: dict = {"benchmark": "answerability", "k": K}
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    try:
        for split, indexes in chosen.items():
            collected: dict[str, list[dict]] = {run: [] for run in RUNS}
            for index in indexes:
                with tempfile.TemporaryDirectory() as tmp:
                    folder = args.keep / str(index) if args.keep else Path(tmp)
                    for run, rows in run_conversation(data[index], embedder, folder, dump).items():
                        collected[run].extend(rows)
            report[split] = {run: summarise(rows) for run, rows in collected.items()}
    finally:
        if dump is not None:
            dump.close()
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
