"""The typed stack configuration: one schema, every default in one place.

Each top-level section is one Pulumi config key in the ``triton-platform``
namespace (``triton-platform:serving`` and so on). Keys are camelCase like the
Kubernetes and KEDA objects they feed; unknown keys are errors, so a typo never
silently falls back to a default. Field docstrings are the config reference in
the README (``python -m platform_config.reference``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

PROJECT = "triton-platform"

# A Prometheus duration such as 30s, 5m or 1h30m (promql/parser durations).
PROM_DURATION = r"^([0-9]+(ms|s|m|h|d|w|y))+$"
# RFC 1123 label: what Kubernetes accepts for namespace and object names.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# Triton model directory names end up in URLs and metric labels.
MODEL_NAME = r"^[A-Za-z0-9_.-]+$"


PATTERN_NAMES = {
    PROM_DURATION: "a Prometheus duration such as 30s, 5m or 1h30m",
    DNS_LABEL: "a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a letter or digit)",
    MODEL_NAME: "a model folder name (letters, digits, '_', '.' and '-')",
}
"""What each pattern means, for error messages and the reference."""


class KeyProblemError(ValueError):
    """A model validator's finding about one of its keys, so the error names that key's path."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class Strict(BaseModel):
    """Base for every config object: camelCase keys, unknown keys rejected, no coercion."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=False,
        extra="forbid",
        strict=True,
        frozen=True,
        use_attribute_docstrings=True,
        allow_inf_nan=False,
    )


class KubernetesConfig(Strict):
    """Where the stack's objects go: a live cluster, or YAML files."""

    mode: Literal["deploy", "render"]
    """`deploy` applies to the cluster named by `context`; `render` writes manifests to `renderDir` and needs no cluster. Required: a stack never guesses its target. Production must deploy."""

    namespace: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
    """Namespace for every namespaced object of the platform; created by the program with the Pod Security Standards `restricted` profile enforced."""

    context: str | None = None
    """kubeconfig context to deploy to. Required in `deploy` mode, so the active context is never used by accident."""

    kubeconfig: str | None = None
    """Path to a kubeconfig file for `deploy` mode. Unset: the provider's usual lookup (`KUBECONFIG`, then `~/.kube/config`), still pinned to `context`."""

    render_dir: str | None = None
    """Output folder for `render` mode, relative to the project root. Unset: `rendered/<stack>`."""

    @model_validator(mode="after")
    def _mode_fields(self) -> KubernetesConfig:
        if self.mode == "deploy" and not self.context:
            raise KeyProblemError(
                "context",
                "required key is missing: mode 'deploy' needs the kubeconfig context to deploy to "
                "(the active context is never used implicitly)",
            )
        if self.mode == "deploy" and self.render_dir is not None:
            raise KeyProblemError("renderDir", "applies only to mode 'render'; remove it or set mode: render")
        for key, value in (("context", self.context), ("kubeconfig", self.kubeconfig)):
            if self.mode == "render" and value:
                raise KeyProblemError(
                    key,
                    f"{value!r} applies only to mode 'deploy'; render mode cannot be combined with a cluster connection",
                )
        return self


class GpuPoolConfig(Strict):
    """The GPU node pool every Triton pod runs on."""

    gpus_per_node: Annotated[int, Field(ge=1, le=16)] = 1
    """GPUs on each node of the pool (as advertised by the device plugin)."""

    min_nodes: Annotated[int, Field(ge=0, le=1000)] = 0
    """Nodes the pool keeps even when idle."""

    max_nodes: Annotated[int, Field(ge=1, le=1000)]
    """Ceiling of the node autoscaler. With `gpusPerNode` it bounds how many GPUs all Triton replicas together may ask for. Required."""

    resource_name: Literal["nvidia.com/gpu"] = "nvidia.com/gpu"
    """Extended resource the NVIDIA device plugin advertises."""

    @model_validator(mode="after")
    def _node_bounds(self) -> GpuPoolConfig:
        if self.min_nodes > self.max_nodes:
            raise KeyProblemError(
                "minNodes", f"{self.min_nodes} is above maxNodes ({self.max_nodes}); minNodes must be <= maxNodes"
            )
        return self

    @property
    def max_gpus(self) -> int:
        return self.max_nodes * self.gpus_per_node


class ReplicaRange(Strict):
    """Replica bounds of one Triton Deployment."""

    min: Annotated[int, Field(ge=0, le=1000)]
    """Warm floor. 0 lets KEDA scale the deployment to zero (cold starts of 30-60 s on the first request)."""

    max: Annotated[int, Field(ge=1, le=1000)]
    """Ceiling for the autoscaler; with autoscaling disabled it must equal `min`."""

    @model_validator(mode="after")
    def _ordered(self) -> ReplicaRange:
        if self.min > self.max:
            raise KeyProblemError("min", f"{self.min} is above max ({self.max}); min must be <= max")
        return self


class QueuePolicy(Strict):
    """Triton `dynamic_batching.default_queue_policy`."""

    max_queue_size: Annotated[int, Field(ge=0)] = 0
    """Requests the model's queue holds before Triton rejects new ones; 0 means unbounded."""

    default_timeout_microseconds: Annotated[int, Field(ge=0)] = 0
    """How long a request may wait in the queue; 0 means no timeout."""

    timeout_action: Literal["REJECT", "DELAY"] = "REJECT"
    """What Triton does with a request that timed out in the queue."""

    allow_timeout_override: bool = False
    """Whether a request's own timeout may override `defaultTimeoutMicroseconds`."""


class DynamicBatching(Strict):
    """Triton `dynamic_batching`. Unset fields keep the model's base config.pbtxt."""

    max_queue_delay_microseconds: Annotated[int, Field(ge=0, le=10_000_000)] | None = None
    """How long the batcher waits to fill a batch; the latency it may add to each request."""

    preferred_batch_size: list[Annotated[int, Field(ge=1)]] | None = None
    """Batch sizes the batcher aims for. NVIDIA advises against them for most models; set them only for engines tuned to specific sizes."""

    default_queue_policy: QueuePolicy | None = None
    """Queue bound and timeout, so overload is rejected quickly instead of queueing without limit."""


class InstanceGroup(Strict):
    """Triton `instance_group`: model copies per replica."""

    count: Annotated[int, Field(ge=1, le=64)]
    """Model instances that run concurrently in each Triton replica."""

    kind: Literal["KIND_GPU", "KIND_CPU", "KIND_AUTO"] = "KIND_AUTO"
    """Where the instances run. KIND_AUTO uses the pod's GPU when it has one and the CPU otherwise, so one config serves the GPU pool and CPU-only test servers alike."""


class ModelSettings(Strict):
    """Per-environment settings for one model, laid over its base config.pbtxt. Unset fields keep the base value."""

    max_batch_size: Annotated[int, Field(ge=0, le=4096)] | None = None
    """Largest batch Triton forms; 0 turns batching off for the model."""

    dynamic_batching: DynamicBatching | None = None
    """Dynamic batcher settings."""

    instance_group: InstanceGroup | None = None
    """Instances per replica."""


class DeploymentConfig(Strict):
    """One Triton Deployment and the models it serves."""

    models: Annotated[list[Annotated[str, Field(pattern=MODEL_NAME)]], Field(min_length=1)]
    """Model directories of `model_repo/` this deployment loads."""

    replicas: ReplicaRange
    """Replica range; KEDA scales within it."""

    gpus_per_pod: Annotated[int, Field(ge=1, le=16)] = 1
    """GPUs each Triton pod requests."""

    @field_validator("models")
    @classmethod
    def _unique_models(cls, models: list[str]) -> list[str]:
        duplicates = sorted({m for m in models if models.count(m) > 1})
        if duplicates:
            raise ValueError(f"models listed twice: {', '.join(duplicates)}; list each once")
        return models


class ServingConfig(Strict):
    """The Triton serving stack."""

    image: Annotated[str, Field(min_length=1)] = "nvcr.io/nvidia/tritonserver:24.10-py3"
    """Triton image, pinned by tag or digest (`latest` and untagged images are rejected). The default runs Triton 2.51.0, the release the tests run."""

    p95_latency_slo_ms: Annotated[int, Field(ge=1, le=600_000)]
    """The environment's p95 request latency objective, in ms. Alerts fire above it, and no model's queue delay may exceed it. Required."""

    deployments: Annotated[
        dict[Annotated[str, Field(pattern=DNS_LABEL, max_length=40)], DeploymentConfig], Field(min_length=1)
    ]
    """Triton Deployments by name; each serves a set of models."""

    model_defaults: ModelSettings = ModelSettings()
    """Settings applied to every model, under any per-model settings in `triton-platform:models`."""

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        if "@sha256:" in image:
            return image
        name, _, tag = image.rpartition(":")
        if not name or "/" in tag:
            raise ValueError(f"image {image!r} has no tag; pin a version such as nvcr.io/nvidia/tritonserver:24.10-py3")
        if tag == "latest":
            raise ValueError(f"image {image!r} uses 'latest'; pin a version tag or a digest")
        return image


class ScalingConfig(Strict):
    """KEDA autoscaling on Triton's Prometheus metrics."""

    enabled: bool = True
    """KEDA owns the replica count. When false, each deployment runs `replicas.min` replicas and `replicas.max` must equal it."""

    polling_interval_seconds: Annotated[int, Field(ge=1, le=3600)] = 30
    """How often KEDA checks the triggers (KEDA `pollingInterval`)."""

    queue_depth_target: Annotated[float, Field(gt=0)] = 10.0
    """Pending requests per replica (`nv_inference_pending_request_count`) the autoscaler aims for."""

    activation_queue_depth: Annotated[float, Field(ge=0)] = 0.0
    """Pending requests above which a deployment scaled to zero wakes up (KEDA `activationThreshold`)."""

    gpu_memory_ratio_target: Annotated[float, Field(gt=0, le=1)] = 0.8
    """GPU memory used/total per replica above which the autoscaler adds replicas."""


class AlertsConfig(Strict):
    """Alert thresholds and how long a condition must last before it fires (`for:`)."""

    latency_for: Annotated[str, Field(pattern=PROM_DURATION)] = "5m"
    """How long p95 latency must stay above the SLO."""

    queue_time_ms: Annotated[float, Field(gt=0)] = 20.0
    """Average queue time per request above which the queue alert fires, in ms."""

    queue_time_for: Annotated[str, Field(pattern=PROM_DURATION)] = "5m"
    """How long the queue time must stay above `queueTimeMs`."""

    failure_ratio: Annotated[float, Field(gt=0, lt=1)] = 0.01
    """Failed/total inference requests above which the failure alert fires."""

    failure_for: Annotated[str, Field(pattern=PROM_DURATION)] = "5m"
    """How long the failure ratio must stay above `failureRatio`."""

    gpu_memory_ratio: Annotated[float, Field(gt=0, le=1)] = 0.8
    """GPU memory used/total above which the GPU memory alert fires."""

    gpu_memory_for: Annotated[str, Field(pattern=PROM_DURATION)] = "10m"
    """How long GPU memory must stay above `gpuMemoryRatio`."""

    gpu_utilization_low: Annotated[float, Field(gt=0, lt=1)] = 0.3
    """GPU utilization below which the cost alert fires."""

    gpu_utilization_low_for: Annotated[str, Field(pattern=PROM_DURATION)] = "2h"
    """How long utilization must stay below `gpuUtilizationLow`."""


class MonitoringConfig(Strict):
    """Prometheus scraping, rules, Alertmanager routing and Grafana dashboards."""

    scrape_interval: Annotated[str, Field(pattern=PROM_DURATION)] = "15s"
    """How often Prometheus scrapes Triton's metrics port."""

    alerts: AlertsConfig = AlertsConfig()
    """Alert thresholds."""


Environment = Literal["dev", "staging", "production"]


class PlatformConfig(Strict):
    """A whole stack's configuration: one attribute per `triton-platform:<key>`."""

    environment: Environment
    """Tier of the stack. Production gets the strictest checks: it must deploy, never render. Required."""

    kubernetes: KubernetesConfig
    """Kubernetes provider target. Required."""

    gpu_pool: GpuPoolConfig
    """GPU node pool. Required."""

    serving: ServingConfig
    """Triton deployments. Required."""

    models: dict[Annotated[str, Field(pattern=MODEL_NAME)], ModelSettings] = {}
    """Per-model settings by model directory name; each overrides `serving.modelDefaults`."""

    scaling: ScalingConfig = ScalingConfig()
    """Autoscaling."""

    monitoring: MonitoringConfig = MonitoringConfig()
    """Monitoring and alert thresholds."""


def section_key(field_name: str) -> str:
    """The Pulumi config key of a top-level section, e.g. ``triton-platform:gpuPool``."""
    return f"{PROJECT}:{to_camel(field_name)}"


SECTION_KEYS: dict[str, str] = {section_key(name): name for name in PlatformConfig.model_fields}
