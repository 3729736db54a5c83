"""What production requires across sections: it deploys, keeps a drain floor, and scales on a path a
Prometheus scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator

from platform_config.errors import ConfigIssue
from platform_config.kubernetes import KubernetesConfig
from platform_config.monitoring import MonitoringConfig
from platform_config.scaling import ScalingConfig
from platform_config.schema import section_key
from platform_config.sections import SERVING, Sections
from platform_config.serving import ServingConfig
from triton_platform.model_packaging.source import ModelRepository


def production_deploys(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    kubernetes: KubernetesConfig = sections["kubernetes"]
    if sections["environment"] == "production" and kubernetes.mode == "render":
        yield ConfigIssue(
            f"{section_key('kubernetes')}.mode",
            "'render' is not allowed for a production stack: production must deploy to a "
            "cluster (set mode: deploy and context), never fall back to writing files",
        )


DRAIN_FLOOR = 2


"""A Triton PodDisruptionBudget lets a drain evict one pod at a time (maxUnavailable 1): with two, one stays ready."""


def production_drain_floor(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    if sections["environment"] != "production":
        return
    serving: ServingConfig = sections["serving"]
    for name, dep in sorted(serving.deployments.items()):
        # A deployment allowed to idle at zero has accepted that its next request waits for a wake
        # (`wake.allowInProduction`): a drain of its last pod is one more such wait, held by the interceptor.
        if dep.wake is not None and dep.wake.allow_in_production:
            continue
        if dep.replicas.min < DRAIN_FLOOR:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.replicas.min",
                f"{dep.replicas.min} in production: a node drain or upgrade evicts one pod at a time "
                f"(PodDisruptionBudget maxUnavailable 1), so with fewer than {DRAIN_FLOOR} replicas it takes "
                f"the last ready pod and the deployment serves nothing until a new one loads its models; "
                f"use min >= {DRAIN_FLOOR}",
            )


def production_scaling_path(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """What production installs on the scaling path outlives a restart and a drain: KEDA reads Prometheus."""
    if sections["environment"] != "production":
        return
    monitoring: MonitoringConfig = sections["monitoring"]
    scaling: ScalingConfig = sections["scaling"]
    key = section_key("monitoring")
    if monitoring.mode == "install":
        if monitoring.storage is None:
            yield ConfigIssue(
                f"{key}.storage",
                "required key is missing: production's Prometheus keeps its history and Alertmanager its silences "
                "in an emptyDir without it, lost on every restart or reschedule; give storage: {storageClassName: "
                "<a ReadWriteOnce class>}",
            )
        if monitoring.replicas < DRAIN_FLOOR:
            yield ConfigIssue(
                f"{key}.replicas",
                f"{monitoring.replicas} in production: KEDA scales on this Prometheus' answers, and one replica "
                f"stops every scale-up while it restarts or is drained; use replicas >= {DRAIN_FLOOR}",
            )
    if scaling.enabled and scaling.keda.mode == "install" and scaling.keda.replicas < DRAIN_FLOOR:
        yield ConfigIssue(
            f"{section_key('scaling')}.keda.replicas",
            f"{scaling.keda.replicas} in production: one KEDA operator and metrics server leave the HPA blind while "
            f"it restarts or is drained; use replicas >= {DRAIN_FLOOR}",
        )
