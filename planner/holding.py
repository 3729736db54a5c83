"""What would hold a shape no candidate of the plan holds: the cheapest single change of a reaction setting.

A shape whose load rises faster than the control loop reacts (planner.shapes: the step) may be held by none of a
plan's candidates, whose values are spread over every field. Its answer is then in the settings that decide
reaction alone: a higher replica floor (capacity before the rise), a lower signal target (headroom, and a larger
step per HPA sync: a saturated pod reads at most 1.0, so one sync asks for at most ready ÷ target replicas), no
scale-up stabilization, and a faster scale-up policy. Each value of those fields that reacts faster than the
subject's (the chosen candidate, else the current settings) and that the stack validates is tried on the shape
alone, one field changed, over the plan's seeds; the cheapest that holds is what plan.md names, with its
GPU-hours. One field at a time keeps the answer a setting a reviewer can weigh, not a second plan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.search import Job, ShapeRun, shape_run
from planner.settings import Settings

REACTION_FIELDS = ("signal", "min_replicas", "target", "up_stabilization_s", "up_percent", "up_pods", "up_period_s")
"""The fields that decide how soon capacity follows a rise."""


@dataclass(frozen=True)
class Holding:
    """A shape and the cheapest single reaction setting that holds it; `run` None when no such setting does."""

    shape: str
    field: str | None
    value: Any
    settings: Settings
    run: ShapeRun | None
    tried: tuple[tuple[str, Any, ShapeRun], ...]
    """Every change run on the shape: field, value, and its runs."""
    refused: tuple[tuple[str, Any, str], ...] = ()
    """Every change the stack's validation refuses: field, value, and why."""

    @property
    def nearest(self) -> tuple[str, Any, ShapeRun] | None:
        """Of the changes tried, the one that rejected the least on the shape (the earlier on a tie)."""
        measured = [t for t in self.tried if t[2].mean["rejected_pct"] is not None]
        return min(measured, key=lambda t: t[2].mean["rejected_pct"] or 0.0) if measured else None


def _faster(name: str, value: Any, now: Any) -> bool:
    """Whether `value` of field `name` makes capacity follow a rise sooner than `now` does."""
    if name == "signal":
        # The demand reads a surge whole; a busy ratio or a queue only that pods are full.
        return bool(value == "demand" and now != "demand")
    if value is None or now is None:
        # A scale-up pods policy added where none was (None: the percent policy alone); a target the signal
        # derives has no other value.
        return name == "up_pods" and now is None and value is not None
    if name in ("target", "up_stabilization_s", "up_period_s"):
        return bool(value < now)
    return bool(value > now)


def variations(base: Settings, options: Mapping[str, Sequence[Any]]) -> list[tuple[str, Any, Settings]]:
    """`base` with one reaction field moved to each value of its grid that reacts faster, in field then grid
    order; the replica floor to every count from one above `base`'s up to its ceiling (the grid stops short of
    it to spare a plan's budget)."""
    out = []
    for name in REACTION_FIELDS:
        values: Sequence[Any] = (
            range(base.min_replicas + 1, base.max_replicas + 1) if name == "min_replicas" else options.get(name, ())
        )
        for value in values:
            if _faster(name, value, getattr(base, name)):
                out.append((name, value, replace(base, **{name: value}).consistent()))
    return out


def cheapest_holding(
    job: Job,
    base: Settings,
    shape: int,
    options: Mapping[str, Sequence[Any]],
    refusal: Callable[[Settings], str | None],
) -> Holding:
    """The reaction setting, one field changed from `base`, that holds job.shapes[`shape`] at the fewest GPU-hours
    (the earlier variation on a tie); `refusal` says why the stack does not validate with a change (None: it
    does)."""
    name = job.shapes[shape].name
    checked = [(field, value, settings, refusal(settings)) for field, value, settings in variations(base, options)]
    refused = tuple((field, value, why) for field, value, _, why in checked if why is not None)
    runs = [
        (field, value, settings, shape_run(job, settings, shape))
        for field, value, settings, why in checked
        if why is None
    ]
    tried = tuple((field, value, run) for field, value, _, run in runs)
    held = [r for r in runs if r[3].held and r[3].mean["gpu_hours"] is not None]
    if not held:
        return Holding(name, None, None, base, None, tried, refused)
    field, value, settings, run = min(held, key=lambda r: r[3].mean["gpu_hours"] or 0.0)
    return Holding(name, field, value, settings, run, tried, refused)
