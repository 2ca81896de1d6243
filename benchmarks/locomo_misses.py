"""Where LoCoMo evidence is lost (issue 17, item 7). Prints one JSON line.

Reads what ``locomo.py --misses FILE`` wrote (every headline question: its evidence turns, the pack's
ranking, each path's ranking before fusion, the trace) and counts, over the evidence turns missing from
the top 10: how many a single path (BM25 or the vectors) had in its own top 10 (lost in fusion), how
many were ranked 11–20, how many no path found at all; how many sessions the top 10 holds, how often
five or more of its turns come from one session, session_all@10 of the questions whose evidence spans
two or more sessions; and the share of top-10 places taken by short turns (at most 4 content words)
that share no word with the question.

    .venv/bin/python benchmarks/locomo.py --quick --misses /tmp/misses.jsonl
    .venv/bin/python benchmarks/locomo_misses.py /tmp/misses.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.locomo import DATA, session_of, turn_text
from magi_desktop.core.retrieval.terms import content_terms, stem, stems

TOP = 10


def turn_texts() -> dict[tuple[str, str], str]:
    texts = {}
    for sample in json.loads(DATA.read_text("utf-8")):
        for turns in sample["conversation"].values():
            if isinstance(turns, list):
                for turn in turns:
                    texts[(sample["sample_id"], turn["dia_id"])] = turn_text(turn)   # without the "Name:"
    return texts


def analyse(rows: list[dict], texts: dict[tuple[str, str], str]) -> dict:
    missed, lost = 0, Counter()
    sessions_in_top, crowded, multi = [], 0, []
    places, short = 0, 0
    for row in rows:
        top = row["ranked"][:TOP]
        per_session = Counter(session_of(t) for t in top)
        sessions_in_top.append(len(per_session))
        crowded += bool(per_session) and max(per_session.values()) >= 5
        wanted = {session_of(e) for e in row["evidence"]}
        if len(wanted) >= 2:
            multi.append(float(wanted <= set(per_session)))
        for turn in row["evidence"]:
            if turn in top:
                continue
            missed += 1
            in_path = [p for p in ("bm25", "vector") if turn in row["rankings"].get(p, [])[:TOP]]
            lost.update(in_path)
            lost["bm25_or_vector"] += bool(in_path)
            lost["ranked_11_20"] += turn in row["ranked"][TOP:2 * TOP]
            lost["no_path"] += not any(turn in ranked for ranked in row["rankings"].values())
        asked = {stem(t) for t in row["trace"]["terms"]}
        for turn in top:
            text = texts.get((row["sample"], turn), "")
            places += 1
            short += len(content_terms(text)) <= 4 and not (asked & stems(text))
    n = max(len(rows), 1)
    return {
        "questions": len(rows), "missed_evidence_turns": missed,
        "missed_share": {key: round(value / max(missed, 1), 3) for key, value in sorted(lost.items())},
        "sessions_in_top10": round(sum(sessions_in_top) / n, 2),
        "questions_with_5_turns_of_one_session": round(crowded / n, 3),
        "multi_session_questions": len(multi),
        "multi_session_session_all@10": round(sum(multi) / max(len(multi), 1), 3),
        "short_unmatched_top10_share": round(short / max(places, 1), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("misses", type=Path, help="the file locomo.py --misses wrote")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.misses.read_text("utf-8").splitlines() if line.strip()]
    print(json.dumps({"benchmark": "locomo_misses", **analyse(rows, turn_texts())}))


if __name__ == "__main__":
    main()
