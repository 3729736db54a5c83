"""The GPU pool's warm spare capacity: placeholder pods, one GPU each, at the lowest priority
(`<namespace>-overprovisioning`, a PriorityClass `pool_manifests` in gpu_node_pool.py defines), so that any pod
evicts them and takes the GPU they held ready."""

from typing import Any

from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.gpu_pool.gpu_system import AGENT_LOG_STORAGE, RESTRICTED, object_meta
from triton_platform.kube.images import image_fields


def overprovisioning_manifest(
    pool: GpuNodePoolArgs, placement: PoolPlacement, namespace: str, platform: dict[str, str], digests: dict[str, str]
) -> dict[str, Any]:
    """Placeholder pods in `namespace`, one GPU each, at the priority `<namespace>-overprovisioning`."""
    labels = {"app.kubernetes.io/name": "gpu-overprovisioning"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(platform, "gpu-overprovisioning", namespace),
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
