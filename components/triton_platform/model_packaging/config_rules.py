"""What Triton refuses in the base config.pbtxt files themselves, before any stack setting is laid over them.

Pure functions over parsed ModelConfig protobufs; each rule cites the check of Triton 2.51 (tritonserver 24.10,
github.com/triton-inference-server/core at its October 2024 state) that refuses the same config at load time.
Rules that depend on the stack's settings (served versions, batch limits) live in triton_platform/serving/model_fit.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tritonclient.grpc.model_config_pb2 import DataType, ModelConfig, ModelEnsembling, ModelInput, ModelOutput

from triton_platform.model_packaging.tensorrt_llm import tensorrt_llm_problems

ENSEMBLE = "ensemble"

# core src/constants.h and GetBackendTypeFromPlatform / GetBackendType (src/model_config_utils.cc): the
# platforms and backends Triton knows, by the backend they mean. Any other backend is a custom one, which
# Triton lets pair with any platform.
PLATFORM_BACKENDS = {
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
}
KNOWN_BACKENDS = frozenset(PLATFORM_BACKENDS.values())

VARIABLE_DIM = -1
"""triton::common::WILDCARD_DIM: the only dimension below 1 Triton accepts."""


def config_problems(config: ModelConfig) -> list[str]:
    """What Triton refuses in one model's config on its own; a message per problem, naming the key."""
    if config == ModelConfig(name=config.name):
        # With --disable-auto-complete-config (triton_server_args.py) the backend fills in no inputs or
        # outputs, so an empty config cannot describe the model (ONNX Runtime: "configuration expects 0
        # inputs, model provides N", onnxruntime_backend src/onnxruntime.cc).
        return [
            "it is empty; state the model in it (platform or backend, input, output): tritonserver runs "
            "with --disable-auto-complete-config, so nothing is filled in from the model file"
        ]
    return [*_platform_problems(config), *_io_problems(config), *tensorrt_llm_problems(config)]


def _platform_problems(config: ModelConfig) -> Iterator[str]:
    """ValidateModelConfig (core src/model_config_utils.cc): platform, backend and ensemble scheduling agree."""
    platform, backend = config.platform, config.backend
    if platform == ENSEMBLE and backend:
        # "Ensemble model '<name>' must have platform type 'ensemble' and empty backend type"
        yield f"platform 'ensemble' with backend {backend!r}: an ensemble has no backend; remove backend"
    elif platform and backend in KNOWN_BACKENDS and PLATFORM_BACKENDS.get(platform) != backend:
        # "unexpected 'platform' and 'backend' pair, got:<platform>, <backend>"
        pairs = ", ".join(f"{p} with {b}" for p, b in PLATFORM_BACKENDS.items())
        yield (
            f"platform {platform!r} and backend {backend!r} name different backends; set one of them, or a "
            f"matching pair ({pairs})"
        )
    if config.HasField("ensemble_scheduling") and platform != ENSEMBLE:
        # "ensemble scheduling cannot be set for model '<name>' whose platform is not ensemble"
        yield f"ensemble_scheduling is set but platform is {platform!r}; only platform 'ensemble' takes it"
    if platform == ENSEMBLE and not config.HasField("ensemble_scheduling"):
        # "ensemble scheduling must be set for ensemble <name> whose platform is ensemble"
        yield "platform 'ensemble' without ensemble_scheduling; list the ensemble's steps in it"
    if backend == "vllm" and not config.model_transaction_policy.decoupled:
        # vllm_backend r24.10 src/model.py `init_engine` asserts a decoupled transaction policy; its auto-complete,
        # which would set one, is off (--disable-auto-complete-config).
        yield "backend 'vllm' streams its tokens: set model_transaction_policy { decoupled: true }"
    if config.max_batch_size < 0:
        # "'max_batch_size' must be non-negative value for <name>"
        yield f"max_batch_size {config.max_batch_size} is negative; 0 means the model does not batch"


def _io_problems(config: ModelConfig) -> Iterator[str]:
    """ValidateModelIOConfig -> ValidateModelInput / ValidateModelOutput -> ValidateIOShape (core
    src/model_config_utils.cc), which Triton runs at load when auto-complete is off, as it is here."""
    tensors: list[tuple[str, ModelInput | ModelOutput]] = [
        *((f"input[{i}]", t) for i, t in enumerate(config.input)),
        *((f"output[{i}]", t) for i, t in enumerate(config.output)),
    ]
    for key, tensor in tensors:
        if not tensor.name:
            yield f"{key} has no name; every input and output needs one"
            continue
        where = f"{key.partition('[')[0]} {tensor.name!r}"
        if tensor.data_type == DataType.TYPE_INVALID:
            yield f"{where} has no data_type; set one such as TYPE_FP32"
        if not tensor.dims:
            yield f"{where} has no dims; list its shape (without the batch dimension), -1 for a variable size"
        shapes = [("dims", list(tensor.dims))]
        if tensor.HasField("reshape"):
            shapes.append(("reshape.shape", list(tensor.reshape.shape)))
        for field, dims in shapes:
            bad = [d for d in dims if d < 1 and d != VARIABLE_DIM]
            if bad:
                # "dimension must be integer >= 1, or -1 to indicate a variable-size dimension"
                yield (
                    f"{where} {field} {dims} has {', '.join(map(str, bad))}; each dimension is >= 1, "
                    f"or {VARIABLE_DIM} for a variable size"
                )


def ensemble_problems(configs: Mapping[str, ModelConfig]) -> dict[str, list[str]]:
    """By ensemble, its steps that Triton refuses: circular steps, and tensor maps that do not fit the step's
    model. A step whose model is not among `configs` is the caller's to report."""
    found: dict[str, list[str]] = {}
    for name, config in sorted(configs.items()):
        if config.platform != ENSEMBLE:
            continue
        cycle = _cycle(name, configs)
        if cycle:
            # "circular dependency between ensembles: a -> ... -> b -> a"
            # (ModelRepositoryManager::DependencyGraph::CircularDependencyCheck, model_repository_manager.cc)
            found.setdefault(name, []).append(
                f"ensemble {name!r} chains itself ({' -> '.join(cycle)}); Triton refuses circular "
                "dependencies between ensembles"
            )
        for number, step in enumerate(config.ensemble_scheduling.step, start=1):
            model = configs.get(step.model_name)
            for problem in _tensor_map_problems(name, number, step, model) if model is not None else ():
                found.setdefault(name, []).append(problem)
    return found


def _cycle(start: str, configs: Mapping[str, ModelConfig]) -> list[str]:
    """The models from `start` back to itself through ensemble steps, or [] when its steps never lead back."""
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for step in configs[path[-1]].ensemble_scheduling.step:
            if step.model_name == start:
                return [*path, start]
            chained = configs.get(step.model_name)
            if step.model_name not in seen and chained is not None and chained.platform == ENSEMBLE:
                seen.add(step.model_name)
                paths.append([*path, step.model_name])
    return []


def _tensor_map_problems(ensemble: str, number: int, step: ModelEnsembling.Step, model: ModelConfig) -> Iterator[str]:
    """ValidateTensorMapping (core src/ensemble_scheduler/ensemble_utils.cc): each input_map key is an input
    of the step's model, each output_map key an output, and each of its required inputs is mapped."""
    step_model = step.model_name
    prefix = f"ensemble {ensemble!r} step {number} (model {step_model!r})"
    inputs = {t.name: t for t in model.input}
    outputs = {t.name for t in model.output}
    for field, names, kind, known in (
        ("input_map", step.input_map, "input", inputs),
        ("output_map", step.output_map, "output", outputs),
    ):
        for key in sorted(k for k in names if k not in known):
            # "ensemble tensor <t> is mapping to non-existing input <key> in model <m>" (and "is mapped from
            # non-existing output")
            listed = ", ".join(sorted(known)) or "none"
            yield f"{prefix}: {field} key {key!r} is not an {kind} of {step_model!r} ({kind}s: {listed})"
    for tensor in model.input:
        if tensor.name not in step.input_map and not tensor.optional:
            # "input <x> in model <m> is not mapped to any ensemble tensors"
            yield f"{prefix}: input {tensor.name!r} of {step_model!r} is not in input_map; map it to a tensor"


# The file each backend loads from a version folder when default_model_filename is unset: what Triton's
# AutoCompleteBackendFields (core src/model_config_utils.cc) sets for the backends it knows, and the python
# backend's own default (python_backend src/stub_launcher.cc). A custom backend decides for itself.
BACKEND_FILES = {
    "onnxruntime": "model.onnx",
    "tensorrt": "model.plan",
    "pytorch": "model.pt",
    "openvino": "model.xml",
    "python": "model.py",
    # vllm_backend r24.10 src/model.py: the engine arguments (model_packaging/vllm_engine.py); the weights come
    # from the name or path they give.
    "vllm": "model.json",
}
PLATFORM_FILES = {
    "tensorflow_graphdef": "model.graphdef",
    "tensorflow_savedmodel": "model.savedmodel",
    "tensorrt_plan": "model.plan",
    "onnxruntime_onnx": "model.onnx",
    "pytorch_libtorch": "model.pt",
}


def model_file(config: ModelConfig) -> tuple[str, str] | None:
    """The file (or folder) the backend loads from each version folder, and what names it; None where the
    backend decides, or where the config names neither backend nor platform (Triton then infers the backend
    from the files of the first version folder)."""
    if config.default_model_filename:
        return config.default_model_filename, "default_model_filename"
    if config.backend in BACKEND_FILES:
        return BACKEND_FILES[config.backend], f"backend {config.backend!r}"
    if config.platform in PLATFORM_FILES and config.backend in ("", PLATFORM_BACKENDS[config.platform]):
        return PLATFORM_FILES[config.platform], f"platform {config.platform!r}"
    return None
