"""The GPU node pool: device plugin, node autoscaling, priorities and warm spare capacity.

Builders return plain manifests; `GpuNodePool` wires them and exposes the pool
contract (where GPU pods may run, what they tolerate) that TritonServing uses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.gpu_pool_contract import PoolContract, pool_contract
from components.kubernetes_objects import create_object
from components.namespace import DNS_EGRESS, deny_all, platform_labels
from components.policy_exceptions import exception_annotations
from platform_config.schema import GpuPoolConfig, PlatformConfig, pinned

TYPE_TOKEN = "triton-platform:gpu:GpuNodePool"
SYSTEM_NAMESPACE = "gpu-system"
BATCH_PRIORITY, OVERPROVISIONING_PRIORITY = 1_000, -10
"""Batch work ranks below inference (100,000); placeholders below everything, so any pod evicts them."""
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
DCGM_PORT = 9400
AGENT_LOG_STORAGE = {"requests": {"ephemeral-storage": "64Mi"}, "limits": {"ephemeral-storage": "256Mi"}}
"""Node agents and placeholders write nothing but their logs, which count against ephemeral storage."""
RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


def _meta(config: PlatformConfig, name: str, namespace: str | None = SYSTEM_NAMESPACE, **extra: Any) -> dict[str, Any]:
    # Empty maps are left out: the API server drops them, so they would read as a change on every run.
    metadata: dict[str, Any] = {
        "name": name,
        "labels": platform_labels(config.environment),
        **{k: v for k, v in extra.items() if v},
    }
    if namespace:
        metadata["namespace"] = namespace
    return metadata


def device_plugin_config(pool: GpuPoolConfig) -> dict[str, Any]:
    """The plugin's config file (`version: v1`): MIG strategy and time-slicing replicas."""
    plugin = pool.device_plugin
    config: dict[str, Any] = {
        "version": "v1",
        "flags": {"migStrategy": plugin.mig_strategy if plugin.sharing == "mig" else "none"},
    }
    if plugin.sharing == "time-slicing":
        resources = [{"name": pool.resource_name, "replicas": plugin.time_slicing_replicas}]
        config["sharing"] = {"timeSlicing": {"resources": resources}}
    return config


def device_plugin_manifests(config: PlatformConfig, contract: PoolContract) -> dict[str, dict[str, Any]]:
    pool = config.gpu_pool
    labels = {"app.kubernetes.io/name": "nvidia-device-plugin"}
    plugin_config = yaml.safe_dump(device_plugin_config(pool), sort_keys=False)
    # Root, for the kubelet's socket directory; no escalation, no capabilities but what MIG needs.
    capabilities = {"drop": ["ALL"], **({"add": ["SYS_ADMIN"]} if pool.device_plugin.sharing == "mig" else {})}
    pod_spec = {
        # Node-critical: without it the node advertises no GPUs at all.
        "priorityClassName": "system-node-critical",
        "nodeSelector": dict(contract.node_selector),
        "tolerations": [*contract.tolerations, {"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "nvidia-device-plugin",
                "image": pinned(pool.device_plugin.image, config.image_digests),
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
        "system-namespace": {
            "apiVersion": "v1",
            "kind": "Namespace",
            # Privileged only here: node agents need host paths; Triton's namespace stays restricted.
            "metadata": _meta(
                config,
                SYSTEM_NAMESPACE,
                None,
                labels={**platform_labels(config.environment), "pod-security.kubernetes.io/enforce": "privileged"},
            ),
        },
        "device-plugin-config": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(config, "nvidia-device-plugin"),
            "data": {"config.yaml": plugin_config},
        },
        # The node agents talk to the kubelet over host sockets only: no network egress at all.
        "system-deny-egress": deny_all(SYSTEM_NAMESPACE, "Egress", platform_labels(config.environment)),
        # Prometheus may scrape the node agents; nothing else may reach this namespace.
        "system-network-policy": {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta(config, "metrics-only"),
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [
                            {
                                "namespaceSelector": {
                                    "matchLabels": {
                                        "kubernetes.io/metadata.name": config.monitoring.prometheus.namespace
                                    }
                                }
                            }
                        ],
                        "ports": [{"protocol": "TCP", "port": DCGM_PORT}],
                    }
                ],
            },
        },
        "device-plugin": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": _meta(
                config,
                "nvidia-device-plugin",
                annotations=exception_annotations(
                    {
                        "pod-security-restricted": "the device plugin runs as root to create its socket in the "
                        "kubelet's device-plugin directory",
                        "no-host-access": "the kubelet's device-plugin directory is a host path by design",
                        "read-only-root-filesystem": "upstream runs the plugin with a writable root; not verified "
                        "read-only",
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


def advertised_per_gpu(pool: GpuPoolConfig) -> int:
    """How many `nvidia.com/gpu` the plugin advertises per physical GPU."""
    plugin = pool.device_plugin
    return plugin.time_slicing_replicas if plugin.sharing == "time-slicing" else 1


def karpenter_node_pool(config: PlatformConfig, contract: PoolContract) -> dict[str, Any]:
    pool, karpenter = config.gpu_pool, config.gpu_pool.karpenter
    assert karpenter is not None
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(karpenter.capacity_types)},
        # Exactly the node shape the pool is sized for: Karpenter would otherwise pack pods onto 4- or 8-GPU sizes.
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": [str(pool.gpus_per_node)]},
    ]
    if karpenter.instance_families:
        requirements.append(
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": list(karpenter.instance_families)}
        )
    if karpenter.gpu_names:
        requirements.append(
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": list(karpenter.gpu_names)}
        )
    taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": _meta(config, f"{config.kubernetes.namespace}-gpu", None),
        "spec": {
            "template": {
                "metadata": {"labels": dict(contract.node_selector)},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": karpenter.node_class,
                    },
                    "requirements": requirements,
                    "taints": taints,
                    "expireAfter": karpenter.expire_after,
                },
            },
            # The pool's ceiling, in GPUs as the nodes advertise them (Karpenter counts node capacity).
            "limits": {pool.resource_name: str(pool.max_gpus * advertised_per_gpu(pool))},
            # Conservative scale-down: only empty nodes, after they stayed empty, one node at a time.
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": karpenter.consolidate_after,
                "budgets": [{"nodes": "1"}],
            },
        },
    }


def cluster_autoscaler_manifests(config: PlatformConfig) -> dict[str, dict[str, Any]]:
    pool, ca = config.gpu_pool, config.gpu_pool.cluster_autoscaler
    assert ca is not None
    name = "cluster-autoscaler"
    labels = {"app.kubernetes.io/name": name}
    args = [
        f"--cloud-provider={ca.cloud_provider}",
        # Its leader lease and status ConfigMap live here, not in kube-system beside another autoscaler's.
        f"--namespace={SYSTEM_NAMESPACE}",
        *(f"--nodes={pool.min_nodes}:{pool.max_nodes}:{group}" for group in ca.node_groups),
        f"--scale-down-delay-after-add={ca.scale_down_delay_after_add}",
        f"--scale-down-delay-after-delete={ca.scale_down_delay_after_delete}",
        f"--scale-down-unneeded-time={ca.scale_down_unneeded_time}",
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
            "metadata": _meta(config, name, annotations=dict(ca.service_account_annotations)),
        },
        "autoscaler-local-role": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(config, name),
            "rules": namespaced,
        },
        "autoscaler-local-binding": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(config, name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subject,
        },
        "autoscaler-role": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(config, f"{config.kubernetes.namespace}-{name}", None),
            "rules": rules,
        },
        "autoscaler-binding": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(config, f"{config.kubernetes.namespace}-{name}", None),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{config.kubernetes.namespace}-{name}",
            },
            "subjects": subject,
        },
        # The API server (443 on managed clusters, 6443 on kubeadm ones) and the cloud's API, by address only.
        "autoscaler-network-policy": {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta(config, name),
            "spec": {
                "podSelector": {"matchLabels": labels},
                "policyTypes": ["Ingress", "Egress"],
                "egress": [DNS_EGRESS, {"ports": [{"protocol": "TCP", "port": p} for p in (443, 6443)]}],
            },
        },
        "autoscaler": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(config, name),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
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
                                "image": pinned(ca.image, config.image_digests),
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


def priority_class(config: PlatformConfig, suffix: str, value: int, description: str, preempt: bool) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _meta(config, f"{config.kubernetes.namespace}-{suffix}", None),
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority" if preempt else "Never",
        "description": description,
    }


def overprovisioning_manifest(config: PlatformConfig, contract: PoolContract) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "gpu-overprovisioning"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(config, "gpu-overprovisioning", config.kubernetes.namespace),
        "spec": {
            "replicas": config.gpu_pool.overprovisioning_replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": f"{config.kubernetes.namespace}-overprovisioning",
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 0,
                    "nodeSelector": dict(contract.node_selector),
                    "tolerations": list(contract.tolerations),
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
                            "image": pinned(config.gpu_pool.overprovisioning_image, config.image_digests),
                            "securityContext": RESTRICTED,
                            "resources": {
                                "requests": {"cpu": "10m", "memory": "16Mi", **AGENT_LOG_STORAGE["requests"]},
                                "limits": {
                                    "cpu": "10m",
                                    "memory": "16Mi",
                                    **AGENT_LOG_STORAGE["limits"],
                                    contract.gpu_resource: "1",
                                },
                            },
                        }
                    ],
                },
            },
        },
    }


def dcgm_manifests(config: PlatformConfig, contract: PoolContract) -> dict[str, dict[str, Any]]:
    labels = {"app.kubernetes.io/name": "dcgm-exporter"}
    return {
        "dcgm-exporter": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": _meta(
                config,
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
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": dict(contract.node_selector),
                        "tolerations": list(contract.tolerations),
                        "automountServiceAccountToken": False,
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "volumes": [
                            {"name": "pod-resources", "hostPath": {"path": POD_RESOURCES_DIR, "type": "Directory"}}
                        ],
                        "containers": [
                            {
                                "name": "dcgm-exporter",
                                "image": pinned(config.gpu_pool.dcgm_exporter_image, config.image_digests),
                                "ports": [{"name": "metrics", "containerPort": DCGM_PORT}],
                                # DCGM reads the GPUs' profiling counters, which needs SYS_ADMIN and nothing else.
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]},
                                },
                                # The kubelet's pod-resources API maps each GPU to the pod using it.
                                "volumeMounts": [
                                    {"name": "pod-resources", "mountPath": POD_RESOURCES_DIR, "readOnly": True}
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
            "metadata": _meta(config, "dcgm-exporter", labels={**platform_labels(config.environment), **labels}),
            "spec": {"selector": labels, "ports": [{"name": "metrics", "port": DCGM_PORT, "targetPort": "metrics"}]},
        },
        "dcgm-service-monitor": {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": _meta(
                config,
                "dcgm-exporter",
                labels={**platform_labels(config.environment), **config.monitoring.selector_labels},
            ),
            "spec": {
                "selector": {"matchLabels": labels},
                "namespaceSelector": {"matchNames": [SYSTEM_NAMESPACE]},
                "endpoints": [{"port": "metrics", "interval": config.monitoring.scrape_interval}],
            },
        },
    }


def pool_manifests(config: PlatformConfig) -> dict[str, dict[str, Any]]:
    """Every object of the GPU pool, by role (static NodePatches aside)."""
    contract = pool_contract(config.gpu_pool)
    pool = config.gpu_pool
    out: dict[str, dict[str, Any]] = {
        "batch-priority": priority_class(
            config, "batch", BATCH_PRIORITY, "Batch and dev GPU work: below inference serving.", preempt=True
        )
    }
    if pool.overprovisioning_replicas:
        out["overprovisioning-priority"] = priority_class(
            config, "overprovisioning", OVERPROVISIONING_PRIORITY, "Placeholders any pod may evict.", preempt=False
        )
        out["overprovisioning"] = overprovisioning_manifest(config, contract)
    if not pool.manage:
        return out  # another stack owns the cluster-level objects
    out |= device_plugin_manifests(config, contract)
    if pool.autoscaler == "karpenter":
        out["node-pool"] = karpenter_node_pool(config, contract)
    elif pool.autoscaler == "cluster-autoscaler":
        out |= cluster_autoscaler_manifests(config)
    if pool.dcgm_exporter:
        out |= dcgm_manifests(config, contract)
    return out


@dataclass(frozen=True)
class GpuNodePoolArgs:
    config: PlatformConfig
    """The stack's validated configuration."""

    metrics_crds: Sequence[pulumi.Resource] = ()
    """What the pool's ServiceMonitor waits for: the Prometheus Operator's chart (its CRDs) when installed."""


class GpuNodePool(pulumi.ComponentResource):
    """Device plugin, node autoscaling, priorities and spare capacity of the GPU pool."""

    contract: PoolContract
    """Where GPU pods may run and what they tolerate: TritonServing places its pods by it."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        config = args.config
        self.contract = pool_contract(config.gpu_pool)
        manifests = pool_manifests(config)
        after: list[pulumi.Resource] = []
        if "system-namespace" in manifests:
            after.append(create_object(f"{name}-system-namespace", manifests.pop("system-namespace"), child))
        in_system = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=after))
        after_crds = pulumi.ResourceOptions.merge(in_system, pulumi.ResourceOptions(depends_on=list(args.metrics_crds)))
        for role, manifest in manifests.items():
            create_object(f"{name}-{role}", manifest, after_crds if manifest["kind"] == "ServiceMonitor" else in_system)
        taints: list[Any] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in config.gpu_pool.taints]
        for node in config.gpu_pool.static_nodes:
            # A patch: the nodes stay the cluster's; Pulumi only owns these labels and taints.
            k8s.core.v1.NodePatch(
                f"{name}-node-{node}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=node, labels=dict(self.contract.node_selector)),
                spec=k8s.core.v1.NodeSpecPatchArgs(taints=taints),
                opts=child,
            )
        self.register_outputs({"maxGpus": config.gpu_pool.max_gpus})
