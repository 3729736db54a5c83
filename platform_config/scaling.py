"""`triton-platform:scaling`: KEDA autoscaling on Triton's Prometheus metrics."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from platform_config.component_fields import arg_format, from_component
from platform_config.simulation import SimulationConfig
from platform_config.types import (
    ChartRepository,
    ChartVersion,
    HelmChart,
    HttpUrl,
    KeyProblemError,
    Strict,
    inside_project,
)
from triton_platform.args.formats import DNS_LABEL, MODEL_NAME
from triton_platform.http_add_on import HTTP_ADD_ON_CHART
from triton_platform.scaling import keda_scaling_args
from triton_platform.scaling.keda_scaling_args import KEDA_CHART
from triton_platform.token_signal import TTFT_TRIGGER

# [[[cog
# import cog
# from platform_config.component_fields import stack_fields
# from triton_platform.scaling import keda_scaling_args
# def fields(args_type, **options): cog.outl(stack_fields(args_type, **options))
# ]]]
# [[[end]]]


class KedaChart(HelmChart):
    """The KEDA chart (kedacore/charts)."""

    repository: ChartRepository = KEDA_CHART["repository"]
    """Chart repository URL."""

    version: ChartVersion = KEDA_CHART["version"]
    """Exact chart version; 2.20.2 is the operator the local cluster's tests run. With `path`, the folder's `Chart.yaml` must declare this version."""


class HttpAddOnChart(HelmChart):
    """The KEDA HTTP add-on's chart, `keda-add-ons-http` (kedacore/charts)."""

    repository: ChartRepository = HTTP_ADD_ON_CHART["repository"]
    """Chart repository URL."""

    version: ChartVersion = HTTP_ADD_ON_CHART["version"]
    """Exact chart version; 0.15.0 is the first whose interceptor proxies HTTP/2 and h2c (gRPC). With `path`, the folder's `Chart.yaml` must declare this version."""


class HttpAddOnInstall(Strict):
    """Where the KEDA HTTP add-on comes from, for deployments that wake on request."""

    # [[[cog fields(keda_scaling_args.HttpAddOnInstall, exclude=['chart'])]]]
    # fmt: off
    mode: Literal["existing", "install"] = from_component(keda_scaling_args.HttpAddOnInstall, "mode")
    """`existing`: the add-on already runs in `namespace`. `install`: its pinned chart (`chart`) into `namespace`, after KEDA."""

    namespace: Annotated[str, arg_format(keda_scaling_args.HttpAddOnInstall, "namespace")] = from_component(keda_scaling_args.HttpAddOnInstall, "namespace")
    """The add-on's namespace, where its scaler and interceptor run and the wake Service goes. The default is KEDA's default namespace: beside KEDA, as the add-on's docs install it."""
    # fmt: on
    # [[[end]]]

    chart: HttpAddOnChart = HttpAddOnChart()
    """The add-on's chart, for mode `install`."""


class ScalePolicy(Strict):
    """One direction of the HPA's `behavior`: how fast replicas may change."""

    # [[[cog fields(keda_scaling_args.ScalePolicy)]]]
    # fmt: off
    stabilization_seconds: int = from_component(keda_scaling_args.ScalePolicy, "stabilization_seconds")
    """`stabilizationWindowSeconds`, 0-3600: recommendations over this window are considered (the highest scaling down, the lowest scaling up). Required."""

    percent: int = from_component(keda_scaling_args.ScalePolicy, "percent")
    """A `Percent` policy, 1-1000: change by up to this share of the current replicas per period. Required."""

    period_seconds: int = from_component(keda_scaling_args.ScalePolicy, "period_seconds")
    """Length of a policy period, 1-1800 (the HPA API's bounds). Required."""

    pods: int | None = from_component(keda_scaling_args.ScalePolicy, "pods")
    """A `Pods` policy, 1-1000: change by up to this many pods per period; with both, the larger change wins (`selectPolicy: Max`). Default: none, the `Percent` policy alone."""
    # fmt: on
    # [[[end]]]


class Fallback(Strict):
    """What KEDA does when it cannot read the triggers (Prometheus down, a query error, a vanished series)."""

    # A stack's deployments run at most 1000 replicas (`replicas.max`): a count above is a typo.
    # [[[cog fields(keda_scaling_args.Fallback, narrow={'replicas': 'le=1000'})]]]
    # fmt: off
    replicas: int = from_component(keda_scaling_args.Fallback, "replicas", le=1000)
    """Replica count to hold, at least 1; with `currentReplicasIfHigher` a Deployment already above it stays where it is. Required."""

    failure_threshold: int = from_component(keda_scaling_args.Fallback, "failure_threshold")
    """The fallback applies once more than this many consecutive metric reads failed (the HPA reads every 15 s), 1-100."""

    behavior: Literal["currentReplicasIfHigher", "static", "currentReplicas"] = from_component(keda_scaling_args.Fallback, "behavior")
    """KEDA's fallback behavior: `currentReplicasIfHigher` (which never scales down because metrics went missing), `static` or `currentReplicas`."""
    # fmt: on
    # [[[end]]]


class KedaInstall(Strict):
    """Where KEDA comes from."""

    # [[[cog fields(keda_scaling_args.KedaInstall, exclude=['chart'])]]]
    # fmt: off
    mode: Literal["existing", "install"] = from_component(keda_scaling_args.KedaInstall, "mode")
    """`existing`: KEDA already runs in the cluster. `install`: its pinned chart (`chart`) into `namespace`, a namespace this component creates, before any ScaledObject."""

    namespace: Annotated[str, arg_format(keda_scaling_args.KedaInstall, "namespace")] = from_component(keda_scaling_args.KedaInstall, "namespace")
    """KEDA's namespace, for mode `install`."""

    replicas: int = from_component(keda_scaling_args.KedaInstall, "replicas")
    """Replicas of KEDA's operator and metrics API server, mode `install`, 1-3. From 2, each gets a PodDisruptionBudget of `minAvailable: 1`: one operator leads and the others stand by, the metrics servers share the API server's requests (keda.sh/docs/latest/operate/cluster, High Availability)."""

    priority_class_name: Annotated[str, arg_format(keda_scaling_args.KedaInstall, "priority_class_name")] | None = from_component(keda_scaling_args.KedaInstall, "priority_class_name")
    """A PriorityClass this component creates, mode `install`, of value 200000 (above Triton serving's 100000), for KEDA's pods: scaling must outlive the workloads it scales. Default: unset (the cluster's default)."""
    # fmt: on
    # [[[end]]]

    chart: KedaChart = KedaChart()
    """The KEDA chart, for mode `install`."""


class PrometheusAuth(Strict):
    """Credentials KEDA sends to Prometheus, through a TriggerAuthentication."""

    # [[[cog fields(keda_scaling_args.PrometheusAuth)]]]
    # fmt: off
    mode: Literal["bearer", "basic"] = from_component(keda_scaling_args.PrometheusAuth, "mode")
    """`bearer` reads the Secret's key `bearerToken`; `basic` reads `username` and `password`. Required."""

    secret_name: Annotated[str, arg_format(keda_scaling_args.PrometheusAuth, "secret_name")] = from_component(keda_scaling_args.PrometheusAuth, "secret_name")
    """The Secret holding those keys. Required. Where KEDA reads it: with `keda.mode` `install`, in KEDA's own namespace, since the KEDA this component installs may read Secrets only there (`KEDA_RESTRICT_SECRET_ACCESS`: kedacore/keda pkg/scaling/resolver/scale_resolvers.go, resolveAuthSecret); with an existing KEDA, wherever that KEDA reads it (by default beside the TriggerAuthentication, in the Deployments' namespace)."""
    # fmt: on
    # [[[end]]]


ScalingSignal = Literal["busy-ratio", "queue-depth", "demand"]
"""The signals `scaling.signal` may name (triton_platform/scaling_signal.py queries them, simulator/signals.py models them)."""
SIGNAL_TARGETS: dict[str, tuple[str, str]] = {
    "busy-ratio": ("busy_ratio_target", "busyRatioTarget"),
    "queue-depth": ("queue_depth_target", "queueDepthTarget"),
    "demand": ("demand_target", "demandTarget"),
}
"""Each signal's target: its field and its stack key. The one table of them (the program, the simulator and the
planner read it)."""


class CapacityProfile(Strict):
    """Where a model's capacity per pod comes from, for the `demand` signal: a latency profile, pinned by its sha256."""

    path: Annotated[str, inside_project("file", "bench/results/profiles/classifier.json")]
    """The model's latency profile (`stackctl profile`, docs/profiling.md), relative to the project root and inside it. It must record the config it was measured on (`config`: max batch size, instance count, backend), and that config must be the one the stack renders: a pod's capacity is its instances x max batch size / tau(max batch size)."""

    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """The profile file's sha256 (`sha256sum`): a changed profile changes what the deployment scales on, so the stack names the one reviewed."""


class FloorWindow(Strict):
    """A daily window during which the deployment keeps at least `replicas`."""

    # [[[cog fields(keda_scaling_args.FloorWindow)]]]
    # fmt: off
    start: Annotated[str, arg_format(keda_scaling_args.FloorWindow, "start")] = from_component(keda_scaling_args.FloorWindow, "start")
    """When the window opens each day, HH:MM (24-hour) in the floor's `timeZone`: the trigger's `start` (`<minute> <hour> * * *`). Required."""

    end: Annotated[str, arg_format(keda_scaling_args.FloorWindow, "end")] = from_component(keda_scaling_args.FloorWindow, "end")
    """When it closes, HH:MM, not `start`; before `start`, the window runs past midnight. Required."""

    replicas: int = from_component(keda_scaling_args.FloorWindow, "replicas")
    """The fewest replicas within the window (`desiredReplicas`), above the target's `min_replicas` and at most its `max_replicas`. Required."""
    # fmt: on
    # [[[end]]]


class DailyFloor(Strict):
    """Minimum replicas by time of day, ahead of a daily rise."""

    # [[[cog fields(keda_scaling_args.DailyFloor)]]]
    # fmt: off
    time_zone: Annotated[str, arg_format(keda_scaling_args.DailyFloor, "time_zone")] = from_component(keda_scaling_args.DailyFloor, "time_zone")
    """The IANA time zone the windows' times are in (the trigger's `timezone`), e.g. `UTC` or `Europe/Berlin`: explicit, since a schedule in the cluster's zone moves with the cluster. Required."""

    windows: list[FloorWindow] = from_component(keda_scaling_args.DailyFloor, "windows")
    """The windows, 1-24; where two overlap, the larger floor holds. Required."""
    # fmt: on
    # [[[end]]]


class ScalingConfig(Strict):
    """KEDA autoscaling on Triton's Prometheus metrics."""

    enabled: bool = True
    """KEDA owns the replica count. When false, each deployment runs `replicas.min` replicas and `replicas.max` must equal it."""

    # The component's 0 turns the GPU-memory trigger off; a stack always keeps it. A stack's deployments run at
    # most 1000 replicas (`replicas.max`): a paused count above is a typo.
    # [[[cog fields(keda_scaling_args.KedaScalingArgs, exclude=['targets', 'prometheus_url', 'labels', 'kube_version', 'image_digests'], narrow={'gpu_memory_ratio_target': 'gt=0', 'paused_replicas': 'le=1000'})]]]
    # fmt: off
    polling_interval_seconds: int = from_component(keda_scaling_args.KedaScalingArgs, "polling_interval_seconds")
    """`pollingInterval`, 1-3600: how often KEDA's own loop checks the triggers (it only scales between 0 and 1; above, the HPA's 15 s sync does)."""

    scale_up: ScalePolicy = from_component(keda_scaling_args.KedaScalingArgs, "scale_up")
    """The HPA's `behavior.scaleUp`. By default 100% or 3 pods per 30 s, whichever is more, after a 0 s stabilization window, so a load step doubles capacity each period."""

    scale_down: ScalePolicy = from_component(keda_scaling_args.KedaScalingArgs, "scale_down")
    """The HPA's `behavior.scaleDown`. By default 25% per 60 s after a 300 s stabilization window (the HPA's own default window for scale-down)."""

    fallback: Fallback | None = from_component(keda_scaling_args.KedaScalingArgs, "fallback")
    """`fallback`: the replicas to hold while the triggers cannot be read. Default: none, KEDA keeps the last scale."""

    gpu_memory_ratio_target: float = from_component(keda_scaling_args.KedaScalingArgs, "gpu_memory_ratio_target", gt=0)
    """GPU memory used/total per replica, 0-1, above which a `gpu-memory` trigger adds replicas; 0 leaves that trigger out. Its query selects Triton's `nv_gpu_memory_used_bytes` and `nv_gpu_memory_total_bytes` by the labels `namespace` and `deployment` (the Deployment's name), which the scrape must attach."""

    cooldown_seconds: int = from_component(keda_scaling_args.KedaScalingArgs, "cooldown_seconds")
    """`cooldownPeriod`, 0-86400: how long every trigger of a target at `min_replicas` 0 must stay inactive before KEDA scales it from 1 to 0; written only on such targets. The default is KEDA's."""

    http_add_on: HttpAddOnInstall = from_component(keda_scaling_args.KedaScalingArgs, "http_add_on")
    """How the KEDA HTTP add-on is provided, for targets with `wake`."""

    paused: bool = from_component(keda_scaling_args.KedaScalingArgs, "paused")
    """Pause autoscaling (`autoscaling.keda.sh/paused`); replicas stay where they are."""

    paused_replicas: int | None = from_component(keda_scaling_args.KedaScalingArgs, "paused_replicas", le=1000)
    """Pause at this replica count, 0 or more (`autoscaling.keda.sh/paused-replicas`). Default: unset, not paused."""

    prometheus_auth: PrometheusAuth | None = from_component(keda_scaling_args.KedaScalingArgs, "prometheus_auth")
    """Credentials for Prometheus, through a TriggerAuthentication (child `<name>-prometheus-auth`) in the Deployments' namespace: every target must then be in one namespace. Default: none."""

    keda: KedaInstall = from_component(keda_scaling_args.KedaScalingArgs, "keda")
    """How KEDA is provided; by default (mode `existing`) it already runs."""
    # fmt: on
    # [[[end]]]

    signal: ScalingSignal = "busy-ratio"
    """The load trigger. `busy-ratio`: the share of time each pod's busiest model keeps its instances running batches, against `busyRatioTarget`; it measures overload, not the batcher's own waiting (bench/scaling_signals.py). `queue-depth`: pending requests per replica against `queueDepthTarget`, which with a batching delay rises with load long before saturation."""

    queue_depth_target: Annotated[float, Field(gt=0)] = 10.0
    """Pending requests per replica (`nv_inference_pending_request_count`) the `queue-depth` signal aims for."""

    busy_ratio_target: Annotated[float, Field(gt=0, le=1)] = 0.75
    """Share of time each model instance runs a batch that the `busy-ratio` signal aims for."""

    demand_target: Annotated[float, Field(gt=0, le=1)] = 0.75
    """Share of a pod's capacity (its models' profiled requests per second at full batches) that the `demand` signal aims for: each pod carries this much of what it could, the rest is headroom for a rise while new pods start."""

    time_to_first_token_target: Annotated[float, Field(gt=0, le=1)] = 0.8
    """For a deployment serving models with `serving.tokenObjectives`: the share of each model's p95 time-to-first-token objective its `time-to-first-token` trigger aims for. The trigger reads the worst model's p95 over its objective as a KEDA `Value` metric, so the HPA scales the replicas by that ratio over this target: below 1, pods are added before the objective is broken (docs/streaming.md, "Scaling on tokens")."""

    kv_cache_target: Annotated[float, Field(gt=0, le=1)] = 0.8
    """For a deployment serving TensorRT-LLM models with `serving.tokenObjectives`: the share of each pod's KV-cache blocks in use (`nv_trt_llm_kv_cache_block_metrics`, used over max) its `kv-cache` trigger aims for, per replica. A full cache keeps new sequences waiting for blocks however idle the GPU is."""

    capacity_profiles: dict[Annotated[str, Field(pattern=MODEL_NAME)], CapacityProfile] = {}
    """For the `demand` signal, and required there: each served model's latency profile, by model name (ensembles run no instances and are left out). What a pod of the model serves alone at full batches, instances x max batch size / tau(max batch size), is what the demand divides its requests by (platform_config/capacity.py; `stackctl validate` prints each figure)."""

    daily_floor: dict[Annotated[str, Field(pattern=DNS_LABEL)], DailyFloor] = {}
    """A floor of replicas by time of day, by deployment key: pods started ahead of the day's rise rather than after it, one KEDA `cron` trigger per window beside the load trigger (the HPA takes the largest). `stackctl plan` learns one from a trace and keeps it where it pays (docs/autoscaling.md, "A daily floor"); `stackctl simulate` and `plan` read the trace's second 0 as midnight in the floor's `timeZone`. Not with scale to zero (`replicas.min` 0)."""

    activation_queue_depth: Annotated[float, Field(ge=0)] = 0.0
    """KEDA `activationThreshold`: pending requests above which a deployment at zero wakes up. Inert while `replicas.min >= 1`; a deployment at zero wakes on its first request through the KEDA HTTP add-on (`wake`)."""

    prometheus_address: HttpUrl | None = None
    """Prometheus URL KEDA queries. Unset: `http://prometheus-operated.<monitoring.prometheus.namespace>.svc:9090`, the operator's Service."""

    simulation: SimulationConfig = SimulationConfig()
    """Cluster timings and the model profile `stackctl simulate` uses for this stack."""

    def signal_target(self) -> float:
        """The target of the load trigger: the chosen signal's."""
        return float(getattr(self, SIGNAL_TARGETS[self.signal][0]))

    def token_target(self, trigger: str) -> float:
        """The target of a token trigger (triton_platform/token_signal.py): its own setting's."""
        return self.time_to_first_token_target if trigger == TTFT_TRIGGER else self.kv_cache_target

    @model_validator(mode="after")
    def _targets_of_the_signal(self) -> ScalingConfig:
        # A target the chosen signal never reads would look tuned while doing nothing.
        unread = {field: key for signal, (field, key) in SIGNAL_TARGETS.items() if signal != self.signal}
        if self.signal != "queue-depth":
            unread["activation_queue_depth"] = "activationQueueDepth"
        if self.signal != "demand":
            unread["capacity_profiles"] = "capacityProfiles"
        given = [key for field, key in unread.items() if field in self.model_fields_set]
        if given:
            raise ValueError(
                f"{' and '.join(given)} {'are' if len(given) > 1 else 'is'} only read by another signal; "
                f"signal {self.signal!r} reads {SIGNAL_TARGETS[self.signal][1]}"
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
