"""A model's per-environment settings, laid over its base config.pbtxt: TritonServing's `model_defaults` and `models`
Args, which the renderer (triton_platform/model_packaging/render.py) and the fit checks (serving/model_fit.py) read
as they are, with every default applied (`resolve_record`). Named as Triton names the fields
(https://github.com/triton-inference-server/common/blob/main/protobuf/model_config.proto); an unset key keeps the
base config's value. No `from __future__ import annotations` here: the schema is read from the annotations as
objects.
"""

from typing import Any, NotRequired, TypedDict

from triton_platform.args.arg_schema import Setting, declare
from triton_platform.args.integer_limits import INT32_MAX, INT64_MAX, UINT32_MAX, UINT64_MAX


class QueuePolicyArgs(TypedDict):
    """Triton `dynamic_batching.default_queue_policy`."""

    max_queue_size: NotRequired[int]
    """Requests the model's queue holds before Triton rejects new ones; 0 means unbounded.
    Default: the base config.pbtxt's."""

    default_timeout_microseconds: NotRequired[int]
    """How long a request may wait in the queue; 0 means no timeout. At most the p95 latency objective: a
    request queued longer has missed it. Default: the base config.pbtxt's."""

    timeout_action: NotRequired[str]
    """What Triton does with a request that timed out in the queue: `REJECT` or `DELAY`.
    Default: the base config.pbtxt's."""

    allow_timeout_override: NotRequired[bool]
    """Whether a request's own timeout may override `default_timeout_microseconds`.
    Default: the base config.pbtxt's."""


class DynamicBatchingArgs(TypedDict):
    """Triton `dynamic_batching`. Unset fields keep the model's base config.pbtxt."""

    max_queue_delay_microseconds: NotRequired[int]
    """How long the batcher waits to fill a batch; the latency it may add to each request.
    Default: the base config.pbtxt's."""

    preferred_batch_size: NotRequired[list[int]]
    """Batch sizes the batcher aims for. NVIDIA advises against them for most models; set them only for engines
    tuned to specific sizes. Default: the base config.pbtxt's."""

    default_queue_policy: NotRequired[QueuePolicyArgs]
    """Queue bound and timeout, so overload is rejected quickly instead of queueing without limit. With a single
    model instance, Triton 24.10's batcher then stalls requests for 500 ms at a time (`bench/batcher_stall.py`):
    give such a model 2 or more instances. Default: the base config.pbtxt's."""


class InstanceGroupArgs(TypedDict):
    """Triton `instance_group`: model copies per replica."""

    count: NotRequired[int]
    """Model instances that run concurrently in each Triton replica. Default: the base config's count."""

    kind: NotRequired[str]
    """Where the instances run: `KIND_GPU`, `KIND_CPU` or `KIND_AUTO`, which uses the pod's GPU when it has one
    and the CPU otherwise, so one config serves the GPU pool and CPU-only test servers alike.
    Default: the base config's kind."""


class LatestVersionsArgs(TypedDict):
    """Serve the newest versions."""

    num_versions: int
    """How many of the newest versions to serve."""


class AllVersionsArgs(TypedDict):
    """Serve every version folder (`all: {}`)."""


class SpecificVersionsArgs(TypedDict):
    """Serve exactly these versions."""

    versions: list[int]
    """Version folder numbers, each once; each must exist in the model repository."""


class VersionPolicyArgs(TypedDict):
    """Triton `version_policy`: exactly one of `latest`, `all`, `specific`."""

    latest: NotRequired[LatestVersionsArgs]
    """The newest `num_versions` versions. Default: unset."""

    all: NotRequired[AllVersionsArgs]
    """Every version (`all: {}`). Default: unset."""

    specific: NotRequired[SpecificVersionsArgs]
    """The listed versions. Default: unset."""


class WarmupArgs(TypedDict):
    """Triton `model_warmup`: requests run at load, before the model reports ready."""

    batch_sizes: list[int]
    """One warmup request per batch size, over every input of the model; each must be <= the model's max batch
    size."""

    data: NotRequired[str]
    """Input contents: `zero` (zeros) or `random` (random values). Default: `zero`."""


class VllmSettingsArgs(TypedDict):
    """The vLLM backend's settings of a model whose base config says `backend: "vllm"` (triton-inference-server/
    vllm_backend r24.10 `src/model.py`, the 24.10 `-vllm-python-py3` image)."""

    engine_args: dict[str, Any]
    """vLLM's engine arguments, written as each version folder's `model.json`, which the backend passes whole to
    vLLM 0.5.5's `AsyncEngineArgs`: every key one of its fields (`model`, `gpu_memory_utilization`,
    `tensor_parallel_size`, ...; model_packaging/vllm_engine.py), `model` among them. Merged key by key over the
    defaults'. Refused where a version folder already holds a `model.json`: the platform never overwrites a
    model repository's file."""


class TensorRtLlmSettingsArgs(TypedDict):
    """The TensorRT-LLM backend's settings of a model whose base config says `backend: "tensorrtllm"`
    (triton-inference-server/tensorrtllm_backend v0.14.0, the 24.10 `-trtllm-python-py3` image)."""

    parameters: dict[str, str]
    """config.pbtxt `parameters`, each written as `parameters { key: ... value: { string_value: ... } }` over the
    base config's: every key one the backend reads (`kv_cache_free_gpu_mem_fraction`, `batch_scheduler_policy`,
    ...; model_packaging/tensorrt_llm.py). Merged key by key over the defaults'."""


class ModelSettingsArgs(TypedDict):
    """Settings for one model, laid over its base config.pbtxt. Unset fields keep the base value."""

    max_batch_size: NotRequired[int]
    """Largest batch Triton forms; 0 turns batching off. It may lower the base config's max_batch_size, never
    raise it (the base states what the model supports); the defaults' value applies only to models whose base
    batches. Default: the base config's."""

    dynamic_batching: NotRequired[DynamicBatchingArgs]
    """Dynamic batcher settings. Default: the base config's."""

    instance_group: NotRequired[InstanceGroupArgs]
    """Instances per replica. Default: the base config's."""

    version_policy: NotRequired[VersionPolicyArgs]
    """Which versions to serve. A model's own policy replaces the defaults' whole. Default: the base config's
    (Triton's own default: the latest version)."""

    warmup: NotRequired[WarmupArgs]
    """Warm the model up at load, so the first real requests do not pay for lazy initialisation. A model's own
    warmup replaces the defaults' whole, and the base config's. Default: the base config's."""

    vllm: NotRequired[VllmSettingsArgs]
    """vLLM engine arguments, written as the model's `model.json`; only for a `backend: "vllm"` model (the
    defaults' apply to those only). Default: the model repository's own model.json."""

    tensorrt_llm: NotRequired[TensorRtLlmSettingsArgs]
    """TensorRT-LLM parameters, written into the rendered config.pbtxt; only for a `backend: "tensorrtllm"` model
    (the defaults' apply to those only). Default: the base config's parameters."""


TIMEOUT_ACTIONS = ("REJECT", "DELAY")
INSTANCE_KINDS = ("KIND_GPU", "KIND_CPU", "KIND_AUTO")
WARMUP_DATA = ("zero", "random")

declare(
    QueuePolicyArgs,
    max_queue_size=Setting(minimum=0, maximum=UINT32_MAX),
    default_timeout_microseconds=Setting(minimum=0, maximum=UINT64_MAX),
    timeout_action=Setting(choices=TIMEOUT_ACTIONS),
    allow_timeout_override=Setting(),
)
declare(
    DynamicBatchingArgs,
    max_queue_delay_microseconds=Setting(minimum=0, maximum=10_000_000),
    preferred_batch_size=Setting(minimum=1, maximum=INT32_MAX),
    default_queue_policy=Setting(),
)
declare(
    InstanceGroupArgs,
    count=Setting(minimum=1, maximum=64),
    kind=Setting(choices=INSTANCE_KINDS),
)
declare(LatestVersionsArgs, num_versions=Setting(minimum=1, maximum=100))
declare(AllVersionsArgs)
declare(SpecificVersionsArgs, versions=Setting(minimum=1, maximum=INT64_MAX, min_items=1, unique=True))
declare(VersionPolicyArgs, latest=Setting(), all=Setting(), specific=Setting())
declare(
    WarmupArgs,
    batch_sizes=Setting(minimum=1, maximum=UINT32_MAX, min_items=1),
    data=Setting(default=WARMUP_DATA[0], choices=WARMUP_DATA),
)
declare(VllmSettingsArgs, engine_args=Setting(min_items=1))
declare(TensorRtLlmSettingsArgs, parameters=Setting(min_items=1))
declare(
    ModelSettingsArgs,
    # Unset keeps the base config's value: no default is filled in.
    max_batch_size=Setting(minimum=0, maximum=4096),
    dynamic_batching=Setting(),
    instance_group=Setting(),
    version_policy=Setting(),
    warmup=Setting(),
    vllm=Setting(),
    tensorrt_llm=Setting(),
)
