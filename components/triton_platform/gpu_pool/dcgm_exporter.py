"""GPU metrics for Prometheus: NVIDIA's DCGM exporter on the pool's nodes (its counters ConfigMap, DaemonSet,
Service and ServiceMonitor), or a ServiceMonitor for the GPU Operator's own exporter instead, and the
NetworkPolicy that admits Prometheus, and nothing else, to the node agents' metrics port."""

import hashlib
from typing import Any

from triton_platform.gpu_pool.dcgm_counters import COUNTERS_FILE, counters_csv
from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.gpu_pool.gpu_system import SYSTEM_NAMESPACE, object_meta
from triton_platform.kube.images import image_fields
from triton_platform.kube.policy_exceptions import exception_annotations

POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
DCGM_PORT = 9400
COUNTERS_DIR = "/etc/dcgm-exporter/triton-platform"
"""Beside the image's own counters files in /etc/dcgm-exporter, which stay visible."""


def metrics_only_policy(metrics_namespace: str, platform: dict[str, str]) -> dict[str, Any]:
    """Admits Prometheus, from `metrics_namespace`, to the node agents' metrics port; nothing else reaches them."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": object_meta(platform, "metrics-only"),
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
            "metadata": object_meta(platform, "dcgm-exporter-counters"),
            "data": {COUNTERS_FILE: counters},
        },
        "dcgm-exporter": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": object_meta(
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
                                # file the GPU health rules need (dcgm_counters.py); the pod each
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
            "metadata": object_meta(platform, "dcgm-exporter", labels={**platform, **labels}),
            "spec": {"selector": labels, "ports": [{"name": "metrics", "port": DCGM_PORT, "targetPort": "metrics"}]},
        },
        "dcgm-service-monitor": {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": object_meta(platform, "dcgm-exporter", labels={**platform, **selector_labels}),
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
        "metadata": object_meta(
            pool["labels"], "gpu-operator-dcgm-exporter", labels={**pool["labels"], **pool["metrics_selector_labels"]}
        ),
        "spec": {
            "selector": {"matchLabels": dict(GPU_OPERATOR_DCGM)},
            "namespaceSelector": {"matchNames": [pool["gpu_operator_namespace"]]},
            "endpoints": [{"port": "gpu-metrics", "path": "/metrics", **interval}],
        },
    }
