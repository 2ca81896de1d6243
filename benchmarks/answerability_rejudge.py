"""Re-judge an ``answerability.py --dump`` with the current ``core/retrieval/sufficiency.py`` (no rebuild, no query).

The dump holds each question's findings as the engine returned them (text, speaker, source, the question's
similarity to each L1 event) and the persons it named; this rebuilds the findings, asks the decision again
and prints one JSON line per run, split into the dev halves the thresholds are tuned and checked on
(conversations 0–2 to tune, 3–4 to check) and in total. The retrieval is the dump's, so only changes to the
decision show; a change to retrieval needs a fresh ``answerability.py`` run.

    .venv/bin/python benchmarks/answerability.py --keep /tmp/memories --dump dev.jsonl    # once
    .venv/bin/python benchmarks/answerability_rejudge.py dev.jsonl                       # after each change
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.locomo import DATA
from magi_desktop.core.retrieval.pack import Finding
from magi_desktop.core.retrieval.sufficiency import Asked, judge
from magi_desktop.core.retrieval.temporal import parse_temporal

HALVES = {"tune (0-2)": range(0, 3), "check (3-4)": range(3, 5)}


def finding_of(row: dict, index: int) -> Finding:
    return Finding(layer=row["layer"], text=row["text"], occurred_at=row.get("occurred_at", 0.0),
                   source=row["source"], source_item_id=None, session_id=None, author=row["author"],
                   evidence_class="", score=0.0, event_id=f"e{index}", speaker=row.get("speaker"),
                   status=row.get("status"), kind=row.get("kind"))


def rejudge(question: dict) -> bool:
    """Is the pack insufficient under the current decision?"""
    findings = [finding_of(row, i) for i, row in enumerate(question["findings"])]
    now = question.get("now", 0.0)
    fallback = question.get("window_fallback", any(not row["window"] for row in question["findings"]))
    named = [(0, "person", person) for person in question.get("persons") or ()]
    asked = Asked.of(question["question"], named, parse_temporal(question["question"], now), fallback)
    similarity = {f.event_id: row["similarity"] for f, row in zip(findings, question["findings"], strict=True)
                  if row["similarity"] is not None}
    judge(findings, asked, similarity, question["question"])
    return not any(f.answers for f in findings)


def load(path: Path) -> list[dict]:
    samples = [sample["sample_id"] for sample in json.loads(DATA.read_text("utf-8"))]
    rows, run, conversation = [], None, None
    for line in path.open(encoding="utf-8"):
        row = json.loads(line)
        if "run" in row:
            run, conversation = row["run"], samples.index(row["sample"])
            continue
        rows.append({**row, "run": run, "conversation": conversation})
    return rows


def rates(rows: list[dict], key: str) -> dict:
    adversarial = [r[key] for r in rows if r["category"] == 5]
    answerable = [r[key] for r in rows if r["category"] != 5]
    return {"cat5_insufficient": round(sum(adversarial) / max(len(adversarial), 1), 3),
            "cat1_4_wrong_insufficient": round(sum(answerable) / max(len(answerable), 1), 3),
            "questions": [len(adversarial), len(answerable)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump", type=Path)
    parser.add_argument("--as-dumped", action="store_true", help="the dump's own decisions (a check of the tool)")
    args = parser.parse_args()
    rows = load(args.dump)
    key = "insufficient" if args.as_dumped else "rejudged"
    for row in rows:
        row["rejudged"] = rejudge(row)
    report: dict = {"benchmark": "answerability_rejudge", "decisions": key}
    for run in sorted({r["run"] for r in rows}):
        of_run = [r for r in rows if r["run"] == run]
        report[run] = {name: rates([r for r in of_run if r["conversation"] in half], key)
                       for name, half in HALVES.items()}
        report[run]["all"] = rates(of_run, key)
        report[run]["changed"] = sum(r["rejudged"] != r["insufficient"] for r in of_run)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
