"""What one pod of a model carries: the capacity the demand signal divides arrivals by, and the planner's.

One owner for the figure, read by the stack's program (the demand trigger's query), `stackctl validate` (which
prints it) and the simulator and planner (simulator.scenario.model_capacity_rps): a pod's instances each run full
batches of the largest size the batcher forms, back to back, so it serves instances x batch / tau(batch) requests
per second, tau(b) being one batch's seconds on one instance from the model's latency profile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.json_format import MessageToDict
from tritonclient.grpc.model_config_pb2 import ModelConfig

from platform_config.errors import ConfigIssue
from platform_config.latency_profile import TAU_FIELDS, read_profile, tau_config, tau_fields
from platform_config.paths import PROJECT_ROOT
from platform_config.scaling import CapacityProfile, ScalingConfig
from platform_config.schema import section_key
from platform_config.serving import ServingConfig
from triton_platform.args.excerpts import excerpt, key_step
from triton_platform.model_packaging.instances import instances_per_pod


def tau_at(sizes: Sequence[int], seconds: Sequence[float], batch: int) -> float:
    """tau(`batch`) from a profile's measured sizes (ascending) and seconds: linear between measured sizes, the
    first below them, the last slope continued beyond them (simulator.batcher.LatencyProfile.table, which must give
    the same figure at every size: tests/simulator/test_demand_signal.py)."""
    if batch <= sizes[0]:
        return float(seconds[0])
    last = len(sizes) - 1
    if batch > sizes[last]:
        if last == 0:
            return float(seconds[0])
        slope = (seconds[last] - seconds[last - 1]) / (sizes[last] - sizes[last - 1])
        return float(seconds[last] + slope * (batch - sizes[last]))
    j = next(i for i in range(last + 1) if sizes[i] >= batch)
    if sizes[j] == batch:
        return float(seconds[j])
    slope = (seconds[j] - seconds[j - 1]) / (sizes[j] - sizes[j - 1])
    return float(slope * (batch - sizes[j - 1]) + seconds[j - 1])


def pod_capacity_rps(instances: int, largest: int, tau: Callable[[int], float]) -> float:
    """Requests per second one pod's `instances` of a model serve at full batches of `largest` (its max batch size
    with dynamic batching, else 1), `tau` giving one batch's seconds."""
    return instances * largest / tau(largest)


@dataclass(frozen=True)
class ModelCapacity:
    """What one pod of a model serves alone at full batches, and how the figure was reached."""

    requests_per_second: float
    why: str
    """The arithmetic and the profile it read, for `stackctl validate`."""


CAPACITY_PROFILES = f"{section_key('scaling')}.capacityProfiles"


def _profile(
    model: str, pinned: CapacityProfile, rendered: Mapping[str, Any]
) -> tuple[tuple[tuple[int, ...], tuple[float, ...]] | None, list[ConfigIssue]]:
    """A capacity profile's measured sizes and seconds, checked against its pin and the config the stack renders."""
    key = CAPACITY_PROFILES + key_step(model)
    try:
        read = read_profile(PROJECT_ROOT / pinned.path)
        sizes, seconds, _ = tau_fields(read.data, read.where)
    except ValueError as err:
        return None, [ConfigIssue(f"{key}.path", str(err))]
    issues = []
    if read.sha256 != pinned.sha256:
        issues.append(
            ConfigIssue(
                f"{key}.sha256",
                f"{pinned.sha256} is not the sha256 of {read.where} ({read.sha256}): the profile changed since the "
                "stack pinned it, and with it the capacity the demand signal divides by; review the new profile and "
                "record its sha256",
            )
        )
    recorded_model = read.data.get("model")
    if recorded_model is not None and recorded_model != model:
        issues.append(
            ConfigIssue(
                f"{key}.path",
                f"{read.where} is the profile of model {excerpt(recorded_model)}, not of {model!r}; measure "
                f"{model!r} (stackctl profile --model {model}, docs/profiling.md)",
            )
        )
    config = read.data.get("config")
    missing = [f for f in TAU_FIELDS if not isinstance(config, dict) or config.get(f) is None]
    if missing:
        issues.append(
            ConfigIssue(
                f"{key}.path",
                f"{read.where} records no {', '.join(missing)} in its `config`: the capacity is instances x max batch "
                "size / tau(max batch size), which holds only for the config the profile was measured on; measure "
                f"it with `stackctl profile --stack <stack> --model {model}` (docs/profiling.md), which records it",
            )
        )
    else:
        differences = [
            f"{field} {config[field]!r} in the profile, {rendered[field]!r} rendered"  # type: ignore[index]
            for field in TAU_FIELDS
            if config[field] != rendered[field]  # type: ignore[index]
        ]
        if differences:
            issues.append(
                ConfigIssue(
                    f"{key}.path",
                    f"{read.where} was measured on another config of {model!r} than the stack renders "
                    f"({'; '.join(differences)}), so its tau(b) does not give this config's capacity; measure "
                    f"this config (`stackctl profile --stack <stack> --model {model}`, docs/profiling.md)",
                )
            )
    return ((sizes, seconds) if not issues else None), issues


def demand_capacities(
    serving: ServingConfig, scaling: ScalingConfig, configs: Mapping[str, ModelConfig]
) -> tuple[dict[str, dict[str, ModelCapacity]], list[ConfigIssue]]:
    """For the `demand` signal: each deployment's capacity per pod of each model that runs instances (ensembles run
    none), from the profiles `scaling.capacityProfiles` pins, and every problem with them; two empty results for
    another signal. `configs`: each served model's config as the stack renders it."""
    if scaling.signal != "demand":
        return {}, []
    issues: list[ConfigIssue] = []
    served = {m for spec in serving.deployments.values() for m in spec.models}
    for model in sorted(scaling.capacity_profiles):
        if model not in served:
            issues.append(
                ConfigIssue(
                    CAPACITY_PROFILES + key_step(model),
                    f"no deployment serves model {model!r}; the deployments serve {', '.join(sorted(served))}",
                )
            )
        elif configs[model].platform == "ensemble":
            issues.append(
                ConfigIssue(
                    CAPACITY_PROFILES + key_step(model),
                    f"{model!r} is an ensemble: it runs no instances of its own (its requests run on its steps' "
                    "instances, each counted there), so the demand reads no capacity of it; remove it",
                )
            )
    profiles: dict[str, tuple[tuple[int, ...], tuple[float, ...]] | None] = {}
    capacities: dict[str, dict[str, ModelCapacity]] = {}
    for name, spec in sorted(serving.deployments.items()):
        capacities[name] = {}
        for model in spec.models:
            config = configs[model]
            if config.platform == "ensemble":
                continue
            pinned = scaling.capacity_profiles.get(model)
            if pinned is None:
                issues.append(
                    ConfigIssue(
                        CAPACITY_PROFILES,
                        f"no profile of model {model!r} (deployment {name!r}): signal demand divides each model's "
                        f"requests by what a pod of it serves, read from its latency profile; add {model}: "
                        "{path: <its profile>, sha256: <the file's sha256>} (stackctl profile --stack <stack> "
                        f"--model {model}, docs/profiling.md)",
                    )
                )
                continue
            if model not in profiles:
                rendered = tau_config(MessageToDict(config, preserving_proto_field_name=True))
                profiles[model], found = _profile(model, pinned, rendered)
                issues.extend(found)
            measured = profiles[model]
            if measured is None:
                continue
            instances = instances_per_pod(config, spec.gpus_per_pod)
            largest = max(config.max_batch_size, 1) if config.HasField("dynamic_batching") else 1
            sizes, seconds = measured
            tau = tau_at(sizes, seconds, largest)
            capacities[name][model] = ModelCapacity(
                pod_capacity_rps(instances, largest, functools.partial(tau_at, sizes, seconds)),
                f"{instances} instance(s) x batch {largest} / tau({largest}) {tau * 1000:.4g} ms, {pinned.path}",
            )
    return capacities, issues
