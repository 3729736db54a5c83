"""The security contexts of every Triton pod and container, the model loader's included: non-root as the NGC
tritonserver images' own user, no privilege escalation, a read-only root filesystem and no capabilities.
"""

from __future__ import annotations

from typing import Any

TRITON_UID = 1000  # the `triton-server` user of the NGC tritonserver images


def security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }


def pod_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": TRITON_UID,
        "runAsGroup": TRITON_UID,
        "fsGroup": TRITON_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
