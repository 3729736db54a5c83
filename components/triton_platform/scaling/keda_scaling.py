"""KEDA autoscaling of Deployments on Prometheus queries: each Deployment's load query and its GPU memory.

Builders take the checked Args (`scaling_of`, triton_platform/scaling/keda_scaling_args.py) and return plain manifests;
`KedaScaling` resolves its inputs (the Deployments' names and namespaces, the Prometheus URL) and wires
the manifests, after KEDA itself (installed from its pinned chart, or already running) and after the
Deployments it scales. The Deployments carry no `replicas`: KEDA's HPA owns it. No
`from __future__ import annotations`: Pulumi infers the component's schema from its annotations as objects.
"""

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Optional

import pulumi

from triton_platform.args.arg_problems import ArgPath, ArgProblems
from triton_platform.args.component_types import type_token, with_former_type
from triton_platform.args.object_claims import claim
from triton_platform.http_add_on import API_VERSION as HTTP_API
from triton_platform.http_add_on import (
    CHART_NAME,
    add_on_values,
    disruption_budgets,
    interceptor_routes,
    route_names,
    wake_service_manifest,
    wake_triggers,
)
from triton_platform.kube.helm_chart import HelmChartArgs, InstalledChart
from triton_platform.kube.kubernetes_objects import create_object
from triton_platform.kube.pod_spread import preferred_host_spread
from triton_platform.kube.policy_exceptions import exception_annotations
from triton_platform.kube.priority_classes import SCALING_PRIORITY, priority_class
from triton_platform.promql import label_value
from triton_platform.scaling.keda_scaling_args import (
    FLOOR_TRIGGER,
    GPU_TRIGGER,
    METRIC_TYPES,
    DailyFloor,
    KedaInstall,
    KedaScalingArgs,
    LoadTrigger,
    PrometheusAuth,
    ScalePolicy,
    ScaleTarget,
    WakeRoute,
    scaling_of,
)

COMPONENT = "KedaScaling"
TYPE_TOKEN = type_token(COMPONENT)
FORMER_TYPE_TOKEN = "triton-platform:scaling:KedaScaling"
"""The type before the component package (component_types.py)."""
API_VERSION = "keda.sh/v1alpha1"
AUTH_NAME = "triton-prometheus"


def keda_values(keda: KedaInstall) -> dict[str, Any]:
    """The KEDA chart's values (kedacore/charts keda/values.yaml): its own metrics for the KedaScalerErrors alert,
    RBAC narrowed to what the platform's ScaledObjects use, and in production's settings replicas, disruption
    budgets and a priority. Image pull policies and digests are the platform's own rule (helm_chart.py)."""
    replicas = keda["replicas"]
    values: dict[str, Any] = {
        # KEDA's own metrics and a ServiceMonitor for them.
        "prometheus": {"operator": {"enabled": True, "serviceMonitor": {"enabled": True}}},
        # The chart's default grants get, and scale, on every resource of every API group (`scaledRefKinds`
        # "*"/"*"); the platform scales Deployments only, which its ClusterRole covers without them.
        "rbac": {"enabledCustomScaledRefKinds": False},
        # The chart's default lets the operator list, watch and get every Secret in the cluster. Restricted, it
        # reads Secrets in its own namespace only (KEDA_RESTRICT_SECRET_ACCESS), where `prometheus_auth`'s lives;
        # a scale target's env from Secrets elsewhere (Triton's admin key) is then skipped, not an error
        # (kedacore/keda pkg/scaling/resolver/scale_resolvers.go: readSecrets, resolveAuthSecret).
        "permissions": {"operator": {"restrict": {"secret": True}}, "metricServer": {"restrict": {"secret": True}}},
        "operator": {"replicaCount": replicas},
        "metricsServer": {"replicaCount": replicas},
    }
    if replicas > 1:
        budget = {"minAvailable": 1}
        values["podDisruptionBudget"] = {"operator": budget, "metricServer": budget}
        # Replicas on one node fall together: spread each Deployment's pods over nodes where the nodes allow.
        for part, app in (("operator", "keda-operator"), ("metricsServer", "keda-operator-metrics-apiserver")):
            values[part]["affinity"] = preferred_host_spread({"app.kubernetes.io/name": app})
    if "priority_class_name" in keda:
        values["priorityClassName"] = keda["priority_class_name"]
    return values


def keda_namespace(keda: KedaInstall, labels: Mapping[str, str]) -> dict[str, Any]:
    """The namespace KEDA is installed into, which this component creates."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": keda["namespace"],
            "labels": {**labels, "pod-security.kubernetes.io/enforce": "restricted"},
            "annotations": exception_annotations(
                {
                    "namespace-network-policy": "KEDA's metrics APIService and admission webhook are called by the "
                    "API server, whose address no NetworkPolicy can name"
                }
            ),
        },
    }


def named_objects(scaling: KedaScalingArgs) -> list[dict[str, Any]]:
    """What the component creates whose names are known before its inputs resolve: KEDA's namespace and
    PriorityClass and the add-on's budgets where it installs them, and each target's ScaledObject, routes and wake
    Service where the target's namespace and Deployment name are plain strings (an Output's are not checked)."""
    keda, add_on, labels = scaling["keda"], scaling["http_add_on"], scaling["labels"]
    out: list[dict[str, Any]] = []
    if keda["mode"] == "install":
        out += [keda_namespace(keda, labels), *filter(None, [keda_priority_class(keda, labels)])]
    targets = scaling["targets"].values()
    if add_on["mode"] == "install" and any("wake" in target for target in targets):
        out += disruption_budgets(add_on["namespace"], labels).values()
    for target in targets:
        namespace, deployment = target["namespace"], target["deployment_name"]
        if not (isinstance(namespace, str) and isinstance(deployment, str)):
            continue
        out.append(
            {"apiVersion": API_VERSION, "kind": "ScaledObject", "metadata": _metadata(deployment, namespace, {})}
        )
        if "wake" in target:
            route = {"apiVersion": HTTP_API, "kind": "InterceptorRoute"}
            out += [
                {**route, "metadata": {"name": n, "namespace": namespace}} for n in route_names(deployment).values()
            ]
            out.append(wake_service_manifest(namespace, add_on["namespace"], labels))
    return out


def keda_priority_class(keda: KedaInstall, labels: Mapping[str, str]) -> dict[str, Any] | None:
    """The PriorityClass of KEDA's pods, where one is named."""
    if "priority_class_name" not in keda:
        return None
    description = f"KEDA in {keda['namespace']}: scaling outranks the Triton serving it scales."
    return priority_class(keda["priority_class_name"], SCALING_PRIORITY, description, True, dict(labels))


def gpu_memory_query(namespace: str, deployment: str) -> str:
    """The GPU-memory trigger's query: scoped to one Deployment by its scrape labels, one series."""
    sel = f"namespace={label_value(namespace)}, deployment={label_value(deployment)}"
    # Sum of each pod's GPU memory ratio; AverageValue makes it the average ratio per replica.
    return f"sum(sum by (pod) (nv_gpu_memory_used_bytes{{{sel}}}) / sum by (pod) (nv_gpu_memory_total_bytes{{{sel}}}))"


def _metadata(name: str, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return metadata


def _behavior(policy: ScalePolicy) -> dict[str, Any]:
    period = policy["period_seconds"]
    policies = [{"type": "Percent", "value": policy["percent"], "periodSeconds": period}]
    if "pods" in policy:
        policies.append({"type": "Pods", "value": policy["pods"], "periodSeconds": period})
    return {"stabilizationWindowSeconds": policy["stabilization_seconds"], "selectPolicy": "Max", "policies": policies}


def _trigger(load: LoadTrigger, prometheus_url: str, auth: PrometheusAuth | None, *, at_zero: bool) -> dict[str, Any]:
    metadata = {
        "serverAddress": prometheus_url,
        "query": load["query"],
        "threshold": f"{load['threshold']:g}",
        "activationThreshold": f"{load.get('activation_threshold', 0):g}",
        # KEDA's default (true) reads a missing series as 0 and scales down; false makes it an error,
        # so the fallback holds capacity instead. A target woken on request has no pod, so no series, at zero:
        # there a missing series is no load, and the wake triggers answer for the first request.
        "ignoreNullValues": "true" if at_zero else "false",
    }
    trigger: dict[str, Any] = {
        "type": "prometheus",
        "name": load["name"],
        "metricType": load.get("metric_type", METRIC_TYPES[0]),
        "metadata": metadata,
    }
    if auth is not None:
        metadata["authModes"] = auth["mode"]
        trigger["authenticationRef"] = {"name": AUTH_NAME}
    return trigger


def floor_triggers(floor: DailyFloor) -> list[dict[str, Any]]:
    """A KEDA `cron` trigger per window of `floor` (kedacore/keda v2.20 pkg/scalers/cron_scaler.go: `timezone`,
    `start`, `end` and `desiredReplicas`; the start and end are 5-field cron expressions, minute first), named
    `floor-<n>`, n from 1."""
    return [
        {
            "type": "cron",
            "name": f"{FLOOR_TRIGGER}-{index}",
            "metadata": {
                "timezone": floor["time_zone"],
                "start": _daily(window["start"]),
                "end": _daily(window["end"]),
                "desiredReplicas": str(window["replicas"]),
            },
        }
        for index, window in enumerate(floor["windows"], start=1)
    ]


def _daily(clock: str) -> str:
    """`HH:MM` as a cron expression that fires at that time every day."""
    hour, minute = clock.split(":")
    return f"{int(minute)} {int(hour)} * * *"


def scaled_object_manifest(
    *,
    namespace: str,
    deployment: str,
    min_replicas: int,
    max_replicas: int,
    trigger: LoadTrigger,
    prometheus_url: str,
    scaling: KedaScalingArgs,
    wake: WakeRoute | None = None,
    floor: DailyFloor | None = None,
    extra: Sequence[LoadTrigger] = (),
) -> dict[str, Any]:
    """The ScaledObject of one Deployment, named after it, in its namespace; `scaling` is checked
    (`scaling_of`): how fast and on what every target scales; `wake`, the target's, if it wakes on request;
    `floor`, its daily floor; `extra`, its triggers beside the load's, queries known."""
    annotations = {}
    if scaling["paused"]:
        annotations["autoscaling.keda.sh/paused"] = "true"
    if "paused_replicas" in scaling:
        annotations["autoscaling.keda.sh/paused-replicas"] = str(scaling["paused_replicas"])
    metadata = _metadata(deployment, namespace, scaling["labels"])
    if annotations:
        metadata["annotations"] = annotations
    auth = scaling.get("prometheus_auth")
    at_zero = wake is not None
    triggers = [_trigger(load, prometheus_url, auth, at_zero=at_zero) for load in (trigger, *extra)]
    if scaling["gpu_memory_ratio_target"]:
        gpu: LoadTrigger = {
            "name": GPU_TRIGGER,
            "query": gpu_memory_query(namespace, deployment),
            "threshold": scaling["gpu_memory_ratio_target"],
        }
        triggers.append(_trigger(gpu, prometheus_url, auth, at_zero=at_zero))
    if floor is not None:
        triggers += floor_triggers(floor)
    if at_zero:
        triggers += wake_triggers(deployment, scaling["http_add_on"]["namespace"])
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
        "pollingInterval": scaling["polling_interval_seconds"],
        **({"cooldownPeriod": scaling["cooldown_seconds"]} if min_replicas == 0 else {}),
        "minReplicaCount": min_replicas,
        "maxReplicaCount": max_replicas,
        "advanced": {
            # restoreToOriginalReplicaCount is left at KEDA's default, false: deleting the ScaledObject
            # (scaling disabled) leaves the replicas where they are. Written out, it would read as drift:
            # the operator rewrites the object without it (`omitempty` in keda.sh/v1alpha1 AdvancedConfig).
            "horizontalPodAutoscalerConfig": {
                "behavior": {"scaleUp": _behavior(scaling["scale_up"]), "scaleDown": _behavior(scaling["scale_down"])}
            },
        },
        "triggers": triggers,
    }
    if "fallback" in scaling:
        fallback = scaling["fallback"]
        spec["fallback"] = {
            "failureThreshold": fallback["failure_threshold"],
            "replicas": fallback["replicas"],
            "behavior": fallback["behavior"],
        }
    return {"apiVersion": API_VERSION, "kind": "ScaledObject", "metadata": metadata, "spec": spec}


def trigger_authentication_manifest(auth: PrometheusAuth, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The TriggerAuthentication the triggers reference: the credentials' keys, read from `auth["secret_name"]`."""
    keys = ["bearerToken"] if auth["mode"] == "bearer" else ["username", "password"]
    return {
        "apiVersion": API_VERSION,
        "kind": "TriggerAuthentication",
        "metadata": _metadata(AUTH_NAME, namespace, labels),
        "spec": {"secretTargetRef": [{"parameter": key, "name": auth["secret_name"], "key": key} for key in keys]},
    }


def one_namespace(
    namespaces: list[str],
    problems: ArgProblems,
    path: ArgPath = ("prometheus_auth",),
    what: str = "the TriggerAuthentication goes in the namespace of the Deployments",
) -> str:
    """The namespace every target is in: a TriggerAuthentication serves the ScaledObjects of its own namespace,
    and one wake Service the woken Deployments of one namespace."""
    distinct = sorted(set(namespaces))
    if len(distinct) != 1:
        problems.add(
            path,
            f"{what}, but the targets are in {distinct or 'none'}; give targets of one namespace, or one "
            "KedaScaling per namespace",
        )
    problems.check()
    return distinct[0]


class KedaScaling(pulumi.ComponentResource):
    """A ScaledObject per target Deployment, each created after its Deployment; in install mode KEDA itself
    first. docs/architecture.md shows it on a Deployment of your own, with KEDA already running."""

    scaled_object_names: pulumi.Output[dict[str, str]]
    """The name of each target's ScaledObject (in its Deployment's namespace), by target key."""

    def __init__(self, name: str, args: KedaScalingArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        scaling = scaling_of(name, args)
        claim(f"{COMPONENT} {name}", opts, named_objects(scaling))
        super().__init__(TYPE_TOKEN, name, None, with_former_type(opts, FORMER_TYPE_TOKEN))
        child = pulumi.ResourceOptions(parent=self)
        targets = sorted(scaling["targets"].items())
        # KEDA first; each object also waits for the Deployments whose names and namespaces it reads.
        ordered = child
        if scaling["keda"]["mode"] == "install":
            keda = self._install(name, scaling, child)
            ordered = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[keda]))
        auth = scaling.get("prometheus_auth")
        if auth is not None:
            namespaces = pulumi.Output.all(*(target["namespace"] for _, target in targets))
            manifest = namespaces.apply(
                lambda values: trigger_authentication_manifest(
                    auth, one_namespace(values, ArgProblems("KedaScaling", name)), scaling["labels"]
                )
            )
            _create(f"{name}-prometheus-auth", manifest, ordered, "TriggerAuthentication")
        woken = [(key, target) for key, target in targets if "wake" in target]
        if woken:
            self._wake(name, scaling, woken, ordered)
        manifests = {key: _scaled_object(scaling, target) for key, target in targets}
        # Not an output of the component's schema (a resource has no schema type there): a handle for Python callers.
        self.scaled_objects: dict[str, pulumi.CustomResource] = {
            key: _create(f"{name}-{key}-scaled-object", manifest, ordered, "ScaledObject")
            for key, manifest in manifests.items()
        }
        self.scaled_object_names = pulumi.Output.all(
            **{key: manifest.apply(lambda m: str(m["metadata"]["name"])) for key, manifest in manifests.items()}
        )
        self.register_outputs({"scaled_object_names": self.scaled_object_names})

    def _wake(
        self, name: str, scaling: KedaScalingArgs, woken: list[tuple[str, ScaleTarget]], ordered: pulumi.ResourceOptions
    ) -> None:
        """The add-on (in install mode, after KEDA), each woken target's routes, and the wake Service of their
        namespace in the add-on's."""
        add_on = scaling["http_add_on"]
        after = ordered
        if add_on["mode"] == "install":
            chart = InstalledChart(
                f"{name}-http-add-on",
                HelmChartArgs(
                    chart_name=CHART_NAME,
                    chart=add_on["chart"],
                    release=CHART_NAME,
                    namespace=add_on["namespace"],
                    values=add_on_values(
                        scaling["keda"].get("priority_class_name") if scaling["keda"]["mode"] == "install" else None
                    ),
                    kube_version=scaling.get("kube_version"),
                    image_digests=dict(scaling["image_digests"]),
                ),
                ordered,
            )
            after = pulumi.ResourceOptions.merge(ordered, pulumi.ResourceOptions(depends_on=[chart]))
            for component, budget in disruption_budgets(add_on["namespace"], scaling["labels"]).items():
                create_object(f"{name}-http-add-on-{component}-pdb", budget, after)
        for key, target in woken:
            wake = target["wake"]
            known = pulumi.Output.all(target["namespace"], target["deployment_name"], wake["service"])
            routes = known.apply(partial(_routes, wake, scaling["labels"]))
            for protocol in ("http", "grpc"):
                _create(f"{name}-{key}-{protocol}-route", routes[protocol], after, "InterceptorRoute", HTTP_API)
        # One wake Service takes the traffic of every woken Deployment: they share one namespace.
        namespaces = pulumi.Output.all(*(target["namespace"] for _, target in woken))
        service = namespaces.apply(
            lambda values: wake_service_manifest(
                one_namespace(
                    values,
                    ArgProblems("KedaScaling", name),
                    ("targets",),
                    "the wake Service serves the Deployments of one namespace",
                ),
                add_on["namespace"],
                scaling["labels"],
            )
        )
        _create(f"{name}-wake-service", service, after, "Service", "v1")

    def _install(self, name: str, scaling: KedaScalingArgs, child: pulumi.ResourceOptions) -> pulumi.Resource:
        keda = scaling["keda"]
        namespace = create_object(f"{name}-namespace", keda_namespace(keda, scaling["labels"]), child)
        before = [namespace]
        priority = keda_priority_class(keda, scaling["labels"])
        if priority is not None:
            before.append(create_object(f"{name}-priority-class", priority, child))
        return InstalledChart(
            f"{name}-keda",
            HelmChartArgs(
                chart_name="keda",
                chart=keda["chart"],
                release="keda",
                namespace=keda["namespace"],
                values=keda_values(keda),
                kube_version=scaling.get("kube_version"),
                image_digests=dict(scaling["image_digests"]),
            ),
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=before)),
        )


def _routes(wake: WakeRoute, labels: dict[str, str], known: list[str]) -> dict[str, dict[str, Any]]:
    """A woken target's InterceptorRoutes, once its namespace, Deployment and Service names are known."""
    namespace, deployment, service = known
    return interceptor_routes(
        deployment=deployment,
        namespace=namespace,
        service=service,
        hosts=wake["hosts"],
        budget_seconds=wake["budget_seconds"],
        concurrency_target=wake["concurrency_target"],
        labels=labels,
    )


def _scaled_object(scaling: KedaScalingArgs, target: ScaleTarget) -> pulumi.Output[dict[str, Any]]:
    """The target's ScaledObject, once its Deployment's name and namespace, the Prometheus URL and the load query
    are known."""
    trigger, extra = target["trigger"], target.get("extra_triggers", [])
    known = pulumi.Output.all(
        target["namespace"],
        target["deployment_name"],
        scaling["prometheus_url"],
        trigger["query"],
        *(load["query"] for load in extra),
    )
    return known.apply(
        lambda values: scaled_object_manifest(
            namespace=values[0],
            deployment=values[1],
            min_replicas=target["min_replicas"],
            max_replicas=target["max_replicas"],
            trigger={**trigger, "query": values[3]},
            prometheus_url=values[2],
            scaling=scaling,
            wake=target.get("wake"),
            floor=target.get("daily_floor"),
            extra=[{**load, "query": query} for load, query in zip(extra, values[4:], strict=True)],
        )
    )


def _create(
    resource_name: str,
    manifest: pulumi.Output[dict[str, Any]],
    opts: pulumi.ResourceOptions,
    kind: str,
    api_version: str = API_VERSION,
) -> pulumi.CustomResource:
    # The kind must be known now, to type the resource; metadata and spec may wait for their inputs.
    return create_object(
        resource_name,
        {"apiVersion": api_version, "kind": kind, "metadata": manifest["metadata"], "spec": manifest["spec"]},
        opts,
    )
