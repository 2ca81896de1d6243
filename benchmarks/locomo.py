"""LoCoMo evidence retrieval (issue: Retrieval). Prints one JSON line.

Each conversation of ``../shared/bench/locomo10.json`` goes into its own
memory: every turn is a chat event of a human (both speakers are people) at
its session's date, ``source_item_id`` = the turn's ``dia_id``; a shared
photo's caption is part of the turn's text. The headline run ("magi") sends
no ``chat.speaker``: each turn is written "Name: text", as clients write
transcripts; "magi_speaker" is the same conversation with the speaker's name
in ``chat.speaker`` and the bare text. Every
question of categories 1–4 is asked as of the last session's date with one
mode policy (the rule classifier; no per-question oracle). Reported per split
— dev = conversations 0–4 (tune here), test = 5–9 (report only) — for Magi and
for two plain baselines over the same turn texts (FTS5 BM25, and MiniLM cosine
over the same vectors). Magi is asked twice: on L1 alone ("magi"), then again
after the L2 projection with the rules provider has run ("magi_l2"); the
difference is reported as ``l2_change``, with the projection's throughput. An
L2 finding counts as the turns it cites, in its place in the pack:

* recall_all@k  — every evidence turn is among the top k
* recall_any@k  — at least one is
* session_all@k — every evidence session appears among the top k's sessions

    .venv/bin/python benchmarks/locomo.py                 # the dev split: tune here
    .venv/bin/python benchmarks/locomo.py --split test     # report only; never tune on it
    .venv/bin/python benchmarks/locomo.py --quick          # the headline run alone (no L2, no speaker field)

``query_ms`` is the headline run's ``Memory.query`` wall time per question (p50 / p95, MiniLM question
embedding included) over one conversation's memory.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import re
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from magi_desktop.core import Memory
from magi_desktop.core.embed import MiniLMEmbedder
from magi_desktop.core.retrieval.terms import content_terms
from magi_desktop.core.store.connection import connect
from magi_desktop.core.text import fts_document, fts_or_query

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo10.json"
KS = (1, 5, 10, 20)
SPLITS = {"dev": range(0, 5), "test": range(5, 10)}
TURN_SECONDS = 30
SYSTEMS = ("magi", "magi_l2", "magi_speaker", "bm25", "dense")
QUICK_SYSTEMS = ("magi", "bm25", "dense")


def session_time(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> UNIX seconds (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc).timestamp()


def turn_text(turn: dict) -> str:
    text = turn["text"]
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def sessions(sample: dict) -> list[tuple[int, float, list[dict]]]:
    conv = sample["conversation"]
    found = []
    for key, turns in conv.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(turns, list) and turns:
            number = int(match.group(1))
            found.append((number, session_time(conv[f"session_{number}_date_time"]), turns))
    return sorted(found)


def evidence_ids(raw: list[str]) -> list[str]:
    ids = []
    for item in raw:
        for part in re.split(r"[;\s]+", item):
            match = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if match:
                ids.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return ids


def payloads(sample: dict, speaker_field: bool = False) -> list[dict]:
    """The turns as chat payloads: "Name: text" (the client convention), or the name in ``chat.speaker``."""
    out = []
    for number, start, turns in sessions(sample):
        for index, turn in enumerate(turns):
            chat = ({"speaker": turn["speaker"], "text": turn_text(turn)} if speaker_field
                    else {"text": f"{turn['speaker']}: {turn_text(turn)}"})
            out.append({
                "source_type": "chat",
                "session_id": f"{sample['sample_id']}:S{number}",
                "source_item_id": turn["dia_id"],
                "occurred_at": start + index * TURN_SECONDS,
                "chat": {"role": "user", "provenance": "human_input", **chat},
            })
    return out


def ranked_items(findings) -> list[str]:
    """Turn ids in pack order; an L2 finding stands for the turns it cites (architecture §12)."""
    ranked: list[str] = []
    for f in findings:
        for item in ([f.source_item_id] if f.source_item_id else f.supporting_source_item_ids):
            if item not in ranked:
                ranked.append(item)
    return ranked


def session_of(dia_id: str) -> str:
    return dia_id.split(":")[0]


def score(ranked: list[str], evidence: list[str]) -> dict[str, float]:
    row = {}
    evidence_sessions = {session_of(e) for e in evidence}
    for k in KS:
        top = ranked[:k]
        row[f"recall_all@{k}"] = float(all(e in top for e in evidence))
        row[f"recall_any@{k}"] = float(any(e in top for e in evidence))
        row[f"session_all@{k}"] = float(evidence_sessions <= {session_of(d) for d in top})
    return row


class Baselines:
    """Plain BM25 (FTS5 over the turn texts) and plain dense (MiniLM cosine) over one conversation."""

    def __init__(self, folder: Path, turns: list[tuple[str, str]], vectors: np.ndarray):
        self.ids = [dia for dia, _ in turns]
        self.conn = connect(folder / "bm25.db")
        self.conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')")
        self.conn.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)",
                              [(i + 1, fts_document(text)) for i, (_, text) in enumerate(turns)])
        self.vectors = vectors

    def bm25(self, question: str, k: int) -> list[str]:
        terms = content_terms(question)
        if not terms:
            return []
        rows = self.conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?",
                                 (fts_or_query(terms), k)).fetchall()
        return [self.ids[r[0] - 1] for r in rows]

    def dense(self, query_vector: np.ndarray, k: int) -> list[str]:
        scores = self.vectors @ query_vector
        return [self.ids[i] for i in np.argsort(-scores)[:k]]


def record_rankings(memory: Memory, sink: dict) -> None:
    """Keep each query's per-path rankings (as turn ids) in ``sink`` for the miss analysis."""
    retriever = memory._retriever
    original = retriever._recall

    def recording(ctx, mode, trace):
        rankings = original(ctx, mode, trace)
        rowids = {rowid for ranked in rankings.values() for rowid in ranked}
        marks = ", ".join("?" * len(rowids))
        ids = dict(retriever.db.reader().execute(
            f"SELECT id, source_item_id FROM fact_events WHERE id IN ({marks})", list(rowids)).fetchall())
        sink["rankings"] = {path: [ids[r] for r in ranked[:20]] for path, ranked in rankings.items()}
        return rankings

    retriever._recall = recording


def run_conversation(sample: dict, embedder: MiniLMEmbedder, folder: Path, l2_stats: list[float],
                     systems: tuple[str, ...], latencies: list[float],
                     misses: list[dict] | None = None) -> dict[str, list[dict]]:
    items = payloads(sample)
    memory = Memory.open(folder / "magi", embedder=embedder)
    memory.ingest_many(items)
    memory.process_pending(queues=("embedding",))   # L1 alone first; L2 (rules) is projected below
    now = max(p["occurred_at"] for p in items) + 86400  # the day of the last session, as the question date
    speaker_text = [(turn["source_item_id"], turn["chat"]["text"]) for turn in items]   # "Name: text"
    vectors = embedder.embed([text for _, text in speaker_text])
    baselines = Baselines(folder, speaker_text, vectors)
    results: dict[str, list[dict]] = {system: [] for system in systems}
    questions = [q for q in sample["qa"] if q["category"] in (1, 2, 3, 4) and evidence_ids(q["evidence"])]
    question_vectors = embedder.embed([q["question"] for q in questions])
    recorded: dict = {}
    if misses is not None:
        record_rankings(memory, recorded)

    def ask(system: str, mem: Memory, timed: bool = False) -> None:
        for question in questions:
            started = time.perf_counter()
            pack = mem.query(question["question"], now=now, limit=max(KS), tz=timezone.utc)  # dates are UTC
            if timed:
                latencies.append((time.perf_counter() - started) * 1000)
            ranked = ranked_items(pack.findings)
            evidence = evidence_ids(question["evidence"])
            results[system].append({**score(ranked, evidence), "category": question["category"],
                                    "mode": pack.query_mode})
            if misses is not None and system == "magi":
                misses.append({"sample": sample["sample_id"], "question": question["question"],
                               "category": question["category"], "evidence": evidence, "ranked": ranked[:20],
                               "mode": pack.query_mode, "trace": pack.trace,
                               "rankings": recorded.get("rankings", {})})

    ask("magi", memory, timed=True)
    if "magi_l2" in systems:
        started = time.perf_counter()
        projected = memory.process_pending(queues=("l2",))["l2"]
        l2_stats[0] += projected["events"]
        l2_stats[1] += time.perf_counter() - started
        ask("magi_l2", memory)
    memory.close()
    if "magi_speaker" in systems:
        with_field = Memory.open(folder / "magi_speaker", embedder=embedder)
        with_field.ingest_many(payloads(sample, speaker_field=True))
        with_field.process_pending(queues=("embedding",))
        ask("magi_speaker", with_field)
        with_field.close()
    for question, qvec in zip(questions, question_vectors, strict=True):
        evidence = evidence_ids(question["evidence"])
        extra = {"category": question["category"]}
        results["bm25"].append({**score(baselines.bm25(question["question"], max(KS)), evidence), **extra})
        results["dense"].append({**score(baselines.dense(qvec, max(KS)), evidence), **extra})
    return results


def summarise(rows: list[dict]) -> dict[str, float]:
    keys = [k for k in rows[0] if "@" in k] if rows else []
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in keys} | {"questions": len(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev",
                        help="dev (default) for tuning; test or all only to report")
    parser.add_argument("--conversations", help="comma-separated indexes (overrides --split)")
    parser.add_argument("--by-category", action="store_true", help="also report each category")
    parser.add_argument("--quick", action="store_true", help="the headline run and the baselines only")
    parser.add_argument("--misses", type=Path, help="write every headline question's ranking and trace here "
                        "(JSON lines) for benchmarks/locomo_misses.py")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="override a tuning constant for this run (dev ablations), e.g. "
                        "magi_desktop.core.retrieval.slots.SESSION_SLOTS=0")
    args = parser.parse_args()
    for assignment in args.set:
        target, value = assignment.split("=", 1)
        module, name = target.rsplit(".", 1)
        setattr(importlib.import_module(module), name, ast.literal_eval(value))
    systems = QUICK_SYSTEMS if args.quick else SYSTEMS
    misses: list[dict] | None = [] if args.misses else None
    data = json.loads(DATA.read_text("utf-8"))
    if args.conversations:
        chosen = {"custom": [int(i) for i in args.conversations.split(",")]}
    elif args.split == "all":
        chosen = {name: list(r) for name, r in SPLITS.items()}
    else:
        chosen = {args.split: list(SPLITS[args.split])}
    embedder = MiniLMEmbedder(idle_seconds=None)
    started = time.perf_counter()
    report: dict = {"benchmark": "locomo", "categories": [1, 2, 3, 4]}
    for split, indexes in chosen.items():
        collected: dict[str, list[dict]] = {system: [] for system in systems}
        l2_stats = [0.0, 0.0]   # events projected, seconds
        latencies: list[float] = []
        for index in indexes:
            with tempfile.TemporaryDirectory() as tmp:
                found = run_conversation(data[index], embedder, Path(tmp), l2_stats, systems, latencies, misses)
                for system, rows in found.items():
                    collected[system].extend(rows)
        report[split] = {system: summarise(rows) for system, rows in collected.items()}
        report[split]["query_ms"] = {"p50": round(float(np.percentile(latencies, 50)), 2),
                                     "p95": round(float(np.percentile(latencies, 95)), 2)}
        if "magi_l2" in systems:
            report[split]["l2_change"] = {key: round(report[split]["magi_l2"][key] - report[split]["magi"][key], 4)
                                          for key in report[split]["magi"] if "@" in key}
            report[split]["l2_projection"] = {"events": int(l2_stats[0]),
                                              "events_per_second": round(l2_stats[0] / max(l2_stats[1], 1e-9), 1)}
        if args.by_category:
            report[split]["by_category"] = {
                str(cat): {system: summarise([r for r in rows if r["category"] == cat])
                           for system, rows in collected.items()}
                for cat in (1, 2, 3, 4)}
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.misses:
        args.misses.write_text("".join(json.dumps(row) + "\n" for row in misses), "utf-8")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
