"""Scale to zero through the KEDA HTTP add-on, across serving, scaling and the cluster: a woken deployment starts at
zero and is scaled, its interceptor can be reached, and its wake budget covers the stack's estimate of the wake.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from platform_config.errors import ConfigIssue
from platform_config.node_provisioning import pool_node_provisioning
from platform_config.scaling import ScalingConfig
from platform_config.schema import section_key
from platform_config.sections import SERVING, Sections
from platform_config.serving import ServingConfig
from platform_config.wake import kept_gpu, wake_estimate
from triton_platform.gpu_pool.gpu_system import SYSTEM_NAMESPACE as GPU_SYSTEM_NAMESPACE
from triton_platform.http_add_on import wake_service_problem
from triton_platform.model_packaging.source import ModelRepository


def wake(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A deployment woken on request starts at zero, is scaled, and in production is at zero only when the stack
    says so."""
    serving: ServingConfig = sections["serving"]
    scaling: ScalingConfig = sections["scaling"]
    for name, dep in sorted(serving.deployments.items()):
        if dep.wake is None:
            continue
        path = f"{SERVING}.deployments.{name}.wake"
        if dep.replicas.min != 0:
            yield ConfigIssue(
                path,
                f"is set but replicas.min is {dep.replicas.min}: a deployment wakes on a request only from zero; "
                "set replicas.min 0 or remove wake",
            )
        if not scaling.enabled:
            yield ConfigIssue(
                path,
                f"is set but {section_key('scaling')}.enabled is false: KEDA scales a deployment up from zero",
            )
        problem = wake_service_problem(sections["kubernetes"].namespace) if "kubernetes" in sections else None
        if problem is not None:
            yield ConfigIssue(path, f"is set but the namespace {problem}")
        if sections["environment"] == "production" and not dep.wake.allow_in_production:
            yield ConfigIssue(
                f"{path}.allowInProduction",
                "required to be true for a production deployment at zero: its first request after an idle period "
                "waits for the whole wake (node, image pull, model load); say so explicitly, or keep replicas.min >= 1",
            )


def wake_path_open(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """The add-on's interceptor takes every request to a deployment at zero: it may not run where the platform's
    own NetworkPolicies deny what no other policy admits (the serving namespace's ingress and egress, the GPU pool's
    egress), or no client reaches it and it reaches no pod, so a deployment at zero is never woken."""
    serving: ServingConfig = sections["serving"]
    if not any(dep.wake is not None for dep in serving.deployments.values()):
        return
    add_on = sections["scaling"].http_add_on.namespace
    closed = {GPU_SYSTEM_NAMESPACE: "the GPU pool's namespace, whose policy denies its pods' egress"}
    if "kubernetes" in sections:
        closed[sections["kubernetes"].namespace] = (
            f"the serving namespace ({section_key('kubernetes')}.namespace), whose policies deny its pods' ingress "
            "and egress"
        )
    if add_on in closed:
        yield ConfigIssue(
            f"{section_key('scaling')}.httpAddOn.namespace",
            f"{add_on!r} is {closed[add_on]} that no policy admits for the add-on: its interceptor would take no "
            "request and reach no pod, so a deployment at zero would never wake; give the add-on a namespace of its "
            "own (default 'keda')",
        )


def wake_budget(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A wake budget at least the stack's estimate of the wake (platform_config/wake.py)."""
    serving: ServingConfig = sections["serving"]
    scaling: ScalingConfig = sections["scaling"]
    node = pool_node_provisioning(sections["cluster"], sections["gpu_pool"], scaling.simulation)
    for name, dep in sorted(serving.deployments.items()):
        if dep.wake is None:
            continue
        kept = kept_gpu(sections["gpu_pool"], serving, name)
        estimate = wake_estimate(node, scaling.simulation, repo, dep.models, kept)
        if dep.wake.budget_seconds < estimate.seconds:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.wake.budgetSeconds",
                f"{dep.wake.budget_seconds} is below the wake's estimate of {math.ceil(estimate.seconds)} s: "
                f"{estimate.describe()}; raise the budget to at least {math.ceil(estimate.seconds)}, or give measured "
                "figures for the parts",
            )
