"""The `gpu-system` namespace the GPU pool's cluster-level objects live in, and what the pool's objects share:
the namespace's name, `object_meta` (the metadata every pool object is written with), the Namespace itself with its
egress lock-down, and the log storage and restricted container security context of the pool's own pods."""

from typing import Any

from triton_platform.kube.namespace import deny_all

SYSTEM_NAMESPACE = "gpu-system"
AGENT_LOG_STORAGE = {"requests": {"ephemeral-storage": "64Mi"}, "limits": {"ephemeral-storage": "256Mi"}}
"""Node agents and placeholders write nothing but their logs, which count against ephemeral storage."""
RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


def object_meta(
    platform: dict[str, str], name: str, namespace: str | None = SYSTEM_NAMESPACE, **extra: Any
) -> dict[str, Any]:
    # Empty maps are left out: the API server drops them, so they would read as a change on every run.
    metadata: dict[str, Any] = {"name": name, **{k: v for k, v in {"labels": platform, **extra}.items() if v}}
    if namespace:
        metadata["namespace"] = namespace
    return metadata


def system_namespace_manifests(platform: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The `gpu-system` namespace the pool's cluster-level objects live in, and its egress lock-down."""
    return {
        "system-namespace": {
            "apiVersion": "v1",
            "kind": "Namespace",
            # Privileged only here: node agents need host paths; Triton's namespace stays restricted.
            "metadata": object_meta(
                platform,
                SYSTEM_NAMESPACE,
                None,
                labels={**platform, "pod-security.kubernetes.io/enforce": "privileged"},
            ),
        },
        # The node agents talk to the kubelet over host sockets only: no network egress at all.
        "system-deny-egress": deny_all(SYSTEM_NAMESPACE, "Egress", platform),
    }
