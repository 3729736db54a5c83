"""The candidates of a plan: each field's allowed values, and a deterministic sequence of settings to try.

A field's values are a fixed grid around the current value, kept only where the stack with that one value
changed passes the project's own validation (schema ranges, timeouts and delays within the SLO, GPU pool
capacity, warmup and ensemble batch sizes, the fallback inside the replica range): the rules stay in
platform_config, not here. The sequence is the current settings, then one field changed at a time, then
seeded random combinations; `neighbours` refines around the best found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.settings import BATCHING, Floor, Settings, knob_value, knobs, with_values

POWERS_OF_TWO = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DELAYS_US = (0, 100, 500, 1000, 2000, 5000, 10_000, 20_000)
QUEUE_SIZES = (0, 64, 128, 256, 512, 1024)
TIMEOUT_SHARES = (0.25, 0.5, 0.75, 1.0)
"""Queue timeouts as shares of the stack's SLO (checks.py: at most the SLO; 0, none, is allowed too)."""
INSTANCES = (1, 2, 3, 4)
STABILIZATION_UP_S = (0, 30, 60)
STABILIZATION_DOWN_S = (60, 180, 300, 600)
PERCENTS_UP = (50, 100, 200)
PERCENTS_DOWN = (10, 25, 50, 100)
PODS = (None, 1, 2, 4)
PERIODS_S = (15, 30, 60)
TARGETS = {
    "queue-depth": (2.0, 5.0, 10.0, 20.0, 40.0),
    "busy-ratio": (0.5, 0.6, 0.7, 0.8, 0.9),
    "demand": (0.5, 0.6, 0.7, 0.8, 0.9),
}
SHARE_SIGNALS = ("busy-ratio", "demand")
"""The signals whose target is a share of what a pod does at most, one grid for both: the plan may switch between
them (to `demand` only where every model's profile was measured on the config the stack renders)."""
SWEEP_FIRST = (
    "min_replicas",
    "target",
    "down_stabilization_s",
    "down_percent",
    "max_queue_delay_us",
    "instances",
    "signal",
)
"""Swept before the other fields: what most moves GPU-hours, so a small budget still tries it."""
MIN_REPLICAS_GRID = 8
"""Replica floors tried: 1 up to this (and the current floor)."""


@dataclass(frozen=True)
class Limits:
    """What bounds the grid besides validation: the model's and the latency profile's largest batch, the SLO."""

    max_batch: int
    slo_us: int
    signal: str
    keep_floor: bool = False
    """Production: the replica floor is an availability decision (drains, node loss) no trace measures, so the
    plan may raise it but not lower it."""
    others_max_batch: tuple[tuple[str, int], ...] = ()
    """With several models planned together, each other model's largest batch, as `max_batch` is the planned one's."""
    may_idle: bool = False
    """The deployment has a wake budget (`wake`): its floor may be 0 (scale to zero) as well as 1 or more."""
    floors: tuple[Floor, ...] = ()
    """Daily floors learned from the trace (planner.plan.learned_floors), tried beside none. None at scale to zero
    (validation refuses a floor there)."""


def _batching_grid(max_batch: int, instances: int, slo_us: int) -> dict[str, tuple[Any, ...]]:
    """One model's batching values up to its largest batch and its current instances."""
    batches = tuple(b for b in POWERS_OF_TWO if b <= max_batch)
    preferred: tuple[tuple[int, ...], ...] = (
        (),
        *((b,) for b in batches if b > 1),
        *((b // 2, b) for b in batches if b > 2),
    )
    return {
        "max_batch_size": batches,
        "max_queue_delay_us": tuple(d for d in DELAYS_US if d <= slo_us),
        "preferred_sizes": preferred,
        # tau(b) was measured with the current instances sharing the hardware; more would extrapolate it.
        "instances": tuple(n for n in INSTANCES if n <= instances),
        "max_queue_size": QUEUE_SIZES,
        "timeout_us": (0, *(round(slo_us * share) for share in TIMEOUT_SHARES)),
    }


def grid(current: Settings, limits: Limits) -> dict[str, tuple[Any, ...]]:
    """Each knob's values before validation, the current one first."""
    ceiling = current.max_replicas
    largest = dict(limits.others_max_batch)
    values: dict[str, tuple[Any, ...]] = {
        **_batching_grid(limits.max_batch, current.instances, limits.slo_us),
        "min_replicas": tuple(
            n
            for n in range(0 if limits.may_idle else 1, min(MIN_REPLICAS_GRID, ceiling) + 1)
            if n >= current.min_replicas or not limits.keep_floor
        ),
        "max_replicas": (max(ceiling // 2, 1), ceiling, ceiling + max(ceiling // 2, 1), 2 * ceiling),
        "up_stabilization_s": STABILIZATION_UP_S,
        "up_percent": PERCENTS_UP,
        "up_pods": PODS,
        "up_period_s": PERIODS_S,
        "down_stabilization_s": STABILIZATION_DOWN_S,
        "down_percent": PERCENTS_DOWN,
        "down_pods": (None,),
        "down_period_s": PERIODS_S,
        "signal": SHARE_SIGNALS if limits.signal in SHARE_SIGNALS else (limits.signal,),
        "target": TARGETS.get(limits.signal, (None,)),
        # Follows the replica range (Settings.consistent), never searched on its own.
        "fallback_replicas": (),
        "daily_floor": ((), *limits.floors),
    }
    for model, batching in current.others:
        own = _batching_grid(largest[model], batching.instances, limits.slo_us)
        values |= {f"{model}.{name}": own[name] for name in BATCHING}
    return {knob: tuple(dict.fromkeys((knob_value(current, knob), *values[knob]))) for knob in knobs(current)}


@dataclass(frozen=True)
class Space:
    current: Settings
    options: Mapping[str, tuple[Any, ...]]
    """Each knob's valid values, the current one first."""

    def sweeps(self) -> Iterator[Settings]:
        """The current settings with one knob changed, knob by knob."""
        for name in dict.fromkeys((*SWEEP_FIRST, *knobs(self.current))):
            for value in self.options[name][1:]:
                yield with_values(self.current, {name: value})

    def sample(self, rng: np.random.Generator) -> Settings:
        chosen = {name: values[int(rng.integers(len(values)))] for name, values in self.options.items()}
        return with_values(self.current, chosen)

    def neighbour(self, around: Settings, rng: np.random.Generator) -> Settings:
        """`around` with one to three knobs moved to a value next to theirs in the grid."""
        movable = [name for name in knobs(around) if len(self.options[name]) > 1]
        if not movable:
            return around
        changes: dict[str, Any] = {}
        for index in rng.choice(len(movable), size=min(int(rng.integers(1, 4)), len(movable)), replace=False):
            name = movable[int(index)]
            ordered = sorted(self.options[name], key=_order)
            now = knob_value(around, name)
            at = ordered.index(now) if now in ordered else 0
            step = int(rng.choice((-1, 1)))
            changes[name] = ordered[min(max(at + step, 0), len(ordered) - 1)]
        return with_values(around, changes)


def _order(value: Any) -> tuple[int, Any]:
    """Grid order: no value (None, no preferred sizes) first, then ascending."""
    if value is None:
        return (0, 0)
    return (1, value)


def space(current: Settings, limits: Limits, valid: Callable[[Settings], bool]) -> Space:
    """The grid with each value kept only where the stack with that one change is `valid`."""
    options = {
        name: (values[0], *(v for v in values[1:] if valid(with_values(current, {name: v}))))
        for name, values in grid(current, limits).items()
    }
    return Space(current, options)


def explore(space: Space, count: int, seed: int) -> list[tuple[str, Settings]]:
    """Up to `count` distinct candidates with their origin: current, then sweeps, then seeded random samples."""
    chosen: dict[Settings, str] = {space.current: "current"}
    for settings in space.sweeps():
        if len(chosen) >= count:
            break
        chosen.setdefault(settings, "sweep")
    rng = np.random.default_rng(seed)
    # A small space runs out of new combinations: stop after as many misses as the budget.
    misses = 0
    while len(chosen) < count and misses < count:
        settings = space.sample(rng)
        if settings in chosen:
            misses += 1
        chosen.setdefault(settings, "random")
    return [(origin, settings) for settings, origin in chosen.items()]


def refine(
    space: Space, best: list[Settings], tried: set[Settings], count: int, seed: int
) -> list[tuple[str, Settings]]:
    """Up to `count` untried neighbours of the `best` settings, taken in turn."""
    rng = np.random.default_rng(seed)
    found: dict[Settings, str] = {}
    misses = 0
    while best and len(found) < count and misses < 20 * count:
        settings = space.neighbour(best[len(found) % len(best)], rng)
        if settings in tried or settings in found:
            misses += 1
            continue
        found[settings] = "refine"
    return [(origin, settings) for settings, origin in found.items()]
