"""What one simulation runs: a deployment of a stack, its model's batching and profile, and a load trace."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from model_repository.render import render_repository
from model_repository.source import DEFAULT_MODEL_REPO, read_repository
from platform_config.loader import StackConfig
from platform_config.paths import PROJECT_ROOT
from platform_config.schema import ScalePolicy
from simulator.batcher import BatcherConfig, LatencyProfile
from simulator.hpa import Behavior, Policy, Rules
from simulator.keda import Fallback
from simulator.shapes import PROFILE_SHAPES

PROFILES = PROJECT_ROOT / "bench" / "results" / "profiles"


@dataclass(frozen=True)
class Scenario:
    stack: str
    deployment: str
    model: str
    batcher: BatcherConfig
    tau: LatencyProfile
    min_replicas: int
    max_replicas: int
    queue_target: float
    """AverageValue target of the queue-depth trigger (pending requests per replica)."""
    behavior: Behavior
    scrape_seconds: float
    gpus_per_pod: int
    gpus_per_node: int
    max_nodes: int
    warm_nodes: int
    """GPU nodes up at the start: the floor's plus the overprovisioning spares."""
    node_provision_seconds: float
    pod_start_seconds: float
    """Image pull plus model load plus the readiness probe, for a pod on a node already up."""
    drain_seconds: float
    slo_seconds: float
    fallback: Fallback | None
    """KEDA's fallback for failed metric reads; None: none configured."""
    gpu_memory_target: float
    """AverageValue target of the GPU-memory trigger (used/total per replica)."""
    gpu_memory_ratio: float | None
    """GPU memory used/total of a serving pod; None: the GPU-memory trigger is left out."""


def rules(policy: ScalePolicy) -> Rules:
    policies = [Policy("Percent", policy.percent, policy.period_seconds)]
    if policy.pods:
        policies.append(Policy("Pods", policy.pods, policy.period_seconds))
    return Rules(policy.stabilization_seconds, tuple(policies), "Max")


def load_profile(path: Path) -> LatencyProfile:
    """A profile written by bench/latency_profile.py.

    `request_overhead_percentiles_seconds` may be left out (no overhead), e.g. for
    a tau(b) taken from a GPU server's own statistics.
    """
    profile = json.loads(path.read_text())
    tau = profile["tau_seconds"]
    sizes = sorted(int(k) for k in tau)
    overhead = tuple(float(v) for v in profile.get("request_overhead_percentiles_seconds", [0.0]))
    return LatencyProfile(tuple(sizes), tuple(float(tau[str(s)]) for s in sizes), overhead)


def seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for unit in ("ms", "s", "m", "h"):
        if duration.endswith(unit) and duration[: -len(unit)].isdigit():
            return int(duration[: -len(unit)]) * units[unit]
    raise ValueError(f"not a Prometheus duration: {duration!r}")


def scenario(
    stack: StackConfig, deployment: str | None = None, model: str | None = None, repo: Path = DEFAULT_MODEL_REPO
) -> Scenario:
    """The scenario of one deployment, from the stack's validated config and its rendered model config."""
    config = stack.config
    name = deployment or sorted(config.serving.deployments)[0]
    spec = config.serving.deployments[name]
    rendered = render_repository(stack.stack, config, read_repository(repo))
    sim = config.scaling.simulation
    profiled = [m for m in spec.models if (PROFILES / f"{m}.json").exists()]
    chosen = model or sim.model or (profiled[0] if profiled else spec.models[0])
    if chosen not in spec.models:
        raise ValueError(f"model {chosen!r} is not served by deployment {name!r} (it serves {', '.join(spec.models)})")
    profile = PROJECT_ROOT / sim.profile if sim.profile and not model else PROFILES / f"{chosen}.json"
    if not profile.exists():
        raise FileNotFoundError(f"no latency profile {profile}: measure it with bench/batching.py --model {chosen}")
    model_config = rendered.models[chosen].config
    batching = model_config.dynamic_batching if model_config.HasField("dynamic_batching") else None
    policy = batching.default_queue_policy if batching and batching.HasField("default_queue_policy") else None
    instances = sum(group.count or 1 for group in model_config.instance_group) or 1
    batcher = BatcherConfig(
        max_batch_size=max(model_config.max_batch_size, 1),
        max_queue_delay_s=(batching.max_queue_delay_microseconds / 1e6) if batching else 0.0,
        preferred_sizes=tuple(batching.preferred_batch_size) if batching else (),
        instances=instances,
        max_queue_size=policy.max_queue_size if policy else 0,
        timeout_s=(policy.default_timeout_microseconds / 1e6) if policy else 0.0,
        dynamic=batching is not None,
    )
    pool = config.gpu_pool
    fallback = config.scaling.fallback
    floor_gpus = spec.replicas.min * spec.gpus_per_pod + pool.overprovisioning_replicas * spec.gpus_per_pod
    return Scenario(
        stack=stack.stack,
        deployment=name,
        model=chosen,
        batcher=batcher,
        tau=load_profile(profile),
        min_replicas=spec.replicas.min,
        max_replicas=spec.replicas.max,
        queue_target=config.scaling.queue_depth_target,
        behavior=Behavior(rules(config.scaling.scale_up), rules(config.scaling.scale_down)),
        scrape_seconds=seconds(config.monitoring.scrape_interval),
        gpus_per_pod=spec.gpus_per_pod,
        gpus_per_node=pool.gpus_per_node,
        max_nodes=pool.max_nodes,
        warm_nodes=max(pool.min_nodes, math.ceil(floor_gpus / pool.gpus_per_node)),
        node_provision_seconds=sim.node_provision_seconds,
        pod_start_seconds=sim.pod_start_seconds,
        drain_seconds=config.serving.drain.pre_stop_seconds,
        slo_seconds=config.serving.p95_latency_slo_ms / 1000,
        fallback=Fallback(fallback.failure_threshold, fallback.replicas, fallback.behavior) if fallback else None,
        gpu_memory_target=config.scaling.gpu_memory_ratio_target,
        gpu_memory_ratio=sim.gpu_memory_ratio,
    )


def capacity_rps(s: Scenario) -> float:
    """Requests per second one replica serves at full batches: instances x max batch / tau(max batch)."""
    return s.batcher.instances * s.batcher.max_batch_size / s.tau(s.batcher.max_batch_size)


def trigger_rps(s: Scenario) -> float:
    """Load at which the replica floor's queues reach the trigger's target.

    A request waits up to the batching delay, so a pod holds about rate x delay pending.
    """
    return s.queue_target / max(s.batcher.max_queue_delay_s, 0.001) * s.min_replicas


def read_trace(path: Path) -> NDArray[np.float64]:
    """A `t_seconds,rps` CSV as the rate of each second, stepwise from each row to the next."""
    rows: list[tuple[float, float]] = []
    with path.open(newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                t, rps = float(row["t_seconds"]), float(row["rps"])
            except (KeyError, TypeError, ValueError):
                shown = ",".join(str(v) for v in row.values())[:60]
                raise ValueError(
                    f"{path}:{line}: {shown!r} is not a row of t_seconds,rps (two numbers, the header naming them)"
                ) from None
            if not (math.isfinite(t) and math.isfinite(rps)) or t < 0 or rps < 0:
                raise ValueError(f"{path}:{line}: t_seconds and rps must be finite and non-negative; got {t}, {rps}")
            if rows and t <= rows[-1][0]:
                raise ValueError(f"{path}:{line}: t_seconds must increase; {t} follows {rows[-1][0]}")
            rows.append((t, rps))
    if not rows:
        raise ValueError(f"{path}: no rows; expected a header t_seconds,rps and one row per change")
    end = math.ceil(rows[-1][0]) + 1
    rate = np.zeros(end)
    for (t, rps), nxt in zip(rows, [*rows[1:], (end, 0.0)], strict=True):
        rate[int(t) : int(nxt[0])] = rps
    return rate


def shaped_trace(shape: str, peak_rps: float, hours: float = 1.0) -> NDArray[np.float64]:
    """Built-in traces: `step` (a quarter of the peak, then the peak), `diurnal` (a day's curve
    compressed into `hours`), `spike` (diurnal plus a burst of 3x)."""
    n = int(hours * 3600)
    t = np.arange(n, dtype=float)
    if shape == "step":
        return np.asarray(np.where(t < n / 4, peak_rps / 4, peak_rps), dtype=np.float64)
    day = np.asarray(peak_rps * (0.55 - 0.45 * np.cos(2 * np.pi * t / n)), dtype=np.float64)
    if shape == "diurnal":
        return day
    if shape == "spike":
        burst = (t >= 0.6 * n) & (t < 0.6 * n + max(60, n // 100))
        return np.asarray(np.where(burst, np.minimum(3 * day, 3 * peak_rps), day), dtype=np.float64)
    raise ValueError(f"unknown profile {shape!r}; expected one of {', '.join(PROFILE_SHAPES)}")
