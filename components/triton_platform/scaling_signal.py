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

`demand` is the load itself: the requests arriving per second, as Triton counts them when they end (a success,
`nv_inference_request_success`, or a failure, `nv_inference_request_failure`, whose `reason` label is REJECTED for
a request its queue timeout rejects, CANCELED, BACKEND or OTHER: core src/metric_model_reporter.cc; the dynamic
batcher finishes a timed-out request once, with its reason), over what one pod of the model serves alone at full
batches (platform_config/capacity.py derives it from the model's latency profile, as the planner does). The
models of a pod share its GPU time, so their shares add up: a deployment demands the sum over its models of
rate / capacity, in pods. Unlike the busy ratio it is not bounded by 1 per pod: under a surge of 4x it reads 4x,
and one HPA sync asks for every pod the surge needs. Requests still queued have not ended and are not counted
yet: with an unbounded queue and no queue timeout, an overloaded pod's count stops at what it serves. A request
refused for a full queue (`max_queue_size`) is counted nowhere in Triton 2.51 (its Enqueue answers the caller
at once; tests/cluster/test_demand_real.py), so the stack refuses the demand with a count bound: bound queues by time.

The builders take what a deployment scales on, plain: Monitoring derives its recording rule, dashboard panel
and at-ceiling alert from them, and the stack's program KEDA's trigger query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triton_platform.promql import label_value
from triton_platform.recorded_series import BUSY_RATIO, BY_DEPLOYMENT, DEMAND, PENDING_PER_REPLICA

BUSY_RATIO_SIGNAL = "busy-ratio"
QUEUE_DEPTH_SIGNAL = "queue-depth"
DEMAND_SIGNAL = "demand"
SIGNAL_KINDS = (BUSY_RATIO_SIGNAL, QUEUE_DEPTH_SIGNAL, DEMAND_SIGNAL)
"""What a deployment may scale on."""
PER_MODEL_SIGNALS = {BUSY_RATIO_SIGNAL: "instances_per_pod", DEMAND_SIGNAL: "capacity_per_pod"}
"""The signals that read each model apart, and the signal key giving what each model's series is divided by."""
RECORDS = {BUSY_RATIO_SIGNAL: BUSY_RATIO, DEMAND_SIGNAL: DEMAND}
"""The recording rule of each signal a deployment records for itself; pending requests are recorded for every
deployment at once (PENDING_PER_REPLICA)."""
REQUEST_OUTCOMES = ("nv_inference_request_success", "nv_inference_request_failure")
"""Every request ends as one of these counters (core src/metric_model_reporter.cc)."""
COMPUTE_PHASES = ("input", "infer", "output")
"""What an instance does with a batch, each a Triton counter of its own."""


def deployment_selector(namespace: str, object_name: str) -> str:
    """The label matchers of one Deployment's series, each value an escaped PromQL string (no name can end the
    literal and rewrite the query)."""
    return f"namespace={label_value(namespace)}, deployment={label_value(object_name)}"


def busy_ratio_expr(selector: str, window: str, instances: Mapping[str, int]) -> str:
    """Per pod, the busiest model's busy instance-seconds per second over its instances; one series per pod."""

    def rate(metric: str, model: str) -> str:
        matchers = f"{selector}, model={label_value(model)}"
        return f"sum by (namespace, deployment, pod, model) (rate({metric}{{{matchers}}}[{window}]))"

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


def demand_expr(selector: str, window: str, capacities: Mapping[str, float]) -> str:
    """Per pod, the sum over its models of the requests ending per second over the model's capacity per pod (the
    float's shortest exact decimal, so the query divides by the very figure the planner derives); one series per
    pod."""

    def rate(metric: str, model: str) -> str:
        matchers = f"{selector}, model={label_value(model)}"
        return f"sum by (namespace, deployment, pod, model) (rate({metric}{{{matchers}}}[{window}]))"

    terms = [
        "(" + " + ".join(rate(metric, model) for metric in REQUEST_OUTCOMES) + f") / {capacity!r}"
        for model, capacity in sorted(capacities.items())
    ]
    # `or`: each model keeps its own series (the model label differs); the sum adds a pod's models' shares.
    return "sum by (namespace, deployment, pod) (" + " or ".join(terms) + ")"


def _per_pod(kind: str, selector: str, window: str, per_model: Mapping[str, float]) -> str | None:
    """The per-pod expression of a signal that reads each model apart; None for the pending count."""
    if kind == BUSY_RATIO_SIGNAL:
        return busy_ratio_expr(selector, window, {model: int(count) for model, count in per_model.items()})
    if kind == DEMAND_SIGNAL:
        return demand_expr(selector, window, per_model)
    return None


def trigger_query(kind: str, namespace: str, object_name: str, window: str, per_model: Mapping[str, float]) -> str:
    """What KEDA asks Prometheus: the deployment's total, which an AverageValue target divides by replicas.

    `per_model`: what each model's series is divided by (PER_MODEL_SIGNALS): for `busy-ratio` the instances per pod
    of each model it reads, for `demand` each one's capacity per pod (ensembles run none, and are left out)."""
    selector = deployment_selector(namespace, object_name)
    per_pod = _per_pod(kind, selector, window, per_model)
    if per_pod is not None:
        return f"sum({per_pod})"
    return f"sum(nv_inference_pending_request_count{{{selector}}})"


def per_replica_series(kind: str, namespace: str, object_name: str) -> str:
    """The recorded per-replica value, for dashboards and alerts."""
    return f"{RECORDS.get(kind, PENDING_PER_REPLICA)}{{{deployment_selector(namespace, object_name)}}}"


def signal_record(
    kind: str, namespace: str, object_name: str, window: str, per_model: Mapping[str, float]
) -> dict[str, Any] | None:
    """The recording rule behind `per_replica_series` when it is the deployment's own: a busy ratio's instance
    counts and a demand's capacities are per deployment, while pending requests are recorded for every deployment
    at once."""
    per_pod = _per_pod(kind, deployment_selector(namespace, object_name), window, per_model)
    if per_pod is None:
        return None
    # One rule per deployment under one name: the static label tells them apart (promtool's lint).
    return {
        "record": RECORDS[kind],
        "expr": f"avg by ({BY_DEPLOYMENT}) ({per_pod})",
        "labels": {"deployment": object_name},
    }
