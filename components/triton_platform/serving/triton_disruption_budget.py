"""The PodDisruptionBudget of a Triton deployment with more than one replica: one pod at a time may be evicted,
and an unready pod never blocks a node drain.
"""

from __future__ import annotations

from typing import Any

from triton_platform.args.kubernetes_values import UNHEALTHY_POD_EVICTION_POLICY
from triton_platform.serving.serving_context import ServingContext, deployment_object_name, selector_labels


def pdb_manifest(ctx: ServingContext, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": ctx.metadata(deployment_object_name(name), name),
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": selector_labels(name)},
            # An unready Triton (a failed model load, a GPU fault) serves nothing: evicting it must never
            # wait for it to become ready, or it blocks node drains (policy/v1 PodDisruptionBudgetSpec).
            "unhealthyPodEvictionPolicy": UNHEALTHY_POD_EVICTION_POLICY,
        },
    }
