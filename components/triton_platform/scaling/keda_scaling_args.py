"""`KedaScalingArgs`, what a user gives `KedaScaling`, declared once: its builders read the same type, checked.

The Args are plain and typed: Pulumi infers the component's schema from them, so they may come from any
Pulumi language as JSON (whole numbers as floats, optional keys absent). Each key's default, bounds and format
are declared beside its TypedDict (`declare`); `scaling_of` checks Args against them and the rules that
span keys, raising all problems at once, and returns them with every default applied.
Field meanings follow KEDA 2.20: the ScaledObject spec
(https://keda.sh/docs/2.20/reference/scaledobject-spec/), the Prometheus scaler
(https://keda.sh/docs/2.20/scalers/prometheus/) and TriggerAuthentication
(https://keda.sh/docs/2.20/concepts/authentication/). No `from __future__ import annotations` here: the
schema is read from the annotations as objects.
"""

import re
from typing import NotRequired, TypedDict, cast

import pulumi

from triton_platform.args.arg_problems import ArgPath, ArgProblems, path_text
from triton_platform.args.arg_schema import Setting, declare, named_by, resolve_record
from triton_platform.args.formats import (
    CLOCK,
    DNS_LABEL,
    HOST_NAME,
    HTTP_URL,
    IMAGE_DIGEST,
    IMAGE_TAG,
    KUBE_VERSION,
    LABEL_KEY_FORMAT,
    LABEL_VALUE_FORMAT,
    NAMESPACE,
    OBJECT_NAME,
    PRIORITY_CLASS,
    TIME_ZONE,
    Format,
)
from triton_platform.args.integer_limits import INT32_MAX
from triton_platform.http_add_on import HTTP_ADD_ON_CHART
from triton_platform.kube.helm_chart import ChartSource, chart_source_problem

KEDA_MODES = ("existing", "install")
AUTH_MODES = ("bearer", "basic")
FALLBACK_BEHAVIORS = ("currentReplicasIfHigher", "static", "currentReplicas")
METRIC_TYPES = ("AverageValue", "Value")
"""A Prometheus trigger's `metricType`s this component writes (KEDA also takes `Utilization`, which a Prometheus
value has no request to be a share of)."""
KEDA_CHART: ChartSource = {"version": "2.20.2", "repository": "https://kedacore.github.io/charts"}
"""KEDA's chart (kedacore/charts); 2.20.2 is the operator the local cluster's tests run."""


class LoadTrigger(TypedDict):
    """A Prometheus query KEDA scales a Deployment on (a `prometheus` trigger, metricType AverageValue)."""

    name: str
    """The trigger's name in the ScaledObject (`triggers[].name`), e.g. `busy-ratio`. Required."""

    query: pulumi.Input[str]
    """PromQL returning exactly one series (KEDA errors on more): the load summed over the Deployment's pods.
    KEDA divides it by the replica count (AverageValue), so the HPA aims for `threshold` per replica. Monitoring's
    `load_queries` output holds it for each deployment it watches, read as its recording rule reads it. Required."""

    threshold: float
    """The per-replica value the HPA aims for (`metadata.threshold`), above 0. Required."""

    activation_threshold: NotRequired[float]
    """`metadata.activationThreshold`: above it a Deployment at zero replicas wakes; inert while
    `min_replicas >= 1`. The default is KEDA's. Default: `0`."""

    metric_type: NotRequired[str]
    """`metricType`. `AverageValue`: the query's value over the replica count is held at `threshold`, for a load
    the replicas share. `Value`: the value itself is held at `threshold`, the HPA scaling the replicas by value /
    threshold, for a latency or a ratio more replicas lower but do not divide. Default: `AverageValue`."""


class WakeRoute(TypedDict):
    """Wake a Deployment at zero on its first HTTP or gRPC request, through the KEDA HTTP add-on
    (triton_platform/http_add_on.py): two InterceptorRoutes (`<deployment>-http`, `<deployment>-grpc`, gRPC by
    its paths) target the pods' Service `<service>-pods`, and the ScaledObject gets an `external-push` trigger on
    each. The Deployment's clients must reach the interceptor: TritonServing's `wake_on_request` points its
    Service there."""

    service: pulumi.Input[str]
    """The Service clients call: the routes target `<service>-pods` on its `http` and `grpc` port numbers.
    Required."""

    hosts: list[str]
    """Every host name clients send (the port is ignored): the Service's in-cluster names, and an Ingress's hosts.
    Required, at least one."""

    budget_seconds: int
    """How long a request may wait for the first pod, 1-3600: each route's readiness timeout; a request still
    waiting then is answered 504. Required."""

    concurrency_target: NotRequired[int]
    """Requests in flight through the interceptor per replica the routes' triggers aim for (`scalingMetric
    .concurrency.targetValue`), 1 or more: set it above what the load trigger lets a replica carry, so that
    trigger, not this one, scales above one replica. Default: `100`."""


class FloorWindow(TypedDict):
    """A daily window during which the Deployment keeps at least `replicas`: a KEDA `cron` trigger."""

    start: str
    """When the window opens each day, HH:MM (24-hour) in the floor's `time_zone`: the trigger's `start`
    (`<minute> <hour> * * *`). Required."""
    end: str
    """When it closes, HH:MM, not `start`; before `start`, the window runs past midnight. Required."""
    replicas: int
    """The fewest replicas within the window (`desiredReplicas`), above the target's `min_replicas` and at most its
    `max_replicas`. Required."""


class DailyFloor(TypedDict):
    """Minimum replicas by time of day, ahead of a daily rise: one KEDA `cron` trigger per window, beside the load
    trigger (the HPA takes the largest proposal). KEDA's cron scaler reports `replicas` inside a window and 0
    outside against a per-replica target of 1 (kedacore/keda v2.20 pkg/scalers/cron_scaler.go), so a window holds
    the floor while the load may still ask for more. `stackctl plan` learns one from a trace."""

    time_zone: str
    """The IANA time zone the windows' times are in (the trigger's `timezone`), e.g. `UTC` or `Europe/Berlin`:
    explicit, since a schedule in the cluster's zone moves with the cluster. Required."""
    windows: list[FloorWindow]
    """The windows, 1-24; where two overlap, the larger floor holds. Required."""


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

    extra_triggers: NotRequired[list[LoadTrigger]]
    """More Prometheus triggers beside `trigger`, each named apart from the target's others: a streaming
    deployment's token triggers (Monitoring's `token_queries`). The HPA takes the largest proposal of all.
    Default: none."""

    wake: NotRequired[WakeRoute]
    """Wake on the first request while at zero; `min_replicas` must then be 0. The Prometheus triggers then read
    a missing series as no load (`ignoreNullValues`), since at zero Triton's series are gone. Default: unset."""
    daily_floor: NotRequired[DailyFloor]
    """A floor by time of day: pods started ahead of a daily rise rather than after it. Default: unset, the
    load alone."""


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
    15 s), 1-100. Default: `3`."""

    behavior: NotRequired[str]
    """KEDA's fallback behavior: `currentReplicasIfHigher` (which never scales down because metrics went missing),
    `static` or `currentReplicas`. Default: `currentReplicasIfHigher`."""


class PrometheusAuth(TypedDict):
    """Credentials KEDA sends to Prometheus, read from a Secret through a TriggerAuthentication."""

    mode: str
    """`bearer` reads the Secret's key `bearerToken`; `basic` reads `username` and `password`. Required."""

    secret_name: str
    """The Secret holding those keys. Required. Where KEDA reads it: with `keda.mode` `install`, in KEDA's own
    namespace, since the KEDA this component installs may read Secrets only there (`KEDA_RESTRICT_SECRET_ACCESS`:
    kedacore/keda pkg/scaling/resolver/scale_resolvers.go, resolveAuthSecret); with an existing KEDA, wherever
    that KEDA reads it (by default beside the TriggerAuthentication, in the Deployments' namespace)."""


class KedaInstall(TypedDict):
    """Where KEDA comes from."""

    mode: NotRequired[str]
    """`existing`: KEDA already runs in the cluster. `install`: its pinned chart (`chart`) into `namespace`, a
    namespace this component creates, before any ScaledObject. Default: `existing`."""

    namespace: NotRequired[str]
    """KEDA's namespace, for mode `install`. Default: `keda`."""

    chart: NotRequired[ChartSource]
    """The KEDA chart (named `keda` in its repository), for mode `install`.
    Default: `{"version": "2.20.2", "repository": "https://kedacore.github.io/charts"}`."""

    replicas: NotRequired[int]
    """Replicas of KEDA's operator and metrics API server, mode `install`, 1-3. From 2, each gets a
    PodDisruptionBudget of `minAvailable: 1`: one operator leads and the others stand by, the metrics servers
    share the API server's requests (keda.sh/docs/latest/operate/cluster, High Availability). Default: `1`."""

    priority_class_name: NotRequired[str]
    """A PriorityClass this component creates, mode `install`, of value 200000 (above Triton serving's 100000),
    for KEDA's pods: scaling must outlive the workloads it scales. Default: unset (the cluster's default)."""


class HttpAddOnInstall(TypedDict):
    """Where the KEDA HTTP add-on (kedacore/http-add-on) comes from: the targets' `wake` need it."""

    mode: NotRequired[str]
    """`existing`: the add-on already runs in `namespace`. `install`: its pinned chart (`chart`) into `namespace`,
    after KEDA. Default: `existing`."""

    namespace: NotRequired[str]
    """The add-on's namespace, where its scaler and interceptor run and the wake Service goes. The default is
    KEDA's default namespace: beside KEDA, as the add-on's docs install it. Default: `keda`."""

    chart: NotRequired[ChartSource]
    """The add-on's chart (named `keda-add-ons-http` in its repository), for mode `install`.
    Default: `{"version": "0.15.0", "repository": "https://kedacore.github.io/charts"}`."""


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
    above, the HPA's 15 s sync does). Default: `30`."""

    scale_up: NotRequired[ScalePolicy]
    """The HPA's `behavior.scaleUp`. By default 100% or 3 pods per 30 s, whichever is more, after a 0 s
    stabilization window, so a load step doubles capacity each period.
    Default: `{"stabilization_seconds": 0, "percent": 100, "pods": 3, "period_seconds": 30}`."""

    scale_down: NotRequired[ScalePolicy]
    """The HPA's `behavior.scaleDown`. By default 25% per 60 s after a 300 s stabilization window (the HPA's own
    default window for scale-down). Default: `{"stabilization_seconds": 300, "percent": 25, "period_seconds": 60}`."""

    fallback: NotRequired[Fallback]
    """`fallback`: the replicas to hold while the triggers cannot be read. Default: none, KEDA keeps the last
    scale."""

    gpu_memory_ratio_target: NotRequired[float]
    """GPU memory used/total per replica, 0-1, above which a `gpu-memory` trigger adds replicas; 0 leaves that
    trigger out. Its query selects Triton's `nv_gpu_memory_used_bytes` and `nv_gpu_memory_total_bytes` by the
    labels `namespace` and `deployment` (the Deployment's name), which the scrape must attach. Default: `0.8`."""

    cooldown_seconds: NotRequired[int]
    """`cooldownPeriod`, 0-86400: how long every trigger of a target at `min_replicas` 0 must stay inactive before
    KEDA scales it from 1 to 0; written only on such targets. The default is KEDA's. Default: `300`."""

    http_add_on: NotRequired[HttpAddOnInstall]
    """How the KEDA HTTP add-on is provided, for targets with `wake`. Default: each field's default."""

    paused: NotRequired[bool]
    """Pause autoscaling (`autoscaling.keda.sh/paused`); replicas stay where they are. Default: `false`."""

    paused_replicas: NotRequired[int]
    """Pause at this replica count, 0 or more (`autoscaling.keda.sh/paused-replicas`). Default: unset, not
    paused."""

    prometheus_auth: NotRequired[PrometheusAuth]
    """Credentials for Prometheus, through a TriggerAuthentication (child `<name>-prometheus-auth`) in the
    Deployments' namespace: every target must then be in one namespace. Default: none."""

    keda: NotRequired[KedaInstall]
    """How KEDA is provided; by default (mode `existing`) it already runs. Default: each field's default."""

    labels: NotRequired[dict[str, str]]
    """Labels on every object this component creates. Default: none."""

    kube_version: NotRequired[str]
    """Kubernetes version KEDA's chart is templated for when rendering without a cluster, e.g. `v1.34.0`; read
    in `install` mode only. Default: the API server's."""

    image_digests: NotRequired[dict[str, str]]
    """KEDA's images by digest, `keda.mode` `install`: each container whose `<image>:<tag>` is a key runs
    `<image>:<tag>@<digest>` (`stackctl pin-images` writes them); an image not listed runs by tag, pulled on every
    start. Default: none."""


DEFAULT_SCALE_UP: ScalePolicy = {"stabilization_seconds": 0, "percent": 100, "pods": 3, "period_seconds": 30}
DEFAULT_SCALE_DOWN: ScalePolicy = {"stabilization_seconds": 300, "percent": 25, "period_seconds": 60}
KEDA_INSTALL_ONLY = ("replicas", "priority_class_name")
"""Settings of the KEDA that `keda.mode` `install` runs: refused with an existing KEDA, where they would do
nothing."""
FLOOR_TRIGGER = "floor"
"""The daily floor's triggers are `floor-1`, `floor-2`, ...: one per window."""
GPU_TRIGGER = "gpu-memory"
"""The trigger the component adds itself while `gpu_memory_ratio_target` is above 0."""
TRIGGER_NAME = Format(DNS_LABEL, 63)
"""KEDA names the trigger's external metric `s<index>-<name>` (pkg/scaling/resolver, GenerateMetricNameWithIndex)."""

declare(
    LoadTrigger,
    name=Setting(format=TRIGGER_NAME),
    query=Setting(min_length=1),
    threshold=Setting(above=0),
    activation_threshold=Setting(default=0.0, minimum=0),
    metric_type=Setting(default=METRIC_TYPES[0], choices=METRIC_TYPES),
)
declare(
    WakeRoute,
    service=Setting(format=OBJECT_NAME),
    hosts=Setting(format=HOST_NAME, min_items=1, unique=True),
    budget_seconds=Setting(minimum=1, maximum=3600),
    concurrency_target=Setting(default=100, minimum=1, maximum=INT32_MAX),
)
MAX_FLOOR_WINDOWS = 24
declare(
    FloorWindow, start=Setting(format=CLOCK), end=Setting(format=CLOCK), replicas=Setting(minimum=1, maximum=INT32_MAX)
)
declare(DailyFloor, time_zone=Setting(format=TIME_ZONE), windows=Setting(min_items=1))
declare(
    ScaleTarget,
    deployment_name=Setting(format=OBJECT_NAME),
    namespace=Setting(format=NAMESPACE),
    min_replicas=Setting(minimum=0, maximum=INT32_MAX),
    max_replicas=Setting(minimum=1, maximum=INT32_MAX),
    extra_triggers=Setting(default=[]),
    wake=Setting(),
    daily_floor=Setting(),
)
declare(
    ScalePolicy,
    stabilization_seconds=Setting(minimum=0, maximum=3600),
    percent=Setting(minimum=1, maximum=1000),
    period_seconds=Setting(minimum=1, maximum=1800),
    pods=Setting(minimum=1, maximum=1000),
)
declare(
    Fallback,
    replicas=Setting(minimum=1, maximum=INT32_MAX),
    failure_threshold=Setting(default=3, minimum=1, maximum=100),
    behavior=Setting(default=FALLBACK_BEHAVIORS[0], choices=FALLBACK_BEHAVIORS),
)
declare(PrometheusAuth, mode=Setting(choices=AUTH_MODES), secret_name=Setting(format=OBJECT_NAME))
declare(
    KedaInstall,
    mode=Setting(default="existing", choices=KEDA_MODES),
    namespace=Setting(default="keda", format=NAMESPACE),
    chart=Setting(default=KEDA_CHART),
    replicas=Setting(default=1, minimum=1, maximum=3),
    priority_class_name=Setting(format=PRIORITY_CLASS),
)
declare(
    HttpAddOnInstall,
    mode=Setting(default="existing", choices=KEDA_MODES),
    namespace=Setting(default="keda", format=NAMESPACE),
    chart=Setting(default=HTTP_ADD_ON_CHART),
)
declare(
    KedaScalingArgs,
    targets=Setting(keys=Format(DNS_LABEL, 63)),
    prometheus_url=Setting(format=HTTP_URL),
    polling_interval_seconds=Setting(default=30, minimum=1, maximum=3600),
    scale_up=Setting(default=DEFAULT_SCALE_UP),
    scale_down=Setting(default=DEFAULT_SCALE_DOWN),
    gpu_memory_ratio_target=Setting(default=0.8, minimum=0, maximum=1),
    cooldown_seconds=Setting(default=300, minimum=0, maximum=86400),
    http_add_on=Setting(default={}),
    paused=Setting(default=False),
    paused_replicas=Setting(minimum=0, maximum=INT32_MAX),
    prometheus_auth=Setting(),
    keda=Setting(default={}),
    labels=Setting(default={}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
    kube_version=Setting(format=Format(KUBE_VERSION)),
    image_digests=Setting(default={}, keys=IMAGE_TAG, format=IMAGE_DIGEST),
)


def _floor_problems(problems: ArgProblems, path: ArgPath, target: ScaleTarget) -> None:
    """A daily floor's windows against KEDA's cron trigger and the target's replica range."""
    windows = target.get("daily_floor", {}).get("windows", [])
    if len(windows) > MAX_FLOOR_WINDOWS:
        problems.add((*path, "daily_floor", "windows"), f"has {len(windows)} windows; at most {MAX_FLOOR_WINDOWS}")
    low, high = target.get("min_replicas", 0), target.get("max_replicas", INT32_MAX)
    for index, window in enumerate(windows):
        at = (*path, "daily_floor", "windows", index)
        if problems.clean((*at, "start"), (*at, "end")) and window.get("start") == window.get("end"):
            # KEDA refuses it: "start and end can not have exactly same time input" (cron_scaler.go, Validate).
            problems.add((*at, "end"), f"{window['end']!r} is the window's start; a window must end at another time")
        replicas = window.get("replicas", 0)
        if not problems.clean((*at, "replicas"), (*path, "min_replicas"), (*path, "max_replicas")):
            continue
        if replicas <= low:
            problems.add(
                (*at, "replicas"),
                f"{replicas} is not above min_replicas ({low}): the window would hold nothing; raise it or remove it",
            )
        elif replicas > high:
            problems.add((*at, "replicas"), f"{replicas} is above max_replicas ({high}); it must be at most that")


def _trigger_name_problems(problems: ArgProblems, path: ArgPath, target: ScaleTarget, gpu_trigger: bool) -> None:
    """Each of a target's triggers named apart from the others, the component's own among them: KEDA refuses a
    ScaledObject whose triggers share a name."""
    named: list[tuple[ArgPath, str]] = [((*path, "trigger", "name"), str(target.get("trigger", {}).get("name", "")))]
    named += [
        ((*path, "extra_triggers", index, "name"), str(extra.get("name", "")))
        for index, extra in enumerate(target.get("extra_triggers", []))
    ]
    seen: dict[str, ArgPath] = {}
    for at, name in named:
        if not name or not problems.clean(at):
            continue
        if gpu_trigger and name == GPU_TRIGGER:
            problems.add(
                at,
                f"{GPU_TRIGGER!r} is the trigger this component adds for gpu_memory_ratio_target; name yours otherwise",
            )
        elif re.fullmatch(rf"{FLOOR_TRIGGER}-[0-9]+", name):
            problems.add(at, f"{name!r} is a name this component gives a daily floor's trigger; name yours otherwise")
        elif name in seen:
            problems.add(
                at,
                f"{name!r} already names {path_text(seen[name][:-1])}; KEDA needs each trigger of a target named apart",
            )
        else:
            seen[name] = at


def _install_only(problems: ArgProblems, keda: KedaInstall, given: object) -> None:
    """The install-only settings given (`given`: the Args as passed) with an existing KEDA, where they do nothing."""
    mode = keda.get("mode", "existing")
    if mode == "install" or not isinstance(given, dict):
        return
    for key in KEDA_INSTALL_ONLY:
        if key in given and problems.clean(("keda", key)):
            problems.add(
                ("keda", key),
                f"applies only to keda.mode 'install': in mode {mode!r} this component installs no KEDA, so the "
                "setting would do nothing; remove it or set keda.mode 'install'",
            )


def scaling_of(name: str, args: KedaScalingArgs) -> KedaScalingArgs:
    """`args` checked against their declaration, each default applied; every problem, if any, raised at once
    (`ArgsError`)."""
    problems = ArgProblems("KedaScaling", name, named_by(KedaScalingArgs))
    scaling = cast(KedaScalingArgs, resolve_record(problems, (), args, KedaScalingArgs))
    targets = scaling.get("targets", {})
    for key, target in targets.items():
        low, high = target.get("min_replicas", 0), target.get("max_replicas", 1)
        if problems.clean(("targets", key, "min_replicas"), ("targets", key, "max_replicas")) and low > high:
            problems.add(
                ("targets", key, "min_replicas"), f"{low} is above max_replicas ({high}); it must be at most that"
            )
        if "wake" in target and problems.clean(("targets", key, "min_replicas")) and low != 0:
            problems.add(
                ("targets", key, "wake"),
                f"is set but min_replicas is {low}: a Deployment wakes on a request only from 0; set min_replicas 0 "
                "or remove wake",
            )
        _floor_problems(problems, ("targets", key), target)
        _trigger_name_problems(problems, ("targets", key), target, bool(scaling.get("gpu_memory_ratio_target")))
    fallback = scaling.get("fallback")
    if fallback is not None:
        for key, target in targets.items():
            clean = problems.clean(("fallback", "replicas"), ("targets", key, "max_replicas"))
            if clean and fallback.get("replicas", 0) > target.get("max_replicas", INT32_MAX):
                problems.add(
                    ("fallback", "replicas"),
                    f"{fallback['replicas']} is above targets.{key}.max_replicas ({target['max_replicas']}); KEDA "
                    "would hold more replicas than the target may have",
                )
    _install_only(problems, scaling.get("keda", {}), args.get("keda") if isinstance(args, dict) else None)
    installs: dict[str, KedaInstall | HttpAddOnInstall] = {
        "keda": scaling.get("keda", {}),
        "http_add_on": scaling.get("http_add_on", {}),
    }
    for key, install in installs.items():
        chart = install.get("chart")
        if install.get("mode") == "install" and chart is not None:
            problem = chart_source_problem(chart)
            if problem is not None:
                problems.add((key, "chart"), problem)
    problems.check()
    return scaling
