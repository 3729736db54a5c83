"""The load shapes a plan is held to, and what the steepest rise of one asks of a fleet.

A plan is chosen on one trace. Beside it, `plan_shapes` derives from the trace's peak the shapes it was not
planned on: a 4x step, a spike and a diurnal day at another peak, each one of `stackctl simulate --profile`'s
built-in profiles (simulator.scenario.shaped_trace). The step and the spike top out at the trace's peak, which
the plan's candidates must carry on the trace already, so what they test is how fast the load comes, not how
much; the diurnal day runs at half the peak, where the replica floor and the scale-down weigh more.

`rise` says why a shape may be beyond any autoscaler that starts pods after the load has risen: the capacity
missing while the pods start, against the rejection bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.oracle import replicas
from simulator.scenario import shaped_trace
from simulator.shapes import MIN_REQUESTS

TRACE = "trace"
"""The plan's own trace, the first shape."""
EVENT_SECONDS = 3600
"""How long the step and the spike run (or the trace, if shorter): the low level long enough for the fleet to
settle on it, then the rise and the steady state after it. The fluid model's cost grows with the seconds run."""
DAY_SECONDS = 6 * 3600
"""How long the diurnal day runs (or the trace, if shorter): a day compressed into 6 h ramps 4x faster than a
real one, but at a rate a reactive autoscaler can follow (an hour's day ramps 24x faster, outrunning pod starts
as the step does), at a quarter of a 24 h day's cost."""
DIURNAL_PEAK_SHARE = 0.5
"""The diurnal day's peak, as a share of the trace's."""


@dataclass(frozen=True)
class Shape:
    name: str
    what: str
    """What the shape is, for plan.md."""
    rate: NDArray[np.float64]
    """Requests per second, each second: with several models, their sum."""
    columns: NDArray[np.float64] | None = None
    """With several models (Scenario.others), each one's req/s, a column each in Scenario.models' order; None: one."""

    @property
    def load(self) -> NDArray[np.float64]:
        """What the simulator runs: the columns, or with one model the rate."""
        return self.rate if self.columns is None else self.columns


def plan_shapes(
    rate: NDArray[np.float64], columns: NDArray[np.float64] | None = None, mix: tuple[float, ...] = ()
) -> tuple[Shape, ...]:
    """The trace `rate` itself (with several models its sum, and `columns` a column per model), then the shapes
    derived from its peak and length, with several models split by the trace's `mix` (each model's share of its
    requests):

    - step: a quarter of the peak, then the peak from a quarter of the way in;
    - spike: a diurnal day whose one-minute burst of 3x, 0.6 of the way in, reaches the peak;
    - diurnal: a diurnal day at DIURNAL_PEAK_SHARE of the peak.
    """

    def split(total: NDArray[np.float64]) -> NDArray[np.float64] | None:
        return None if columns is None else np.asarray(total[:, None] * np.array(mix), np.float64)

    peak = float(rate.max())
    event = min(len(rate), EVENT_SECONDS) / 3600
    day = min(len(rate), DAY_SECONDS) / 3600
    # shaped_trace's burst is 3x the day's level at 0.6 of the way in: scaled so that its top is the peak.
    spike = shaped_trace("spike", 1.0, event)
    return (
        Shape(TRACE, "the plan's own trace", rate, columns),
        *(
            Shape(name, what, total, split(total))
            for name, what, total in (
                (
                    "step",
                    "a quarter of the peak, then the peak from a quarter of the way in: a 4x step",
                    shaped_trace("step", peak, event),
                ),
                (
                    "spike",
                    "a day compressed into the shape's length at about a third of the peak, with a 3x burst of a "
                    "minute to the peak at 0.6 of the way in",
                    spike * (peak / float(spike.max())),
                ),
                (
                    "diurnal",
                    f"a day compressed into the shape's length, peaking at {DIURNAL_PEAK_SHARE:g}x the trace's peak",
                    shaped_trace("diurnal", DIURNAL_PEAK_SHARE * peak, day),
                ),
            )
        ),
    )


def measurable(shapes: tuple[Shape, ...], trace: str, models: tuple[str, ...] = ()) -> None:
    """Refuse a trace (named `trace`) whose derived shapes would carry fewer than MIN_REQUESTS requests each (their
    rates summed over their seconds): a shape that serves none has no p95 (NaN), which would read as a missed SLO.
    The trace itself is checked as `stackctl simulate` checks it (stackctl.run_inputs.measurable); the shapes
    scale with its peak, so the message names the peak that gives every one of them enough. With several models
    (`models`, the shapes' columns), each is held to the bound on every shape, the trace's too: each is held to the
    SLO on its own."""
    for shape in shapes:
        for model, offered in zip(models, shape.load.sum(axis=0) if shape.columns is not None else (), strict=True):
            if offered < MIN_REQUESTS:
                raise ValueError(
                    f"{trace}: model {model} carries {offered:,.4g} requests on the {shape.name} shape of "
                    f"`stackctl plan` ({shape.what}), too little load to measure: a p95 needs at least "
                    f"{MIN_REQUESTS} requests of every model on every shape; raise its rate or plan without it"
                )
    trace_rate = shapes[0].rate
    peak = float(trace_rate.max())
    short = [(float(shape.rate.sum()), shape) for shape in shapes[1:]]
    short = [(offered, shape) for offered, shape in short if offered < MIN_REQUESTS]
    if not short:
        return
    offered, shape = min(short, key=lambda found: found[0])
    needed = max(peak * MIN_REQUESTS / found for found, _ in short)
    raise ValueError(
        f"{trace}: the {shape.name} shape `stackctl plan` derives from it ({shape.what}) carries {offered:,.4g} "
        f"requests over {len(shape.rate)} s, too little load to measure: a p95 needs at least {MIN_REQUESTS} "
        f"requests on every shape; raise the peak, now {peak:.4g} req/s, to at least {needed:.4g} req/s"
    )


@dataclass(frozen=True)
class Rise:
    """The rise of a shape's load that a fleet starting pods in `start_seconds` carries least, as the oracle runs
    the fleet (each second's fewest replicas at the SLO): when it comes, the capacity missing until pods start."""

    at: int
    """The second it starts: the last before the load climbs."""
    seconds: int
    """How long the load takes from its level at `at` to its highest within the start delay."""
    start_seconds: float
    before_rps: float
    after_rps: float
    """The highest load within the start delay after `at`."""
    before_replicas: int
    """The oracle's fleet at `at`."""
    after_replicas: int
    """The oracle's fleet for `after_rps`."""
    missing_rps: float
    """`after_rps` less what `before_replicas` carry."""
    lost_pct: float
    """The load above what `before_replicas` carry over the start delay, as a share of the shape's requests."""


def rise(rate: NDArray[np.float64], replica_rps: float, floor: int, ceiling: int, start_seconds: float) -> Rise:
    """The rise of `rate` that leaves the most load uncarried while pods start (`start_seconds`), for a fleet of
    `replica_rps` a replica kept as the oracle keeps it (within [floor, ceiling])."""
    delay = max(math.ceil(start_seconds), 1)
    fleet = replicas(rate, replica_rps, floor, ceiling)
    carried = fleet * replica_rps
    # windows[t]: the load of seconds t+1 .. t+delay (the end padded with the last second's).
    padded = np.concatenate([rate, np.full(delay, rate[-1])])
    windows = np.lib.stride_tricks.sliding_window_view(padded[1:], delay)[: len(rate)]
    excess = np.clip(windows - carried[:, None], 0.0, None).sum(axis=1)
    at = int(np.argmax(excess))
    after = float(windows[at].max())
    return Rise(
        at=at,
        seconds=int(np.argmax(windows[at])) + 1,
        start_seconds=start_seconds,
        before_rps=float(rate[at]),
        after_rps=after,
        before_replicas=int(fleet[at]),
        after_replicas=int(replicas(np.array([after]), replica_rps, floor, ceiling)[0]),
        missing_rps=max(after - float(carried[at]), 0.0),
        lost_pct=100 * float(excess[at]) / float(rate.sum()),
    )
