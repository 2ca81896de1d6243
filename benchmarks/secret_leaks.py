"""Secret redaction: leak rates per rule family, through every way in, and the benign rate (issue 16).

    .venv/bin/python benchmarks/secret_leaks.py [--forms 4] [--gitleaks PATH/TO/gitleaks [--per-rule 4] [--drawn]]

Prints one JSON line. The corpus is the committed one (tests/fixtures/secrets: fake secrets of ~120
families of the public rule sets, see its ATTRIBUTION.md). Each secret is written beside its keyword
(``keyworded``: assignment forms of config files and languages) and alone in a sentence (``bare``), and
every text is sent every way the privacy test sends secrets (chat as user / assistant / tool, a browser
visit's URL and title and item id, a terminal command, a calendar event, a git commit, a tool run's input,
output and error, an entity hint, a tag); after embedding, L2, extraction and L3 have run, every column of
every table, the full-text terms and the export are searched for it. ``text`` rates are redact_text over
every form (all 36); ``ingest`` rates send ``--forms`` of them per secret every way in. Target: 0 keyworded
leaks; the bare rate is reported (a bare 32-hex key cannot be told from a hash). The benign corpus
(commit SHAs, UUIDs, hashes in URLs, ``max_tokens=512``, versions, base64 images, key-like names with
ordinary values) is sent as chat, command and commit: the share changed is the benign rate (target ≤ 1%).

``--gitleaks PATH`` also reads gitleaks' own rule tests from the user's checkout (a work tree or a bare
git directory; nothing of it is stored here, benchmarks/gitleaks_tests.py): the strings each rule must find
(``tps``) and must not (``fps``) in ``cmd/generate/config/rules/*.go``. A tp is *keyworded* when a key-like
word or the rule's keyword stands outside its secret (``slack_token = "xoxb-…"``), *bare* otherwise; the
secret is what the rule captures. Reported: keyworded tps leaked by redact_text (all of them) and every
way in (``--per-rule`` per rule), bare tps leaked, and the fps that are no rule's tp which redaction
changed (gitleaks' false positives: what a memory would blank although gitleaks would not report it), per
family and by the family of what was redacted. ``--drawn`` adds samples drawn from each regex of
``config/gitleaks.toml`` with Hypothesis' ``from_regex`` (benchmarks/gitleaks_samples.py): an adversarial
reading of the regexes (a keyword inside another word, ``||`` between the name and the value; a drawn
secret that is a typed filler such as ``000…`` is skipped), not strings anyone wrote.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from payloads import chat, sensor  # noqa: E402
from reliability.secret_families import KEYWORDED_FORMS, bare, keyworded, load_benign, load_corpus  # noqa: E402
from reliability.test_privacy import DAY, START, _Prepared, every_stored_text, ingest_everywhere  # noqa: E402

from magi_desktop.core import Memory  # noqa: E402
from magi_desktop.core.redact import RULES_VERSION, redact_text  # noqa: E402


def _rate(leaked: int, total: int) -> float:
    return round(100 * leaked / total, 2) if total else 0.0


def text_level(items: list[tuple[str, str, str]]) -> tuple[Counter, Counter]:
    """(family, text, secret) → leaks and totals per family, with redact_text alone."""
    leaks, totals = Counter(), Counter()
    for family, text, secret in items:
        totals[family] += 1
        leaks[family] += secret in redact_text(text)
    return leaks, totals


def through_ingest(items: list[tuple[str, str, str]], folder: Path) -> tuple[Counter, Counter, float]:
    """The same, every way in, after the background work, searching everything stored."""
    started = time.perf_counter()
    memory = Memory.open(folder, embedder="hashing")
    try:
        for index, (_, text, _) in enumerate(items):
            ingest_everywhere(memory, index, text, text.startswith(("https://", "http://")))
            if index % 200 == 199:
                memory.process_pending()
        memory.process_pending()
        for index in range(len(items)):
            memory.end_session(f"s{index}")
        memory.extract_facts(now=START + 30 * DAY)
        memory.run_due(now=START + 40 * DAY)
        memory.process_pending()
        export = folder / "export.jsonl"
        memory.export_jsonl(export)
        haystacks = every_stored_text(memory) | {"export": export.read_text("utf-8")}
    finally:
        memory.close()
    prepared = _Prepared(haystacks)
    leaks, totals = Counter(), Counter()
    for family, _, secret in items:
        totals[family] += 1
        leaks[family] += bool(prepared.find(secret))
    return leaks, totals, time.perf_counter() - started


def summary(leaks: Counter, totals: Counter) -> dict:
    leaked = {family: f"{leaks[family]}/{totals[family]}" for family in sorted(totals) if leaks[family]}
    return {"texts": sum(totals.values()), "leaked": sum(leaks.values()),
            "leak_percent": _rate(sum(leaks.values()), sum(totals.values())), "families": len(totals),
            "families_leaking": leaked}


def benign(folder: Path) -> dict:
    texts = load_benign()
    changed_text = [t for t in texts if redact_text(t) != t]
    memory = Memory.open(folder, embedder="hashing")
    try:
        changed = 0
        for index, text in enumerate(texts):
            results = memory.ingest_many([
                chat(text, session="benign", at=START + index),
                sensor("run_command", {"command": text}, source="terminal", at=START + index, item=f"b{index}"),
                sensor("git_commit", {"repo": "/src", "message": text}, source="git", at=START + index,
                       item=f"g{index}")])
            metas = [memory.get_event(r.event_id)["metadata"] for r in results]
            changed += any("redactions" in meta for meta in metas)
    finally:
        memory.close()
    return {"texts": len(texts), "redacted_text": len(changed_text), "redacted_ingest": changed,
            "percent_text": _rate(len(changed_text), len(texts)), "percent_ingest": _rate(changed, len(texts))}


def gitleaks_tests(checkout: Path, per_rule: int, folder: Path) -> dict:
    """gitleaks' own rule tests (tps / fps of cmd/generate/config/rules/*.go), read from ``checkout``."""
    from benchmarks.gitleaks_tests import rule_tests

    tests = rule_tests(checkout)
    tps = [t for t in tests.strings if t.kind == "tp" and t.secret]
    keyworded_tps = [(t.rule, t.text, t.secret) for t in tps if t.keyworded]
    bare_tps = [(t.rule, t.text, t.secret) for t in tps if not t.keyworded]
    # An fp of one rule may be another rule's tp (Cloudflare's global keys): only strings no rule finds count.
    tp_texts = {t.text for t in tps}
    tp_secrets = {t.secret for t in tps if len(t.secret) >= 8}
    fps = [t for t in tests.strings if t.kind == "fp" and t.text.strip() and t.text not in tp_texts
           and not any(secret in t.text for secret in tp_secrets)]
    redacted, by_kind, per_family, totals = [], Counter(), Counter(), Counter()
    for t in fps:
        totals[t.file] += 1
        counts: Counter = Counter()
        if redact_text(t.text, counts) != t.text:
            redacted.append(t)
            per_family[t.file] += 1
            by_kind.update(counts.keys())
    sampled, seen = [], Counter()
    for item in keyworded_tps:
        if seen[item[0]] < per_rule:
            seen[item[0]] += 1
            sampled.append(item)
    ingest_leaks, ingest_totals, seconds = through_ingest(sampled, folder / "gitleaks")
    generic = [t for t in fps if t.file == "generic"]
    return {
        "checkout_revision": tests.revision, "strings": len(tests.strings), "tps": len(tps),
        "tps_without_a_secret": sum(1 for t in tests.strings if t.kind == "tp" and not t.secret),
        "expressions_skipped": tests.skipped,
        "keyworded_tps_text": summary(*text_level(keyworded_tps)),
        "keyworded_tps_ingest": summary(ingest_leaks, ingest_totals) | {"per_rule": per_rule,
                                                                         "seconds": round(seconds, 1)},
        "bare_tps_text": summary(*text_level(bare_tps)),
        "fps_text": {"texts": len(fps), "redacted": len(redacted), "percent": _rate(len(redacted), len(fps)),
                     "generic": f"{sum(1 for t in redacted if t.file == 'generic')}/{len(generic)}",
                     "families_redacted": {f: f"{per_family[f]}/{totals[f]}" for f in sorted(per_family)},
                     "redacted_by": dict(by_kind.most_common())},
    }


def regex_drawn(config: Path, per_rule: int) -> dict:
    """Samples drawn from each rule's regex of a gitleaks.toml (Hypothesis' adversarial reading of it)."""
    from benchmarks.gitleaks_samples import samples

    drawn, skipped = samples(config, per_rule)
    def form(s):
        quote = "'" if '"' in s.secret else '"'
        return f"{s.keyword}_api_token = {quote}{s.secret}{quote}"
    return {"config": str(config), "rules": len({s.rule for s in drawn}), "samples": len(drawn),
            "sampler": "hypothesis.strategies.from_regex (derandomised, printable ASCII)", "skipped": skipped,
            "in_gitleaks_sample_form_text": summary(*text_level([(s.rule, form(s), s.secret) for s in drawn])),
            "drawn_match_text": summary(*text_level([(s.rule, s.match, s.secret) for s in drawn])),
            "bare_text": summary(*text_level([(s.rule, f"saw {s.secret} in the log", s.secret) for s in drawn]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forms", type=int, default=4, help="keyworded forms per secret sent every way in")
    parser.add_argument("--gitleaks", type=Path,
                        help="a gitleaks checkout (a work tree or a bare git directory): its rules' own tests too")
    parser.add_argument("--per-rule", type=int, default=4, help="keyworded tps per gitleaks rule sent every way in")
    parser.add_argument("--drawn", action="store_true",
                        help="with --gitleaks: also samples drawn from config/gitleaks.toml's regexes")
    parser.add_argument("--skip-corpus", action="store_true", help="only the gitleaks measures")
    args = parser.parse_args()
    corpus = load_corpus()
    all_keyworded = [(s.family, t, s.secret) for s in corpus for t in keyworded(s)]
    all_bare = [(s.family, t, s.secret) for s in corpus for t in bare(s)]
    some_keyworded, some_bare = [], []
    for i, s in enumerate(corpus):
        texts = keyworded(s)
        some_keyworded += [(s.family, texts[(i * args.forms + j) % len(texts)], s.secret) for j in range(args.forms)]
        some_bare.append((s.family, bare(s)[i % 3], s.secret))
    with tempfile.TemporaryDirectory(prefix="magi-secrets-") as tmp:
        folder = Path(tmp)
        result = {"benchmark": "secret_leaks", "rules_version": RULES_VERSION}
        if not args.skip_corpus:
            k_leaks, k_totals, k_seconds = through_ingest(some_keyworded, folder / "keyworded")
            b_leaks, b_totals, b_seconds = through_ingest(some_bare, folder / "bare")
            result |= {
                "corpus_samples": len(corpus), "families": len({s.family for s in corpus}),
                "keyworded_forms": len(KEYWORDED_FORMS),
                "keyworded_text": summary(*text_level(all_keyworded)),
                "keyworded_ingest": summary(k_leaks, k_totals) | {"seconds": round(k_seconds, 1)},
                "bare_text": summary(*text_level(all_bare)),
                "bare_ingest": summary(b_leaks, b_totals) | {"seconds": round(b_seconds, 1)},
                "benign": benign(folder / "benign"),
            }
        if args.gitleaks:
            result["gitleaks_tests"] = gitleaks_tests(args.gitleaks, args.per_rule, folder)
            if args.drawn:
                from benchmarks.gitleaks_tests import CONFIG, Checkout

                config = folder / "gitleaks.toml"
                config.write_text(Checkout(args.gitleaks).read(CONFIG), encoding="utf-8")
                result["gitleaks_regex_drawn"] = regex_drawn(config, args.per_rule) | {"config": CONFIG}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
