"""One Triton replica's dynamic batcher and model instances, batch by batch.

Triton's rules (REFERENCE.md §1, `dynamic_batch_scheduler.cc`): a batch leaves the
queue as soon as an instance is free and either `max_batch_size` requests are
queued (or the largest preferred size that fits), or the oldest has waited
`max_queue_delay`; with a delay of 0 it takes whatever is queued. A request
that finds `max_queue_size` requests queued is rejected; one that waited longer
than the default timeout is rejected when its batch would form. A batch of b
takes tau(b), measured on the real server.

Requests are not simulated one event each: arrivals are a sorted array and each
batch is found from it with a binary search, so the cost is per batch.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray


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


@dataclass(frozen=True)
class LatencyProfile:
    """tau(b): seconds one batch of b takes on one instance, linear between measured sizes."""

    sizes: tuple[int, ...]
    seconds: tuple[float, ...]

    def __call__(self, batch: int) -> float:
        if batch >= self.sizes[-1] and len(self.sizes) > 1:
            slope = (self.seconds[-1] - self.seconds[-2]) / (self.sizes[-1] - self.sizes[-2])
            return self.seconds[-1] + slope * (batch - self.sizes[-1])
        return float(np.interp(batch, self.sizes, self.seconds))


@dataclass
class Outcome:
    """What one `advance` finished: latencies by arrival time, and rejections."""

    arrivals: list[NDArray[np.float64]] = field(default_factory=list)
    latencies: list[NDArray[np.float64]] = field(default_factory=list)
    rejected_at: list[NDArray[np.float64]] = field(default_factory=list)


class Replica:
    """A queue of arrival times and `instances` model instances."""

    def __init__(self, config: BatcherConfig, tau: LatencyProfile) -> None:
        self.config = config
        self.tau = tau
        self.queue: NDArray[np.float64] = np.empty(0)
        self.head = 0
        self.free_at = [0.0] * config.instances
        heapq.heapify(self.free_at)
        self.executing_until = 0.0

    @property
    def queued(self) -> int:
        return len(self.queue) - self.head

    def offer(self, arrivals: NDArray[np.float64]) -> None:
        """Queue sorted arrivals (later than any queued before)."""
        if len(arrivals):
            self.queue = np.concatenate([self.queue[self.head :], arrivals])
            self.head = 0

    def _overflow(self, t: float, out: Outcome) -> None:
        """Reject what arrived up to `t` while `max_queue_size` requests were already waiting.

        Between two batches the queue only grows, so those are exactly the arrivals
        past the first `max_queue_size` still queued.
        """
        limit = self.config.max_queue_size
        if not limit:
            return
        first, arrived = self.head + limit, int(np.searchsorted(self.queue, t, side="right"))
        if arrived > first:
            out.rejected_at.append(self.queue[first:arrived])
            self.queue = np.delete(self.queue, slice(first, arrived))

    def pending_at(self, t: float) -> int:
        """Triton's pending-request gauge at `t`: queued, not yet executing."""
        return int(np.searchsorted(self.queue, t, side="right")) - self.head

    def _size(self, available: int) -> int:
        cap = min(available, self.config.max_batch_size)
        fitting = [p for p in self.config.preferred_sizes if p <= cap]
        return max(fitting) if fitting and cap < self.config.max_batch_size else cap

    def advance(self, until: float, out: Outcome) -> None:
        """Form and run every batch that leaves the queue before `until`."""
        config = self.config
        while self.head < len(self.queue):
            queue = self.queue
            free = self.free_at[0]
            oldest = queue[self.head]
            if not config.dynamic or config.max_batch_size <= 1:
                start = max(free, oldest)
            else:
                full_at = (
                    queue[self.head + config.max_batch_size - 1]
                    if self.head + config.max_batch_size - 1 < len(queue)
                    else np.inf
                )
                start = max(free, min(full_at, oldest + config.max_queue_delay_s))
            if start >= until:
                break
            self._overflow(start, out)
            queue = self.queue
            if config.timeout_s:
                late = int(np.searchsorted(queue, start - config.timeout_s, side="left")) - self.head
                if late > 0:
                    out.rejected_at.append(queue[self.head : self.head + late])
                    self.head += late
                    continue
            waiting = int(np.searchsorted(queue, start, side="right")) - self.head
            size = self._size(waiting) if config.dynamic else 1
            done = start + self.tau(size)
            heapq.heapreplace(self.free_at, done)
            batch = queue[self.head : self.head + size]
            out.arrivals.append(batch)
            out.latencies.append(done - batch)
            self.head += size
        self._overflow(until, out)
        # Keep the array short: drop what left the queue.
        if self.head > 4096:
            self.queue = self.queue[self.head :]
            self.head = 0

    def idle_at(self, t: float) -> bool:
        return self.queued == 0 and max(self.free_at) <= t
