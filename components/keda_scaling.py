"""KEDA autoscaling of Deployments on Prometheus queries: each Deployment's load query and its GPU memory.

Builders take plain values and return plain manifests; `KedaScaling` resolves its inputs (the
Deployments' names and namespaces, the Prometheus URL) and wires the manifests, after KEDA itself
(installed from its pinned chart, or already running) and after the Deployments it scales. The
Deployments carry no `replicas`: KEDA's HPA owns it.

Field meanings follow KEDA 2.21: the ScaledObject spec (https://keda.sh/docs/2.21/reference/scaledobject-spec/),
the Prometheus scaler (https://keda.sh/docs/2.21/scalers/prometheus/) and TriggerAuthentication
(https://keda.sh/docs/2.21/concepts/authentication/).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.helm_chart import HelmChartArgs, InstalledChart
from components.keda_scaling_config import Fallback, KedaInstall, PrometheusAuth, ScalePolicy, ScalingConfig
from components.kubernetes_objects import create_object
from components.policy_exceptions import exception_annotations

TYPE_TOKEN = "triton-platform:scaling:KedaScaling"
API_VERSION = "keda.sh/v1alpha1"
AUTH_NAME = "triton-prometheus"
GPU_TRIGGER = "gpu-memory"
# KEDA's own metrics and a ServiceMonitor for them, for the KedaScalerErrors alert (chart values.yaml `prometheus`).
KEDA_VALUES = {"prometheus": {"operator": {"enabled": True, "serviceMonitor": {"enabled": True}}}}
# The stack config's defaults are the component's: one owner for each default.
_DEFAULTS = ScalingConfig()


@dataclass(frozen=True)
class LoadTrigger:
    """A Prometheus query KEDA scales a Deployment on (a `prometheus` trigger, metricType AverageValue)."""

    name: str
    """The trigger's name in the ScaledObject (`triggers[].name`), e.g. `busy-ratio`."""

    query: str
    """PromQL returning exactly one series (KEDA errors on more): the load summed over the Deployment's pods.
    KEDA divides it by the replica count (AverageValue), so the HPA aims for `threshold` per replica."""

    threshold: float
    """The per-replica value the HPA aims for (`metadata.threshold`)."""

    activation_threshold: float = 0
    """`metadata.activationThreshold`: above it a Deployment at zero replicas wakes; inert while
    `min_replicas >= 1`. Default 0, KEDA's."""


@dataclass(frozen=True)
class ScaleTarget:
    """One Deployment KEDA scales, and on what."""

    deployment: k8s.apps.v1.Deployment
    """The Deployment to scale. The ScaledObject takes its name and namespace from the resource's outputs
    (give it an explicit `metadata.namespace`) and is created after it. Leave its `spec.replicas` unset:
    KEDA's HPA owns the count, and a set one is reset on every `pulumi up`."""

    min_replicas: int
    """`minReplicaCount`: the fewest replicas; 0 lets KEDA scale the Deployment to zero."""

    max_replicas: int
    """`maxReplicaCount`: the most replicas."""

    trigger: LoadTrigger
    """The load query it scales on; the GPU-memory trigger (`ScalingBehavior.gpu_memory_ratio_target`) is added."""

    def __post_init__(self) -> None:
        if not 0 <= self.min_replicas <= self.max_replicas or self.max_replicas < 1:
            raise ValueError(
                f"ScaleTarget: min_replicas {self.min_replicas}, max_replicas {self.max_replicas}: "
                "need 0 <= min_replicas <= max_replicas and max_replicas >= 1"
            )


@dataclass(frozen=True)
class ScalingBehavior:
    """How fast and on what the ScaledObjects scale; the same for every target."""

    polling_interval_seconds: int = _DEFAULTS.polling_interval_seconds
    """`pollingInterval`: how often KEDA's own loop checks the triggers (it only scales between 0 and 1; above,
    the HPA's 15 s sync does). Default 30."""

    scale_up: ScalePolicy = _DEFAULTS.scale_up
    """The HPA's `behavior.scaleUp`. Default: 100% or 3 pods per 30 s, whichever is more, no stabilization.
    Build one with `ScalePolicy.model_validate({"stabilizationSeconds": 0, "percent": 100, "pods": 3,
    "periodSeconds": 30})`."""

    scale_down: ScalePolicy = _DEFAULTS.scale_down
    """The HPA's `behavior.scaleDown`. Default: 25% per 60 s after a 300 s stabilization window."""

    fallback: Fallback | None = None
    """`fallback`: the replicas to hold while the triggers cannot be read (Prometheus down, a vanished series),
    e.g. `Fallback.model_validate({"replicas": 2})`. Default None: KEDA keeps the last scale."""

    gpu_memory_ratio_target: float | None = _DEFAULTS.gpu_memory_ratio_target
    """GPU memory used/total per replica above which a `gpu-memory` trigger adds replicas. Its query selects
    Triton's `nv_gpu_memory_used_bytes` and `nv_gpu_memory_total_bytes` by the labels `namespace` and
    `deployment` (the Deployment's name), which the scrape must attach (this platform's ServiceMonitor does,
    components/monitoring.py). Default 0.8; None leaves the trigger out."""

    paused: bool = False
    """Pause autoscaling (`autoscaling.keda.sh/paused`); replicas stay where they are. Default False."""

    paused_replicas: int | None = None
    """Pause at this replica count (`autoscaling.keda.sh/paused-replicas`). Default None: not paused."""


@dataclass(frozen=True)
class KedaScalingArgs:
    """What `KedaScaling` needs: the Deployments to scale, where Prometheus is, and how KEDA is provided.

    On your own Deployment, with KEDA already running:

        KedaScaling("my-scaling", KedaScalingArgs(
            targets={"my-model": ScaleTarget(deployment, 1, 4, LoadTrigger("load", "sum(my_load)", 10))},
            prometheus_url="http://prometheus-operated.monitoring.svc:9090",
        ))
    """

    targets: Mapping[str, ScaleTarget]
    """The Deployments to scale, by key; a target's ScaledObject is the child `<name>-<key>-scaled-object`."""

    prometheus_url: pulumi.Input[str]
    """Prometheus KEDA queries (`metadata.serverAddress`), e.g. `http://prometheus-operated.<ns>.svc:9090`,
    the Prometheus Operator's Service; it may be another resource's output."""

    behavior: ScalingBehavior = field(default_factory=ScalingBehavior)
    """Polling, scale-up and scale-down policies, fallback, the GPU-memory target, pausing.
    Default: `ScalingBehavior()`, each of its defaults."""

    prometheus_auth: PrometheusAuth | None = None
    """Credentials for Prometheus, read from a Secret through a TriggerAuthentication (child
    `<name>-prometheus-auth`), e.g. `PrometheusAuth.model_validate({"mode": "bearer", "secretName": "prom-token"})`.
    The TriggerAuthentication goes in the Deployments' namespace, with the Secret: every target must then be in
    one namespace. Default None: no credentials."""

    keda: KedaInstall = field(default_factory=KedaInstall)
    """How KEDA is provided: mode `existing` (default: KEDA already runs in the cluster), or `install`: its
    pinned chart (`keda.chart`) into `keda.namespace`, a namespace this component creates, before any ScaledObject."""

    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels on every object this component creates. Default: none."""

    kube_version: str | None = None
    """Kubernetes version KEDA's chart is templated for when rendering without a cluster; None (default): the
    API server's. Read in `install` mode only."""


def gpu_memory_query(namespace: str, deployment: str) -> str:
    """The GPU-memory trigger's query: scoped to one Deployment by its scrape labels, one series."""
    sel = f'namespace="{namespace}", deployment="{deployment}"'
    # Sum of each pod's GPU memory ratio; AverageValue makes it the average ratio per replica.
    return f"sum(sum by (pod) (nv_gpu_memory_used_bytes{{{sel}}}) / sum by (pod) (nv_gpu_memory_total_bytes{{{sel}}}))"


def _metadata(name: str, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return metadata


def _behavior(policy: ScalePolicy) -> dict[str, Any]:
    policies = [{"type": "Percent", "value": policy.percent, "periodSeconds": policy.period_seconds}]
    if policy.pods is not None:
        policies.append({"type": "Pods", "value": policy.pods, "periodSeconds": policy.period_seconds})
    return {"stabilizationWindowSeconds": policy.stabilization_seconds, "selectPolicy": "Max", "policies": policies}


def _trigger(load: LoadTrigger, prometheus_url: str, auth: PrometheusAuth | None) -> dict[str, Any]:
    metadata = {
        "serverAddress": prometheus_url,
        "query": load.query,
        "threshold": f"{load.threshold:g}",
        "activationThreshold": f"{load.activation_threshold:g}",
        # KEDA's default (true) reads a missing series as 0 and scales down; false makes it an error,
        # so the fallback holds capacity instead.
        "ignoreNullValues": "false",
    }
    trigger: dict[str, Any] = {
        "type": "prometheus",
        "name": load.name,
        "metricType": "AverageValue",
        "metadata": metadata,
    }
    if auth is not None:
        metadata["authModes"] = auth.mode
        trigger["authenticationRef"] = {"name": AUTH_NAME}
    return trigger


def scaled_object_manifest(
    *,
    namespace: str,
    deployment: str,
    min_replicas: int,
    max_replicas: int,
    trigger: LoadTrigger,
    prometheus_url: str,
    behavior: ScalingBehavior,
    prometheus_auth: PrometheusAuth | None,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """The ScaledObject of one Deployment, named after it, in its namespace."""
    annotations = {}
    if behavior.paused:
        annotations["autoscaling.keda.sh/paused"] = "true"
    if behavior.paused_replicas is not None:
        annotations["autoscaling.keda.sh/paused-replicas"] = str(behavior.paused_replicas)
    metadata = _metadata(deployment, namespace, labels)
    if annotations:
        metadata["annotations"] = annotations
    triggers = [_trigger(trigger, prometheus_url, prometheus_auth)]
    if behavior.gpu_memory_ratio_target is not None:
        gpu = LoadTrigger(GPU_TRIGGER, gpu_memory_query(namespace, deployment), behavior.gpu_memory_ratio_target)
        triggers.append(_trigger(gpu, prometheus_url, prometheus_auth))
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
        "pollingInterval": behavior.polling_interval_seconds,
        "minReplicaCount": min_replicas,
        "maxReplicaCount": max_replicas,
        "advanced": {
            # restoreToOriginalReplicaCount is left at KEDA's default, false: deleting the ScaledObject
            # (scaling disabled) leaves the replicas where they are. Written out, it would read as drift:
            # the operator rewrites the object without it (`omitempty` in keda.sh/v1alpha1 AdvancedConfig).
            "horizontalPodAutoscalerConfig": {
                "behavior": {"scaleUp": _behavior(behavior.scale_up), "scaleDown": _behavior(behavior.scale_down)}
            },
        },
        "triggers": triggers,
    }
    if behavior.fallback is not None:
        fallback = behavior.fallback
        spec["fallback"] = {
            "failureThreshold": fallback.failure_threshold,
            "replicas": fallback.replicas,
            "behavior": fallback.behavior,
        }
    return {"apiVersion": API_VERSION, "kind": "ScaledObject", "metadata": metadata, "spec": spec}


def trigger_authentication_manifest(auth: PrometheusAuth, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The TriggerAuthentication the triggers reference: the credentials' keys, read from `auth.secret_name`."""
    keys = ["bearerToken"] if auth.mode == "bearer" else ["username", "password"]
    return {
        "apiVersion": API_VERSION,
        "kind": "TriggerAuthentication",
        "metadata": _metadata(AUTH_NAME, namespace, labels),
        "spec": {"secretTargetRef": [{"parameter": key, "name": auth.secret_name, "key": key} for key in keys]},
    }


def one_namespace(namespaces: list[str]) -> str:
    """The namespace every target is in: a TriggerAuthentication serves the ScaledObjects of its own namespace."""
    distinct = sorted(set(namespaces))
    if len(distinct) != 1:
        raise ValueError(
            f"KedaScalingArgs.prometheus_auth: the TriggerAuthentication goes in the namespace of the Deployments, "
            f"but the targets are in {distinct or 'none'}; give targets of one namespace, "
            "or one KedaScaling per namespace"
        )
    return distinct[0]


class KedaScaling(pulumi.ComponentResource):
    """A ScaledObject per target Deployment; in install mode KEDA itself first."""

    scaled_objects: dict[str, pulumi.CustomResource]
    """The ScaledObject of each target, by target key."""

    def __init__(self, name: str, args: KedaScalingArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        targets = sorted(args.targets.items())
        before: list[pulumi.Resource] = [target.deployment for _, target in targets]
        if args.keda.mode == "install":
            before.append(self._install(name, args, child))
        ordered = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=before))
        auth = args.prometheus_auth
        if auth is not None:
            namespaces = pulumi.Output.all(*(target.deployment.metadata.namespace for _, target in targets))
            manifest = namespaces.apply(
                lambda values: trigger_authentication_manifest(auth, one_namespace(values), args.labels)
            )
            _create(f"{name}-prometheus-auth", "TriggerAuthentication", manifest, ordered)
        self.scaled_objects = {
            key: _create(f"{name}-{key}-scaled-object", "ScaledObject", _scaled_object(args, target), ordered)
            for key, target in targets
        }
        self.register_outputs({})

    def _install(self, name: str, args: KedaScalingArgs, child: pulumi.ResourceOptions) -> pulumi.Resource:
        keda = args.keda
        namespace = create_object(
            f"{name}-namespace",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": keda.namespace,
                    "labels": {**args.labels, "pod-security.kubernetes.io/enforce": "restricted"},
                    "annotations": exception_annotations(
                        {
                            "namespace-network-policy": "KEDA's metrics APIService and admission webhook are called "
                            "by the API server, whose address no NetworkPolicy can name"
                        }
                    ),
                },
            },
            child,
        )
        return InstalledChart(
            f"{name}-keda",
            HelmChartArgs(
                chart_name="keda",
                chart=keda.chart.source(),
                release="keda",
                namespace=keda.namespace,
                values=KEDA_VALUES,
                kube_version=args.kube_version,
            ),
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace])),
        )


def _scaled_object(args: KedaScalingArgs, target: ScaleTarget) -> pulumi.Output[dict[str, Any]]:
    """The target's ScaledObject, once its Deployment's name and namespace and the Prometheus URL are known."""
    metadata = target.deployment.metadata
    return pulumi.Output.all(metadata.namespace, metadata.name, args.prometheus_url).apply(
        lambda values: scaled_object_manifest(
            namespace=values[0],
            deployment=values[1],
            min_replicas=target.min_replicas,
            max_replicas=target.max_replicas,
            trigger=target.trigger,
            prometheus_url=values[2],
            behavior=args.behavior,
            prometheus_auth=args.prometheus_auth,
            labels=args.labels,
        )
    )


def _create(
    resource_name: str, kind: str, manifest: pulumi.Output[dict[str, Any]], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    # The kind must be known now, to type the resource; metadata and spec may wait for their inputs.
    return create_object(
        resource_name,
        {"apiVersion": API_VERSION, "kind": kind, "metadata": manifest["metadata"], "spec": manifest["spec"]},
        opts,
    )
