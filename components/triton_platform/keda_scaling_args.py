"""`KedaScalingArgs`, what a user gives `KedaScaling`, and `Scaling`, what its builders read once it is checked.

The Args are plain and typed: Pulumi infers the component's schema from them, so they may come from any
Pulumi language as JSON (whole numbers as floats, optional keys absent). `scaling_of` applies the defaults
and checks every rule, raising all problems at once. Field meanings follow KEDA 2.21: the ScaledObject spec
(https://keda.sh/docs/2.21/reference/scaledobject-spec/), the Prometheus scaler
(https://keda.sh/docs/2.21/scalers/prometheus/) and TriggerAuthentication
(https://keda.sh/docs/2.21/concepts/authentication/). No `from __future__ import annotations` here: the
schema is read from the annotations as objects.
"""

from dataclasses import dataclass
from typing import NotRequired, TypedDict

import pulumi

from triton_platform.arg_problems import ArgProblems
from triton_platform.helm_chart import ChartSource

KEDA_MODES = ("existing", "install")
AUTH_MODES = ("bearer", "basic")
FALLBACK_BEHAVIORS = ("currentReplicasIfHigher", "static", "currentReplicas")
KEDA_CHART: ChartSource = {"version": "2.20.2", "repository": "https://kedacore.github.io/charts"}
"""KEDA's chart (kedacore/charts); 2.20.2 is the operator the local cluster's tests run."""


class LoadTrigger(TypedDict):
    """A Prometheus query KEDA scales a Deployment on (a `prometheus` trigger, metricType AverageValue)."""

    name: str
    """The trigger's name in the ScaledObject (`triggers[].name`), e.g. `busy-ratio`. Required."""

    query: str
    """PromQL returning exactly one series (KEDA errors on more): the load summed over the Deployment's pods.
    KEDA divides it by the replica count (AverageValue), so the HPA aims for `threshold` per replica. Required."""

    threshold: float
    """The per-replica value the HPA aims for (`metadata.threshold`), above 0. Required."""

    activation_threshold: NotRequired[float]
    """`metadata.activationThreshold`: above it a Deployment at zero replicas wakes; inert while
    `min_replicas >= 1`. Default 0, KEDA's."""


class ScaleTarget(TypedDict):
    """One Deployment KEDA scales, and on what. Leave the Deployment's `spec.replicas` unset: KEDA's HPA owns
    the count, and a set one is reset on every `pulumi up`."""

    deployment_name: pulumi.Input[str]
    """The Deployment's name, e.g. its resource's `metadata.name` output: the ScaledObject (named after it) is
    then created after it. Required."""

    namespace: pulumi.Input[str]
    """The Deployment's namespace, where its ScaledObject goes. Required."""

    min_replicas: int
    """`minReplicaCount`: the fewest replicas, 0 or more. 0 lets KEDA scale the Deployment to zero, which
    only a query that still answers with no pod running can scale up again (Triton's series vanish with its
    pods). Required."""

    max_replicas: int
    """`maxReplicaCount`: the most replicas, at least 1 and at least `min_replicas`. Required."""

    trigger: LoadTrigger
    """The load query it scales on; the GPU-memory trigger (`gpu_memory_ratio_target`) is added. Required."""


class ScalePolicy(TypedDict):
    """One direction of the HPA's `behavior` (autoscaling/v2): how fast replicas may change."""

    stabilization_seconds: int
    """`stabilizationWindowSeconds`, 0-3600: recommendations over this window are considered (the highest
    scaling down, the lowest scaling up). Required."""

    percent: int
    """A `Percent` policy, 1-1000: change by up to this share of the current replicas per period. Required."""

    period_seconds: int
    """Length of a policy period, 1-1800 (the HPA API's bounds). Required."""

    pods: NotRequired[int]
    """A `Pods` policy, 1-1000: change by up to this many pods per period; with both, the larger change wins
    (`selectPolicy: Max`). Default: none, the `Percent` policy alone."""


class Fallback(TypedDict):
    """What KEDA does when it cannot read the triggers (Prometheus down, a query error, a vanished series)."""

    replicas: int
    """Replica count to hold, at least 1; with `currentReplicasIfHigher` a Deployment already above it stays
    where it is. Required."""

    failure_threshold: NotRequired[int]
    """The fallback applies once more than this many consecutive metric reads failed (the HPA reads every
    15 s), 1-100. Default 3."""

    behavior: NotRequired[str]
    """KEDA's fallback behavior: `currentReplicasIfHigher`, `static` or `currentReplicas`.
    Default `currentReplicasIfHigher`, which never scales down because metrics went missing."""


class PrometheusAuth(TypedDict):
    """Credentials KEDA sends to Prometheus, read from a Secret through a TriggerAuthentication."""

    mode: str
    """`bearer` reads the Secret's key `bearerToken`; `basic` reads `username` and `password`. Required."""

    secret_name: str
    """The Secret holding those keys, in the Deployments' namespace. Required."""


class KedaInstall(TypedDict):
    """Where KEDA comes from."""

    mode: NotRequired[str]
    """`existing`: KEDA already runs in the cluster. `install`: its pinned chart (`chart`) into `namespace`, a
    namespace this component creates, before any ScaledObject. Default `existing`."""

    namespace: NotRequired[str]
    """KEDA's namespace, for mode `install`. Default `keda`."""

    chart: NotRequired[ChartSource]
    """The KEDA chart (named `keda` in its repository), for mode `install`.
    Default: version 2.20.2 from https://kedacore.github.io/charts."""


class KedaScalingArgs(TypedDict):
    """What `KedaScaling` needs: the Deployments to scale, where Prometheus is, how fast to scale, and how KEDA
    is provided."""

    targets: dict[str, ScaleTarget]
    """The Deployments to scale, by key; a target's ScaledObject is the child `<name>-<key>-scaled-object`.
    Required."""

    prometheus_url: pulumi.Input[str]
    """Prometheus KEDA queries (`metadata.serverAddress`), e.g. `http://prometheus-operated.<ns>.svc:9090`,
    the Prometheus Operator's Service. Required."""

    polling_interval_seconds: NotRequired[int]
    """`pollingInterval`, 1-3600: how often KEDA's own loop checks the triggers (it only scales between 0 and 1;
    above, the HPA's 15 s sync does). Default 30."""

    scale_up: NotRequired[ScalePolicy]
    """The HPA's `behavior.scaleUp`. Default: 100% or 3 pods per 30 s, whichever is more, no stabilization
    window, so a load step doubles capacity each period."""

    scale_down: NotRequired[ScalePolicy]
    """The HPA's `behavior.scaleDown`. Default: 25% per 60 s after a 300 s stabilization window (the HPA's own
    default window for scale-down)."""

    fallback: NotRequired[Fallback]
    """`fallback`: the replicas to hold while the triggers cannot be read. Default: none, KEDA keeps the last
    scale."""

    gpu_memory_ratio_target: NotRequired[float]
    """GPU memory used/total per replica, 0-1, above which a `gpu-memory` trigger adds replicas; 0 leaves that
    trigger out. Its query selects Triton's `nv_gpu_memory_used_bytes` and `nv_gpu_memory_total_bytes` by the
    labels `namespace` and `deployment` (the Deployment's name), which the scrape must attach. Default 0.8."""

    paused: NotRequired[bool]
    """Pause autoscaling (`autoscaling.keda.sh/paused`); replicas stay where they are. Default false."""

    paused_replicas: NotRequired[int]
    """Pause at this replica count, 0 or more (`autoscaling.keda.sh/paused-replicas`). Default: unset, not
    paused."""

    prometheus_auth: NotRequired[PrometheusAuth]
    """Credentials for Prometheus, through a TriggerAuthentication (child `<name>-prometheus-auth`) in the
    Deployments' namespace, beside the Secret: every target must then be in one namespace. Default: none."""

    keda: NotRequired[KedaInstall]
    """How KEDA is provided. Default: mode `existing`, KEDA already runs."""

    labels: NotRequired[dict[str, str]]
    """Labels on every object this component creates. Default: none."""

    kube_version: NotRequired[str]
    """Kubernetes version KEDA's chart is templated for when rendering without a cluster, e.g. `v1.34.0`; read
    in `install` mode only. Default: the API server's."""


DEFAULT_SCALE_UP: ScalePolicy = {"stabilization_seconds": 0, "percent": 100, "pods": 3, "period_seconds": 30}
DEFAULT_SCALE_DOWN: ScalePolicy = {"stabilization_seconds": 300, "percent": 25, "period_seconds": 60}


@dataclass(frozen=True)
class Trigger:
    name: str
    query: str
    threshold: float
    activation_threshold: float


@dataclass(frozen=True)
class Target:
    deployment_name: pulumi.Input[str]
    namespace: pulumi.Input[str]
    min_replicas: int
    max_replicas: int
    trigger: Trigger


@dataclass(frozen=True)
class Policy:
    stabilization_seconds: int
    percent: int
    period_seconds: int
    pods: int | None


@dataclass(frozen=True)
class Hold:
    """A checked `Fallback`."""

    replicas: int
    failure_threshold: int
    behavior: str


@dataclass(frozen=True)
class Credentials:
    mode: str
    secret_name: str


@dataclass(frozen=True)
class Behavior:
    """How fast and on what the ScaledObjects scale: the same for every target."""

    polling_interval_seconds: int
    scale_up: Policy
    scale_down: Policy
    fallback: Hold | None
    gpu_memory_ratio_target: float | None
    """None: no GPU-memory trigger."""
    paused: bool
    paused_replicas: int | None


@dataclass(frozen=True)
class Keda:
    mode: str
    namespace: str
    chart: ChartSource


@dataclass(frozen=True)
class Scaling:
    """`KedaScalingArgs` checked, each default applied."""

    targets: dict[str, Target]
    prometheus_url: pulumi.Input[str]
    behavior: Behavior
    prometheus_auth: Credentials | None
    keda: Keda
    labels: dict[str, str]
    kube_version: str | None


def scaling_of(name: str, args: KedaScalingArgs) -> Scaling:
    """The scaling `args` describe, each default applied; every problem, if any, raised at once (`ArgsError`)."""
    problems = ArgProblems("KedaScaling", name)
    problems.unknown_keys("", args, KedaScalingArgs)
    targets = problems.required("", args, "targets") or {}
    prometheus_url = problems.required("", args, "prometheus_url")
    fallback = args.get("fallback")
    auth = args.get("prometheus_auth")
    paused_replicas = args.get("paused_replicas")
    gpu_target = problems.number(
        "gpu_memory_ratio_target", args.get("gpu_memory_ratio_target", 0.8), at_least=0, at_most=1
    )
    scaling = Scaling(
        targets={key: _target(problems, f"targets.{key}", target) for key, target in targets.items()},
        prometheus_url=prometheus_url or "",
        behavior=Behavior(
            polling_interval_seconds=problems.integer(
                "polling_interval_seconds", args.get("polling_interval_seconds", 30), minimum=1, maximum=3600
            ),
            scale_up=_policy(problems, "scale_up", args.get("scale_up", DEFAULT_SCALE_UP)),
            scale_down=_policy(problems, "scale_down", args.get("scale_down", DEFAULT_SCALE_DOWN)),
            fallback=None if fallback is None else _fallback(problems, fallback),
            gpu_memory_ratio_target=gpu_target or None,
            paused=args.get("paused", False),
            paused_replicas=None
            if paused_replicas is None
            else problems.integer("paused_replicas", paused_replicas, minimum=0),
        ),
        prometheus_auth=None if auth is None else _credentials(problems, auth),
        keda=_keda(problems, args.get("keda", {})),
        labels=dict(args.get("labels", {})),
        kube_version=args.get("kube_version"),
    )
    problems.check()
    return scaling


def _target(problems: ArgProblems, path: str, target: ScaleTarget) -> Target:
    known = len(problems.problems)
    low = problems.required(path, target, "min_replicas")
    high = problems.required(path, target, "max_replicas")
    low = 0 if low is None else problems.integer(f"{path}.min_replicas", low, minimum=0)
    high = 1 if high is None else problems.integer(f"{path}.max_replicas", high, minimum=1)
    if len(problems.problems) == known and low > high:
        problems.add(f"{path}.min_replicas", f"{low} is above max_replicas ({high}); it must be at most that")
    trigger = problems.required(path, target, "trigger")
    return Target(
        deployment_name=problems.required(path, target, "deployment_name") or "",
        namespace=problems.required(path, target, "namespace") or "",
        min_replicas=low,
        max_replicas=high,
        trigger=Trigger("", "", 1, 0) if trigger is None else _trigger(problems, f"{path}.trigger", trigger),
    )


def _trigger(problems: ArgProblems, path: str, trigger: LoadTrigger) -> Trigger:
    threshold = problems.required(path, trigger, "threshold")
    return Trigger(
        name=problems.required(path, trigger, "name") or "",
        query=problems.required(path, trigger, "query") or "",
        threshold=1 if threshold is None else problems.number(f"{path}.threshold", threshold, above=0),
        activation_threshold=problems.number(
            f"{path}.activation_threshold", trigger.get("activation_threshold", 0), at_least=0
        ),
    )


def _policy(problems: ArgProblems, path: str, policy: ScalePolicy) -> Policy:
    def whole(key: str, low: int, high: int) -> int:
        value = problems.required(path, policy, key)
        return low if value is None else problems.integer(f"{path}.{key}", value, minimum=low, maximum=high)

    return Policy(
        stabilization_seconds=whole("stabilization_seconds", 0, 3600),
        percent=whole("percent", 1, 1000),
        period_seconds=whole("period_seconds", 1, 1800),
        pods=whole("pods", 1, 1000) if "pods" in policy else None,
    )


def _fallback(problems: ArgProblems, fallback: Fallback) -> Hold:
    replicas = problems.required("fallback", fallback, "replicas")
    return Hold(
        replicas=1 if replicas is None else problems.integer("fallback.replicas", replicas, minimum=1),
        failure_threshold=problems.integer(
            "fallback.failure_threshold", fallback.get("failure_threshold", 3), minimum=1, maximum=100
        ),
        behavior=problems.choice(
            "fallback.behavior", fallback.get("behavior", FALLBACK_BEHAVIORS[0]), FALLBACK_BEHAVIORS
        ),
    )


def _credentials(problems: ArgProblems, auth: PrometheusAuth) -> Credentials:
    mode = problems.required("prometheus_auth", auth, "mode")
    return Credentials(
        mode=AUTH_MODES[0] if mode is None else problems.choice("prometheus_auth.mode", mode, AUTH_MODES),
        secret_name=problems.required("prometheus_auth", auth, "secret_name") or "",
    )


def _keda(problems: ArgProblems, keda: KedaInstall) -> Keda:
    chart = keda.get("chart", KEDA_CHART)
    mode = problems.choice("keda.mode", keda.get("mode", "existing"), KEDA_MODES)
    if mode == "install" and "repository" not in chart and "path" not in chart:
        problems.add("keda.chart", "neither repository nor path: say where the chart comes from")
    return Keda(mode=mode, namespace=keda.get("namespace", "keda"), chart=chart)
