"""How the detailed engine (simulator.engine) idles at zero: KEDA's own loop moving the deployment 0 <-> 1, and the
requests the interceptor holds meanwhile (Held).

Scale to zero (Scenario.scales_to_zero: `replicas.min` 0 with `wake`, docs/scale-to-zero.md), as KEDA 2.20 and the
KEDA HTTP add-on do it (keda.sh/docs/2.20/reference/scaledobject-spec; github.com/kedacore/http-add-on):
- The HPA's floor is 1 (KEDA writes `minReplicas: 1` for a ScaledObject at `minReplicaCount: 0`), and the HPA does
  nothing while the target has no replica.
- A run starts awake, as at a floor of 1 (what ran before the trace is unknown; a deployment under load at its
  start would be up): its first pod ready, its node up, KEDA's cooldown counted from the start
  (control_plane.starting).
- Every `pollingInterval` (Scenario.polling_seconds) KEDA's own loop checks the triggers: active when a request
  arrived since the last check or one is still queued or held (the interceptor's in-flight count, the load
  trigger's value above its activation threshold 0). Once no trigger has been active for `cooldownPeriod`
  (Scenario.cooldown_seconds) since the last active check, KEDA scales the Deployment to 0: every pod drains.
  The GPU pool follows (control_plane.rescale): it keeps only the nodes it holds at the deployment's floor of 0
  (Scenario.warm_nodes: `gpuPool.minNodes`, the placeholders' nodes), the others go at once (a real
  cluster-autoscaler or Karpenter removes an idle node minutes later: a wake in between finds it, which this does
  not count).
- At zero, the interceptor holds each request (no ready endpoint) and its scaler pushes the activity to KEDA at
  once (`external-push`: no polling wait), so the first request scales the Deployment 0 -> 1 at its arrival: a
  wake, whose pod waits for a GPU node like any other (a node up, or one provisioned) and then starts.
- Held requests are forwarded when the first pod is ready (at the next whole second, as any traffic here), each
  having waited from its arrival; one still held `wake_timeout_seconds` after its arrival fails (the interceptor's
  504 at the route's readiness timeout) and counts as rejected. Their waits are counted apart (Timeline.wait_*):
  the latency percentiles are those of the requests' service once forwarded.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import Outcome
from simulator.control_plane import rescale
from simulator.pods import Pod
from simulator.scenario import Scenario
from simulator.timeline import EDGES, Timeline


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
