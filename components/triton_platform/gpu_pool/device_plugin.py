"""NVIDIA's device plugin on the GPU pool's nodes and how it shares each GPU (none, time-slicing or MIG): its
config file, its ConfigMap and DaemonSet in `gpu-system`, and how many GPU resources it advertises per physical
GPU."""

import hashlib
from typing import Any

import yaml

from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.gpu_pool.gpu_system import AGENT_LOG_STORAGE, object_meta
from triton_platform.kube.images import image_fields
from triton_platform.kube.policy_exceptions import exception_annotations

DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"


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
            "metadata": object_meta(platform, "nvidia-device-plugin"),
            "data": {"config.yaml": plugin_config},
        },
        "device-plugin": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": object_meta(
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


def advertised_per_gpu(pool: GpuNodePoolArgs) -> int:
    """How many `nvidia.com/gpu` the plugin advertises per physical GPU."""
    plugin = pool["device_plugin"]
    return plugin["time_slicing_replicas"] if plugin["sharing"] == "time-slicing" else 1
