"""The example models of model_repo/: small, reproducible files, and their reference outputs.

    .venv/bin/python -m model_publishing.examples            # rewrite the files
    .venv/bin/python -m model_publishing.examples --check    # exit 1 if a committed file differs

The ONNX graphs are built with the `onnx` package alone (no framework) from
weights drawn with a fixed seed, so every run writes the same bytes. The
weights are also what the real-Triton tests compute expected outputs from.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from platform_config.paths import DEFAULT_MODEL_REPO as MODEL_REPO

OPSET = 17
IR_VERSION = 8  # readable by every onnxruntime Triton has shipped since 2022


def weights(seed: int, shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def classifier_weights() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """The example classifier: input_tensor FP32 [128] -> output_tensor FP32 [10] (softmax probabilities)."""
    return weights(1, (128, 10)) * np.float32(0.1), weights(2, (10,))


def ranker_weights(version: int) -> npt.NDArray[np.float32]:
    """features FP32 [16] -> score FP32 [1]; each version has its own weights."""
    return weights(100 + version, (16, 1))


def _linear_model(
    names: tuple[str, str, str], w: npt.NDArray[np.float32], b: npt.NDArray[np.float32], activation: onnx.NodeProto
) -> bytes:
    """y = activation(x @ W + B), with a dynamic batch dimension."""
    name, x, y = names
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", [x, "W"], ["xw"]),
            helper.make_node("Add", ["xw", "B"], ["logits"]),
            activation,
        ],
        name,
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", w.shape[0]])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["batch", w.shape[1]])],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
    )
    model = helper.make_model(graph, producer_name="triton-platform", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString(deterministic=True))


def softmax(logits: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return np.asarray(shifted / shifted.sum(axis=-1, keepdims=True), dtype=np.float32)


def expected_output(model: str, version: int, data: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """What each example model returns for `data`, computed with numpy from the same weights."""
    w, b = classifier_weights()
    if model == "classifier":
        return softmax(data @ w + b)
    if model == "preprocess":
        return (data * np.float32(1.0 / 255.0)).astype(np.float32)
    if model == "pipeline":
        return softmax((data * np.float32(1.0 / 255.0)) @ w + b)
    if model == "ranker":
        return np.asarray(1.0 / (1.0 + np.exp(-(data @ ranker_weights(version)))), dtype=np.float32)
    raise KeyError(model)


def files() -> dict[str, bytes]:
    """Every generated file, by path relative to model_repo/."""
    w, b = classifier_weights()
    softmax = helper.make_node("Softmax", ["logits"], ["output_tensor"], axis=-1)
    out = {"classifier/1/model.onnx": _linear_model(("classifier", "input_tensor", "output_tensor"), w, b, softmax)}
    sigmoid = helper.make_node("Sigmoid", ["logits"], ["score"])
    for version in (1, 2):
        out[f"ranker/{version}/model.onnx"] = _linear_model(
            ("ranker", "features", "score"), ranker_weights(version), np.zeros(1, np.float32), sigmoid
        )
    # An ensemble needs a version folder, though it holds nothing.
    out["pipeline/1/.gitkeep"] = b""
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = parser.parse_args()
    stale = []
    for relative, content in files().items():
        path = MODEL_REPO / relative
        if args.check:
            if not path.exists() or path.read_bytes() != content:
                stale.append(relative)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    if stale:
        print(f"model_repo/ is stale: {', '.join(stale)}; run python -m model_publishing.examples", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
