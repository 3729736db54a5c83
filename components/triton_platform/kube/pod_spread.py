"""Spreading a workload's pods over nodes without ever blocking their scheduling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def preferred_host_spread(match_labels: Mapping[str, str]) -> dict[str, Any]:
    """An `affinity` preferring one pod per node among the pods `match_labels` selects: a node's loss takes one
    replica, and a pool short of nodes still schedules them all."""
    term = {"labelSelector": {"matchLabels": dict(match_labels)}, "topologyKey": "kubernetes.io/hostname"}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]
        }
    }
