"""The HorizontalPodAutoscaler's replica decision, as kube-controller-manager computes it.

Follows pkg/controller/podautoscaler (kubernetes/kubernetes): the 0.1 tolerance; External
metrics with AverageValue (ceil(value / target), tolerance against the status
replicas) and Value (ceil(ratio x ready pods)) targets; several metrics combined
by max; with `behavior`, stabilization windows (up = min, down = max of the
recommendations in the window) and Pods/Percent policies per period with
selectPolicy Max/Min/Disabled; without `behavior`, the legacy path: a 300 s
downscale stabilization and a scale-up limit of max(2 x current, 4) per sync.
A metric that could not be read (None) is invalid: with all invalid, or some
invalid while the valid ones propose fewer replicas, the sync changes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

TOLERANCE = 0.1
SYNC_SECONDS = 15.0
LEGACY_DOWNSCALE_WINDOW = 300.0


@dataclass(frozen=True)
class Metric:
    """One External metric the HPA reads, with its target."""

    target_type: Literal["AverageValue", "Value"]
    target: float


@dataclass(frozen=True)
class Policy:
    type: Literal["Pods", "Percent"]
    value: int
    period_seconds: int


@dataclass(frozen=True)
class Rules:
    """One direction of `behavior`: its stabilization window, policies and how they combine."""

    stabilization_window_seconds: float
    policies: tuple[Policy, ...]
    select_policy: Literal["Max", "Min", "Disabled"] = "Max"


# The API server's defaults for a `behavior` that leaves a direction out.
DEFAULT_SCALE_UP = Rules(0, (Policy("Pods", 4, 15), Policy("Percent", 100, 15)))
DEFAULT_SCALE_DOWN = Rules(300, (Policy("Percent", 100, 15),))


@dataclass(frozen=True)
class Behavior:
    scale_up: Rules = DEFAULT_SCALE_UP
    scale_down: Rules = DEFAULT_SCALE_DOWN


def proposal(metric: Metric, value: float, current: int, ready: int) -> int:
    """One metric's replica count, or `current` inside the tolerance band."""
    if metric.target_type == "AverageValue":
        ratio = value / (metric.target * current) if current else math.inf
        return current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(value / metric.target)
    ratio = value / metric.target
    return current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(ratio * ready)


@dataclass
class Hpa:
    """One HPA's state across syncs: past recommendations and scale events."""

    min_replicas: int
    max_replicas: int
    metrics: tuple[Metric, ...]
    behavior: Behavior | None = None
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    scale_events: list[tuple[float, int]] = field(default_factory=list)
    """(time, replicas added (> 0) or removed (< 0)) of past decisions."""

    def desired(self, now: float, current: int, ready: int, values: list[float | None]) -> int:
        """The replica count this sync sets, from the metric values read now (None: the read failed)."""
        proposals = [proposal(m, v, current, ready) for m, v in zip(self.metrics, values, strict=True) if v is not None]
        if not proposals or (len(proposals) < len(self.metrics) and max(proposals) < current):
            return current  # the controller reports the invalid metric and does not rescale
        raw = max(proposals)
        if self.behavior is None:
            result = self._legacy(now, current, raw)
        else:
            result = self._with_behavior(now, current, raw, self.behavior)
        if result != current:
            self.scale_events.append((now, result - current))
        return result

    def _legacy(self, now: float, current: int, raw: int) -> int:
        self.recommendations.append((now, raw))
        self._forget(now, LEGACY_DOWNSCALE_WINDOW)
        stabilized = max(r for t, r in self.recommendations if t > now - LEGACY_DOWNSCALE_WINDOW)
        limit = max(2 * current, 4)
        return max(self.min_replicas, min(stabilized, limit, self.max_replicas))

    def _with_behavior(self, now: float, current: int, raw: int, behavior: Behavior) -> int:
        self.recommendations.append((now, raw))
        up_window = behavior.scale_up.stabilization_window_seconds
        down_window = behavior.scale_down.stabilization_window_seconds
        self._forget(now, max(up_window, down_window))
        up = min(r for t, r in self.recommendations if t > now - up_window or t == now)
        down = max(r for t, r in self.recommendations if t > now - down_window or t == now)
        # Keep the current count when it lies between the two.
        stabilized = min(max(current, up), down)
        if stabilized > current:
            limit = max(current, self._up_limit(now, current, behavior.scale_up))
            return max(self.min_replicas, min(stabilized, limit, self.max_replicas))
        if stabilized < current:
            limit = min(current, self._down_limit(now, current, behavior.scale_down))
            return min(self.max_replicas, max(stabilized, limit, self.min_replicas))
        return max(self.min_replicas, min(current, self.max_replicas))

    def _changed_within(self, now: float, period: float, sign: int) -> int:
        return sum(abs(d) for t, d in self.scale_events if t > now - period and d * sign > 0)

    def _up_limit(self, now: float, current: int, rules: Rules) -> int:
        if rules.select_policy == "Disabled":
            return current
        limits = []
        for policy in rules.policies:
            start = current - self._changed_within(now, policy.period_seconds, +1)
            if policy.type == "Pods":
                limits.append(start + policy.value)
            else:
                limits.append(math.ceil(start * (1 + policy.value / 100)))
        return max(limits) if rules.select_policy == "Max" else min(limits)

    def _down_limit(self, now: float, current: int, rules: Rules) -> int:
        if rules.select_policy == "Disabled":
            return current
        limits = []
        for policy in rules.policies:
            start = current + self._changed_within(now, policy.period_seconds, -1)
            if policy.type == "Pods":
                limits.append(start - policy.value)
            else:
                limits.append(math.floor(start * (1 - policy.value / 100)))
        # "Max" allows the largest change, which downwards is the lowest count.
        return min(limits) if rules.select_policy == "Max" else max(limits)

    def _forget(self, now: float, window: float) -> None:
        # 1800 s: the longest policy period and stabilization window the API allows.
        horizon = now - max(window, 1800.0)
        self.recommendations = [(t, r) for t, r in self.recommendations if t > horizon]
        self.scale_events = [(t, d) for t, d in self.scale_events if t > horizon]
