"""The platform's PriorityClasses: under node pressure, which pods the scheduler evicts last.

From the top: the scaling path (Prometheus, Alertmanager and KEDA, mode `install`), then Triton serving, then
batch GPU work, then the pool's placeholder pods. Kubernetes docs, Pod Priority and Preemption.
"""

from __future__ import annotations

from typing import Any

SCALING_PRIORITY = 200_000
"""Prometheus, Alertmanager and KEDA: above Triton serving (`INFERENCE_PRIORITY`), because without their signal
no replica is added back; far below system-cluster-critical (2,000,000,000)."""


def priority_class(name: str, value: int, description: str, preempt: bool, labels: dict[str, str]) -> dict[str, Any]:
    """A PriorityClass; `preempt` lets its pods evict lower ones to schedule (PreemptLowerPriority)."""
    metadata: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": metadata,
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority" if preempt else "Never",
        "description": description,
    }
