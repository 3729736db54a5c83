"""The cluster-autoscaler that scales the GPU pool's node groups, in `gpu-system`: its ServiceAccount, the Role
for its own lease and status ConfigMap, its ClusterRole, its NetworkPolicy and its Deployment."""

from typing import Any

from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool.gpu_system import AGENT_LOG_STORAGE, RESTRICTED, SYSTEM_NAMESPACE, object_meta
from triton_platform.kube.images import image_fields
from triton_platform.kube.namespace import DNS_EGRESS
from triton_platform.kube.workload_identity import identity_pod_labels


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
            "metadata": object_meta(platform, name, annotations=dict(ca["service_account_annotations"])),
        },
        "autoscaler-local-role": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": object_meta(platform, name),
            "rules": namespaced,
        },
        "autoscaler-local-binding": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": object_meta(platform, name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subject,
        },
        "autoscaler-role": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": object_meta(platform, f"{prefix}-{name}", None),
            "rules": rules,
        },
        "autoscaler-binding": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": object_meta(platform, f"{prefix}-{name}", None),
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
            "metadata": object_meta(platform, name),
            "spec": {
                "podSelector": {"matchLabels": labels},
                "policyTypes": ["Ingress", "Egress"],
                "egress": [DNS_EGRESS, {"ports": [{"protocol": "TCP", "port": p} for p in (443, 6443)]}],
            },
        },
        "autoscaler": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": object_meta(platform, name),
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
