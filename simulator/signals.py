"""The scaling signals KEDA can read from Triton's metrics, as the simulator computes them.

Each signal is what one PromQL query over Triton's /metrics returns at an HPA sync
(triton_platform/scaling/keda_scaling.py writes the queries): gauges are read at the latest
scrape, counters as Prometheus' `rate()` over the last `window` of scrapes.

- `queue-depth`: pending requests (`nv_inference_pending_request_count`), AverageValue.
  With a batching delay every pod holds about rate x delay pending even far from
  saturation, so this measures the batcher as much as the load.
- `queue-excess`: pending requests beyond that expected batch fill, `pending - rate(success) x delay`,
  at least 0, AverageValue; target: one full batch (`max_batch_size`) per replica.
- `queue-time`: mean queue time per request, `rate(nv_inference_queue_duration_us) /
  rate(nv_inference_request_success)`, Value (the HPA scales the ready count by value/target);
  target: twice the batching delay, the most a request waits while instances keep up.
- `busy-ratio`: the fraction of time model instances run a batch, `rate(compute_infer) x
  rate(exec_count) / rate(inference_count) / instances` (Triton adds a batch's compute time
  to each request in it), AverageValue; target: `scaling.busyRatioTarget`. With several models on a pod, per
  pod the busiest model's (each over its own instances), summed over the pods (`busiest`).
- `demand`: requests arriving per second over what one pod carries, `rate(nv_inference_request_success +
  nv_inference_request_failure)` of each model over its capacity per pod (instances x max batch / tau(max batch),
  scenario.model_capacity_rps), summed over the models and pods (`demand`), AverageValue; target:
  `scaling.demandTarget`, the share of a pod's capacity each pod should carry. Unlike the busy ratio it is not
  bounded by 1: a surge of 4x reads 4x, so one sync asks for every pod the surge needs.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import (
    COUNTER_BUSY_SECONDS,
    COUNTER_QUEUE_SECONDS,
    COUNTER_REQUESTS,
    COUNTER_SUCCESS,
    COUNTERS,
    BatcherConfig,
    Replica,
)

Signal = Literal["queue-depth", "queue-excess", "queue-time", "busy-ratio", "demand"]
"""Every signal the simulator compares; a stack's `scaling.signal` names `queue-depth`, `busy-ratio` or `demand`."""
SIGNALS: tuple[Signal, ...] = get_args(Signal)
TargetType = Literal["AverageValue", "Value"]
# queue-time with no batching delay: 1 ms, a batch's worth of waiting on a fast model.
MIN_QUEUE_TIME_TARGET_S = 0.001


@dataclass(frozen=True)
class SignalSpec:
    """One signal with the target the HPA compares it to."""

    name: Signal
    target: float
    """Per replica for AverageValue; for `queue-time`, seconds."""

    @property
    def target_type(self) -> TargetType:
        return "Value" if self.name == "queue-time" else "AverageValue"


def derived_target(name: Signal, batcher: BatcherConfig, configured: Mapping[str, float]) -> float:
    """The target of `name`: `configured[name]` for a signal a stack sets (queue-depth, busy-ratio, demand), else
    derived from the batching config."""
    if name in configured:
        return configured[name]
    if name == "queue-excess":
        return float(batcher.max_batch_size if batcher.dynamic else 1)
    if name == "queue-time":
        delay = batcher.max_queue_delay_s if batcher.dynamic else 0.0
        return max(2 * delay, MIN_QUEUE_TIME_TARGET_S)
    raise ValueError(f"no target for signal {name!r}: the stack sets it")


@dataclass
class Scrapes:
    """Each serving pod's counters at the scrapes inside the rate window, as Prometheus holds them."""

    window_seconds: float
    history: list[tuple[float, dict[Hashable, NDArray[np.float64]]]]
    """Per scrape, each series' counters: a series per pod (its serial), or per pod and model ((serial, model))."""

    def add(self, now: float, pods: Sequence[tuple[Hashable, Replica]]) -> None:
        self.history.append((now, {key: replica.counters.copy() for key, replica in pods}))
        self.history = [(t, c) for t, c in self.history if t >= now - self.window_seconds]

    def rates(self) -> NDArray[np.float64]:
        """Summed per-second rate of each counter over the pods with two samples in the window."""
        if len(self.history) < 2:
            return np.zeros(COUNTERS)
        (t_last, last) = self.history[-1]
        total = np.zeros(COUNTERS)
        for key, counters in last.items():
            first = next(((t, c[key]) for t, c in self.history if key in c and t < t_last), None)
            if first is not None:
                total += (counters - first[1]) / (t_last - first[0])
        return total

    def by_series(self) -> dict[Hashable, NDArray[np.float64]]:
        """Each series' per-second rate of each counter, for the series with two samples in the window."""
        if len(self.history) < 2:
            return {}
        (t_last, last) = self.history[-1]
        rates = {}
        for key, counters in last.items():
            first = next(((t, c[key]) for t, c in self.history if key in c and t < t_last), None)
            if first is not None:
                rates[key] = (counters - first[1]) / (t_last - first[0])
        return rates


def busiest(rates: Mapping[Hashable, NDArray[np.float64]], instances: Sequence[int]) -> float:
    """The busy ratio of a deployment of several models: per pod, the busiest model's busy instance-seconds per
    second over its instances, summed over the pods (triton_platform.scaling_signal.busy_ratio_expr); `rates`
    per (pod, model index) series (Scrapes.by_series), `instances` per model index. 0 when idle (`or vector(0)`)."""
    per_pod: dict[object, float] = {}
    for key, counters in rates.items():
        pod, model = key if isinstance(key, tuple) else (key, 0)
        per_pod[pod] = max(per_pod.get(pod, 0.0), float(counters[COUNTER_BUSY_SECONDS]) / instances[model])
    return float(sum(per_pod.values()))


def demand(rates: Mapping[Hashable, NDArray[np.float64]], capacities: Sequence[float]) -> float:
    """The demand of a deployment, in pods: per (pod, model) series (Scrapes.by_series), the requests ended per second
    over that model's capacity per pod, summed (triton_platform.scaling_signal.demand_expr). The models of a pod
    share its GPU time, so their shares of a pod add up: a pod is full when they reach 1. 0 when idle."""
    total = 0.0
    for key, counters in rates.items():
        model = key[1] if isinstance(key, tuple) else 0
        total += float(counters[COUNTER_REQUESTS]) / capacities[model]
    return total


def read(spec: SignalSpec, batcher: BatcherConfig, pending: float, rates: NDArray[np.float64]) -> float | None:
    """The query's value for the deployment (AverageValue: summed over pods), None when it has no series."""
    if spec.name == "queue-depth":
        return float(pending)
    if spec.name == "queue-excess":
        delay = batcher.max_queue_delay_s if batcher.dynamic else 0.0
        return max(float(pending - rates[COUNTER_SUCCESS] * delay), 0.0)
    if rates[COUNTER_SUCCESS] <= 0:
        # rate(success) is 0 when idle: the division yields no series and KEDA's read fails, so the
        # queries add `or vector(0)` to read an idle deployment as 0.
        return 0.0
    if spec.name == "queue-time":
        return float(rates[COUNTER_QUEUE_SECONDS] / rates[COUNTER_SUCCESS])
    # Busy instance-seconds per second over the pods, per model instance.
    return float(rates[COUNTER_BUSY_SECONDS] / batcher.instances)
