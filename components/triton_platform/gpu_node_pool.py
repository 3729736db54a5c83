"""The GPU node pool: device plugin, node autoscaling, priorities and warm spare capacity.

Builders take the checked Args (`pool_of`, triton_platform/gpu_node_pool_args.py) and return plain manifests;
`GpuNodePool` wires them and exposes the pool placement (where GPU pods may run, what they tolerate,
the GPU resource) that TritonServing uses. No `from __future__ import annotations`: Pulumi infers the
component's schema from its annotations as objects.
"""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from triton_platform.component_types import type_token, with_former_type
from triton_platform.dcgm_counters import COUNTERS_FILE, counters_csv
from triton_platform.gpu_node_pool_args import COMPONENT, GpuNodePoolArgs, pool_of
from triton_platform.gpu_pool_contract import PoolPlacement, Toleration
from triton_platform.images import image_fields
from triton_platform.kubernetes_objects import create_object
from triton_platform.namespace import DNS_EGRESS, deny_all
from triton_platform.object_claims import claim
from triton_platform.policy_exceptions import exception_annotations
from triton_platform.priority_classes import priority_class
from triton_platform.workload_identity import identity_pod_labels

TYPE_TOKEN = type_token("GpuNodePool")
FORMER_TYPE_TOKEN = "triton-platform:gpu:GpuNodePool"
"""The type before the component package (component_types.py)."""
SYSTEM_NAMESPACE = "gpu-system"
BATCH_PRIORITY, OVERPROVISIONING_PRIORITY = 1_000, -10
"""Batch work ranks below inference (100,000); placeholders below everything, so any pod evicts them."""
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
DCGM_PORT = 9400
COUNTERS_DIR = "/etc/dcgm-exporter/triton-platform"
"""Beside the image's own counters files in /etc/dcgm-exporter, which stay visible."""
AGENT_LOG_STORAGE = {"requests": {"ephemeral-storage": "64Mi"}, "limits": {"ephemeral-storage": "256Mi"}}
"""Node agents and placeholders write nothing but their logs, which count against ephemeral storage."""
RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


def _meta(
    platform: dict[str, str], name: str, namespace: str | None = SYSTEM_NAMESPACE, **extra: Any
) -> dict[str, Any]:
    # Empty maps are left out: the API server drops them, so they would read as a change on every run.
    metadata: dict[str, Any] = {"name": name, **{k: v for k, v in {"labels": platform, **extra}.items() if v}}
    if namespace:
        metadata["namespace"] = namespace
    return metadata


def pool_placement(pool: GpuNodePoolArgs) -> PoolPlacement:
    """The placement a pool offers: its node labels, a toleration for each taint, and its GPU resource."""
    tolerations: list[Toleration] = [
        {"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]}
        if t["value"]
        else {"key": t["key"], "operator": "Exists", "effect": t["effect"]}
        for t in pool["taints"]
    ]
    return {
        "node_selector": dict(pool["node_labels"]),
        "tolerations": tolerations,
        "gpu_resource": pool["resource_name"],
    }


def node_taints(pool: GpuNodePoolArgs) -> list[dict[str, str]]:
    """The taints of the pool's nodes as a Node's `spec.taints` and a NodePool's template write them."""
    return [{"key": t["key"], "value": t["value"], "effect": t["effect"]} for t in pool["taints"]]


def device_plugin_config(pool: GpuNodePoolArgs) -> dict[str, Any]:
    """The plugin's config file (`version: v1`): MIG strategy and time-slicing replicas."""
    plugin = pool["device_plugin"]
    config: dict[str, Any] = {
        "version": "v1",
        "flags": {"migStrategy": plugin["mig_strategy"] if plugin["sharing"] == "mig" else "none"},
    }
    if plugin["sharing"] == "time-slicing":
        resources = [{"name": pool["resource_name"], "replicas": plugin["time_slicing_replicas"]}]
        config["sharing"] = {"timeSlicing": {"resources": resources}}
    return config


def system_namespace_manifests(platform: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The `gpu-system` namespace the pool's cluster-level objects live in, and its egress lock-down."""
    return {
        "system-namespace": {
            "apiVersion": "v1",
            "kind": "Namespace",
            # Privileged only here: node agents need host paths; Triton's namespace stays restricted.
            "metadata": _meta(
                platform,
                SYSTEM_NAMESPACE,
                None,
                labels={**platform, "pod-security.kubernetes.io/enforce": "privileged"},
            ),
        },
        # The node agents talk to the kubelet over host sockets only: no network egress at all.
        "system-deny-egress": deny_all(SYSTEM_NAMESPACE, "Egress", platform),
    }


def device_plugin_manifests(
    pool: GpuNodePoolArgs, placement: PoolPlacement, platform: dict[str, str], digests: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """The device plugin with its config."""
    labels = {"app.kubernetes.io/name": "nvidia-device-plugin"}
    plugin_config = yaml.safe_dump(device_plugin_config(pool), sort_keys=False)
    # Root, for the kubelet's socket directory; no escalation, no capabilities but what MIG needs.
    capabilities = {"drop": ["ALL"], **({"add": ["SYS_ADMIN"]} if pool["device_plugin"]["sharing"] == "mig" else {})}
    pod_spec = {
        # Node-critical: without it the node advertises no GPUs at all.
        "priorityClassName": "system-node-critical",
        "nodeSelector": dict(placement["node_selector"]),
        "tolerations": [*placement["tolerations"], {"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "nvidia-device-plugin",
                **image_fields(pool["device_plugin"]["image"], digests),
                "args": ["--config-file=/config/config.yaml"],
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": capabilities},
                "resources": {
                    "requests": {"cpu": "10m", "memory": "32Mi", **AGENT_LOG_STORAGE["requests"]},
                    "limits": {"cpu": "100m", "memory": "128Mi", **AGENT_LOG_STORAGE["limits"]},
                },
                "volumeMounts": [
                    {"name": "device-plugins", "mountPath": DEVICE_PLUGIN_DIR},
                    {"name": "config", "mountPath": "/config", "readOnly": True},
                ],
            }
        ],
        "volumes": [
            # The kubelet's device-plugin socket directory: the one host path a device plugin cannot avoid.
            {"name": "device-plugins", "hostPath": {"path": DEVICE_PLUGIN_DIR, "type": "Directory"}},
            {"name": "config", "configMap": {"name": "nvidia-device-plugin"}},
        ],
    }
    return {
        "device-plugin-config": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(platform, "nvidia-device-plugin"),
            "data": {"config.yaml": plugin_config},
        },
        "device-plugin": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": _meta(
                platform,
                "nvidia-device-plugin",
                annotations=exception_annotations(
                    {
                        "pod-security-restricted": "the device plugin runs as root to create its socket in the "
                        "kubelet's device-plugin directory",
                        "no-host-access": "the kubelet's device-plugin directory is a host path by design",
                        "read-only-root-filesystem": "the plugin writes only its socket, but the node's NVIDIA "
                        "container toolkit hooks write into the container's root filesystem (manifest_scan/"
                        "exceptions.yaml)",
                    }
                ),
            ),
            "spec": {
                "selector": {"matchLabels": labels},
                "updateStrategy": {"type": "RollingUpdate"},
                # The plugin reads its config only at start: a change rolls it.
                "template": {
                    "metadata": {
                        "labels": labels,
                        "annotations": {
                            "triton-platform/config-sha256": hashlib.sha256(plugin_config.encode()).hexdigest()
                        },
                    },
                    "spec": pod_spec,
                },
            },
        },
    }


def metrics_only_policy(metrics_namespace: str, platform: dict[str, str]) -> dict[str, Any]:
    """Admits Prometheus, from `metrics_namespace`, to the node agents' metrics port; nothing else reaches them."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(platform, "metrics-only"),
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [
                        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": metrics_namespace}}}
                    ],
                    "ports": [{"protocol": "TCP", "port": DCGM_PORT}],
                }
            ],
        },
    }


def max_gpus(pool: GpuNodePoolArgs) -> int:
    """The most GPUs the pool's nodes hold together: `max_nodes` x `gpus_per_node`."""
    return pool["max_nodes"] * pool["gpus_per_node"]


def advertised_per_gpu(pool: GpuNodePoolArgs) -> int:
    """How many `nvidia.com/gpu` the plugin advertises per physical GPU."""
    plugin = pool["device_plugin"]
    return plugin["time_slicing_replicas"] if plugin["sharing"] == "time-slicing" else 1


@dataclass(frozen=True)
class NodeClassProvider:
    """A Karpenter cloud provider: its node class's API group and the instance labels it puts on nodes."""

    group: str
    gpu_count_label: str
    family_label: str
    gpu_name_label: str


NODE_CLASSES = {
    # aws/karpenter-provider-aws pkg/apis/v1 (LabelInstanceGPUCount, LabelInstanceFamily, LabelInstanceGPUName).
    "EC2NodeClass": NodeClassProvider(
        "karpenter.k8s.aws",
        "karpenter.k8s.aws/instance-gpu-count",
        "karpenter.k8s.aws/instance-family",
        "karpenter.k8s.aws/instance-gpu-name",
    ),
    # Azure/karpenter-provider-azure pkg/apis/v1beta1 (LabelSKUGPUCount, LabelSKUFamily, LabelSKUGPUName).
    "AKSNodeClass": NodeClassProvider(
        "karpenter.azure.com",
        "karpenter.azure.com/sku-gpu-count",
        "karpenter.azure.com/sku-family",
        "karpenter.azure.com/sku-gpu-name",
    ),
}


def karpenter_node_pool(
    pool: GpuNodePoolArgs, placement: PoolPlacement, prefix: str, platform: dict[str, str]
) -> dict[str, Any]:
    """The Karpenter NodePool `<prefix>-gpu`, sized and shaped for the pool."""
    karpenter = pool["karpenter"]
    provider = NODE_CLASSES[karpenter["node_class_kind"]]
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(karpenter["capacity_types"])},
        # Exactly the node shape the pool is sized for: Karpenter would otherwise pack pods onto 4- or 8-GPU sizes.
        {"key": provider.gpu_count_label, "operator": "In", "values": [str(pool["gpus_per_node"])]},
    ]
    if karpenter["instance_families"]:
        requirements.append(
            {"key": provider.family_label, "operator": "In", "values": list(karpenter["instance_families"])}
        )
    if karpenter["gpu_names"]:
        requirements.append({"key": provider.gpu_name_label, "operator": "In", "values": list(karpenter["gpu_names"])})
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": _meta(platform, f"{prefix}-gpu", None),
        "spec": {
            "template": {
                "metadata": {"labels": dict(placement["node_selector"])},
                "spec": {
                    "nodeClassRef": {
                        "group": provider.group,
                        "kind": karpenter["node_class_kind"],
                        "name": karpenter["node_class"],
                    },
                    "requirements": requirements,
                    "taints": node_taints(pool),
                    "expireAfter": karpenter["expire_after"],
                },
            },
            # The pool's ceiling, in GPUs as the nodes advertise them (Karpenter counts node capacity).
            "limits": {pool["resource_name"]: str(max_gpus(pool) * advertised_per_gpu(pool))},
            # Conservative scale-down: only empty nodes, after they stayed empty, one node at a time.
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": karpenter["consolidate_after"],
                "budgets": [{"nodes": "1"}],
            },
        },
    }


def cluster_autoscaler_manifests(
    pool: GpuNodePoolArgs, prefix: str, platform: dict[str, str], digests: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """The cluster-autoscaler in `gpu-system`, bounded to the pool's node groups; its ClusterRole is `<prefix>-...`."""
    ca = pool["cluster_autoscaler"]
    name = "cluster-autoscaler"
    labels = {"app.kubernetes.io/name": name}
    args = [
        f"--cloud-provider={ca['cloud_provider']}",
        # Its leader lease and status ConfigMap live here, not in kube-system beside another autoscaler's.
        f"--namespace={SYSTEM_NAMESPACE}",
        *(f"--nodes={pool['min_nodes']}:{pool['max_nodes']}:{group}" for group in ca["node_groups"]),
        f"--scale-down-delay-after-add={ca['scale_down_delay_after_add']}",
        f"--scale-down-delay-after-delete={ca['scale_down_delay_after_delete']}",
        f"--scale-down-unneeded-time={ca['scale_down_unneeded_time']}",
        "--balance-similar-node-groups=true",
        "--expander=least-waste",
    ]
    read = ["get", "list", "watch"]
    rules = [
        {"apiGroups": [""], "resources": ["events", "endpoints"], "verbs": ["create", "patch"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["update"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": [*read, "update"]},
        {
            "apiGroups": [""],
            "resources": [
                "namespaces",
                "pods",
                "services",
                "replicationcontrollers",
                "persistentvolumeclaims",
                "persistentvolumes",
            ],
            "verbs": read,
        },
        {"apiGroups": ["apps"], "resources": ["daemonsets", "replicasets", "statefulsets"], "verbs": read},
        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": read},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": read},
        {
            "apiGroups": ["storage.k8s.io"],
            "resources": ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"],
            "verbs": read,
        },
    ]
    # Its own lease and status ConfigMap only, in its own namespace: no write access to other ConfigMaps.
    namespaced = [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [name],
            "verbs": ["get", "update"],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "list", "watch"]},
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["cluster-autoscaler-status"],
            "verbs": ["get", "update", "delete"],
        },
    ]
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": SYSTEM_NAMESPACE}]
    return {
        "autoscaler-account": {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(platform, name, annotations=dict(ca["service_account_annotations"])),
        },
        "autoscaler-local-role": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(platform, name),
            "rules": namespaced,
        },
        "autoscaler-local-binding": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(platform, name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subject,
        },
        "autoscaler-role": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(platform, f"{prefix}-{name}", None),
            "rules": rules,
        },
        "autoscaler-binding": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(platform, f"{prefix}-{name}", None),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{prefix}-{name}",
            },
            "subjects": subject,
        },
        # The API server (443 on managed clusters, 6443 on kubeadm ones) and the cloud's API, by address only.
        "autoscaler-network-policy": {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta(platform, name),
            "spec": {
                "podSelector": {"matchLabels": labels},
                "policyTypes": ["Ingress", "Egress"],
                "egress": [DNS_EGRESS, {"ports": [{"protocol": "TCP", "port": p} for p in (443, 6443)]}],
            },
        },
        "autoscaler": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(platform, name),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    # Besides its selector, what its ServiceAccount's workload identity needs (Azure's pod label).
                    "metadata": {"labels": {**identity_pod_labels(ca["service_account_annotations"]), **labels}},
                    "spec": {
                        "serviceAccountName": name,
                        "priorityClassName": "system-cluster-critical",
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 65534,
                            "runAsGroup": 65534,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [
                            {
                                "name": name,
                                **image_fields(ca["image"], digests),
                                "command": ["./cluster-autoscaler"],
                                "args": args,
                                "securityContext": RESTRICTED,
                                # Its metrics and health port (`--address`, :8085 by default); the liveness probe is
                                # the upstream chart's: kubernetes/autoscaler charts/cluster-autoscaler deployment.yaml.
                                "ports": [{"name": "metrics", "containerPort": 8085}],
                                "livenessProbe": {"httpGet": {"path": "/health-check", "port": "metrics"}},
                                # Ready once it serves metrics; live while its loop reports healthy.
                                "readinessProbe": {"tcpSocket": {"port": "metrics"}},
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "300Mi", **AGENT_LOG_STORAGE["requests"]},
                                    "limits": {"cpu": "500m", "memory": "600Mi", **AGENT_LOG_STORAGE["limits"]},
                                },
                            }
                        ],
                    },
                },
            },
        },
    }


def overprovisioning_manifest(
    pool: GpuNodePoolArgs, placement: PoolPlacement, namespace: str, platform: dict[str, str], digests: dict[str, str]
) -> dict[str, Any]:
    """Placeholder pods in `namespace`, one GPU each, at the priority `<namespace>-overprovisioning`."""
    labels = {"app.kubernetes.io/name": "gpu-overprovisioning"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(platform, "gpu-overprovisioning", namespace),
        "spec": {
            "replicas": pool["overprovisioning_replicas"],
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": f"{namespace}-overprovisioning",
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 0,
                    "nodeSelector": dict(placement["node_selector"]),
                    "tolerations": list(placement["tolerations"]),
                    # The pause image's own nobody user and group (gpuPool.overprovisioningImage must run as them).
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65535,
                        "runAsGroup": 65535,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "placeholder",
                            **image_fields(pool["overprovisioning_image"], digests),
                            "securityContext": RESTRICTED,
                            "resources": {
                                "requests": {"cpu": "10m", "memory": "16Mi", **AGENT_LOG_STORAGE["requests"]},
                                "limits": {
                                    "cpu": "10m",
                                    "memory": "16Mi",
                                    **AGENT_LOG_STORAGE["limits"],
                                    placement["gpu_resource"]: "1",
                                },
                            },
                        }
                    ],
                },
            },
        },
    }


def dcgm_manifests(
    pool: GpuNodePoolArgs,
    placement: PoolPlacement,
    *,
    platform: dict[str, str],
    digests: dict[str, str],
    selector_labels: dict[str, str],
    scrape_interval: str | None,
) -> dict[str, dict[str, Any]]:
    """NVIDIA's DCGM exporter on every pool node, its Service, and a ServiceMonitor Prometheus selects."""
    labels = {"app.kubernetes.io/name": "dcgm-exporter"}
    # Without an interval Prometheus uses its global one (prometheus-operator, monitoring/v1 Endpoint.Interval).
    interval = {"interval": scrape_interval} if scrape_interval else {}
    counters = counters_csv()
    return {
        "dcgm-counters": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(platform, "dcgm-exporter-counters"),
            "data": {COUNTERS_FILE: counters},
        },
        "dcgm-exporter": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": _meta(
                platform,
                "dcgm-exporter",
                annotations=exception_annotations(
                    {
                        "pod-security-restricted": "DCGM reads the GPUs' profiling counters, which needs root and "
                        "SYS_ADMIN",
                        "no-host-access": "the kubelet's pod-resources socket maps each GPU to the pod using it",
                        "read-only-root-filesystem": "DCGM's host engine writes its state under the root filesystem",
                    }
                ),
            ),
            "spec": {
                "selector": {"matchLabels": labels},
                # The exporter reads its counters file only at start: a change rolls it.
                "template": {
                    "metadata": {
                        "labels": labels,
                        "annotations": {"triton-platform/config-sha256": hashlib.sha256(counters.encode()).hexdigest()},
                    },
                    "spec": {
                        # A node agent, as the device plugin: batch GPU work must never preempt it.
                        "priorityClassName": "system-node-critical",
                        "nodeSelector": dict(placement["node_selector"]),
                        "tolerations": list(placement["tolerations"]),
                        "automountServiceAccountToken": False,
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "volumes": [
                            {"name": "pod-resources", "hostPath": {"path": POD_RESOURCES_DIR, "type": "Directory"}},
                            {"name": "counters", "configMap": {"name": "dcgm-exporter-counters"}},
                        ],
                        "containers": [
                            {
                                "name": "dcgm-exporter",
                                **image_fields(pool["dcgm_exporter_image"], digests),
                                # Flags and variables of dcgm-exporter 4.6.0-4.8.3's pkg/cmd/app.go: the counters
                                # file the GPU health rules need (triton_platform/dcgm_counters.py); the pod each
                                # GPU is allocated to, from the kubelet's pod-resources socket; the node's name as
                                # the `hostname` label (else the pod's own; internal/pkg/hostname/hostname.go), as
                                # NVIDIA's chart sets them (deployment/templates/daemonset.yaml).
                                "args": [f"--collectors={COUNTERS_DIR}/{COUNTERS_FILE}"],
                                "env": [
                                    {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                                    # The distroless image has no /etc/ld.so.cache, so the start-up check's
                                    # `ldconfig -p` fails and the exporter exits 1, while dlopen finds libdcgm
                                    # on the default path (NVIDIA/dcgm-exporter#612, #724). Nodes whose runtime
                                    # is not NVIDIA's (`runtimeClassName: nvidia` writes a cache) need it off.
                                    {"name": "DISABLE_STARTUP_VALIDATE", "value": "true"},
                                ],
                                "ports": [{"name": "metrics", "containerPort": DCGM_PORT}],
                                # DCGM reads the GPUs' profiling counters, which needs SYS_ADMIN and nothing else.
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]},
                                },
                                # The kubelet's pod-resources API maps each GPU to the pod using it.
                                "volumeMounts": [
                                    {"name": "pod-resources", "mountPath": POD_RESOURCES_DIR, "readOnly": True},
                                    {"name": "counters", "mountPath": COUNTERS_DIR, "readOnly": True},
                                ],
                                # NVIDIA's chart probes /health on the metrics port after 45 s of DCGM start-up:
                                # github.com/NVIDIA/dcgm-exporter deployment/templates/daemonset.yaml
                                "livenessProbe": {
                                    "httpGet": {"path": "/health", "port": "metrics"},
                                    "initialDelaySeconds": 45,
                                    "periodSeconds": 5,
                                },
                                "readinessProbe": {
                                    "httpGet": {"path": "/health", "port": "metrics"},
                                    "initialDelaySeconds": 45,
                                },
                                # The host engine's state and logs go to its writable root filesystem.
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "128Mi"},
                                    "limits": {"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "512Mi"},
                                },
                            }
                        ],
                    },
                },
            },
        },
        "dcgm-service": {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(platform, "dcgm-exporter", labels={**platform, **labels}),
            "spec": {"selector": labels, "ports": [{"name": "metrics", "port": DCGM_PORT, "targetPort": "metrics"}]},
        },
        "dcgm-service-monitor": {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": _meta(platform, "dcgm-exporter", labels={**platform, **selector_labels}),
            "spec": {
                "selector": {"matchLabels": labels},
                "namespaceSelector": {"matchNames": [SYSTEM_NAMESPACE]},
                "endpoints": [{"port": "metrics", **interval}],
            },
        },
    }


GPU_OPERATOR_DCGM = {"app": "nvidia-dcgm-exporter"}
"""The label of the GPU Operator's DCGM exporter Service (NVIDIA/gpu-operator v26.7.0,
assets/state-dcgm-exporter/: Service `nvidia-dcgm-exporter`, port `gpu-metrics` 9400, path `/metrics`)."""


def gpu_operator_dcgm_monitor(pool: GpuNodePoolArgs) -> dict[str, Any]:
    """A ServiceMonitor for the GPU Operator's DCGM exporter, in the pool's namespace, with the labels Prometheus
    selects: the operator's own ServiceMonitor is off by default and carries none of them."""
    scrape_interval = pool.get("scrape_interval")
    interval = {"interval": scrape_interval} if scrape_interval else {}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": _meta(
            pool["labels"], "gpu-operator-dcgm-exporter", labels={**pool["labels"], **pool["metrics_selector_labels"]}
        ),
        "spec": {
            "selector": {"matchLabels": dict(GPU_OPERATOR_DCGM)},
            "namespaceSelector": {"matchNames": [pool["gpu_operator_namespace"]]},
            "endpoints": [{"port": "gpu-metrics", "path": "/metrics", **interval}],
        },
    }


def pool_manifests(pool: GpuNodePoolArgs, placement: PoolPlacement) -> dict[str, dict[str, Any]]:
    """Every object of the GPU pool, by role, but for the static NodePatches and `metrics_only_policy`.

    Reads only the pool's plain values: `metrics_namespace` may be another resource's output.
    """
    platform, digests, prefix = pool["labels"], pool["image_digests"], pool["workload_namespace"]
    out: dict[str, dict[str, Any]] = {
        "batch-priority": priority_class(
            f"{prefix}-batch", BATCH_PRIORITY, "Batch and dev GPU work: below inference serving.", True, platform
        )
    }
    if pool["overprovisioning_replicas"]:
        out["overprovisioning-priority"] = priority_class(
            f"{prefix}-overprovisioning",
            OVERPROVISIONING_PRIORITY,
            "Placeholders any pod may evict.",
            False,
            platform,
        )
        out["overprovisioning"] = overprovisioning_manifest(pool, placement, prefix, platform, digests)
    if not pool["manage"]:
        return out  # another stack owns the cluster-level objects
    cluster_level: dict[str, dict[str, Any]] = {}
    if pool["gpu_software"] == "pool":
        cluster_level |= device_plugin_manifests(pool, placement, platform, digests)
    elif pool["gpu_software"] == "gpu-operator":
        cluster_level["gpu-operator-dcgm-monitor"] = gpu_operator_dcgm_monitor(pool)
    if pool["autoscaler"] == "karpenter":
        cluster_level["node-pool"] = karpenter_node_pool(pool, placement, prefix, platform)
    elif pool["autoscaler"] == "cluster-autoscaler":
        cluster_level |= cluster_autoscaler_manifests(pool, prefix, platform, digests)
    if pool["dcgm_exporter"]:
        cluster_level |= dcgm_manifests(
            pool,
            placement,
            platform=platform,
            digests=digests,
            selector_labels=pool["metrics_selector_labels"],
            scrape_interval=pool.get("scrape_interval"),
        )
    if any(m["metadata"].get("namespace") == SYSTEM_NAMESPACE for m in cluster_level.values()):
        # Where the cloud runs the node software and scales the pool (GKE), the namespace would stand empty.
        out |= system_namespace_manifests(platform)
    return out | cluster_level


def named_objects(pool: GpuNodePoolArgs, manifests: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """What the pool creates under its own names (`manifests`, from `pool_manifests`) and the static nodes it
    labels: patched, not created, but two pools patching one node would fight over its labels."""
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}} for node in pool["static_nodes"]]
    return [*manifests.values(), *nodes]


class GpuNodePool(pulumi.ComponentResource):
    """Device plugin, node autoscaling, priorities and spare capacity of the GPU pool. Its ServiceMonitor (with
    `dcgm_exporter`) waits for what the component's `opts.depends_on` names: give it the Prometheus Operator's
    chart when that is installed in the same `pulumi up` (its CRDs)."""

    placement: PoolPlacement
    """Where GPU pods may run, what they tolerate and the GPU resource: TritonServing places its pods by it."""

    max_gpus: int
    """The most GPUs the pool's nodes hold together: `max_nodes` x `gpus_per_node`."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        pool = pool_of(name, args)
        placement = pool_placement(pool)
        manifests = pool_manifests(pool, placement)
        claim(f"{COMPONENT} {name}", opts, named_objects(pool, manifests))
        super().__init__(TYPE_TOKEN, name, None, with_former_type(opts, FORMER_TYPE_TOKEN))
        child = pulumi.ResourceOptions(parent=self)
        self.placement = placement
        self.max_gpus = max_gpus(pool)
        after: list[pulumi.Resource] = []
        if "system-namespace" in manifests:
            after.append(create_object(f"{name}-system-namespace", manifests.pop("system-namespace"), child))
        in_system = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=after))
        # What the component waits for (the operator's CRDs) only its ServiceMonitor needs.
        waits = opts.depends_on if opts is not None and opts.depends_on is not None else []
        after_crds = pulumi.ResourceOptions.merge(in_system, pulumi.ResourceOptions(depends_on=waits))
        for role, manifest in manifests.items():
            create_object(f"{name}-{role}", manifest, after_crds if manifest["kind"] == "ServiceMonitor" else in_system)
        if after:
            # Prometheus's namespace may be another resource's output: the policy is built once it is known.
            policy = pulumi.Output.from_input(pool["metrics_namespace"]).apply(
                lambda namespace: metrics_only_policy(namespace, pool["labels"])
            )
            k8s.networking.v1.NetworkPolicy(
                f"{name}-system-network-policy", metadata=policy["metadata"], spec=policy["spec"], opts=in_system
            )
        taints: list[Any] = node_taints(pool)
        for node in pool["static_nodes"]:
            # A patch: the nodes stay the cluster's; Pulumi only owns these labels and taints.
            k8s.core.v1.NodePatch(
                f"{name}-node-{node}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=node, labels=dict(self.placement["node_selector"])),
                spec=k8s.core.v1.NodeSpecPatchArgs(taints=taints),
                opts=child,
            )
        self.register_outputs({"maxGpus": self.max_gpus, "placement": self.placement})
