"""`triton-platform:scaling`: KEDA autoscaling on Triton's Prometheus metrics."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from platform_config.component_fields import from_component
from platform_config.types import (
    ChartRepository,
    ChartVersion,
    HelmChart,
    HttpUrl,
    KeyProblemError,
    NamespaceName,
    ObjectName,
    Strict,
)
from simulator.config import SimulationConfig
from triton_platform.keda_scaling_args import KEDA_CHART, KedaScalingArgs
from triton_platform.keda_scaling_args import Fallback as FallbackArgs
from triton_platform.keda_scaling_args import KedaInstall as KedaInstallArgs
from triton_platform.keda_scaling_args import ScalePolicy as ScalePolicyArgs


class KedaChart(HelmChart):
    """The KEDA chart (kedacore/charts)."""

    repository: ChartRepository = KEDA_CHART["repository"]
    """Chart repository URL."""

    version: ChartVersion = KEDA_CHART["version"]
    """Exact chart version; 2.20.2 is the operator the local cluster's tests run. With `path`, the folder's `Chart.yaml` must declare this version."""


class ScalePolicy(Strict):
    """One direction of the HPA's `behavior`: how fast replicas may change."""

    stabilization_seconds: int = from_component(ScalePolicyArgs, "stabilization_seconds")
    """HPA `stabilizationWindowSeconds`: recommendations over this window are considered (max for down, min for up)."""

    percent: int = from_component(ScalePolicyArgs, "percent")
    """A `Percent` policy: change by up to this share of the current replicas per period."""

    pods: int | None = from_component(ScalePolicyArgs, "pods", default=None)
    """A `Pods` policy: change by up to this many pods per period. With both, the larger change wins (`selectPolicy: Max`)."""

    period_seconds: int = from_component(ScalePolicyArgs, "period_seconds")
    """Length of a policy period (the HPA API allows 1-1800)."""


class Fallback(Strict):
    """What KEDA does when it cannot read the triggers (Prometheus down, a query error, a vanished series)."""

    failure_threshold: int = from_component(FallbackArgs, "failure_threshold")
    """The fallback applies once more than this many consecutive metric reads failed (the HPA reads every 15 s)."""

    replicas: int = from_component(FallbackArgs, "replicas", le=1000)
    """Replica count to hold; with `currentReplicasIfHigher` a deployment already above it stays where it is."""

    behavior: Literal["static", "currentReplicas", "currentReplicasIfHigher"] = from_component(FallbackArgs, "behavior")
    """KEDA fallback behavior; the default never scales down because metrics went missing."""


class KedaInstall(Strict):
    """Where KEDA comes from."""

    mode: Literal["install", "existing"] = from_component(KedaInstallArgs, "mode")
    """`install`: the pinned KEDA Helm chart into `namespace`, before any ScaledObject. `existing`: KEDA already runs."""

    namespace: NamespaceName = from_component(KedaInstallArgs, "namespace")
    """KEDA's namespace."""

    chart: KedaChart = KedaChart()
    """The KEDA chart, for mode `install`."""


class PrometheusAuth(Strict):
    """Credentials KEDA sends to Prometheus, through a TriggerAuthentication."""

    mode: Literal["bearer", "basic"]
    """`bearer` reads key `bearerToken`; `basic` reads `username` and `password`."""

    secret_name: ObjectName
    """Secret in the platform namespace holding those keys."""


ScalingSignal = Literal["busy-ratio", "queue-depth"]
"""The signals `scaling.signal` may name (triton_platform/scaling_signal.py queries them, simulator/signals.py models them)."""


class ScalingConfig(Strict):
    """KEDA autoscaling on Triton's Prometheus metrics."""

    enabled: bool = True
    """KEDA owns the replica count. When false, each deployment runs `replicas.min` replicas and `replicas.max` must equal it."""

    polling_interval_seconds: int = from_component(KedaScalingArgs, "polling_interval_seconds")
    """KEDA `pollingInterval`: how often KEDA's own loop checks the triggers. That loop only scales between 0 and 1; above 1 the HPA (15 s sync) drives scaling, so with `replicas.min >= 1` it matters little."""

    signal: ScalingSignal = "busy-ratio"
    """The load trigger. `busy-ratio`: the share of time each pod's busiest model keeps its instances running batches, against `busyRatioTarget`; it measures overload, not the batcher's own waiting (bench/scaling_signals.py). `queue-depth`: pending requests per replica against `queueDepthTarget`, which with a batching delay rises with load long before saturation."""

    queue_depth_target: Annotated[float, Field(gt=0)] = 10.0
    """Pending requests per replica (`nv_inference_pending_request_count`) the `queue-depth` signal aims for."""

    busy_ratio_target: Annotated[float, Field(gt=0, le=1)] = 0.75
    """Share of time each model instance runs a batch that the `busy-ratio` signal aims for."""

    activation_queue_depth: Annotated[float, Field(ge=0)] = 0.0
    """KEDA `activationThreshold`: pending requests above which a deployment at zero wakes up. Inert while `replicas.min >= 1`, which autoscaling requires."""

    # The component's 0 turns the trigger off; a stack always keeps it.
    gpu_memory_ratio_target: float = from_component(KedaScalingArgs, "gpu_memory_ratio_target", gt=0)
    """GPU memory used/total per replica above which the autoscaler adds replicas. Set it above the idle footprint of the loaded models (dashboard: GPU memory), or the deployment sits at `replicas.max`."""

    prometheus_address: HttpUrl | None = None
    """Prometheus URL KEDA queries. Unset: `http://prometheus-operated.<monitoring.prometheus.namespace>.svc:9090`, the operator's Service."""

    prometheus_auth: PrometheusAuth | None = None
    """Credentials for Prometheus, if it needs them."""

    fallback: Fallback | None = None
    """Behaviour when the metrics cannot be read. Required in production."""

    scale_up: ScalePolicy = from_component(KedaScalingArgs, "scale_up")
    """How fast to add replicas: 100% or 3 pods per 30 s, whichever is more, with no stabilization window, so a load step doubles capacity each period (the HPA's `behavior.scaleUp`, autoscaling/v2)."""

    scale_down: ScalePolicy = from_component(KedaScalingArgs, "scale_down")
    """How fast to remove replicas: 25% per 60 s after a 300 s stabilization window, the HPA's own default window for scale-down (kubernetes.io, "Horizontal Pod Autoscaling", stabilization window)."""

    paused: bool = from_component(KedaScalingArgs, "paused")
    """Pause autoscaling for maintenance (`autoscaling.keda.sh/paused`); replicas stay where they are."""

    paused_replicas: int | None = from_component(KedaScalingArgs, "paused_replicas", le=1000, default=None)
    """Pause at this replica count (`autoscaling.keda.sh/paused-replicas`), for maintenance; it must fit every deployment's range."""

    keda: KedaInstall = KedaInstall()
    """Where KEDA comes from."""

    simulation: SimulationConfig = SimulationConfig()
    """Cluster timings and the model profile `stackctl simulate` uses for this stack."""

    @model_validator(mode="after")
    def _targets_of_the_signal(self) -> ScalingConfig:
        # A target the chosen signal never reads would look tuned while doing nothing.
        unread = {
            "busy-ratio": {"queue_depth_target": "queueDepthTarget", "activation_queue_depth": "activationQueueDepth"},
            "queue-depth": {"busy_ratio_target": "busyRatioTarget"},
        }[self.signal]
        given = [key for field, key in unread.items() if field in self.model_fields_set]
        if given:
            raise ValueError(
                f"{' and '.join(given)} {'are' if len(given) > 1 else 'is'} only read by another signal; "
                f"signal {self.signal!r} reads {'busyRatioTarget' if self.signal == 'busy-ratio' else 'queueDepthTarget'}"
                f": remove {' and '.join(given)} or set signal"
            )
        return self

    @model_validator(mode="after")
    def _footprint_below_memory_target(self) -> ScalingConfig:
        # The GPU-memory trigger averages used/total per replica against its target, and a pod's loaded models
        # stay loaded when its traffic leaves: a footprint at the target proposes no fewer replicas at any load,
        # and one beyond the HPA's 10% tolerance proposes more each sync, up to replicas.max.
        ratio = self.simulation.gpu_memory_ratio
        if ratio is not None and ratio >= self.gpu_memory_ratio_target:
            raise KeyProblemError(
                "simulation.gpuMemoryRatio",
                f"{ratio:g} is not below triton-platform:scaling.gpuMemoryRatioTarget "
                f"({self.gpu_memory_ratio_target:g}): a pod's own footprint would hold the GPU-memory trigger at or "
                "above its target at any load, so the deployment never scales down (and beyond the HPA's 10% "
                "tolerance climbs to replicas.max); give the footprint the dashboard shows, below the target",
            )
        return self
