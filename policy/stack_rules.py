"""The rules over a stack's resources together: drain and availability of the Triton Deployments, the
namespace's network policies, and Deployments a scaler owns without a fixed replica count."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy.resource import Resource, is_triton, pod_spec
from policy.resource_rules import platform_owned, wakes_on_request


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    wanted = selector.get("matchLabels") or {}
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def max_replicas(deployment: Resource, resources: list[Resource]) -> int:
    for scaled in resources:
        target = ((scaled.props.get("spec") or {}).get("scaleTargetRef") or {}).get("name")
        if scaled.kind == "ScaledObject" and target == deployment.name and scaled.namespace == deployment.namespace:
            return int((scaled.props.get("spec") or {}).get("maxReplicaCount") or 100)
    return int((deployment.props.get("spec") or {}).get("replicas") or 1)


def woken(deployment: Resource, resources: list[Resource]) -> bool:
    """Whether the Deployment's ScaledObject wakes it on request (`wakes_on_request`)."""
    for scaled in resources:
        spec = scaled.props.get("spec") or {}
        target = (spec.get("scaleTargetRef") or {}).get("name")
        if scaled.kind == "ScaledObject" and target == deployment.name and scaled.namespace == deployment.namespace:
            return wakes_on_request(spec)
    return False


def min_replicas(deployment: Resource, resources: list[Resource]) -> tuple[int, str]:
    """The fewest replicas the Deployment runs, and who says so: its ScaledObject (KEDA's default
    minReplicaCount is 0) or its own spec.replicas (the API server's default is 1)."""
    for scaled in resources:
        spec = scaled.props.get("spec") or {}
        target = (spec.get("scaleTargetRef") or {}).get("name")
        if scaled.kind == "ScaledObject" and target == deployment.name and scaled.namespace == deployment.namespace:
            return int(spec.get("minReplicaCount") or 0), f"ScaledObject {scaled.name!r} minReplicaCount"
    return int((deployment.props.get("spec") or {}).get("replicas") or 1), "spec.replicas"


DRAIN_FLOOR = 2
"""Triton's PodDisruptionBudget lets a drain evict one pod at a time: with two, one stays ready."""


def drains(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """A node drain never blocks on an unready Triton, and in production never takes the last ready one."""
    out = []
    for deployment in filter(is_triton, resources):
        labels = ((deployment.props.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
        for pdb in resources:
            spec = pdb.props.get("spec") or {}
            if (
                pdb.kind == "PodDisruptionBudget"
                and pdb.namespace == deployment.namespace
                and selects(spec.get("selector") or {}, labels)
                and spec.get("unhealthyPodEvictionPolicy") != "AlwaysAllow"
            ):
                out.append(
                    (
                        pdb,
                        "unhealthyPodEvictionPolicy is not AlwaysAllow: an unready Triton (a failed model load, "
                        "a GPU fault) blocks every node drain",
                    )
                )
        floor, source = min_replicas(deployment, resources)
        # A deployment woken on request (its stack said so: wake.allowInProduction) has its requests held by the
        # interceptor through a drain of its last pod, as through any wake.
        if deployment.production and floor < DRAIN_FLOOR and not woken(deployment, resources):
            out.append(
                (
                    deployment,
                    f"runs as few as {floor} replicas ({source}): a node drain takes the last ready pod; "
                    f"keep at least {DRAIN_FLOOR}",
                )
            )
    return out


def availability(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """A Triton Deployment that can exceed one replica (every one in production) has a PDB and spread."""
    out = []
    for deployment in filter(is_triton, resources):
        if max_replicas(deployment, resources) <= 1 and not deployment.production:
            continue
        spec = pod_spec(deployment) or {}
        labels = ((deployment.props.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
        pdbs = [
            r
            for r in resources
            if r.kind == "PodDisruptionBudget"
            and r.namespace == deployment.namespace
            and selects((r.props.get("spec") or {}).get("selector") or {}, labels)
        ]
        if not pdbs:
            out.append((deployment, "no PodDisruptionBudget selects its pods"))
        if not (spec.get("affinity") or {}).get("podAntiAffinity") and not spec.get("topologySpreadConstraints"):
            out.append((deployment, "no pod anti-affinity or topology spread constraint"))
    return out


def namespace_network_policy(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """Every namespace the stack creates has a NetworkPolicy in it."""
    covered = {r.namespace for r in resources if r.kind == "NetworkPolicy"}
    return [
        (ns, "no NetworkPolicy in this namespace")
        for ns in resources
        if ns.kind == "Namespace" and ns.name not in covered
    ]


def namespace_egress_policy(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """Every namespace where the program runs pods denies egress unless a policy admits it."""
    denied = {
        r.namespace
        for r in resources
        if r.kind == "NetworkPolicy"
        and not ((r.props.get("spec") or {}).get("podSelector") or {})
        and "Egress" in ((r.props.get("spec") or {}).get("policyTypes") or [])
    }
    running = {r.namespace for r in resources if pod_spec(r) is not None and platform_owned(r)}
    return [
        (ns, "runs pods but has no NetworkPolicy denying egress (podSelector {}, policyTypes [Egress])")
        for ns in resources
        if ns.kind == "Namespace" and ns.name in running - denied
    ]


def sets_replicas(deployment: Resource) -> bool:
    """Whether the program sets `spec.replicas`.

    Before an update the policy sees the program's inputs; after it, the live object, whose
    `replicas` the API server defaults and the HPA writes. There, managedFields say who set it:
    only a Pulumi field manager owning `f:spec.f:replicas` is the program.
    """
    if (deployment.props.get("spec") or {}).get("replicas") is None:
        return False
    managed = deployment.metadata.get("managedFields")
    if not managed:
        return True
    return any(
        "pulumi" in str(entry.get("manager", ""))
        and "f:replicas" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
        for entry in managed
    )


def scaled_without_replicas(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """A Deployment KEDA scales sets no `replicas`: each apply would fight the HPA."""
    targets = {
        (r.namespace, ((r.props.get("spec") or {}).get("scaleTargetRef") or {}).get("name"))
        for r in resources
        if r.kind == "ScaledObject"
    }
    return [
        (r, "scaled by KEDA, so it must not set spec.replicas")
        for r in resources
        if r.kind == "Deployment" and (r.namespace, r.name) in targets and sets_replicas(r)
    ]
