"""all-MiniLM-L6-v2 as an onnxruntime graph, built offline from the packaged safetensors weights.

The graph is the same BERT forward pass as :mod:`.minilm`'s numpy one (token + position embeddings,
6 post-norm layers with exact-erf GELU, mean pooling); onnxruntime runs it 2–3× faster (fused
kernels, no Python between layers). It is written once into the user's cache folder — atomically,
and only after its vectors were checked against the numpy pass — named after the weights it came
from, so new weights (a reinstalled model package) or a new builder get a new file and a damaged
file is rebuilt. ``python -m magi_desktop.core.embed.minilm_onnx`` builds it at install time.

Nothing here downloads: the weights are the installed package's, the graph is built with the
``onnx`` package's helpers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .minilm import model_dir, read_safetensors

if TYPE_CHECKING:
    import onnxruntime

log = logging.getLogger(__name__)

# Bumped whenever the graph changes, so an old cached graph is not reused.
GRAPH_VERSION = 2
OPSET = 17  # LayerNormalization is an ONNX op from 17 on
# Sentences whose vectors a freshly built graph must reproduce before it is kept (long and short,
# Chinese, padding inside a batch): the numpy pass is the reference it is checked against.
_PROBES = ("hello", "I bought a pressure cooker at the market on Saturday and used it for rice.",
           "我新买了一个空气炸锅", "The stock market fell sharply today " * 12)
MIN_PROBE_COSINE = 0.99999


class GraphUnavailable(RuntimeError):
    """onnxruntime or onnx is not installed, or the graph could not be built or loaded."""


def cache_dir() -> Path:
    """``$MAGI_CACHE_DIR`` if set, else the platform's user cache folder for Magi."""
    override = os.environ.get("MAGI_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    import platformdirs

    from ..paths import APP_NAME

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def graph_path(directory: Path | None = None, cache: Path | None = None) -> Path:
    """Where the graph for these weights lives: named after the weights' size and modification time
    and the builder's version (hashing 90 MB at every start would cost more than the check is worth)."""
    directory = directory or model_dir()
    weights = directory / "model.safetensors"
    stat = weights.stat()
    key = f"{weights.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{GRAPH_VERSION}|{OPSET}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return (cache or cache_dir()) / "models" / f"all-MiniLM-L6-v2-{digest}.onnx"


def build_model(directory: Path) -> Any:
    """The ONNX ModelProto of the model in ``directory`` (inputs input_ids, attention_mask: int64
    (batch, length); output: the mean-pooled, not yet normalised, sentence vectors (batch, 384))."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    config = json.loads((directory / "config.json").read_text("utf-8"))
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    eps = float(config["layer_norm_eps"])
    tensors = read_safetensors(directory / "model.safetensors")
    nodes: list[Any] = []
    initializers: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def weight(name: str, transpose: bool = False) -> str:
        value = tensors[name].astype(np.float32)
        return const(name, value.T if transpose else value)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        return node("LayerNormalization", [x, weight(prefix + ".weight"), weight(prefix + ".bias")], out,
                    axis=-1, epsilon=eps)

    const("zero_1d", np.array([0], dtype=np.int64))
    const("axes_0", np.array([0], dtype=np.int64))
    const("eps_pool", np.array(1e-9, dtype=np.float32))
    const("axes_1", np.array([1], dtype=np.int64))
    const("axes_2", np.array([2], dtype=np.int64))
    const("index_1", np.array([1], dtype=np.int64))

    # Embeddings: word + position (0..length-1) + token type 0.
    node("Shape", ["input_ids"], "ids_shape")
    node("Gather", ["ids_shape", "index_1"], "length_1d", axis=0)
    node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "words", axis=0)
    node("Slice", [weight("embeddings.position_embeddings.weight"), "zero_1d", "length_1d", "axes_0"], "places")
    node("Add", ["words", "places"], "words_places")
    const("token_type_0", tensors["embeddings.token_type_embeddings.weight"][0].astype(np.float32))
    node("Add", ["words_places", "token_type_0"], "embedded")
    x = layer_norm("embedded", "embeddings.LayerNorm", "embeddings/out")

    node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    node("Cast", ["attention_mask"], "mask_i32", to=TensorProto.INT32)     # Attention's mask_index

    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        x = _fused_layer(node, const, weight, tensors, x, p, i, heads, eps)

    # Mean pooling over the tokens the mask keeps.
    node("Unsqueeze", ["mask_f", "axes_2"], "mask_3d")
    node("ReduceSum", [node("Mul", [x, "mask_3d"], "masked"), "axes_1"], "summed", keepdims=0)
    node("ReduceSum", ["mask_3d", "axes_1"], "counts", keepdims=0)
    node("Div", ["summed", node("Max", ["counts", "eps_pool"], "counts_clipped")], "sentence_embedding")

    graph = helper.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"])],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        initializers)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets,
                              producer_name="magi-desktop", producer_version=str(GRAPH_VERSION))
    onnx.checker.check_model(model, full_check=True)
    return model


def _fused_layer(node: Any, const: Any, weight: Any, tensors: dict[str, np.ndarray], x: str, p: str, i: int,
                 heads: int, eps: float) -> str:
    """One BERT encoder layer (post-norm) in onnxruntime's fused CPU kernels: com.microsoft Attention (Q, K and V
    in one GEMM), SkipLayerNormalization (residual + bias + LayerNorm), BiasGelu (exact, erf): the arithmetic of
    ``_Weights.encode`` without the reshapes and temporaries between the steps."""
    qkv_w = np.concatenate([tensors[p + f"attention.self.{n}.weight"].T for n in ("query", "key", "value")], axis=1)
    qkv_b = np.concatenate([tensors[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
    context = node("Attention", [x, const(p + "qkv.weight", qkv_w.astype(np.float32)),
                                 const(p + "qkv.bias", qkv_b.astype(np.float32)), "mask_i32"],
                   f"l{i}/context", domain="com.microsoft", num_heads=heads,
                   mask_filter_value=float(np.finfo(np.float32).min))
    projected = node("MatMul", [context, weight(p + "attention.output.dense.weight", transpose=True)],
                     f"l{i}/attended")
    x = node("SkipLayerNormalization", [projected, x, weight(p + "attention.output.LayerNorm.weight"),
                                        weight(p + "attention.output.LayerNorm.bias"),
                                        weight(p + "attention.output.dense.bias")],
             f"l{i}/attention_out", domain="com.microsoft", epsilon=eps)
    inner = node("MatMul", [x, weight(p + "intermediate.dense.weight", transpose=True)], f"l{i}/inner")
    activated = node("BiasGelu", [inner, weight(p + "intermediate.dense.bias")], f"l{i}/gelu", domain="com.microsoft")
    out = node("MatMul", [activated, weight(p + "output.dense.weight", transpose=True)], f"l{i}/out")
    return node("SkipLayerNormalization", [out, x, weight(p + "output.LayerNorm.weight"),
                                           weight(p + "output.LayerNorm.bias"), weight(p + "output.dense.bias")],
                f"l{i}/layer_out", domain="com.microsoft", epsilon=eps)


def session_options(threads: int = 1) -> onnxruntime.SessionOptions:
    """One intra-op thread by default: a question's embedding must not wait on a second thread that a
    loaded machine does not schedule (architecture §13; issue 20: p95 1.05 s with two, 11 ms with one)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle pool threads sleep instead of spinning: spinning takes the core a question needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return options


def open_session(path: Path, threads: int = 1) -> onnxruntime.InferenceSession:
    import onnxruntime

    return onnxruntime.InferenceSession(str(path), session_options(threads), providers=["CPUExecutionProvider"])


def run(session: onnxruntime.InferenceSession, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean-pooled vectors (not normalised) for a padded batch, as ``_Weights.encode`` returns them."""
    (pooled,) = session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
    return pooled


def build(directory: Path | None = None, path: Path | None = None) -> Path:
    """Build the graph, check it against the numpy pass, and move it into place atomically.

    Raises :class:`GraphUnavailable` when onnx/onnxruntime are missing or the graph's vectors differ
    from the numpy pass's (then nothing is written)."""
    directory = directory or model_dir()
    path = path or graph_path(directory)
    try:
        import onnx  # noqa: F401  (the builder)
        import onnxruntime  # noqa: F401  (the check)
    except ImportError as exc:
        raise GraphUnavailable(f"onnx and onnxruntime are needed to build the graph: {exc}") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    model = build_model(directory)
    handle, temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(model.SerializeToString())
            file.flush()
            os.fsync(file.fileno())
        del model
        _verify(directory, Path(temporary))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    log.info("built the MiniLM onnxruntime graph at %s", path)
    return path


def _verify(directory: Path, path: Path) -> None:
    """The graph at ``path`` must give the numpy pass's vectors for the probe sentences."""
    from .minilm import MiniLMEmbedder

    numpy_pass = MiniLMEmbedder(directory, idle_seconds=None, backend="numpy")
    onnx_pass = MiniLMEmbedder(directory, idle_seconds=None, backend="onnx", graph=path)
    try:
        expected, got = numpy_pass.embed(_PROBES), onnx_pass.embed(_PROBES)
    finally:
        numpy_pass.release()
        onnx_pass.release()
    worst = float((expected * got).sum(axis=1).min())
    if worst < MIN_PROBE_COSINE:
        raise GraphUnavailable(f"the built graph's vectors differ from the numpy pass (cosine {worst:.7f})")


def ensure_graph(directory: Path | None = None) -> Path:
    """The graph for the installed weights, built now if the cache has none (offline: a few seconds)."""
    directory = directory or model_dir()
    path = graph_path(directory)
    if not path.is_file():
        build(directory, path)
    return path


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(ensure_graph())


if __name__ == "__main__":
    main()
