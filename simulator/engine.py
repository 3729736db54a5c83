"""The discrete-event simulation of one Triton deployment under KEDA and the HPA, second by second.

Each second: Poisson arrivals at the trace's rate, spread at random over the ready
replicas (kube-proxy picks a backend at random); each replica's batcher runs
(simulator.batcher). The measurement pipeline follows the real one: Prometheus
scrapes each pod's pending-request gauge, counters (and GPU memory) every scrape
interval; at each 15 s HPA sync KEDA's adapter (simulator.keda) answers each
trigger's query (simulator.signals: the gauge at the latest scrape, counters as
`rate()` over the window), or fails while Prometheus is out (`outages`) and
falls back after `failureThreshold` failures; the HPA (simulator.hpa) decides.
KEDA's own polling loop only moves 0 <-> 1 (below, "Scale to zero"). Pods need a free GPU: without one the
pool adds a node (provisioning delay); then image pull and model load; only a
ready pod gets traffic. Scale-down removes the newest pods: they leave the
endpoints at once, drain their queue, and free their GPU.

Scale to zero (Scenario.scales_to_zero: `replicas.min` 0 with `wake`, docs/scale-to-zero.md), as KEDA 2.20 and the
KEDA HTTP add-on do it (keda.sh/docs/2.20/reference/scaledobject-spec; github.com/kedacore/http-add-on):
- The HPA's floor is 1 (KEDA writes `minReplicas: 1` for a ScaledObject at `minReplicaCount: 0`), and the HPA does
  nothing while the target has no replica.
- A run starts awake, as at a floor of 1 (what ran before the trace is unknown; a deployment under load at its
  start would be up): its first pod ready, its node up, KEDA's cooldown counted from the start (`starting`).
- Every `pollingInterval` (Scenario.polling_seconds) KEDA's own loop checks the triggers: active when a request
  arrived since the last check or one is still queued or held (the interceptor's in-flight count, the load
  trigger's value above its activation threshold 0). Once no trigger has been active for `cooldownPeriod`
  (Scenario.cooldown_seconds) since the last active check, KEDA scales the Deployment to 0: every pod drains.
  The GPU pool follows: it keeps only the nodes it holds at the deployment's floor of 0 (Scenario.warm_nodes:
  `gpuPool.minNodes`, the placeholders' nodes), the others go at once (a real cluster-autoscaler or Karpenter
  removes an idle node minutes later: a wake in between finds it, which this does not count).
- At zero, the interceptor holds each request (no ready endpoint) and its scaler pushes the activity to KEDA at
  once (`external-push`: no polling wait), so the first request scales the Deployment 0 -> 1 at its arrival: a
  wake, whose pod waits for a GPU node like any other (a node up, or one provisioned) and then starts.
- Held requests are forwarded when the first pod is ready (at the next whole second, as any traffic here), each
  having waited from its arrival; one still held `wake_timeout_seconds` after its arrival fails (the interceptor's
  504 at the route's readiness timeout) and counts as rejected. Their waits are counted apart (Timeline.wait_*):
  the latency percentiles are those of the requests' service once forwarded.

Several models (Scenario.others, `stackctl simulate` with a load per model): a pod holds a Replica of each
model, with the model's own batcher, instances and latency profile; each model's arrivals are Poisson at its own
rate, spread at random over the ready pods. Contention: the models share the pod's GPU time. A model's share of
it in a second is its instances' busy ratio at its profile's speed (the tau(b) of the batches it started, over its
instance count: 1 when its instances alone keep the GPU as busy as when it was profiled); each second, every
model's tau(b) is stretched by 1 / (1 - u), u the other models' share in the second before, at most
MAX_OTHERS_SHARE (a model never runs slower than 10x its profile). Two models each at a quarter of the GPU run
at 1 / 0.75 = 1.33x their tau(b); each at a half, 2x, and the pod is full. One model alone is never stretched:
the one-model run is unchanged. The scaling signal is the deployment's, as KEDA's query computes it
(triton_platform.scaling_signal): pending requests summed over every model, the busy ratio of each pod's
busiest model summed over the pods (signals.busiest), or each model's requests over its capacity per pod, summed
(signals.demand).

Deterministic for a given seed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import COUNTER_BUSY_SECONDS, BatcherConfig, LatencyProfile, Outcome, Replica
from simulator.daily_floor import FLOOR_TARGET, floor_at
from simulator.hpa import SYNC_SECONDS, Hpa, Metric
from simulator.keda import KedaAdapter
from simulator.reaction import reaction_floor
from simulator.scenario import Scenario, capacity_rps
from simulator.signals import Scrapes, busiest, demand, read

# Latency histogram bins: 0.1 ms to 1000 s, 2% wide.
EDGES = np.geomspace(1e-4, 1e3, 815)


MAX_OTHERS_SHARE = 0.9
"""The most of a pod's GPU time the other models take from one (the contention model above): its tau(b) is
stretched 10x at most, as a GPU's time-slicing still gives each context a turn."""


class Shared(Replica):
    """A model's replica on a pod whose GPU other models share: its tau(b) stretched by their share."""

    def __init__(self, config: BatcherConfig, tau: LatencyProfile, seed: int = 0) -> None:
        super().__init__(config, tau, seed)
        self._alone = self._tau.copy()
        self.stretch = 1.0
        self.share = 0.0
        """The pod's GPU time this model took in the last second it advanced, at its profile's speed."""
        self._busy = 0.0

    def stretch_to(self, factor: float) -> None:
        """Run the next batches at `factor` x the profile's tau(b)."""
        if factor != self.stretch:
            self.stretch = factor
            self._tau = self._alone * factor

    def advance(self, until: float, out: Outcome) -> None:
        super().advance(until, out)
        busy = float(self.counters[COUNTER_BUSY_SECONDS])
        self.share = (busy - self._busy) / self.stretch / self.config.instances
        self._busy = busy


def share_gpu(replicas: Sequence[Shared]) -> None:
    """Stretch each model's tau(b) by 1 / (1 - the other models' share of the GPU in the second before)."""
    total = sum(r.share for r in replicas)
    for replica in replicas:
        replica.stretch_to(1 / (1 - min(total - replica.share, MAX_OTHERS_SHARE)))


@dataclass
class Pod:
    replica: Replica
    ready_at: float
    node_ready_at: float
    draining_since: float | None = None
    serial: int = field(default_factory=itertools.count().__next__)
    """Names the pod's series in Prometheus, as its pod name does."""
    others: list[Shared] = field(default_factory=list)
    """The replicas of the scenario's other models (Scenario.others), in their order; `replica` is then Shared."""

    @property
    def replicas(self) -> list[Replica]:
        """Every model's replica, the scenario's own model first."""
        return [self.replica, *self.others]

    def queued(self) -> int:
        return sum(r.queued for r in self.replicas)


def new_pod(s: Scenario, seed: int, ready_at: float, node_ready_at: float) -> Pod:
    """A pod of the scenario: a Replica of its model, and with other models a Shared replica of each."""
    if not s.others:
        return Pod(Replica(s.batcher, s.tau, seed), ready_at, node_ready_at)
    # Each model's request overheads from a seed of its own: a model's arrivals do not move another's draws.
    others = [Shared(m.batcher, m.tau, seed + MODEL_SEEDS * (k + 1)) for k, m in enumerate(s.others)]
    return Pod(Shared(s.batcher, s.tau, seed), ready_at, node_ready_at, others=others)


MODEL_SEEDS = 1_000_003
"""Apart between two models' overhead seeds on a pod (pods' seeds differ by 1 to a few per second of a run)."""


@dataclass
class ModelCounts:
    """One model's requests over a run with several models: its latency histogram over EDGES and its counts."""

    histogram: NDArray[np.int64] = field(default_factory=lambda: np.zeros(len(EDGES) - 1, np.int64))
    arrived: int = 0
    served: int = 0
    dropped: int = 0

    def record(self, out: Outcome) -> None:
        """Count what `out` holds (before Timeline.record empties it)."""
        if out.latencies:
            latencies = np.concatenate(out.latencies)
            bins = len(EDGES) - 1
            index = np.clip(np.searchsorted(EDGES, latencies) - 1, 0, bins - 1)
            self.histogram += np.bincount(index, minlength=bins)
            self.served += len(latencies)
        self.dropped += sum(len(r) for r in out.rejected_at)

    def summary(self) -> dict[str, float | int]:
        """p50, p95 and p99 (ms), rejected % and requests offered."""
        p50, p95, p99 = (float(percentiles(self.histogram[None, :], q)[0] * 1000) for q in (50, 95, 99))
        return {
            "p50_ms": p50,
            "p95_ms": p95,
            "p99_ms": p99,
            "rejected_pct": 100 * self.dropped / max(self.arrived, 1),
            "requests": self.arrived,
        }


@dataclass
class Timeline:
    """Per second: what the simulation saw."""

    arrival_rps: NDArray[np.float64]
    desired: NDArray[np.int64]
    ready: NDArray[np.int64]
    pending: NDArray[np.int64]
    rejected: NDArray[np.int64]
    gpus: NDArray[np.int64]
    signal: NDArray[np.float64]
    """The scaling signal as the HPA last read it: per replica for an AverageValue target; NaN before the first read
    or while the read fails."""
    falling_back: NDArray[np.bool_]
    """Whether KEDA answered with its fallback in that second."""
    histogram: NDArray[np.signedinteger[Any]]
    """Latency counts per (arrival second, bin of EDGES)."""
    arrived: int = 0
    served: int = 0
    dropped: int = 0
    in_flight: int = 0
    metrics_failing: int = 0
    """Seconds during which KEDA could not read the triggers."""
    fallback: int = 0
    """Seconds during which KEDA answered with its fallback."""
    hpa_changes: list[tuple[float, int]] = field(default_factory=list)
    per_model: dict[str, ModelCounts] = field(default_factory=dict)
    """With several models: each one's requests (the other fields count them all together)."""
    wakes: int = 0
    """Scale to zero: times KEDA scaled the deployment 0 -> 1 on a request."""
    wait_histogram: NDArray[np.int64] = field(default_factory=lambda: np.zeros(len(EDGES) - 1, np.int64))
    """Scale to zero: the requests held by the interceptor and then forwarded, by their wait, over EDGES."""
    wait_max: float = 0.0
    """Scale to zero: the longest wait of a forwarded request (seconds)."""
    wake_failed: int = 0
    """Scale to zero: held requests that failed at the interceptor's timeout (504), also in `dropped`."""

    @classmethod
    def empty(cls, n: int, histogram_rows: int | None = None) -> Timeline:
        """A timeline of `n` seconds with nothing seen yet; `histogram_rows`: fewer latency rows than seconds."""
        return cls(
            arrival_rps=np.zeros(n),
            desired=np.zeros(n, np.int64),
            ready=np.zeros(n, np.int64),
            pending=np.zeros(n, np.int64),
            rejected=np.zeros(n, np.int64),
            gpus=np.zeros(n, np.int64),
            signal=np.full(n, np.nan),
            falling_back=np.zeros(n, np.bool_),
            # A row per second counts that second's arrivals, at most 3 x shapes.MAX_RPS (a spike), far below
            # 2**31: int32 halves the largest array of a long run (2 days: 0.56 GB instead of 1.1 GB). Fewer rows
            # sum many seconds each (fluid_run.py, start_run: one row for the whole run), which can pass 2**31.
            histogram=np.zeros(
                (n if histogram_rows is None else histogram_rows, len(EDGES) - 1),
                np.int32 if histogram_rows is None else np.int64,
            ),
        )

    def record(self, out: Outcome) -> None:
        """Count what `out` holds by arrival second, then empty it."""
        n, bins = len(self.arrival_rps), len(EDGES) - 1
        if out.arrivals:
            arrivals, latencies = np.concatenate(out.arrivals), np.concatenate(out.latencies)
            index = np.minimum(arrivals.astype(np.int64), n - 1) * bins
            index += np.clip(np.searchsorted(EDGES, latencies) - 1, 0, bins - 1)
            low = int(index.min())
            counts = np.bincount(index - low)
            self.histogram.reshape(-1)[low : low + len(counts)] += counts
            self.served += len(arrivals)
        for rejected in out.rejected_at:
            np.add.at(self.rejected, np.minimum(rejected.astype(np.int64), n - 1), 1)
            self.dropped += len(rejected)
        out.arrivals.clear()
        out.batch_sizes.clear()
        out.latencies.clear()
        out.rejected_at.clear()

    def percentiles(self, q: float) -> NDArray[np.float64]:
        """The q-th percentile latency (seconds) of each second's arrivals; NaN for a second without any."""
        return percentiles(self.histogram, q)


PERCENTILE_ROWS = 4096
"""Rows of the histogram whose cumulative counts are held at once: about 27 MB, where the whole of a long run's
would double its largest array."""


def percentiles(counts: NDArray[np.signedinteger[Any]], q: float) -> NDArray[np.float64]:
    """The q-th percentile of each row of latency-bin counts, at the bin's geometric centre."""
    result = np.empty(len(counts))
    for first in range(0, len(counts), PERCENTILE_ROWS):
        rows = counts[first : first + PERCENTILE_ROWS]
        totals = rows.sum(axis=1, dtype=np.int64)
        index = (np.cumsum(rows, axis=1, dtype=np.int64) < (q / 100) * totals[:, None]).sum(axis=1)
        index = np.minimum(index, len(EDGES) - 2)
        result[first : first + len(rows)] = np.where(totals > 0, np.sqrt(EDGES[index] * EDGES[index + 1]), np.nan)
    return result


def rate_window_seconds(scrape_seconds: float) -> float:
    """The `rate()` window of the counter queries: four scrapes, and at least a minute (KEDA scaling)."""
    return max(4 * scrape_seconds, 60.0)


def in_outage(outages: Sequence[tuple[float, float]], t: float) -> bool:
    return any(start <= t < start + length for start, length in outages)


PROGRESS_SECONDS = 300
"""How often, in simulated seconds, `simulate` reports its progress."""


def simulate(  # noqa: PLR0915 - one second's control plane, then its data plane, in order
    s: Scenario,
    rate: NDArray[np.float64],
    seed: int = 0,
    outages: Sequence[tuple[float, float]] = (),
    progress: Callable[[int], None] | None = None,
) -> Timeline:
    """Run `rate` (req/s of each second) through the scenario; `outages` are (start, seconds) of Prometheus outages;
    `progress` is told the seconds simulated so far, every PROGRESS_SECONDS.

    With Scenario.others, `rate` has a column per model (Scenario.models), each model's req/s."""
    rng = np.random.default_rng(seed)
    n = len(rate)
    columns = model_columns(s, rate)
    timeline = Timeline.empty(n)
    outcomes = [Outcome() for _ in s.models]
    if s.others:
        timeline.per_model = {m: ModelCounts() for m in s.models}
    metrics = hpa_metrics(s)
    # At `min_replicas` 0 the HPA's floor is 1: KEDA's own loop moves 0 <-> 1 (Scale to zero, above).
    hpa = Hpa(max(s.min_replicas, 1), s.max_replicas, tuple(metrics), s.behavior)
    keda = KedaAdapter(tuple(m.target for m in metrics), s.fallback)
    scrapes = Scrapes(rate_window_seconds(s.scrape_seconds), [])
    signal = np.nan
    wake = Held(s) if s.scales_to_zero else None
    first_pods, warm_nodes = starting(s)
    pods: list[Pod] = [new_pod(s, seed + i, 0.0, 0.0) for i in range(first_pods)]
    nodes_ready: list[float] = [0.0] * warm_nodes
    scraped: list[float | None] = [0.0] * (len(metrics) - bool(s.floor))
    desired = first_pods

    for second in range(n):
        if progress is not None and second % PROGRESS_SECONDS == 0:
            progress(second)
        now, end = float(second), float(second + 1)
        # Control plane: scrape, then the HPA sync reads the latest scrape through KEDA.
        if second % max(int(s.scrape_seconds), 1) == 0:
            scraped = scrape(s, pods, now, scrapes)
        outage = in_outage(outages, now)
        timeline.metrics_failing += outage
        timeline.fallback += keda.falling_back()
        timeline.falling_back[second] = keda.falling_back()
        # The HPA does nothing while its target has no replica (scale to zero).
        awake = wake is None or any(p.draining_since is None for p in pods)
        if second % int(SYNC_SECONDS) == 0 and second > 0 and awake:
            current = sum(1 for p in pods if p.draining_since is None)
            ready = sum(1 for p in pods if p.draining_since is None and p.ready_at <= now)
            # The cron triggers read the clock, not Prometheus: an outage leaves them answering.
            answers = keda.read([*([None] * len(scraped) if outage else scraped), *floor_reads(s, now)], current)
            value = answers[0]
            per_replica = s.signal.target_type == "AverageValue"
            signal = np.nan if value is None or outage else value / max(current, 1) if per_replica else value
            desired = hpa.desired(now, current, ready, answers)
            if desired != current:
                timeline.hpa_changes.append((now, desired))
            pods, nodes_ready = rescale(s, pods, nodes_ready, desired, now, seed=seed + second)
        if wake is not None:
            desired, pods, nodes_ready = wake.before(s, pods, nodes_ready, desired, second, rng, timeline, seed)
        # Data plane: this second's arrivals over the ready pods.
        count = data_plane(
            pods,
            rng,
            now,
            columns[second],
            outcomes=outcomes,
            timeline=timeline,
            held=None if wake is None else wake.held,
        )
        timeline.arrival_rps[second] = count
        timeline.arrived += count
        if wake is not None:
            desired, pods, nodes_ready = wake.after(s, pods, nodes_ready, desired, second, count, timeline, seed)
        pods = [p for p in pods if not drained(s, p, end)]
        timeline.desired[second] = desired
        timeline.signal[second] = signal
        timeline.ready[second] = sum(1 for p in pods if p.draining_since is None and p.ready_at <= end)
        timeline.pending[second] = sum(p.queued() for p in pods)
        timeline.gpus[second] = len(pods) * s.gpus_per_pod
    timeline.in_flight = sum(p.queued() for p in pods)
    return timeline


def starting(s: Scenario) -> tuple[int, int]:
    """The pods and the warm nodes a run starts with: the floor's; at zero (Scale to zero, above), awake as at a
    floor of 1, with a node for its pod."""
    if not s.scales_to_zero:
        return s.min_replicas, s.warm_nodes
    return 1, max(s.warm_nodes, math.ceil(s.gpus_per_pod / s.gpus_per_node))


def model_columns(s: Scenario, rate: NDArray[np.float64]) -> NDArray[np.float64]:
    """`rate` as a column of req/s per model of the scenario (one model: its one column)."""
    columns = rate.reshape(len(rate), -1)
    if columns.shape[1] != len(s.models):
        raise ValueError(f"{columns.shape[1]} columns of rates for the {len(s.models)} models {', '.join(s.models)}")
    return columns


def data_plane(
    pods: list[Pod],
    rng: np.random.Generator,
    now: float,
    rates: NDArray[np.float64],
    *,
    outcomes: list[Outcome],
    timeline: Timeline,
    held: list[list[NDArray[np.float64]]] | None = None,
) -> int:
    """One second: each model's arrivals (`rates`, req/s per model) over the ready pods, with several models each
    pod's GPU shared (the contention model above), every replica advanced; returns the requests that arrived.
    `held`: at scale to zero, per model the requests the interceptor holds, to which arrivals without a ready pod
    are added (else rejected)."""
    if len(outcomes) == 1:
        [outcome] = outcomes
        count = arrive(pods, rng, now, rates[0], outcome, held=held)
        for pod in pods:
            pod.replica.advance(now + 1, outcome)
        timeline.record(outcome)
        return count
    count = 0
    counts = list(timeline.per_model.values())
    for model, (rps, outcome) in enumerate(zip(rates, outcomes, strict=True)):
        arrived = arrive(pods, rng, now, rps, outcome, model=model, held=held)
        counts[model].arrived += arrived
        count += arrived
    for pod in pods:
        replicas = pod.replicas
        share_gpu([r for r in replicas if isinstance(r, Shared)])
        for replica, outcome in zip(replicas, outcomes, strict=True):
            replica.advance(now + 1, outcome)
    for model_counts, outcome in zip(counts, outcomes, strict=True):
        model_counts.record(outcome)
        timeline.record(outcome)
    return count


def arrive(
    pods: list[Pod],
    rng: np.random.Generator,
    now: float,
    rps: float,
    outcome: Outcome,
    *,
    model: int = 0,
    held: list[list[NDArray[np.float64]]] | None = None,
) -> int:
    """One second of Poisson arrivals from `now`, each to a ready pod at random; none ready: rejected, or held by
    the interceptor (`held`, per model, at scale to zero). `model`: which of the pods' replicas (Pod.replicas) they
    go to."""
    count = int(rng.poisson(rps))
    arrivals = np.sort(now + rng.random(count))
    serving = [p for p in pods if p.draining_since is None and p.ready_at <= now]
    if serving:
        choice = rng.integers(0, len(serving), count)
        for i, pod in enumerate(serving):
            (pod.replica if model == 0 else pod.others[model - 1]).offer(arrivals[choice == i])
    elif count and held is not None:
        held[model].append(arrivals)
    elif count:
        outcome.rejected_at.append(arrivals)
    return count


class Held:
    """Scale to zero (above): the requests the KEDA HTTP add-on's interceptor holds while no pod is ready, and what
    KEDA's own loop needs to decide 1 -> 0."""

    def __init__(self, s: Scenario) -> None:
        self.held: list[list[NDArray[np.float64]]] = [[] for _ in s.models]
        self.timeout = math.inf if s.wake_timeout_seconds is None else s.wake_timeout_seconds
        self.arrived = 0
        """Requests since KEDA's last check."""
        self.last_active = 0.0
        """When KEDA last found a trigger active."""

    def first(self) -> float | None:
        """The earliest held request's arrival; None when none is held."""
        times = [float(arrivals[0]) for model in self.held for arrivals in model if len(arrivals)]
        return min(times) if times else None

    def idle(self, s: Scenario, pods: list[Pod], now: float) -> bool:
        """KEDA's check at `now`: whether to scale to zero, every trigger inactive for the cooldown."""
        active = self.arrived > 0 or self.first() is not None or any(p.queued() for p in pods)
        self.arrived = 0
        if active:
            self.last_active = now
            return False
        running = any(p.draining_since is None for p in pods)
        return running and now - self.last_active >= s.cooldown_seconds

    def before(  # noqa: PLR0917 - engine.simulate's state, passed through
        self,
        s: Scenario,
        pods: list[Pod],
        nodes_ready: list[float],
        desired: int,
        second: int,
        rng: np.random.Generator,
        timeline: Timeline,
        seed: int,
    ) -> tuple[int, list[Pod], list[float]]:
        """Before the second's arrivals: KEDA's check, scaling to zero after the cooldown; held requests forwarded
        once a pod is ready. The desired replicas, the pods and the nodes after."""
        now = float(second)
        if second % max(int(s.polling_seconds), 1) == 0 and second > 0 and self.idle(s, pods, now):
            desired = 0
            timeline.hpa_changes.append((now, desired))
            pods, nodes_ready = rescale(s, pods, nodes_ready, desired, now, seed=seed + second)
        self.forward(pods, rng, now, timeline)
        return desired, pods, nodes_ready

    def after(  # noqa: PLR0917 - engine.simulate's state, passed through
        self,
        s: Scenario,
        pods: list[Pod],
        nodes_ready: list[float],
        desired: int,
        second: int,
        count: int,
        timeline: Timeline,
        seed: int,
    ) -> tuple[int, list[Pod], list[float]]:
        """After the second's `count` arrivals: a wake on the first held request at zero, and the held requests
        past the timeout failed. The desired replicas, the pods and the nodes after."""
        self.arrived += count
        first = self.first()
        if desired == 0 and first is not None:
            # The interceptor's scaler pushes the first held request to KEDA at once: 0 -> 1 at its arrival.
            desired = 1
            timeline.wakes += 1
            timeline.hpa_changes.append((first, desired))
            pods, nodes_ready = rescale(s, pods, nodes_ready, desired, first, seed=seed + second)
        self.fail(second + 1.0, timeline)
        return desired, pods, nodes_ready

    def forward(self, pods: list[Pod], rng: np.random.Generator, now: float, timeline: Timeline) -> None:
        """Once a pod is ready, every held request goes to a ready pod at random at `now`, its wait counted."""
        serving = [p for p in pods if p.draining_since is None and p.ready_at <= now]
        if not serving or self.first() is None:
            return
        bins = len(EDGES) - 1
        for model, parts in enumerate(self.held):
            if not parts:
                continue
            waits = now - np.concatenate(parts)
            parts.clear()
            timeline.wait_histogram += np.bincount(
                np.clip(np.searchsorted(EDGES, waits) - 1, 0, bins - 1), minlength=bins
            )
            timeline.wait_max = max(timeline.wait_max, float(waits.max()))
            choice = rng.integers(0, len(serving), len(waits))
            for i, pod in enumerate(serving):
                forwarded = np.full(int(np.count_nonzero(choice == i)), now)
                (pod.replica if model == 0 else pod.others[model - 1]).offer(forwarded)

    def fail(self, end: float, timeline: Timeline) -> None:
        """Held requests that cannot be forwarded within the timeout (by `end` at the earliest) fail: a 504."""
        counts = list(timeline.per_model.values())
        for model, parts in enumerate(self.held):
            if not parts:
                continue
            arrivals = np.concatenate(parts)
            late = arrivals < end - self.timeout
            if not late.any():
                continue
            parts[:] = [arrivals[~late]] if not late.all() else []
            out = Outcome()
            out.rejected_at.append(arrivals[late])
            timeline.wake_failed += int(late.sum())
            if counts:
                counts[model].dropped += int(late.sum())
            timeline.record(out)


def hpa_metrics(s: Scenario) -> list[Metric]:
    """The HPA's metrics: the load trigger's, the GPU memory's where simulated, and the daily floor's (its cron
    windows as one metric: simulator.daily_floor)."""
    metrics = [Metric(s.signal.target_type, s.signal.target)]
    if s.gpu_memory_ratio is not None:
        metrics.append(Metric("AverageValue", s.gpu_memory_target))
    if s.floor:
        metrics.append(Metric("AverageValue", FLOOR_TARGET))
    return metrics


def floor_reads(s: Scenario, now: float) -> list[float | None]:
    """What the daily floor's metric reads at `now`, if the scenario has one."""
    return [float(floor_at(s.floor, now))] if s.floor else []


def scrape(s: Scenario, pods: list[Pod], now: float, scrapes: Scrapes) -> list[float | None]:
    """Prometheus scrapes the serving pods; each trigger's query value over what it holds now."""
    serving = [p for p in pods if p.draining_since is None and p.ready_at <= now]
    if not s.others:
        scrapes.add(now, [(p.serial, p.replica) for p in serving])
    else:
        # A series per pod and model, as Triton labels its counters.
        scrapes.add(now, [((p.serial, k), r) for p in serving for k, r in enumerate(p.replicas)])
    pending = float(sum(p.queued() for p in serving))
    if s.signal.name == "demand":
        values: list[float | None] = [demand(scrapes.by_series(), s.capacities)]
    elif s.others and s.signal.name == "busy-ratio":
        instances = [s.batcher.instances, *(m.batcher.instances for m in s.others)]
        values = [busiest(scrapes.by_series(), instances)]
    else:
        values = [read(s.signal, s.batcher, pending, scrapes.rates())]
    if s.gpu_memory_ratio is not None:
        values.append(len(serving) * s.gpu_memory_ratio)
    return values


def drained(s: Scenario, pod: Pod, now: float) -> bool:
    """A draining pod leaves once the preStop sleep is over and its queue is empty."""
    return (
        pod.draining_since is not None
        and now >= pod.draining_since + s.drain_seconds
        and all(r.idle_at(now) for r in pod.replicas)
    )


def rescale(
    s: Scenario, pods: list[Pod], nodes_ready: list[float], desired: int, now: float, *, seed: int = 0
) -> tuple[list[Pod], list[float]]:
    """Add or remove pods to reach `desired`; new pods wait for a GPU node, then start.

    `seed` seeds the new pods' request overheads.
    """
    active = [p for p in pods if p.draining_since is None]
    if desired < len(active):
        # The ReplicaSet removes the newest pods first.
        for pod in sorted(active, key=lambda p: p.ready_at)[desired:]:
            pod.draining_since = now
        if desired == 0:
            # At zero the pool keeps its floor's nodes only (above, Scale to zero).
            nodes_ready = nodes_ready[: s.warm_nodes]
        return pods, nodes_ready
    per_node = max(s.gpus_per_node // s.gpus_per_pod, 1)
    for _ in range(desired - len(active)):
        slots = sorted(t for t in nodes_ready for _ in range(per_node))
        used = len(pods)
        if used < len(slots):
            node_at = max(slots[used], now)
        elif len(nodes_ready) < s.max_nodes:
            node_at = now + s.node_provision_seconds
            nodes_ready.append(node_at)
        else:
            break  # the pool is at its maximum: the pod stays Pending
        pods.append(new_pod(s, seed + len(pods), node_at + s.pod_start_seconds, node_at))
    return pods, nodes_ready


def summary(s: Scenario, timeline: Timeline) -> dict[str, float | int | None]:
    p95 = timeline.percentiles(95)
    total = timeline.histogram.sum(axis=0)[None, :]
    per_replica = capacity_rps(s)
    capacity = timeline.ready * per_replica
    demand = timeline.arrival_rps
    busy = demand > 0
    return {
        "p50_ms": float(percentiles(total, 50)[0] * 1000),
        "p95_ms": float(percentiles(total, 95)[0] * 1000),
        "p99_ms": float(percentiles(total, 99)[0] * 1000),
        "slo_ms": s.slo_seconds * 1000,
        "slo_violation_seconds": int(np.nansum(p95 > s.slo_seconds)),
        "rejected_pct": 100 * timeline.dropped / max(timeline.arrived, 1),
        "gpu_hours": float(timeline.gpus.sum() / 3600),
        "reaction_seconds": reaction_seconds(demand, capacity),
        "reaction_floor_seconds": reaction_floor(s, demand).seconds,
        "peak_overprovisioning": float(np.max(np.where(busy, capacity / np.maximum(demand, 1), 0)) - 1)
        if busy.any()
        else None,
        "arrived": timeline.arrived,
        "served": timeline.served,
        "rejected": timeline.dropped,
        "in_flight": timeline.in_flight,
        "metrics_failing_seconds": timeline.metrics_failing,
        "fallback_seconds": timeline.fallback,
        "replica_capacity_rps": per_replica,
        **(wake_summary(timeline) if s.scales_to_zero else {}),
    }


def wake_summary(timeline: Timeline) -> dict[str, float | int | None]:
    """Scale to zero: the wakes, the requests held and forwarded with their wait's p99 and max (None: none waited),
    and those that failed at the interceptor's timeout."""
    waited = int(timeline.wait_histogram.sum())
    return {
        "wakes": timeline.wakes,
        "waited": waited,
        "waited_p99_s": float(percentiles(timeline.wait_histogram[None, :], 99)[0]) if waited else None,
        "waited_max_s": timeline.wait_max if waited else None,
        "wake_failed": timeline.wake_failed,
    }


def model_summaries(timeline: Timeline) -> dict[str, dict[str, float | int]]:
    """With several models: each one's p50, p95, p99 (ms), rejected % and requests; empty with one."""
    return {model: counts.summary() for model, counts in timeline.per_model.items()}


def reaction_seconds(demand: NDArray[np.float64], capacity: NDArray[np.float64]) -> float | None:
    """The longest time from demand exceeding ready capacity (a load step) to capacity catching up, or to the end
    of the run when it never does; None when demand never exceeded ready capacity (nothing to react to)."""
    # A 10 s moving average, centred as mode="same" would, but as long as `demand` for a run shorter than 10 s.
    smooth = np.convolve(demand, np.ones(10) / 10)[4 : 4 + len(demand)]
    short = np.concatenate([[False], smooth > capacity, [False]])
    # Each stretch of seconds short of capacity: from where it starts to where it ends (the run's end at the latest).
    edges = np.flatnonzero(short[1:] != short[:-1])
    longest = int((edges[1::2] - edges[::2]).max()) if len(edges) else 0
    return float(longest) if longest else None
