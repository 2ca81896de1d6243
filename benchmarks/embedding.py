"""MiniLM embedding: onnxruntime against numpy in one run, peak RSS by batch, a question's latency by threads.

Prints one JSON line:
  throughput   sentences/s of each forward pass on the workload's stored texts (benchmarks/workload.py),
               alternating runs, best of ``--repeat`` each; the onnx/numpy ratio (issue 20 target: >= 2);
  rss          peak RSS (MB) of a fresh process embedding ``--long`` texts of 256 tokens, per backend and
               token budget per batch (``batch_tokens``; rows per batch also capped at 32);
  question     p50/p95 (ms) of one question's embedding with 1 and 2 threads while ``--load`` busy processes
               compete for the cores (numpy: BLAS threads; onnx: intra-op threads), alternating;
  load_average the machine's 1-minute load when the run started and ended.

    .venv/bin/python benchmarks/embedding.py --sentences 1024 --repeat 3 --questions 200 --load 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.workload import payloads

# Peak RSS from VmHWM (Linux): ru_maxrss would carry the parent's peak across exec.
_RSS_SCRIPT = """
import json, re, sys
from magi_desktop.core.embed.minilm import MiniLMEmbedder

def peak_mb():
    with open("/proc/self/status") as status:
        return round(int(re.search(r"VmHWM:\\s+(\\d+)", status.read()).group(1)) / 1024)

backend, tokens, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
embedder = MiniLMEmbedder(idle_seconds=None, backend=backend, batch_tokens=tokens, threads=2)
embedder.embed(["load the model"])
loaded = peak_mb()
texts = [f"text {i} " + "a fairly long sentence about the things I did today and " * 30 for i in range(count)]
embedder.embed(texts)
print(json.dumps({"loaded_mb": loaded, "peak_mb": peak_mb()}))
"""


def workload_texts(n: int) -> list[str]:
    """The contents the workload's events are stored with (what the embedding queue embeds)."""
    from magi_desktop.core import Memory

    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory.open(Path(tmp) / "data", embedder="hashing")
        memory.ingest_many(list(payloads(n * 2)))
        rows = memory.db.reader().execute("SELECT content FROM fact_events WHERE content != '' ORDER BY id "
                                          "LIMIT ?", (n,)).fetchall()
        memory.close()
    return [row[0] for row in rows]


def bench_throughput(texts: list[str], repeat: int) -> dict:
    from magi_desktop.core.embed.minilm import MiniLMEmbedder

    embedders = {"numpy": MiniLMEmbedder(idle_seconds=None, backend="numpy"),
                 "onnx": MiniLMEmbedder(idle_seconds=None, backend="onnx"),
                 "onnx_1_thread": MiniLMEmbedder(idle_seconds=None, backend="onnx", threads=1)}
    for embedder in embedders.values():
        embedder.embed(texts[:32])                                   # load outside the timing
    best = dict.fromkeys(embedders, float("inf"))
    for _ in range(repeat):
        for name, embedder in embedders.items():
            started = time.perf_counter()
            embedder.embed(texts)
            best[name] = min(best[name], time.perf_counter() - started)
    result: dict[str, object] = {"sentences": len(texts), "repeat": repeat,
                                 "onnx_threads": embedders["onnx"].threads}
    for name, seconds in best.items():
        result[f"{name}_per_s"] = round(len(texts) / seconds, 1)
    result["onnx_to_numpy"] = round(best["numpy"] / best["onnx"], 2)
    numpy_vectors, onnx_vectors = embedders["numpy"].embed(texts), embedders["onnx"].embed(texts)
    result["min_cosine_onnx_numpy"] = round(float((numpy_vectors * onnx_vectors).sum(axis=1).min()), 7)
    for embedder in embedders.values():
        embedder.release()
    return result


def bench_rss(budgets: list[int], count: int) -> dict:
    out = {}
    for backend in ("numpy", "onnx"):
        for tokens in budgets:
            done = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, backend, str(tokens), str(count)],
                                  capture_output=True, text=True, check=True, env=os.environ.copy())
            out[f"{backend}_{tokens}"] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _burn(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def bench_question(count: int, load: int) -> dict:
    """One question embedded ``count`` times per setting while ``load`` processes keep the cores busy."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from magi_desktop.core.embed import minilm_onnx
    from magi_desktop.core.embed.minilm import MiniLMEmbedder

    numpy_model = MiniLMEmbedder(idle_seconds=None, backend="numpy")
    onnx_model = MiniLMEmbedder(idle_seconds=None, backend="onnx")
    numpy_model.embed(["warm up"])
    onnx_model.embed(["warm up"])
    tokenizer = onnx_model._tokenizer
    assert tokenizer is not None
    ids = np.array([tokenizer.encode("what did I buy at the market last Saturday?").ids], dtype=np.int64)
    mask = np.ones_like(ids)
    sessions = {threads: minilm_onnx.open_session(minilm_onnx.graph_path(), threads) for threads in (1, 2)}
    weights = numpy_model._engine.weights                            # type: ignore[union-attr]

    def numpy_run(threads: int) -> None:
        with threadpool_limits(limits=threads, user_api="blas"):
            weights.encode(ids, mask)

    settings = {"numpy_1_thread": lambda: numpy_run(1), "numpy_2_threads": lambda: numpy_run(2),
                "onnx_1_thread": lambda: minilm_onnx.run(sessions[1], ids, mask),
                "onnx_2_threads": lambda: minilm_onnx.run(sessions[2], ids, mask),
                "embedder_question": lambda: onnx_model.embed(["what did I buy at the market last Saturday?"])}
    times: dict[str, list[float]] = {name: [] for name in settings}
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(load)]
    for burner in burners:
        burner.start()
    try:
        time.sleep(0.5)
        for _ in range(count):
            for name, run in settings.items():
                started = time.perf_counter()
                run()
                times[name].append((time.perf_counter() - started) * 1000)
    finally:
        stop.set()
        for burner in burners:
            burner.join()
    numpy_model.release()
    onnx_model.release()
    out: dict[str, object] = {"questions": count, "load_processes": load}
    for name, values in times.items():
        values.sort()
        out[name] = {"p50_ms": round(statistics.median(values), 1),
                     "p95_ms": round(values[int(0.95 * (len(values) - 1))], 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1024, help="workload texts for the throughput")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per forward pass (best is kept)")
    parser.add_argument("--budgets", default="1024,2048,4096,8192", help="batch token budgets for the RSS")
    parser.add_argument("--long", type=int, default=64, help="long texts embedded for the RSS")
    parser.add_argument("--questions", type=int, default=200, help="question embeddings per thread setting")
    parser.add_argument("--load", type=int, default=2, help="busy processes while the questions are timed")
    parser.add_argument("--skip", default="", help="comma-separated parts to leave out: throughput,rss,question")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    result: dict[str, object] = {"load_average_start": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
    from magi_desktop.core.embed import minilm_onnx

    minilm_onnx.ensure_graph()                                       # a build is not part of any timing
    if "throughput" not in skip:
        result["throughput"] = bench_throughput(workload_texts(args.sentences), args.repeat)
    if "rss" not in skip:
        result["rss"] = bench_rss([int(b) for b in args.budgets.split(",")], args.long)
    if "question" not in skip:
        result["question"] = bench_question(args.questions, args.load)
    result["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
