"""The wake of a deployment at zero, estimated from what the stack knows: how long its first request waits.

A request to a deployment at zero is held by the KEDA HTTP add-on's interceptor, whose scaler pushes it to KEDA
at once (an `external-push` trigger); KEDA scales the Deployment to one replica. Then, in turn: a GPU node, unless
the pool keeps one with a free GPU at zero (`kept_gpu`; a static pool's nodes stay up), else the autoscaler's node
time (platform_config/node_provisioning.py); the Triton image, unless the node kept has it already (`imageBytes`
at `imagePullBytesPerSecond`); the models
(`modelLoadBytesPerSecond` over the deployment's model files); and the probes' periods, by which the kubelet
sees the server ready (triton_deployment.py). `stackctl validate` refuses a `wake.budgetSeconds` below the sum,
naming each part; docs/scale-to-zero.md sets the estimate beside a measured wake.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from platform_config.gpu_pool import GpuPoolConfig
from platform_config.node_provisioning import NodeProvisioning, kept_nodes
from platform_config.serving import ServingConfig
from platform_config.simulation import SimulationConfig
from triton_platform.model_packaging.digest import version_paths
from triton_platform.model_packaging.source import ModelRepository
from triton_platform.serving.triton_deployment import READINESS_PROBE_SECONDS, STARTUP_PROBE_SECONDS


@dataclass(frozen=True)
class WakePart:
    name: str
    seconds: float
    why: str
    """How the figure was reached, naming the settings it reads."""


@dataclass(frozen=True)
class WakeEstimate:
    parts: tuple[WakePart, ...]

    @property
    def seconds(self) -> float:
        return sum(part.seconds for part in self.parts)

    def describe(self) -> str:
        return "; ".join(f"{part.name} {part.seconds:.0f} s ({part.why})" for part in self.parts)


def _size(count: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def _size_of(path: Path) -> int:
    """A model file's size; 0 for one that cannot be read (a dangling or looping link), which the repository's
    own checks name."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def kept_gpu(pool: GpuPoolConfig, serving: ServingConfig, name: str) -> str | None:
    """Why an autoscaled pool keeps a GPU free for deployment `name` while it is at zero, or None where it keeps
    none: the nodes it keeps (`gpuPool.minNodes`, or as many as the other deployments' floors and the placeholder
    pods fill), less the GPUs those floors hold (a placeholder yields its GPU to a Triton pod)."""
    others = sum(d.replicas.min * d.gpus_per_pod for other, d in serving.deployments.items() if other != name)
    nodes = kept_nodes(pool, others)
    free = nodes * pool.gpus_per_node - others
    if free < serving.deployments[name].gpus_per_pod:
        return None
    return (
        f"the pool keeps {nodes} node(s) at zero (gpuPool.minNodes {pool.min_nodes}, overprovisioningReplicas "
        f"{pool.overprovisioning_replicas}) with {free} GPU(s) the other deployments' floors leave free"
    )


def wake_estimate(
    node: NodeProvisioning, sim: SimulationConfig, repo: ModelRepository, models: list[str], kept: str | None = None
) -> WakeEstimate:
    """The wake of a deployment serving `models` (in `repo`) on a pool whose nodes come up in `node`, by part;
    `kept`: why the pool keeps a GPU free for it at zero (`kept_gpu`), None where it keeps none."""
    node_part = WakePart("node", node.seconds, node.why)
    pull = WakePart("image pull", 0, "the static pool's nodes keep the image")
    if node.provisions and kept is not None:
        node_part = WakePart("node", 0, kept)
        pull = WakePart("image pull", 0, "the node kept has the image its last pod pulled")
    elif node.provisions:
        pull = WakePart(
            "image pull",
            sim.image_bytes / sim.image_pull_bytes_per_second,
            f"{_size(sim.image_bytes)} at {_size(sim.image_pull_bytes_per_second)}/s: scaling.simulation.imageBytes, "
            "imagePullBytesPerSecond",
        )
    files = version_paths(repo, [m for m in models if m in repo.models])
    model_bytes = sum(_size_of(path) for path in files.values())
    load = WakePart(
        "model load",
        model_bytes / sim.model_load_bytes_per_second,
        f"{_size(model_bytes)} of model files at {_size(sim.model_load_bytes_per_second)}/s: "
        "scaling.simulation.modelLoadBytesPerSecond",
    )
    ready = WakePart(
        "readiness",
        STARTUP_PROBE_SECONDS + READINESS_PROBE_SECONDS,
        f"the startup probe's {STARTUP_PROBE_SECONDS} s period, then the readiness probe's {READINESS_PROBE_SECONDS} s",
    )
    return WakeEstimate((node_part, pull, load, ready))
