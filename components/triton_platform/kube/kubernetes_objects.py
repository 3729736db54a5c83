"""Plain manifests into pulumi-kubernetes resources: one piece for every kind the builders emit."""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

KINDS: dict[tuple[str, str], Any] = {
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("networking.k8s.io/v1", "Ingress"): k8s.networking.v1.Ingress,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


CUSTOM_KINDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
    ("monitoring.coreos.com/v1alpha1", "AlertmanagerConfig"),
    ("keda.sh/v1alpha1", "ScaledObject"),
    ("keda.sh/v1alpha1", "TriggerAuthentication"),
    ("karpenter.sh/v1", "NodePool"),
    ("http.keda.sh/v1beta1", "InterceptorRoute"),
}
"""Custom resources the builders emit; anything else is a typo, not a new kind."""


def create_object(resource_name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The typed resource for a manifest's kind; its top-level fields become the resource's arguments."""
    key = (manifest["apiVersion"], manifest["kind"])
    if key in CUSTOM_KINDS:
        return k8s.apiextensions.CustomResource(
            resource_name,
            api_version=key[0],
            kind=key[1],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=opts,
        )
    if key not in KINDS:
        raise KeyError(f"no resource class for {key}; add it to KINDS or CUSTOM_KINDS")
    fields = {_snake(k): v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    resource: pulumi.CustomResource = KINDS[key](resource_name, opts=opts, **fields)
    return resource
