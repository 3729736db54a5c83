"""How long the pool's node autoscaler takes to bring up a GPU node, per cluster platform and autoscaler.

`scaling.simulation.nodeProvisionSeconds` overrides it; unset, `DEFAULTS` gives it. One figure serves the wake
estimate of a deployment at zero (platform_config/wake.py), `stackctl simulate` and `stackctl plan` (each pod
that needs a node the pool does not have yet waits for it). Each default is the sum of published parts, every
part named with its source, so `stackctl validate` and the docs can say where the figure comes from: measure
yours (docs/scale-to-zero.md, "Node provisioning") and give it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from platform_config.cluster import ClusterConfig
from platform_config.gpu_pool import GpuPoolConfig
from platform_config.simulation import SimulationConfig


@dataclass(frozen=True)
class Part:
    seconds: int
    what: str
    source: str


@dataclass(frozen=True)
class Default:
    who: str
    """Who brings the node up on this platform, as a message names it."""
    parts: tuple[Part, ...]

    @property
    def seconds(self) -> int:
        return sum(part.seconds for part in self.parts)


# Karpenter (kubernetes-sigs/karpenter, karpenter.sh/docs/reference/settings): a pending pod waits for the
# provisioning batch window to close (--batch-max-duration, default 10s), the instance to launch and its node to
# turn Ready ("about 30-40s", a Karpenter maintainer, aws/karpenter-provider-aws#6165), then for the device plugin
# to advertise nvidia.com/gpu ("about a minute" after Ready, observed on GCP GPU nodes in
# cloudpilot-ai/karpenter-provider-gcp#148: the one published figure for that step).
KARPENTER = (
    Part(10, "batch window", "Karpenter --batch-max-duration default"),
    Part(40, "launch to a Ready node", "aws/karpenter-provider-aws#6165"),
    Part(60, "device plugin advertises the GPU", "cloudpilot-ai/karpenter-provider-gcp#148, on GCP"),
)
# The cluster-autoscaler (kubernetes/autoscaler, cluster-autoscaler/FAQ.md, "How fast is HPA when combined with
# CA?"): its scale-up request "less than 30 seconds in most cases" after the pod turns unschedulable, then "3 to 4
# minutes from CA request to when pods can be scheduled on newly created nodes" (measured on GCE, the only figure
# it gives). GKE's and AKS's managed node autoscaling run this autoscaler.
CLUSTER_AUTOSCALER = (
    Part(30, "scale-up decision", "cluster-autoscaler FAQ"),
    Part(240, "node group to a schedulable node", "cluster-autoscaler FAQ, on GCE"),
)
STATIC = Default("the static pool", ())

DEFAULTS: dict[tuple[str, str], Default] = {
    ("generic", "static"): STATIC,
    ("generic", "cluster-autoscaler"): Default("the cluster-autoscaler", CLUSTER_AUTOSCALER),
    ("generic", "external"): Default(
        "the node pool's own autoscaler, taken as the cluster-autoscaler", CLUSTER_AUTOSCALER
    ),
    ("eks", "karpenter"): Default("Karpenter (EC2NodeClass)", KARPENTER),
    ("eks", "cluster-autoscaler"): Default("the cluster-autoscaler (an Auto Scaling group)", CLUSTER_AUTOSCALER),
    ("eks", "external"): Default(
        "the node group's own autoscaler, taken as the cluster-autoscaler", CLUSTER_AUTOSCALER
    ),
    ("eks", "static"): STATIC,
    ("gke", "external"): Default("GKE's cluster autoscaler", CLUSTER_AUTOSCALER),
    ("gke", "static"): STATIC,
    ("aks", "karpenter"): Default("AKS node auto-provisioning (Karpenter, AKSNodeClass)", KARPENTER),
    ("aks", "external"): Default("AKS's managed cluster autoscaler", CLUSTER_AUTOSCALER),
    ("aks", "static"): STATIC,
}
"""Every autoscaler each platform offers (platform_config/cluster.py, PROFILES), with its default node time."""

SETTING = "scaling.simulation.nodeProvisionSeconds"


@dataclass(frozen=True)
class NodeProvisioning:
    """The node time a stack's simulations and wake estimates use, and where it comes from."""

    seconds: int
    why: str
    provisions: bool
    """Whether the pool brings nodes up at all: False for a static pool, whose nodes stay up (and keep the image)."""


def node_provisioning(platform: str, autoscaler: str, override: int | None) -> NodeProvisioning:
    """The node time of a `platform` cluster's pool under `autoscaler`: `override` where the stack gives one,
    else the default. A combination PROFILES refuses (validation names it) takes that autoscaler's default on
    another platform, so a run that reports the error still computes."""
    default = DEFAULTS.get((platform, autoscaler)) or next(d for (_, mode), d in DEFAULTS.items() if mode == autoscaler)
    if default is STATIC:
        return NodeProvisioning(0, f"{STATIC.who}'s nodes stay up", provisions=False)
    if override is not None:
        return NodeProvisioning(override, SETTING, provisions=True)
    parts = " + ".join(f"{part.what} {part.seconds} s ({part.source})" for part in default.parts)
    return NodeProvisioning(default.seconds, f"{default.who}: {parts}; set {SETTING} to yours", provisions=True)


def kept_nodes(pool: GpuPoolConfig, held_gpus: int) -> int:
    """The nodes a pool keeps up while its Triton pods hold `held_gpus` GPUs: `gpuPool.minNodes`, or as many as
    those GPUs and the placeholder pods (one GPU each, overprovisioning.overprovisioning_manifest) fill."""
    return max(pool.min_nodes, math.ceil((held_gpus + pool.overprovisioning_replicas) / pool.gpus_per_node))


def pool_node_provisioning(cluster: ClusterConfig, pool: GpuPoolConfig, sim: SimulationConfig) -> NodeProvisioning:
    """A stack's node time, from its sections."""
    return node_provisioning(cluster.platform, pool.autoscaler, sim.node_provision_seconds)
