"""A plan's trade-off, as pure functions of its results: the Pareto front of the candidates that passed, and the
constraint that bound the choice (what stopped every cheaper candidate). plan.md's "Why" states them and
pareto.png draws them, so the two cannot disagree.

A failed candidate is never on the front: it may be cheaper and faster (it rejected what it could not serve
quickly), but it is no option the plan could choose.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from planner.search import Result, passing


@dataclass(frozen=True)
class Binding:
    """What stopped the candidates cheaper than the chosen one."""

    kind: str
    """The failure kind (p95, rejected or invalid) most of them share; on a tie, the later name."""
    counts: dict[str, int]
    """How many of them failed on each kind (a candidate may fail on two)."""
    cheaper: tuple[Result, ...]
    """Every failed candidate with fewer GPU-hours than the chosen, in candidate order."""
    nearest: Result
    """The most expensive of them, the closest to the chosen's cost (the earlier candidate on a tie)."""


def pareto_front(results: Sequence[Result]) -> list[Result]:
    """The passing candidates no other passing one beats on both GPU-hours and p95, by ascending GPU-hours:
    the first is the chosen one."""
    front: list[Result] = []
    for r in passing(r for r in results if r.mean["gpu_hours"] is not None and r.mean["p95_ms"] is not None):
        if not front or (r.mean["p95_ms"] or 0.0) < (front[-1].mean["p95_ms"] or 0.0):
            front.append(r)
    return front


def binding(results: Sequence[Result], chosen: Result) -> Binding | None:
    """The constraint that stopped every candidate cheaper than `chosen`; None when none was cheaper."""
    cost = chosen.mean["gpu_hours"] or 0.0
    cheaper = tuple(
        r for r in results if not r.passed and r.mean["gpu_hours"] is not None and r.mean["gpu_hours"] < cost
    )
    if not cheaper:
        return None
    counts = Counter(kind for r in cheaper for kind in r.failure_kinds())
    kind = max(counts, key=lambda k: (counts[k], k))
    nearest = max(cheaper, key=lambda r: (r.mean["gpu_hours"] or 0.0, -r.index))
    return Binding(kind, dict(sorted(counts.items())), cheaper, nearest)
