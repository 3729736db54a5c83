"""KEDA autoscaling of each Triton deployment on Triton's own metrics: its scaling signal and GPU memory.

Builders return plain manifests; `KedaScaling` wires them, after KEDA itself
(installed from its pinned chart, or already running) and after the
Deployments it scales. The Deployments carry no `replicas`: KEDA's HPA owns it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import pulumi

from components.helm_chart import HelmChartArgs, InstalledChart
from components.kubernetes_objects import create_object
from components.namespace import platform_labels
from components.policy_exceptions import exception_annotations
from components.scaling_signal import ScalingSignal
from components.triton_manifests import deployment_object_name
from platform_config.schema import DeploymentConfig, PlatformConfig, ScalePolicy

TYPE_TOKEN = "triton-platform:scaling:KedaScaling"
AUTH_NAME = "triton-prometheus"
GPU_TRIGGER = "gpu-memory"
# KEDA's own metrics and a ServiceMonitor for them, for the KedaScalerErrors alert (chart values.yaml `prometheus`).
KEDA_VALUES = {"prometheus": {"operator": {"enabled": True, "serviceMonitor": {"enabled": True}}}}


def prometheus_address(config: PlatformConfig) -> str:
    """The Prometheus KEDA queries: configured, or the operator's `prometheus-operated` Service."""
    scaling = config.scaling
    return scaling.prometheus_address or f"http://prometheus-operated.{config.monitoring.prometheus.namespace}.svc:9090"


def gpu_memory_query(config: PlatformConfig, deployment: str) -> str:
    """The GPU-memory trigger's query: scoped to one deployment by ServiceMonitor labels, one series."""
    sel = f'namespace="{config.kubernetes.namespace}", deployment="{deployment_object_name(deployment)}"'
    # Sum of each pod's GPU memory ratio; AverageValue makes it the average ratio per replica.
    return f"sum(sum by (pod) (nv_gpu_memory_used_bytes{{{sel}}}) / sum by (pod) (nv_gpu_memory_total_bytes{{{sel}}}))"


def _behavior(policy: ScalePolicy) -> dict[str, Any]:
    policies = [{"type": "Percent", "value": policy.percent, "periodSeconds": policy.period_seconds}]
    if policy.pods is not None:
        policies.append({"type": "Pods", "value": policy.pods, "periodSeconds": policy.period_seconds})
    return {"stabilizationWindowSeconds": policy.stabilization_seconds, "selectPolicy": "Max", "policies": policies}


def _trigger(config: PlatformConfig, name: str, query: str, threshold: float, activation: float) -> dict[str, Any]:
    metadata = {
        "serverAddress": prometheus_address(config),
        "query": query,
        "threshold": f"{threshold:g}",
        "activationThreshold": f"{activation:g}",
        # KEDA's default (true) reads a missing series as 0 and scales down; false makes it an error,
        # so the fallback holds capacity instead.
        "ignoreNullValues": "false",
    }
    trigger: dict[str, Any] = {"type": "prometheus", "name": name, "metricType": "AverageValue", "metadata": metadata}
    auth = config.scaling.prometheus_auth
    if auth is not None:
        metadata["authModes"] = auth.mode
        trigger["authenticationRef"] = {"name": AUTH_NAME}
    return trigger


def scaled_object_manifest(
    config: PlatformConfig, name: str, deployment: DeploymentConfig, signal: ScalingSignal
) -> dict[str, Any]:
    scaling = config.scaling
    target = deployment_object_name(name)
    annotations = {}
    if scaling.paused:
        annotations["autoscaling.keda.sh/paused"] = "true"
    if scaling.paused_replicas is not None:
        annotations["autoscaling.keda.sh/paused-replicas"] = str(scaling.paused_replicas)
    metadata: dict[str, Any] = {
        "name": target,
        "namespace": config.kubernetes.namespace,
        "labels": platform_labels(config.environment),
    }
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "pollingInterval": scaling.polling_interval_seconds,
        "minReplicaCount": deployment.replicas.min,
        "maxReplicaCount": deployment.replicas.max,
        "advanced": {
            # restoreToOriginalReplicaCount is left at KEDA's default, false: deleting the ScaledObject
            # (scaling disabled) leaves the replicas where they are. Written out, it would read as drift:
            # the operator rewrites the object without it (`omitempty` in keda.sh/v1alpha1 AdvancedConfig).
            "horizontalPodAutoscalerConfig": {
                "behavior": {"scaleUp": _behavior(scaling.scale_up), "scaleDown": _behavior(scaling.scale_down)}
            },
        },
        "triggers": [
            _trigger(config, signal.name, signal.query, signal.target, signal.activation),
            _trigger(config, GPU_TRIGGER, gpu_memory_query(config, name), scaling.gpu_memory_ratio_target, 0),
        ],
    }
    if scaling.fallback is not None:
        fallback = scaling.fallback
        spec["fallback"] = {
            "failureThreshold": fallback.failure_threshold,
            "replicas": fallback.replicas,
            "behavior": fallback.behavior,
        }
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": metadata, "spec": spec}


def trigger_authentication_manifest(config: PlatformConfig) -> dict[str, Any] | None:
    auth = config.scaling.prometheus_auth
    if auth is None:
        return None
    keys = ["bearerToken"] if auth.mode == "bearer" else ["username", "password"]
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "TriggerAuthentication",
        "metadata": {
            "name": AUTH_NAME,
            "namespace": config.kubernetes.namespace,
            "labels": platform_labels(config.environment),
        },
        "spec": {"secretTargetRef": [{"parameter": key, "name": auth.secret_name, "key": key} for key in keys]},
    }


def scaling_manifests(config: PlatformConfig, signals: Mapping[str, ScalingSignal]) -> dict[str, dict[str, Any]]:
    """Every KEDA object of the stack, by role; `signals`: each deployment's (components/scaling_signal.py)."""
    out: dict[str, dict[str, Any]] = {}
    auth = trigger_authentication_manifest(config)
    if auth is not None:
        out["prometheus-auth"] = auth
    for name, deployment in sorted(config.serving.deployments.items()):
        out[f"{name}-scaled-object"] = scaled_object_manifest(config, name, deployment, signals[name])
    return out


@dataclass(frozen=True)
class KedaScalingArgs:
    config: PlatformConfig
    """The stack's validated configuration."""

    deployments: dict[str, pulumi.CustomResource]
    """The Triton Deployments to scale, by deployment name."""

    signals: Mapping[str, ScalingSignal]
    """Each deployment's scaling signal (query and target), by deployment name."""

    kube_version: str | None = None
    """Kubernetes version KEDA's chart is templated for when rendering; None when deploying (the API server's)."""


class KedaScaling(pulumi.ComponentResource):
    """A ScaledObject per Triton deployment; in install mode KEDA itself first."""

    def __init__(self, name: str, args: KedaScalingArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        config = args.config
        before: list[pulumi.Resource] = list(args.deployments.values())
        if config.scaling.keda.mode == "install":
            before.append(self._install(name, config, child, args.kube_version))
        ordered = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=before))
        for role, manifest in scaling_manifests(config, args.signals).items():
            create_object(f"{name}-{role}", manifest, ordered)
        self.register_outputs({})

    def _install(
        self, name: str, config: PlatformConfig, child: pulumi.ResourceOptions, kube_version: str | None
    ) -> pulumi.Resource:
        keda = config.scaling.keda
        namespace = create_object(
            f"{name}-namespace",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": keda.namespace,
                    "labels": {
                        **platform_labels(config.environment),
                        "pod-security.kubernetes.io/enforce": "restricted",
                    },
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
                chart=keda.chart,
                release="keda",
                namespace=keda.namespace,
                values=KEDA_VALUES,
                kube_version=kube_version,
            ),
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace])),
        )
