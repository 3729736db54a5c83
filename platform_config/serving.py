"""`triton-platform:serving` and `triton-platform:models`: Triton deployments and per-model settings."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from platform_config.bounds import SLO_MAX_MS
from platform_config.component_fields import arg_format, arg_unique, component_rule, from_component
from platform_config.types import Strict
from triton_platform.model_packaging import model_settings_args
from triton_platform.model_packaging.store import SCHEMES, StoreUri, parse_store_uri
from triton_platform.monitoring import monitoring_args
from triton_platform.scaling import keda_scaling_args
from triton_platform.serving import triton_serving_args, triton_serving_spec

# [[[cog
# import cog
# from platform_config.component_fields import stack_fields
# from triton_platform.scaling import keda_scaling_args
# def fields(args_type, **options): cog.outl(stack_fields(args_type, **options))
# from triton_platform.model_packaging import model_settings_args
# from triton_platform.monitoring import monitoring_args
# from triton_platform.serving import triton_serving_args
# ]]]
# [[[end]]]


class ReplicaRange(Strict):
    """Replica bounds of one Triton Deployment."""

    # [[[cog fields(triton_serving_args.ReplicaRangeArgs)]]]
    # fmt: off
    min: int = from_component(triton_serving_args.ReplicaRangeArgs, "min")
    """Warm floor, 0 to 1000. At 0 no pod runs until an autoscaler adds one, and one scaling on Triton's own metrics never does (its series vanish with its pods). Without an autoscaler (`autoscaled` false) the Deployment runs `min` pods."""

    max: int = from_component(triton_serving_args.ReplicaRangeArgs, "max")
    """Ceiling for the autoscaler, 1 to 1000 and >= `min`; more than 1 also spreads the pods over nodes and zones and adds a PodDisruptionBudget."""
    # fmt: on
    # [[[end]]]

    _rules = component_rule(triton_serving_spec.replica_rules)


class QueuePolicy(Strict):
    """Triton `dynamic_batching.default_queue_policy`."""

    # [[[cog fields(model_settings_args.QueuePolicyArgs)]]]
    # fmt: off
    max_queue_size: int | None = from_component(model_settings_args.QueuePolicyArgs, "max_queue_size")
    """Requests the model's queue holds before Triton rejects new ones; 0 means unbounded. Default: the base config.pbtxt's."""

    default_timeout_microseconds: int | None = from_component(model_settings_args.QueuePolicyArgs, "default_timeout_microseconds")
    """How long a request may wait in the queue; 0 means no timeout. At most the p95 latency objective: a request queued longer has missed it. Default: the base config.pbtxt's."""

    timeout_action: Literal["REJECT", "DELAY"] | None = from_component(model_settings_args.QueuePolicyArgs, "timeout_action")
    """What Triton does with a request that timed out in the queue: `REJECT` or `DELAY`. Default: the base config.pbtxt's."""

    allow_timeout_override: bool | None = from_component(model_settings_args.QueuePolicyArgs, "allow_timeout_override")
    """Whether a request's own timeout may override `defaultTimeoutMicroseconds`. Default: the base config.pbtxt's."""
    # fmt: on
    # [[[end]]]


class DynamicBatching(Strict):
    """Triton `dynamic_batching`. Unset fields keep the model's base config.pbtxt."""

    # [[[cog fields(model_settings_args.DynamicBatchingArgs)]]]
    # fmt: off
    max_queue_delay_microseconds: int | None = from_component(model_settings_args.DynamicBatchingArgs, "max_queue_delay_microseconds")
    """How long the batcher waits to fill a batch; the latency it may add to each request. Default: the base config.pbtxt's."""

    preferred_batch_size: list[Annotated[int, Field(ge=1, le=2147483647)]] | None = from_component(model_settings_args.DynamicBatchingArgs, "preferred_batch_size")
    """Batch sizes the batcher aims for. NVIDIA advises against them for most models; set them only for engines tuned to specific sizes. Default: the base config.pbtxt's."""

    default_queue_policy: QueuePolicy | None = from_component(model_settings_args.DynamicBatchingArgs, "default_queue_policy")
    """Queue bound and timeout, so overload is rejected quickly instead of queueing without limit. With a single model instance, Triton 24.10's batcher then stalls requests for 500 ms at a time (`bench/batcher_stall.py`): give such a model 2 or more instances. Default: the base config.pbtxt's."""
    # fmt: on
    # [[[end]]]


class InstanceGroup(Strict):
    """Triton `instance_group`: model copies per replica."""

    # [[[cog fields(model_settings_args.InstanceGroupArgs)]]]
    # fmt: off
    count: int | None = from_component(model_settings_args.InstanceGroupArgs, "count")
    """Model instances that run concurrently in each Triton replica. Default: the base config's count."""

    kind: Literal["KIND_GPU", "KIND_CPU", "KIND_AUTO"] | None = from_component(model_settings_args.InstanceGroupArgs, "kind")
    """Where the instances run: `KIND_GPU`, `KIND_CPU` or `KIND_AUTO`, which uses the pod's GPU when it has one and the CPU otherwise, so one config serves the GPU pool and CPU-only test servers alike. Default: the base config's kind."""
    # fmt: on
    # [[[end]]]


class LatestVersions(Strict):
    """Serve the newest versions."""

    # [[[cog fields(model_settings_args.LatestVersionsArgs)]]]
    # fmt: off
    num_versions: int = from_component(model_settings_args.LatestVersionsArgs, "num_versions")
    """How many of the newest versions to serve."""
    # fmt: on
    # [[[end]]]


class AllVersions(Strict):
    """Serve every version folder."""


class SpecificVersions(Strict):
    """Serve exactly these versions."""

    # [[[cog fields(model_settings_args.SpecificVersionsArgs)]]]
    # fmt: off
    versions: Annotated[list[Annotated[int, Field(ge=1, le=9223372036854775807)]], arg_unique(model_settings_args.SpecificVersionsArgs, "versions")] = from_component(model_settings_args.SpecificVersionsArgs, "versions")
    """Version folder numbers, each once; each must exist in the model repository."""
    # fmt: on
    # [[[end]]]


class VersionPolicy(Strict):
    """Triton `version_policy`: exactly one of `latest`, `all`, `specific`."""

    # [[[cog fields(model_settings_args.VersionPolicyArgs)]]]
    # fmt: off
    latest: LatestVersions | None = from_component(model_settings_args.VersionPolicyArgs, "latest")
    """The newest `numVersions` versions."""

    all: AllVersions | None = from_component(model_settings_args.VersionPolicyArgs, "all")
    """Every version (`all: {}`)."""

    specific: SpecificVersions | None = from_component(model_settings_args.VersionPolicyArgs, "specific")
    """The listed versions."""
    # fmt: on
    # [[[end]]]

    _rules = component_rule(triton_serving_spec.version_policy_rules)


class Warmup(Strict):
    """Triton `model_warmup`: requests run at load, before the model reports ready."""

    # [[[cog fields(model_settings_args.WarmupArgs)]]]
    # fmt: off
    batch_sizes: list[Annotated[int, Field(ge=1, le=4294967295)]] = from_component(model_settings_args.WarmupArgs, "batch_sizes")
    """One warmup request per batch size, over every input of the model; each must be <= the model's max batch size."""

    data: Literal["zero", "random"] = from_component(model_settings_args.WarmupArgs, "data")
    """Input contents: `zero` (zeros) or `random` (random values)."""
    # fmt: on
    # [[[end]]]


class VllmSettings(Strict):
    """The vLLM backend's settings of a `backend: "vllm"` model."""

    # [[[cog fields(model_settings_args.VllmSettingsArgs)]]]
    # fmt: off
    engine_args: dict[str, Any] = from_component(model_settings_args.VllmSettingsArgs, "engine_args")
    """vLLM's engine arguments, written as each version folder's `model.json`, which the backend passes whole to vLLM 0.5.5's `AsyncEngineArgs`: every key one of its fields (`model`, `gpu_memory_utilization`, `tensor_parallel_size`, ...; model_packaging/vllm_engine.py), `model` among them. Merged key by key over the defaults'. Refused where a version folder already holds a `model.json`: the platform never overwrites a model repository's file."""
    # fmt: on
    # [[[end]]]


class TensorRtLlmSettings(Strict):
    """The TensorRT-LLM backend's settings of a `backend: "tensorrtllm"` model."""

    # [[[cog fields(model_settings_args.TensorRtLlmSettingsArgs)]]]
    # fmt: off
    parameters: dict[str, str] = from_component(model_settings_args.TensorRtLlmSettingsArgs, "parameters")
    """config.pbtxt `parameters`, each written as `parameters { key: ... value: { string_value: ... } }` over the base config's: every key one the backend reads (`kv_cache_free_gpu_mem_fraction`, `batch_scheduler_policy`, ...; model_packaging/tensorrt_llm.py). Merged key by key over the defaults'."""
    # fmt: on
    # [[[end]]]


class ModelSettings(Strict):
    """Per-environment settings for one model, laid over its base config.pbtxt. Unset fields keep the base value."""

    # [[[cog fields(model_settings_args.ModelSettingsArgs)]]]
    # fmt: off
    max_batch_size: int | None = from_component(model_settings_args.ModelSettingsArgs, "max_batch_size")
    """Largest batch Triton forms; 0 turns batching off. It may lower the base config's max_batch_size, never raise it (the base states what the model supports); the defaults' value applies only to models whose base batches. Default: the base config's."""

    dynamic_batching: DynamicBatching | None = from_component(model_settings_args.ModelSettingsArgs, "dynamic_batching")
    """Dynamic batcher settings. Default: the base config's."""

    instance_group: InstanceGroup | None = from_component(model_settings_args.ModelSettingsArgs, "instance_group")
    """Instances per replica. Default: the base config's."""

    version_policy: VersionPolicy | None = from_component(model_settings_args.ModelSettingsArgs, "version_policy")
    """Which versions to serve. A model's own policy replaces the defaults' whole. Default: the base config's (Triton's own default: the latest version)."""

    warmup: Warmup | None = from_component(model_settings_args.ModelSettingsArgs, "warmup")
    """Warm the model up at load, so the first real requests do not pay for lazy initialisation. A model's own warmup replaces the defaults' whole, and the base config's. Default: the base config's."""

    vllm: VllmSettings | None = from_component(model_settings_args.ModelSettingsArgs, "vllm")
    """vLLM engine arguments, written as the model's `model.json`; only for a `backend: "vllm"` model (the defaults' apply to those only). Default: the model repository's own model.json."""

    tensorrt_llm: TensorRtLlmSettings | None = from_component(model_settings_args.ModelSettingsArgs, "tensorrt_llm")
    """TensorRT-LLM parameters, written into the rendered config.pbtxt; only for a `backend: "tensorrtllm"` model (the defaults' apply to those only). Default: the base config's parameters."""
    # fmt: on
    # [[[end]]]


class ComputeResources(Strict):
    """CPU and memory of the Triton container."""

    # [[[cog fields(triton_serving_args.ComputeResourcesArgs)]]]
    # fmt: off
    cpu: Annotated[str, arg_format(triton_serving_args.ComputeResourcesArgs, "cpu")] = from_component(triton_serving_args.ComputeResourcesArgs, "cpu")
    """CPU cores as a Kubernetes quantity, e.g. `4` or `500m`."""

    memory: Annotated[str, arg_format(triton_serving_args.ComputeResourcesArgs, "memory")] = from_component(triton_serving_args.ComputeResourcesArgs, "memory")
    """Memory as a Kubernetes quantity, e.g. `16Gi`."""
    # fmt: on
    # [[[end]]]


class ContainerResources(Strict):
    """Requests and limits of the Triton container (GPUs come from `gpusPerPod`)."""

    # [[[cog fields(triton_serving_args.ContainerResourcesArgs)]]]
    # fmt: off
    requests: ComputeResources = from_component(triton_serving_args.ContainerResourcesArgs, "requests")
    """What the scheduler reserves."""

    limits: ComputeResources = from_component(triton_serving_args.ContainerResourcesArgs, "limits")
    """The ceiling, at least the requests. A memory limit equal to the request avoids OOM kills under node pressure."""
    # fmt: on
    # [[[end]]]

    _rules = component_rule(triton_serving_spec.resource_rules)


class Wake(Strict):
    """Wake the deployment at zero on its first request: `replicas.min` 0, the KEDA HTTP add-on's interceptor in
    front of it (`scaling.httpAddOn`), and a budget for the first request's wait (docs/scale-to-zero.md)."""

    # [[[cog fields(keda_scaling_args.WakeRoute, exclude=['service', 'hosts'])]]]
    # fmt: off
    budget_seconds: int = from_component(keda_scaling_args.WakeRoute, "budget_seconds")
    """How long a request may wait for the first pod, 1-3600: each route's readiness timeout; a request still waiting then is answered 504. Required."""

    concurrency_target: int = from_component(keda_scaling_args.WakeRoute, "concurrency_target")
    """Requests in flight through the interceptor per replica the routes' triggers aim for (`scalingMetric .concurrency.targetValue`), 1 or more: set it above what the load trigger lets a replica carry, so that trigger, not this one, scales above one replica."""
    # fmt: on
    # [[[end]]]

    allow_in_production: bool = False
    """Production refuses a deployment at zero unless this says so: its first request after an idle period waits for the whole wake."""


class DeploymentConfig(Strict):
    """One Triton Deployment and the models it serves."""

    # [[[cog fields(triton_serving_args.TritonDeploymentArgs, exclude=['wake_on_request'])]]]
    # fmt: off
    models: Annotated[list[Annotated[str, arg_format(triton_serving_args.TritonDeploymentArgs, "models")]], arg_unique(triton_serving_args.TritonDeploymentArgs, "models")] = from_component(triton_serving_args.TritonDeploymentArgs, "models")
    """Model folders of `modelRepository.path` this deployment loads, each once; at least one."""

    replicas: ReplicaRange = from_component(triton_serving_args.TritonDeploymentArgs, "replicas")
    """Replica range; an autoscaler scales within it."""

    gpus_per_pod: int = from_component(triton_serving_args.TritonDeploymentArgs, "gpus_per_pod")
    """GPUs each Triton pod requests, 1 to 16."""

    resources: ContainerResources = from_component(triton_serving_args.TritonDeploymentArgs, "resources")
    """CPU and memory of each Triton pod."""
    # fmt: on
    # [[[end]]]

    wake: Wake | None = None
    """Wake on the first request while at zero; requires `replicas.min` 0 and scaling enabled. Unset: `replicas.min` must be at least 1 with scaling on."""


class PvcSource(Strict):
    """A PersistentVolumeClaim holding the model repository."""

    # [[[cog fields(triton_serving_args.ModelClaimArgs)]]]
    # fmt: off
    claim_name: Annotated[str, arg_format(triton_serving_args.ModelClaimArgs, "claim_name")] = from_component(triton_serving_args.ModelClaimArgs, "claim_name")
    """Name of the claim."""

    create: bool = from_component(triton_serving_args.ModelClaimArgs, "create")
    """Create the claim (kept on `pulumi destroy`; see `protectModelClaim`) instead of using an existing one. A created claim starts empty, so it needs `origin`."""

    size: Annotated[str, arg_format(triton_serving_args.ModelClaimArgs, "size")] = from_component(triton_serving_args.ModelClaimArgs, "size")
    """Requested size when `create` is true, a Kubernetes quantity."""

    storage_class_name: Annotated[str, arg_format(triton_serving_args.ModelClaimArgs, "storage_class_name")] | None = from_component(triton_serving_args.ModelClaimArgs, "storage_class_name")
    """StorageClass when `create` is true. Default: the cluster's default class."""

    access_mode: Literal["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"] = from_component(triton_serving_args.ModelClaimArgs, "access_mode")
    """How pods mount it (Triton always read-only): `ReadOnlyMany`, `ReadWriteMany` or `ReadWriteOnce`. With `origin`, the loader Job writes into it, so it must be ReadWriteMany (or ReadWriteOnce for a single replica); ReadWriteOnce cannot serve replicas on several nodes."""

    origin: Annotated[str, arg_format(triton_serving_args.ModelClaimArgs, "origin")] | None = from_component(triton_serving_args.ModelClaimArgs, "origin")
    """`s3://bucket/prefix` or `gs://bucket/prefix` the repository is published to (`stackctl publish-models`; an S3 endpoint as `s3://https://host:port/bucket/prefix`). Set: before the Deployments roll, a Job copies `<origin>/<digest>/` into the claim's `repositories/<digest>/` and the pods mount that folder, so every model change rolls the pods. Credentials as for `s3`/`gcs` (`credentialsSecret`, else workload identity). Default: unset, the claim holds the version folders at its root, copied in by hand (see `revision`)."""

    loader_image: Annotated[str, arg_format(triton_serving_args.ModelClaimArgs, "loader_image")] = from_component(triton_serving_args.ModelClaimArgs, "loader_image")
    """Image of the loader Job (rclone), pinned. The default is the release the tests run (scripts/rclone-release builds it)."""
    # fmt: on
    # [[[end]]]

    def store(self) -> StoreUri | None:
        """Where the loader copies from, parsed."""
        if self.origin is None:
            return None
        return parse_store_uri(self.origin, "gcs" if self.origin.startswith("gs://") else "s3")


class StoreEgress(Strict):
    """Addresses pods reading the object store may connect to: a NetworkPolicy names addresses, never host names."""

    # [[[cog fields(triton_serving_args.StoreEgressArgs)]]]
    # fmt: off
    cidr: Annotated[str, arg_format(triton_serving_args.StoreEgressArgs, "cidr")] = from_component(triton_serving_args.StoreEgressArgs, "cidr")
    """An IPv4 or IPv6 network, e.g. `10.0.0.0/16` for a VPC endpoint or proxy, or `0.0.0.0/0` for any address."""

    ports: list[Annotated[int, Field(ge=1, le=65535)]] = from_component(triton_serving_args.StoreEgressArgs, "ports")
    """TCP ports on those addresses, at least one."""
    # fmt: on
    # [[[end]]]


class ModelRepositoryConfig(Strict):
    """Where Triton's pods get the model files."""

    # [[[cog fields(triton_serving_args.ModelRepositoryArgs, exclude=['path'])]]]
    # fmt: off
    source: Literal["bundled", "pvc", "s3", "gcs"] = from_component(triton_serving_args.ModelRepositoryArgs, "source")
    """`bundled`: the version files of the served models ship in a ConfigMap (small dev models only, up to 900 KiB). `pvc`: a PersistentVolumeClaim (`pvc`). `s3`/`gcs`: object storage; Triton reads `<uri>/<digest>`, what `stackctl publish-models` uploads."""

    pvc: PvcSource | None = from_component(triton_serving_args.ModelRepositoryArgs, "pvc")
    """The claim, for source `pvc` (required there, and only there)."""

    uri: Annotated[str, arg_format(triton_serving_args.ModelRepositoryArgs, "uri")] | None = from_component(triton_serving_args.ModelRepositoryArgs, "uri")
    """`s3://bucket/prefix` or `gs://bucket/prefix`, for source `s3` or `gcs` (required there, and only there); a private S3 endpoint as `s3://https://host:port/bucket/prefix`. Each published version lives under `<uri>/<digest>/`."""

    revision: Annotated[str, arg_format(triton_serving_args.ModelRepositoryArgs, "revision")] | None = from_component(triton_serving_args.ModelRepositoryArgs, "revision")
    """Only for a claim filled by hand (source `pvc` without `pvc.origin`): label of its current contents, 1 to 63 characters. Pulumi cannot see those files: change this after copying new ones in and the pods roll to load them. Published repositories (s3, gcs, `pvc.origin`) are addressed by their content digest instead."""

    credentials_secret: Annotated[str, arg_format(triton_serving_args.ModelRepositoryArgs, "credentials_secret")] | None = from_component(triton_serving_args.ModelRepositoryArgs, "credentials_secret")
    """Secret with the object-store credentials (for `s3`, `gcs` and the loader of `pvc.origin`): for S3 its keys become the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION); for GCS its `credentials.json` key is the service-account key. Default: unset, the pod's workload identity (see `serviceAccountAnnotations`)."""

    store_egress: list[StoreEgress] | None = from_component(triton_serving_args.ModelRepositoryArgs, "store_egress")
    """Where Triton and the loader Job may connect to read the object store (s3, gcs, `pvc.origin`); every other destination but DNS is denied. Narrow it to your VPC endpoint's or egress proxy's network, and add the workload-identity endpoint your cloud's credentials come from (a node-local metadata address) when no `credentialsSecret` is set. Default: any address, on the store's port only (443, or the private endpoint's), plus GKE's metadata server (169.254.169.254, port 80) for `gcs` without `credentialsSecret`."""
    # fmt: on
    # [[[end]]]

    def store(self) -> StoreUri | None:
        """The object store the stack's repository is published to: the uri, or the claim's origin."""
        if self.source in SCHEMES and self.uri is not None:
            return parse_store_uri(self.uri, self.source)
        return self.pvc.store() if self.pvc is not None else None

    _rules = component_rule(triton_serving_spec.repository_rules)


class Drain(Strict):
    """Graceful shutdown: endpoints drain, then Triton finishes in-flight requests."""

    # [[[cog fields(triton_serving_args.DrainArgs)]]]
    # fmt: off
    pre_stop_seconds: int = from_component(triton_serving_args.DrainArgs, "pre_stop_seconds")
    """Sleep in preStop, 0 to 300 s, so load balancers stop sending before Triton stops accepting."""

    exit_timeout_seconds: int = from_component(triton_serving_args.DrainArgs, "exit_timeout_seconds")
    """Triton's `--exit-timeout-secs`, 1 to 3600: how long it waits for in-flight requests. terminationGracePeriodSeconds is preStop + this + 15 s."""
    # fmt: on
    # [[[end]]]


class IngressConfig(Strict):
    """Ingress for clients outside the cluster: one HTTP and one gRPC host per deployment."""

    # [[[cog fields(triton_serving_args.IngressArgs)]]]
    # fmt: off
    enabled: bool = from_component(triton_serving_args.IngressArgs, "enabled")
    """Create the Ingresses."""

    class_name: Annotated[str, arg_format(triton_serving_args.IngressArgs, "class_name")] = from_component(triton_serving_args.IngressArgs, "class_name")
    """IngressClass; the gRPC Ingress uses ingress-nginx's `backend-protocol: GRPC` annotation."""

    base_domain: Annotated[str, arg_format(triton_serving_args.IngressArgs, "base_domain")] | None = from_component(triton_serving_args.IngressArgs, "base_domain")
    """Hosts are `<deployment>.<baseDomain>` (HTTP) and `<deployment>-grpc.<baseDomain>` (gRPC). Required when enabled."""

    tls_secret_name: Annotated[str, arg_format(triton_serving_args.IngressArgs, "tls_secret_name")] | None = from_component(triton_serving_args.IngressArgs, "tls_secret_name")
    """TLS certificate Secret. Required when enabled: gRPC through ingress-nginx needs HTTP/2, which needs TLS."""

    max_request_body: Annotated[str, arg_format(triton_serving_args.IngressArgs, "max_request_body")] = from_component(triton_serving_args.IngressArgs, "max_request_body")
    """Largest request body the ingress passes (ingress-nginx `proxy-body-size`); its 1m default is too small for tensors."""

    controller_namespace: Annotated[str, arg_format(triton_serving_args.IngressArgs, "controller_namespace")] = from_component(triton_serving_args.IngressArgs, "controller_namespace")
    """Namespace of the ingress controller, which the NetworkPolicy admits to the inference ports."""
    # fmt: on
    # [[[end]]]


class InferenceClient(Strict):
    """Pods allowed to call the inference ports (8000, 8001)."""

    # [[[cog fields(triton_serving_args.InferenceClientArgs)]]]
    # fmt: off
    namespace: Annotated[str, arg_format(triton_serving_args.InferenceClientArgs, "namespace")] = from_component(triton_serving_args.InferenceClientArgs, "namespace")
    """Their namespace."""

    pod_labels: dict[Annotated[str, arg_format(triton_serving_args.InferenceClientArgs, "pod_labels", "key")], Annotated[str, arg_format(triton_serving_args.InferenceClientArgs, "pod_labels")]] = from_component(triton_serving_args.InferenceClientArgs, "pod_labels")
    """Their labels; none admits every pod of the namespace."""
    # fmt: on
    # [[[end]]]


class TokenObjectives(Strict):
    """Token latency objectives of one streaming (decoupled) model, in ms. Which series measure them follows from
    the model's backend (`metrics`: the vLLM backend's own, else Triton's first-response histogram)."""

    # [[[cog fields(monitoring_args.TokenObjectives, exclude=['metrics'])]]]
    # fmt: off
    time_to_first_token_p95_ms: int = from_component(monitoring_args.TokenObjectives, "time_to_first_token_p95_ms")
    """p95 TTFT objective, 1 to 3600000 ms: above it `TritonTimeToFirstTokenAboveSLO` fires."""

    time_to_first_token_p99_ms: int | None = from_component(monitoring_args.TokenObjectives, "time_to_first_token_p99_ms")
    """p99 TTFT objective, 1 to 3600000 ms and at least the p95's: above it `TritonTimeToFirstTokenP99AboveSLO` fires. Default: none (no p99 objective, no p99 alert)."""

    inter_token_p95_ms: int | None = from_component(monitoring_args.TokenObjectives, "inter_token_p95_ms")
    """p95 ITL objective, 1 to 3600000 ms: above it `TritonInterTokenLatencyAboveSLO` fires. Only with `metrics` `vllm`: Triton itself reports no inter-token latency. Default: none."""

    inter_token_p99_ms: int | None = from_component(monitoring_args.TokenObjectives, "inter_token_p99_ms")
    """p99 ITL objective, 1 to 3600000 ms and at least the p95's: above it `TritonInterTokenLatencyP99AboveSLO` fires. Only with `metrics` `vllm`. Default: none."""
    # fmt: on
    # [[[end]]]


class ServingConfig(Strict):
    """The Triton serving stack."""

    # [[[cog fields(triton_serving_args.TritonServingArgs, exclude=['namespace', 'pool', 'metrics_namespace', 'config_name', 'models', 'pod_labels', 'metrics_pod_labels', 'labels', 'autoscaled', 'image_digests', 'protect_model_claim', 'interceptor_namespace'])]]]
    # fmt: off
    deployments: dict[Annotated[str, arg_format(triton_serving_args.TritonServingArgs, "deployments", "key")], DeploymentConfig] = from_component(triton_serving_args.TritonServingArgs, "deployments")
    """Triton Deployments by name (a DNS label of at most 40 characters: objects are named `triton-<name>`); each serves a set of models. At least one."""

    model_repository: ModelRepositoryConfig = from_component(triton_serving_args.TritonServingArgs, "model_repository")
    """Where the models are read from and how their files reach the pods."""

    image: Annotated[str, arg_format(triton_serving_args.TritonServingArgs, "image")] = from_component(triton_serving_args.TritonServingArgs, "image")
    """Triton image, pinned by tag or digest. The default is Triton 2.51.0, the release the tests run."""

    model_defaults: ModelSettings = from_component(triton_serving_args.TritonServingArgs, "model_defaults")
    """Settings applied to every served model they fit (ensembles take only `maxBatchSize`), under any per-model settings in `models`."""

    inference_clients: list[InferenceClient] = from_component(triton_serving_args.TritonServingArgs, "inference_clients")
    """Who may call Triton's HTTP and gRPC ports besides the ingress controller; the NetworkPolicy admits nobody else."""

    ingress: IngressConfig = from_component(triton_serving_args.TritonServingArgs, "ingress")
    """External access; no Ingress unless `enabled`."""

    startup_timeout_seconds: int = from_component(triton_serving_args.TritonServingArgs, "startup_timeout_seconds")
    """How long Triton may take to load every model before the startup probe restarts it, 30 to 7200 s."""

    drain: Drain = from_component(triton_serving_args.TritonServingArgs, "drain")
    """Graceful shutdown: by default a 10 s preStop sleep, then 30 s for in-flight requests."""

    shm_size_limit: Annotated[str, arg_format(triton_serving_args.TritonServingArgs, "shm_size_limit")] = from_component(triton_serving_args.TritonServingArgs, "shm_size_limit")
    """Size of the in-memory /dev/shm the Python backend uses for tensors, a Kubernetes quantity."""

    tmp_size_limit: Annotated[str, arg_format(triton_serving_args.TritonServingArgs, "tmp_size_limit")] = from_component(triton_serving_args.TritonServingArgs, "tmp_size_limit")
    """Size of /tmp, where Triton downloads object-storage models, a Kubernetes quantity."""

    service_account_annotations: dict[Annotated[str, arg_format(triton_serving_args.TritonServingArgs, "service_account_annotations", "key")], str] = from_component(triton_serving_args.TritonServingArgs, "service_account_annotations")
    """Annotations of Triton's ServiceAccount, e.g. `eks.amazonaws.com/role-arn` or `iam.gke.io/gcp-service-account` for workload identity. A workload-identity annotation must hold its cloud's form of identity (an IAM role ARN, a Google service account email, an Azure client ID); with `azure.workload.identity/client-id` the pods get the `azure.workload.identity/use: "true"` label Azure's webhook needs."""

    cluster_domain: Annotated[str, arg_format(triton_serving_args.TritonServingArgs, "cluster_domain")] = from_component(triton_serving_args.TritonServingArgs, "cluster_domain")
    """The cluster's DNS domain: an ExternalName's target is a fully qualified name."""
    # fmt: on
    # [[[end]]]

    _rules = component_rule(triton_serving_spec.ingress_rules)
    _identity_rules = component_rule(triton_serving_spec.service_account_rules)
    _claim_rules = component_rule(triton_serving_spec.claim_spread_rules)

    p95_latency_slo_ms: Annotated[int, Field(ge=1, le=SLO_MAX_MS)]
    """The environment's p95 request latency objective, in ms. Alerts fire above it, and no model's queue delay may exceed it. Required."""

    p99_latency_slo_ms: Annotated[int | None, Field(ge=1, le=SLO_MAX_MS)] = None
    """The environment's p99 request latency objective, in ms, at least `p95LatencySloMs`: an alert fires above it, and `stackctl simulate` and `stackctl plan` hold runs to it. Default: none."""

    token_objectives: dict[str, TokenObjectives] = {}
    """Time to first token and inter-token latency objectives of the streaming (decoupled) models, by model name: alerts fire above each, and a dashboard row shows them (docs/streaming.md). Default: none."""
