"""A streaming deployment over a trace, its replicas set by the `time-to-first-token` trigger: what `stackctl plan
--stream-profile` runs for each target it tries, and the oracle it sets them beside.

A quasi-static (fluid) model, as simulator/fluid.py is for requests. The replica (simulator/streams.py) is run
once per request rate on a grid, at steady state under Poisson arrivals (`ttft_table`). Over the trace, second by
second, the ready replicas share the load evenly (a Service spreads streams over its pods), so each second's
requests see the time to first token of one replica at that share. Every HPA sync (15 s), the trigger reads the p95
at the share of the last rate window over its objective, and the HPA asks for ceil(replicas x ratio / target)
outside its 10% tolerance (kube-controller-manager's `Value` metric rule), within its scale-up and scale-down
policies. New pods serve `start_seconds` later; a scale-down takes the highest recommendation of its stabilization
window, as the HPA does. A trigger that reads a latency is not proportional to load: far below its objective it
proposes few pods, which a scale-down policy slows. What it leaves out:
a replica's queue carried from one second to the next (each second is at steady state), and the pods' uneven
shares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from simulator.streams import StreamProfile, run_stream

SATURATED = math.inf
"""The time to first token of a replica offered more than it serves: its queue grows without bound."""


@dataclass(frozen=True)
class TtftTable:
    """One replica's time to first token at steady state, by the requests per second offered to it."""

    rates: tuple[float, ...]
    """Ascending; above the last, the replica is saturated."""
    samples: tuple[NDArray[np.float64], ...]
    """Each rate's first-token times (seconds, sorted); empty at a saturated rate."""

    def index(self, rate: float) -> int | None:
        """The first tabled rate at or above `rate` (the conservative neighbour); None above the table."""
        found = int(np.searchsorted(self.rates, rate, side="left"))
        return found if found < len(self.rates) else None

    @cached_property
    def p95s(self) -> tuple[float, ...]:
        """Each tabled rate's p95; SATURATED where saturated."""
        return tuple(float(np.percentile(s, 95)) if len(s) else SATURATED for s in self.samples)

    def p95(self, rate: float) -> float:
        at = self.index(rate)
        return SATURATED if at is None else self.p95s[at]


def capacity(profile: StreamProfile, output_tokens: int) -> float:
    """Requests per second one replica serves at most: a full batch's sequences over the time one of them takes
    (its prefill, then a step per further token with every slot in flight)."""
    full = profile.max_sequences
    return full / (profile.prefill_seconds + (output_tokens - 1) * profile.step(full))


def ttft_table(
    profile: StreamProfile, output_tokens: int, *, points: int = 24, seconds: float = 600.0, seed: int = 0
) -> TtftTable:
    """The replica run at `points` rates up to its capacity, `seconds` of Poisson arrivals each; the first tenth
    is warm-up and left out. A rate whose last first tokens wait ten times its median is saturated."""
    rng = np.random.default_rng(seed)
    top = capacity(profile, output_tokens)
    rates, samples = [], []
    for rate in np.linspace(top / points, top, points):
        arrivals = np.cumsum(rng.exponential(1 / rate, int(rate * seconds) + 1))
        run = run_stream(profile, arrivals, np.full(len(arrivals), output_tokens))
        ttft = run.time_to_first_token()[len(arrivals) // 10 :]
        tail = ttft[-max(1, len(ttft) // 10) :]
        saturated = float(np.median(tail)) > 10 * float(np.median(ttft))
        rates.append(float(rate))
        samples.append(np.zeros(0) if saturated else np.sort(ttft))
    return TtftTable(tuple(rates), tuple(samples))


@dataclass(frozen=True)
class FleetSettings:
    """How the deployment scales: its bounds, the trigger's objective and target, and the HPA's timing."""

    min_replicas: int
    max_replicas: int
    objective_seconds: float
    target: float
    start_seconds: int
    sync_seconds: int = 15
    window_seconds: int = 60
    scale_up: tuple[int, int | None, int] = (100, 3, 30)
    """The HPA's scale-up policy: at most `percent`% or `pods` more (the larger) per `period` seconds."""
    scale_down: tuple[int, int] = (25, 60)
    """Its scale-down policy: at most `percent`% fewer per `period` seconds."""
    scale_down_window_seconds: int = 300
    tolerance: float = 0.1


@dataclass(frozen=True)
class FleetRun:
    """The replicas asked for and ready each second, and what the trace's requests saw."""

    replicas: NDArray[np.int64]
    ready: NDArray[np.int64]
    ttft_p95: float
    """Over every request of the trace; SATURATED where more than 5% met a saturated replica."""

    @property
    def replica_seconds(self) -> float:
        return float(self.replicas.sum())


def weighted_p95(table: TtftTable, rate: NDArray[np.float64], ready: NDArray[np.int64]) -> float:
    """The p95 over every request of the trace: each second's requests drawn from the table at its share."""
    weights = np.zeros(len(table.rates) + 1)  # the last: requests that met a saturated replica
    for r, n in zip(rate, ready, strict=True):
        if r <= 0:
            continue
        at = table.index(r / n) if n > 0 else None
        weights[len(table.rates) if at is None or not len(table.samples[at]) else at] += r
    total = weights.sum()
    if total == 0:
        return 0.0
    if weights[-1] / total > 0.05:
        return SATURATED
    met = [i for i in range(len(table.rates)) if weights[i]]
    values = np.concatenate([table.samples[i] for i in met])
    each = np.concatenate([np.full(len(table.samples[i]), weights[i] / len(table.samples[i])) for i in met])
    order = np.argsort(values)
    cumulative = np.cumsum(each[order]) / total
    return float(values[order][min(int(np.searchsorted(cumulative, 0.95)), len(values) - 1)])


def run_fleet(rate: Sequence[float] | NDArray[np.float64], table: TtftTable, settings: FleetSettings) -> FleetRun:
    """The deployment over `rate` (requests per second, one value a second), from `min_replicas` ready."""
    rate = np.asarray(rate, dtype=np.float64)
    replicas = np.zeros(len(rate), dtype=np.int64)
    ready = np.zeros(len(rate), dtype=np.int64)
    current = settings.min_replicas
    starting: list[int] = []  # the second each pod still starting serves from
    serving = settings.min_replicas
    recommendations: list[tuple[int, int]] = []
    for t in range(len(rate)):
        serving += sum(1 for at in starting if at == t)
        starting = [at for at in starting if at > t]
        if t and t % settings.sync_seconds == 0:
            window = rate[max(0, t - settings.window_seconds) : t]
            share = float(window.mean()) / max(serving, 1)
            ratio = table.p95(share) / settings.objective_seconds
            proposal = current
            if not math.isfinite(ratio):
                proposal = settings.max_replicas
            elif abs(ratio / settings.target - 1) > settings.tolerance:
                proposal = math.ceil(current * ratio / settings.target)
            proposal = min(max(proposal, settings.min_replicas), settings.max_replicas)
            recommendations = [(at, p) for at, p in recommendations if at > t - settings.scale_down_window_seconds]
            recommendations.append((t, proposal))
            desired = proposal if proposal > current else max(p for _, p in recommendations)
            desired = _within_policies(desired, replicas, t, settings)
            if desired > current:
                starting += [t + settings.start_seconds] * (desired - current)
            elif desired < current:
                # The newest pods go first: those still starting, then serving ones.
                drop = current - desired
                while drop and starting:
                    starting.pop()
                    drop -= 1
                serving -= drop
            current = desired
        replicas[t], ready[t] = current, serving
    return FleetRun(replicas, ready, weighted_p95(table, rate, ready))


def _within_policies(desired: int, replicas: NDArray[np.int64], t: int, settings: FleetSettings) -> int:
    """`desired` held to the HPA's policies: each change bounded by the count its period ago."""
    up_percent, up_pods, up_period = settings.scale_up
    base = int(replicas[max(0, t - up_period)]) if t else settings.min_replicas
    most = max(math.ceil(base * (1 + up_percent / 100)), base + (up_pods or 0))
    down_percent, down_period = settings.scale_down
    base = int(replicas[max(0, t - down_period)]) if t else settings.min_replicas
    fewest = math.floor(base * (1 - down_percent / 100))
    return min(max(desired, fewest), most)


def oracle_replicas(
    rate: Sequence[float] | NDArray[np.float64], table: TtftTable, objective_seconds: float, most: int
) -> NDArray[np.int64]:
    """Each second, the fewest replicas (1 to `most`) whose share holds the p95 objective: perfect foresight and
    instant pods, the least any autoscaler could spend."""
    out = np.zeros(len(rate), dtype=np.int64)
    for t, r in enumerate(np.asarray(rate, dtype=np.float64)):
        n = 1
        while n < most and table.p95(r / n) > objective_seconds:
            n += 1
        out[t] = n
    return out
