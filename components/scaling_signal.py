"""The signal each Triton deployment scales on, as PromQL: one owner for KEDA's trigger, the recording rule,
the dashboard panel and the at-ceiling alert.

`busy-ratio` (the default) is the share of time model instances hold a batch: its inputs, the model's
execution and its outputs, the three compute phases. Triton adds a batch's compute times to each request
in it (core src/infer_stats.cc, `UpdateSuccess`), so a model's busy instance-seconds per second are
rate(nv_inference_compute_{input,infer,output}_duration_us) x rate(nv_inference_exec_count) /
rate(nv_inference_count) / 1e6 (server docs/user_guide/metrics.md names these counters). The execution
alone undercounts: on the CPU tritonserver it was a quarter to a half of the time the instances are held
(bench/simulator_fidelity.py, whose profiles time all three phases as bench/latency_profile.py does). Divided
by the model's instances per pod and taken for the busiest model of each pod, it reaches 1 only when the
instances never idle: unlike the pending count, it does not rise with the batcher's own waiting
(bench/scaling_signals.py measures both). `queue-depth` is the pending-request gauge, kept for stacks
tuned on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tritonclient.grpc.model_config_pb2 import ModelConfig

from components.monitoring_rules import BUSY_RATIO, BY_DEPLOYMENT, PENDING_PER_REPLICA, rate_window
from components.triton_manifests import deployment_object_name
from model_packaging.render import RenderedRepository
from platform_config.loader import StackConfig
from platform_config.schema import PlatformConfig

COMPUTE_PHASES = ("input", "infer", "output")
"""What an instance does with a batch, each a Triton counter of its own."""
# protobuf ModelInstanceGroup.Kind: KIND_AUTO = 0, KIND_GPU = 1, KIND_CPU = 2.
KIND_CPU = 2


@dataclass(frozen=True)
class ScalingSignal:
    """One deployment's load trigger."""

    name: str
    """`busy-ratio` or `queue-depth` (`scaling.signal`)."""
    query: str
    """What KEDA asks Prometheus: the deployment's total, which an AverageValue target divides by replicas."""
    per_replica: str
    """The recorded per-replica value, for dashboards and alerts."""
    record: dict[str, Any] | None
    """The recording rule behind `per_replica`, when it is the deployment's own."""
    target: float
    """Per replica: busy ratio or pending requests."""
    models: tuple[str, ...]
    """The models the query reads (ensembles run no instances of their own)."""
    activation: float
    """KEDA's `activationThreshold`: its 0 <-> 1 step, inert while replicas.min >= 1."""


def instances_per_pod(model_config: ModelConfig, gpus_per_pod: int) -> int:
    """Model instances one Triton pod runs: a GPU group's count is per GPU (model_config.proto `count`)."""
    total = 0
    for group in model_config.instance_group:
        count = group.count or 1
        total += count if group.kind == KIND_CPU or group.gpus else count * gpus_per_pod
    return total or gpus_per_pod


def deployment_instances(config: PlatformConfig, rendered: RenderedRepository) -> dict[str, dict[str, int]]:
    """Per deployment, the instances per pod of each model it serves, ensembles left out (they run none)."""
    return {
        name: {
            model: instances_per_pod(rendered.models[model].config, deployment.gpus_per_pod)
            for model in deployment.models
            if rendered.models[model].config.platform != "ensemble"
        }
        for name, deployment in config.serving.deployments.items()
    }


def busy_ratio_expr(selector: str, window: str, instances: Mapping[str, int]) -> str:
    """Per pod, the busiest model's busy instance-seconds per second over its instances; one series per pod."""

    def rate(metric: str, model: str) -> str:
        return f'sum by (namespace, deployment, pod, model) (rate({metric}{{{selector}, model="{model}"}}[{window}]))'

    def held(model: str) -> str:
        phases = (f"nv_inference_compute_{phase}_duration_us" for phase in COMPUTE_PHASES)
        return "(" + " + ".join(rate(metric, model) for metric in phases) + ")"

    terms = [
        f"{held(model)} * {rate('nv_inference_exec_count', model)}"
        f" / clamp_min({rate('nv_inference_count', model)}, 1e-9) / {1_000_000 * count}"
        for model, count in sorted(instances.items())
    ]
    # `or`: each model keeps its own series (the model label differs); max picks the busiest per pod.
    return "max by (namespace, deployment, pod) (" + " or ".join(terms) + ")"


def scaling_signals(config: PlatformConfig, rendered: RenderedRepository) -> dict[str, ScalingSignal]:
    """Each deployment's signal, from the stack's config and its rendered model configs."""
    scaling = config.scaling
    window = rate_window(config.monitoring.scrape_interval)
    instances = deployment_instances(config, rendered)
    out = {}
    for name in sorted(config.serving.deployments):
        selector = f'namespace="{config.kubernetes.namespace}", deployment="{deployment_object_name(name)}"'
        if scaling.signal == "busy-ratio":
            per_pod = busy_ratio_expr(selector, window, instances[name])
            out[name] = ScalingSignal(
                name="busy-ratio",
                query=f"sum({per_pod})",
                per_replica=f"{BUSY_RATIO}{{{selector}}}",
                # One rule per deployment under one name: the static label tells them apart (promtool's lint).
                record={
                    "record": BUSY_RATIO,
                    "expr": f"avg by ({BY_DEPLOYMENT}) ({per_pod})",
                    "labels": {"deployment": deployment_object_name(name)},
                },
                target=scaling.busy_ratio_target,
                models=tuple(sorted(instances[name])),
                activation=0,
            )
        else:
            # monitoring_rules records pending requests per replica for every deployment.
            out[name] = ScalingSignal(
                name="queue-depth",
                query=f"sum(nv_inference_pending_request_count{{{selector}}})",
                per_replica=f"{PENDING_PER_REPLICA}{{{selector}}}",
                record=None,
                target=scaling.queue_depth_target,
                models=tuple(sorted(config.serving.deployments[name].models)),
                activation=scaling.activation_queue_depth,
            )
    return out


def stack_signals(stack: StackConfig) -> dict[str, ScalingSignal]:
    """`scaling_signals` of a validated stack, from the model configs its validation rendered."""
    assert stack.rendered is not None, "a stack whose models are left to ESC has no rendered configs"
    return scaling_signals(stack.config, stack.rendered)
