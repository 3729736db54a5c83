"""One Triton replica's dynamic batcher and model instances.

Triton's rules (server docs/user_guide/batcher.md; `DynamicBatchScheduler::GetDynamicBatch` in
triton-inference-server/core, the `dynamic_batching` fields of model_config.proto):

- a request that finds `max_queue_size` requests queued is rejected;
- the dispatch sizes are the preferred sizes, or `max_batch_size` when none
  is set. While the oldest request has waited less than `max_queue_delay`, a
  free instance takes the largest dispatch size the queue can fill, and
  otherwise the batch waits until the queue reaches one (sent immediately) or
  the delay runs out. Once the delay has run out (always, with a delay of 0),
  whatever is queued goes, up to `max_batch_size`, preferred sizes or not;
- a request queued longer than the default timeout is rejected when the
  scheduler next looks at the queue.

A batch of b keeps an instance busy for tau(b), measured on the real server;
each request's latency also carries the profile's request overhead (gRPC
transport and (de)serialization), which does not hold an instance.

The loop over requests and batches is compiled with numba: a day of traffic is
tens of millions of requests, too many for an interpreted loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from platform_config.capacity import tau_at
from simulator.compiled import compiled


@dataclass(frozen=True)
class BatcherConfig:
    max_batch_size: int
    """1 for a model without batching."""
    max_queue_delay_s: float
    preferred_sizes: tuple[int, ...] = ()
    instances: int = 1
    max_queue_size: int = 0
    """0: unbounded."""
    timeout_s: float = 0.0
    """0: none."""
    dynamic: bool = True
    """False: no dynamic batching, every request is its own batch."""

    def dispatch_sizes(self) -> NDArray[np.int64]:
        """Queue lengths at which a batch leaves without waiting for the delay, ascending."""
        if not self.dynamic or self.max_batch_size <= 1:
            return np.ones(1, np.int64)
        sizes = {p for p in self.preferred_sizes if p <= self.max_batch_size} or {self.max_batch_size}
        return np.array(sorted(sizes), np.int64)


@dataclass(frozen=True)
class LatencyProfile:
    """tau(b): seconds one batch of b keeps one instance busy, linear between measured sizes."""

    sizes: tuple[int, ...]
    seconds: tuple[float, ...]
    overhead_percentiles: tuple[float, ...] = (0.0,)
    """Latency each request adds outside the instance (transport, (de)serialization), as its
    percentiles 0..100 (evenly spaced; one value: a constant)."""

    def __call__(self, batch: int) -> float:
        return tau_at(self.sizes, self.seconds, batch)

    def table(self, largest: int) -> NDArray[np.float64]:
        """tau(b) for b = 0..largest; beyond the last measured size, the last slope continues."""
        b = np.arange(largest + 1, dtype=np.float64)
        values = np.interp(b, self.sizes, self.seconds)
        if len(self.sizes) > 1:
            slope = (self.seconds[-1] - self.seconds[-2]) / (self.sizes[-1] - self.sizes[-2])
            beyond = b > self.sizes[-1]
            values[beyond] = self.seconds[-1] + slope * (b[beyond] - self.sizes[-1])
        return values

    @cached_property
    def _overhead_grid(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return np.linspace(0.0, 1.0, len(self.overhead_percentiles)), np.array(self.overhead_percentiles)

    def overhead(self, uniform: NDArray[np.float64]) -> NDArray[np.float64]:
        """Request overheads for uniform draws in [0, 1): the inverse of the measured distribution."""
        grid, values = self._overhead_grid
        return np.interp(uniform, grid, values)


@dataclass
class Outcome:
    """What `advance` finished: each served request's arrival time and latency, the batch sizes in
    the order they ran (their requests are consecutive in `arrivals`), and rejections."""

    arrivals: list[NDArray[np.float64]] = field(default_factory=list)
    batch_sizes: list[NDArray[np.int64]] = field(default_factory=list)
    latencies: list[NDArray[np.float64]] = field(default_factory=list)
    rejected_at: list[NDArray[np.float64]] = field(default_factory=list)


@compiled
def _admit(  # noqa: PLR0917 - compiled: plain positional arrays and numbers
    arrival: float,
    queue: NDArray[np.float64],
    head: int,
    tail: int,
    limit: int,
    rejected: NDArray[np.float64],
    dropped: int,
) -> tuple[int, int]:
    """Queue one arrival, or reject it if `limit` requests are already waiting.

    Returns the new tail and count of `rejected`.
    """
    if limit and tail - head >= limit:
        rejected[dropped] = arrival
        return tail, dropped + 1
    queue[tail] = arrival
    return tail + 1, dropped


@compiled
def _advance(  # noqa: PLR0912, PLR0917 - one compiled loop over plain arrays and numbers
    incoming: NDArray[np.float64],
    queue: NDArray[np.float64],
    head: int,
    tail: int,
    free_at: NDArray[np.float64],
    until: float,
    delay: float,
    dispatch: NDArray[np.int64],
    max_batch: int,
    limit: int,
    timeout: float,
    tau: NDArray[np.float64],
    served_at: NDArray[np.float64],
    latency: NDArray[np.float64],
    batch_sizes: NDArray[np.int64],
    rejected: NDArray[np.float64],
) -> tuple[int, int, int, int, int]:
    """Admit `incoming` (sorted, all before `until`) and run every batch that starts before `until`.

    `queue[head:tail]` holds the requests admitted and not yet batched, oldest first,
    with room after it for all of `incoming`. Returns where the queue now starts
    and ends, and how many entries of `served_at`/`latency`, `batch_sizes` and `rejected` were written.
    """
    nxt, served, batches, dropped = 0, 0, 0, 0
    smallest = dispatch[0]
    while True:
        if head == tail:
            if nxt == len(incoming):
                break
            tail, dropped = _admit(incoming[nxt], queue, head, tail, limit, rejected, dropped)
            nxt += 1
            continue
        slot = np.argmin(free_at)
        oldest = queue[head]
        start = max(free_at[slot], oldest)
        # What arrives before an instance is free only queues (or meets a full queue).
        while nxt < len(incoming) and incoming[nxt] <= start:
            tail, dropped = _admit(incoming[nxt], queue, head, tail, limit, rejected, dropped)
            nxt += 1
        if tail - head < smallest and delay > 0:
            # Wait until the queue can fill a dispatch size, or the oldest has waited the delay.
            start = max(start, oldest + delay)
            while nxt < len(incoming) and incoming[nxt] <= oldest + delay:
                tail, dropped = _admit(incoming[nxt], queue, head, tail, limit, rejected, dropped)
                nxt += 1
                if tail - head == smallest:
                    start = max(free_at[slot], incoming[nxt - 1])
                    break
        if start >= until:
            break
        if timeout > 0 and queue[head] < start - timeout:
            while head < tail and queue[head] < start - timeout:
                rejected[dropped] = queue[head]
                dropped += 1
                head += 1
            continue
        queued = tail - head
        size = min(queued, max_batch)
        if start - queue[head] < delay:  # before the delay runs out: the largest dispatch size that fits
            for d in dispatch[::-1]:
                if d <= size:
                    size = d
                    break
        done = start + tau[size]
        free_at[slot] = done
        batch_sizes[batches] = size
        batches += 1
        for i in range(head, head + size):
            served_at[served] = queue[i]
            latency[served] = done - queue[i]
            served += 1
        head += size
    # No batch starts before `until`: the rest of `incoming` only queues or meets a full queue.
    while nxt < len(incoming):
        tail, dropped = _admit(incoming[nxt], queue, head, tail, limit, rejected, dropped)
        nxt += 1
    return head, tail, served, batches, dropped


# Replica.counters: requests served (nv_inference_request_success), batches run (nv_inference_exec_count),
# instance-seconds busy (from nv_inference_compute_infer_duration_us, per batch), seconds queued
# (nv_inference_queue_duration_us) and requests ended, served or rejected (nv_inference_request_success plus
# nv_inference_request_failure, the demand signal's arrivals), each cumulative.
COUNTER_SUCCESS, COUNTER_EXECUTIONS, COUNTER_BUSY_SECONDS, COUNTER_QUEUE_SECONDS, COUNTER_REQUESTS = range(5)
COUNTERS = 5


class Replica:
    """A queue of arrival times and `instances` model instances."""

    def __init__(self, config: BatcherConfig, tau: LatencyProfile, seed: int = 0) -> None:
        self.config = config
        self.tau = tau
        self._buffer: NDArray[np.float64] = np.empty(0)
        self._head = self._tail = 0
        self.free_at = np.zeros(config.instances)
        self.incoming: list[NDArray[np.float64]] = []
        self.rng = np.random.default_rng(seed)
        self._dispatch = config.dispatch_sizes()
        self._max_batch = config.max_batch_size if config.dynamic else 1
        self._delay = config.max_queue_delay_s if config.dynamic else 0.0
        self._tau = tau.table(self._max_batch)
        self.counters = np.zeros(COUNTERS)
        """Triton's cumulative counters for this replica, indexed by the COUNTER_* constants."""

    @property
    def queue(self) -> NDArray[np.float64]:
        """Requests admitted and not yet in a batch, oldest first: Triton's pending-request gauge counts them."""
        return self._buffer[self._head : self._tail]

    @queue.setter
    def queue(self, waiting: NDArray[np.float64]) -> None:
        self._buffer, self._head, self._tail = waiting, 0, len(waiting)

    @property
    def queued(self) -> int:
        return self._tail - self._head

    def _room_for(self, count: int) -> None:
        """Room after the queue for `count` more arrivals. The queue stays where it is in its buffer while it
        fits, and moves to the front of one twice its size when not, so a long queue under sustained overload
        is copied once per doubling, not on every step (each step's cost follows what it admits and serves)."""
        if self._tail + count <= len(self._buffer):
            return
        waiting = self.queued
        buffer = np.empty(max(2 * (waiting + count), 1024))
        buffer[:waiting] = self.queue
        self._buffer, self._head, self._tail = buffer, 0, waiting

    def offer(self, arrivals: NDArray[np.float64]) -> None:
        """Queue sorted arrivals (later than any offered before)."""
        if len(arrivals):
            self.incoming.append(arrivals)

    def advance(self, until: float, out: Outcome) -> None:
        """Admit what was offered and run every batch that starts before `until`.

        Everything offered must have arrived before `until`.
        """
        incoming = np.concatenate(self.incoming) if len(self.incoming) > 1 else (self.incoming or [np.empty(0)])[0]
        self.incoming = []
        self._room_for(len(incoming))
        room = self.queued + len(incoming)
        served_at, latency, rejected = np.empty(room), np.empty(room), np.empty(room)
        batch_sizes = np.empty(room, np.int64)
        config = self.config
        self._head, self._tail, served, batches, dropped = _advance(
            incoming,
            self._buffer,
            self._head,
            self._tail,
            self.free_at,
            until,
            self._delay,
            self._dispatch,
            self._max_batch,
            config.max_queue_size,
            config.timeout_s,
            self._tau,
            served_at,
            latency,
            batch_sizes,
            rejected,
        )
        if batches:
            # Triton adds a batch's compute time to every request in it (infer_stats.cc UpdateSuccess),
            # so instance-busy time is per batch and queue time is latency less the batch's compute.
            busy = self._tau[batch_sizes[:batches]]
            self.counters[COUNTER_SUCCESS] += served
            self.counters[COUNTER_EXECUTIONS] += batches
            self.counters[COUNTER_BUSY_SECONDS] += busy.sum()
            self.counters[COUNTER_QUEUE_SECONDS] += latency[:served].sum() - (busy * batch_sizes[:batches]).sum()
        # Triton counts a request as it ends: a success, or a failure with reason REJECTED at its queue timeout. One
        # refused for a full queue is counted too here, though Triton 2.51 counts it nowhere: the stack refuses the
        # demand signal with a count bound (platform_config/scaling_checks.py), so no simulated demand reads one.
        self.counters[COUNTER_REQUESTS] += served + dropped
        # Copies: a view would keep each step's arrays, sized for the whole queue, alive for the whole run.
        if served:
            out.arrivals.append(served_at[:served].copy())
            out.batch_sizes.append(batch_sizes[:batches].copy())
            out.latencies.append(latency[:served] + self.tau.overhead(self.rng.random(served)))
        if dropped:
            out.rejected_at.append(rejected[:dropped].copy())

    def idle_at(self, t: float) -> bool:
        return not self.queued and not self.incoming and float(self.free_at.max()) <= t
