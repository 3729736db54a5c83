"""Scaling against serving and the models: replica bounds, static replicas, the simulator's model shares, the
demand signal's capacities and its queue bound, the daily floor.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from platform_config.capacity import demand_capacities
from platform_config.errors import ConfigIssue
from platform_config.model_checks import STACK_NAMES, layers
from platform_config.model_settings import render_stack, served_models
from platform_config.scaling import ScalingConfig
from platform_config.schema import section_key
from platform_config.sections import SERVING, Sections
from platform_config.serving import ServingConfig
from triton_platform.model_packaging.render import effective_settings
from triton_platform.model_packaging.source import ModelRepository
from triton_platform.serving.engine_memory import engine_memory


def static_replicas(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    scaling: ScalingConfig = sections["scaling"]
    if scaling.enabled:
        return
    serving: ServingConfig = sections["serving"]
    for name, dep in serving.deployments.items():
        if dep.replicas.min != dep.replicas.max:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.replicas.max",
                f"max ({dep.replicas.max}) differs from min ({dep.replicas.min}) but "
                f"{section_key('scaling')}.enabled is false, so nothing would scale between them; "
                "set max equal to min, or enable scaling",
            )


def scaling_bounds(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    scaling: ScalingConfig = sections["scaling"]
    if not scaling.enabled:
        return
    serving: ServingConfig = sections["serving"]
    key = section_key("scaling")
    if scaling.fallback is None and sections["environment"] == "production":
        yield ConfigIssue(
            f"{key}.fallback",
            "required key is missing: production must say what KEDA holds when it cannot read its metrics "
            "(fallback: {replicas: N}); without it a Prometheus outage leaves scaling unattended",
        )
    for name, dep in sorted(serving.deployments.items()):
        if dep.replicas.min == 0 and dep.wake is None:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.replicas.min",
                "0 without wake: at zero Triton exports no series, so nothing would scale the deployment up again; "
                "add wake: {budgetSeconds: N} (the KEDA HTTP add-on then holds the first request and wakes it), or "
                "use min >= 1",
            )
        for field, value in (
            ("fallback.replicas", scaling.fallback.replicas if scaling.fallback else None),
            ("pausedReplicas", scaling.paused_replicas),
        ):
            if value is not None and not dep.replicas.min <= value <= dep.replicas.max:
                yield ConfigIssue(
                    f"{key}.{field}",
                    f"{value} is outside deployment {name!r}'s replicas range {dep.replicas.min}-{dep.replicas.max}",
                )


def simulation_shares(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """`scaling.simulation.shares`: each a model a deployment serves, one deployment's summing to 1 (`stackctl
    simulate` splits a one-column load by them, docs/simulation.md)."""
    scaling: ScalingConfig = sections["scaling"]
    serving: ServingConfig = sections["serving"]
    shares = scaling.simulation.shares or {}
    key = f"{section_key('scaling')}.simulation.shares"
    served = {m for spec in serving.deployments.values() for m in spec.models}
    for model in shares:
        if model not in served:
            yield ConfigIssue(
                f"{key}.{model}",
                f"no deployment serves model {model!r}; the deployments serve {', '.join(sorted(served))}",
            )
    for name, spec in sorted(serving.deployments.items()):
        mine = {m: shares[m] for m in spec.models if m in shares}
        total = sum(mine.values())
        if mine and not math.isclose(total, 1.0, abs_tol=1e-6):
            listed = ", ".join(f"{m}: {f:g}" for m, f in mine.items())
            yield ConfigIssue(
                key,
                f"the shares of deployment {name!r}'s models ({listed}) sum to {total:g}; expected 1, each a "
                "fraction of the deployment's load",
            )


def demand_capacity(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """The `demand` signal's capacity per pod of each model, from the latency profiles the stack pins, measured on the
    config it renders (platform_config/capacity.py)."""
    scaling: ScalingConfig = sections["scaling"]
    if scaling.signal != "demand":
        return
    serving: ServingConfig = sections["serving"]
    try:
        rendered = render_stack("validate", serving, sections["models"], repo)
    except ValueError:
        return  # the models' own checks name why they do not render
    yield from demand_capacities(serving, scaling, {m: r.config for m, r in rendered.models.items()})[1]


def demand_queue_bound(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """With the `demand` signal, no model bounds its queue by count: Triton answers a request to a full queue at once
    and counts it nowhere (core src/dynamic_batch_scheduler.cc returns the error from Enqueue, before the request
    reaches the statistics, in the 2.51 of the default image; measured in tests/cluster/test_demand_real.py; newer cores
    stage requests and finish a full queue's as REJECTED), so the demand would miss the overflow it sheds. A request
    rejected at its queue timeout is counted (nv_inference_request_failure, reason REJECTED)."""
    scaling: ScalingConfig = sections["scaling"]
    if scaling.signal != "demand":
        return
    serving: ServingConfig = sections["serving"]
    defaults, models = layers(sections)
    for name in served_models(serving):
        model = repo.models.get(name)
        if model is None or model.is_ensemble:
            continue
        own = models.get(name)
        batching = effective_settings(model, defaults, own).get("dynamic_batching", {})
        size = batching.get("default_queue_policy", {}).get("max_queue_size")
        if size is None:
            size, where = model.config.dynamic_batching.default_queue_policy.max_queue_size, None
        else:
            where = STACK_NAMES.setting(own, name, "dynamic_batching.default_queue_policy.max_queue_size")
        if size > 0:
            yield ConfigIssue(
                where or f"default_queue_policy.max_queue_size in {STACK_NAMES.base(model)}",
                f"{size} bounds model {name!r}'s queue by count, but {section_key('scaling')}.signal is demand: "
                "Triton (2.51, the default image) refuses a request to a full queue before it counts it (neither a "
                "success nor a failure), "
                "so the demand would not see the overflow; bound the queue by time instead: maxQueueSize 0 and "
                "defaultQueuePolicy.defaultTimeoutMicroseconds (a request rejected at its timeout is counted)",
            )


def daily_floor(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A daily floor belongs to a deployment KEDA scales from one replica up: at zero, KEDA's own loop and the
    wake decide, which neither `stackctl simulate` nor `plan` models with a floor."""
    serving: ServingConfig = sections["serving"]
    scaling: ScalingConfig = sections["scaling"]
    for name in sorted(scaling.daily_floor):
        path = f"{section_key('scaling')}.dailyFloor.{name}"
        deployment = serving.deployments.get(name)
        if deployment is None:
            yield ConfigIssue(
                path,
                f"names no deployment; {SERVING}.deployments has {', '.join(sorted(serving.deployments)) or 'none'}",
            )
        elif not scaling.enabled:
            yield ConfigIssue(path, f"is set but {section_key('scaling')}.enabled is false: KEDA holds the floor")
        elif deployment.replicas.min == 0:
            yield ConfigIssue(
                path,
                f"is set but {SERVING}.deployments.{name}.replicas.min is 0: a floor for a deployment that idles "
                "at zero is not supported (the simulator and planner model it from one replica up); set "
                "replicas.min 1 or remove the floor",
            )


def gpu_memory_trigger_reads_engines(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """The GPU-memory trigger over LLM engines: a vLLM or TensorRT-LLM engine takes its memory share as it loads
    (triton_platform/serving/engine_memory.py), whatever its load, so a pod whose engines take
    `gpuMemoryRatioTarget` or more of each GPU reads above the target idle, and KEDA adds replicas up to max."""
    scaling: ScalingConfig = sections["scaling"]
    if not scaling.enabled or not scaling.gpu_memory_ratio_target:
        return
    serving: ServingConfig = sections["serving"]
    defaults, models = layers(sections)
    scaled = {name: dep for name, dep in serving.deployments.items() if dep.replicas.max > dep.replicas.min}
    served = {name: dep.models for name, dep in scaled.items()}
    gpus = {name: dep.gpus_per_pod for name, dep in scaled.items()}
    try:
        memory = engine_memory(repo, served, defaults, models, gpus)
    except ValueError:
        return  # the models' own checks name why they do not render
    target = scaling.gpu_memory_ratio_target
    key = f"{section_key('scaling')}.gpuMemoryRatioTarget"
    for name, engines in sorted(memory.items()):
        share = engines.total / engines.gpus_per_pod
        if engines.taken and share >= target:
            yield ConfigIssue(
                key,
                f"{target:g} is at or below the {share:g} of each GPU's memory deployment {name!r}'s LLM engines take "
                f"as they load ({'; '.join(what for what, _ in engines.taken)}), whatever their load: its pods "
                f"would read above the target idle and KEDA would scale it to replicas.max "
                f"({scaled[name].replicas.max}); raise gpuMemoryRatioTarget above {share:g}, or lower the engines' "
                "share (gpu_memory_utilization, kv_cache_free_gpu_mem_fraction)",
            )
