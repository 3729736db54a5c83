"""A plan's trade-off, as pure functions of its results: the Pareto front of the candidates that passed, and the
constraint that bound the choice (what stopped every cheaper candidate). plan.md's "Why" states them and
pareto.png draws them, so the two cannot disagree. "Cheaper" is the plan's cost: the worst case over its shapes
of the GPU-hours as a multiple of the shape's yardstick (planner.search).

A failed candidate is never on the front: it may be cheaper and faster (it rejected what it could not serve
quickly), but it is no option the plan could choose; nor is one that holds fewer shapes than the chosen.
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
    """The failure kind (p95, rejected or invalid on the trace; shapes: it passed, holding fewer shapes) most of
    them share; on a tie, the later name."""
    counts: dict[str, int]
    """How many of them failed on each kind (a candidate may fail on two)."""
    cheaper: tuple[Result, ...]
    """Every candidate, failed or holding fewer shapes, at a lower cost than the chosen, in candidate order."""
    nearest: Result
    """The most expensive of them, the closest to the chosen's cost (the earlier candidate on a tie)."""


def pareto_front(results: Sequence[Result]) -> list[Result]:
    """The passing candidates that hold as many shapes as the best and that no other such beats on both cost and
    p95 on the trace, by ascending cost: the first is the chosen one."""
    front: list[Result] = []
    ranked = passing(r for r in results if r.cost is not None and r.mean["p95_ms"] is not None)
    for r in ranked:
        if len(r.unheld) > len(ranked[0].unheld):
            break
        if not front or (r.mean["p95_ms"] or 0.0) < (front[-1].mean["p95_ms"] or 0.0):
            front.append(r)
    return front


def kinds(result: Result) -> tuple[str, ...]:
    """Why a candidate cheaper than the chosen lost: its failure kinds on the trace, else `shapes`."""
    return result.failure_kinds() if not result.passed else ("shapes",)


def binding(results: Sequence[Result], chosen: Result) -> Binding | None:
    """The constraint that stopped every candidate cheaper than `chosen`; None when none was cheaper."""
    cost = chosen.cost if chosen.cost is not None else 0.0
    cheaper = tuple(r for r in results if r.cost is not None and r.cost < cost)
    if not cheaper:
        return None
    counts = Counter(kind for r in cheaper for kind in kinds(r))
    kind = max(counts, key=lambda k: (counts[k], k))
    nearest = max(cheaper, key=lambda r: (r.cost or 0.0, -r.index))
    return Binding(kind, dict(sorted(counts.items())), cheaper, nearest)


@dataclass(frozen=True)
class Span:
    """The p95 range pareto.png's (log) y-axis shows: the candidates that passed and the SLO, with a margin. A
    failed candidate outside it is drawn at the edge it passes and counted, so one run of seconds-long latency does
    not squeeze every feasible candidate into a line."""

    low: float
    high: float

    def clip(self, value: float) -> float:
        return min(max(value, self.low), self.high)

    def outside(self, values: Sequence[float]) -> int:
        return sum(not self.low <= v <= self.high for v in values)


SPAN_MARGIN = 1.6
"""The factor each end of the y-axis leaves beyond the passed candidates and the SLO, on the log scale."""


def span(results: Sequence[Result], slo_ms: float) -> Span:
    """The y-range of pareto.png: every passed candidate's p95 and the SLO, each end SPAN_MARGIN further out."""
    values = [p95 for r in results if r.passed and r.cost is not None and (p95 := r.mean["p95_ms"]) and p95 > 0]
    values.append(slo_ms)
    return Span(min(values) / SPAN_MARGIN, max(values) * SPAN_MARGIN)
