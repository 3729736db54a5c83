"""pareto.png, drawn with matplotlib (imported only to draw it): the candidates' cost against p95 on the trace, the
Pareto front of the passed, the current and the chosen settings, and the constraint that bound the choice. What it
draws is computed in planner.pareto, which plan.md's "Why" reads too."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from planner.pareto import binding, kinds, pareto_front, span
from planner.plan import Plan
from planner.report_format import KIND_TEXT, lost_on
from planner.search import Result

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def pareto_figure(plan: Plan) -> Figure:
    """The candidates' cost against p95 on the trace: the passed, the front, the current and the chosen, and what
    bound the choice. The y-axis spans the passed candidates and the SLO (planner.pareto.span); a failed candidate
    beyond it is drawn on the edge and counted in the legend. Every word is outside the axes (the legend to the
    right, the binding constraint below), so no label covers a point."""
    import matplotlib  # noqa: PLC0415 - only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    limits = span(plan.results, plan.bounds.slo_ms)

    def xy(results: Sequence[Result]) -> tuple[list[float], list[float]]:
        shown = [r for r in results if r.cost is not None and r.mean["p95_ms"] is not None]
        return [r.cost or 0.0 for r in shown], [limits.clip(r.mean["p95_ms"] or 0.0) for r in shown]

    def p95s(results: Sequence[Result]) -> list[float]:
        return [r.mean["p95_ms"] or 0.0 for r in results if r.cost is not None and r.mean["p95_ms"] is not None]

    bound = binding(plan.results, plan.chosen) if plan.chosen is not None else None
    stopped = [] if bound is None else [r for r in bound.cheaper if bound.kind in kinds(r)]
    stopped_ids = {r.index for r in stopped}
    figure, axes = plt.subplots(figsize=(12, 6), layout="constrained")
    axes.scatter(*xy([r for r in plan.results if r.passed]), s=14, color="tab:green", label="passed the trace")
    others = [r for r in plan.results if not r.passed and r.index not in stopped_ids]
    beyond = limits.outside(p95s(others))
    axes.scatter(
        *xy(others),
        s=14,
        marker="x",
        color="0.6",
        label="failed (never on the front)" + (f"; {beyond} beyond the axis, drawn on its edge" if beyond else ""),
    )
    axes.plot(*xy(pareto_front(plan.results)), color="tab:blue", marker="o", label="Pareto front of the passed")
    current_beyond = " beyond the axis, on its edge" if limits.outside(p95s([plan.current])) else ""
    axes.scatter(
        *xy([plan.current]), s=120, marker="s", facecolors="none", color="black", label=f"current (#0){current_beyond}"
    )
    if plan.chosen is not None:
        axes.scatter(*xy([plan.chosen]), s=220, marker="*", color="tab:red", label=f"chosen (#{plan.chosen.index})")
    slo_binding = bound is not None and bound.kind == "p95"
    axes.axhline(
        plan.bounds.slo_ms,
        color="tab:red" if slo_binding else "black",
        linestyle="--",
        linewidth=2 if slo_binding else 1,
        label=f"SLO {plan.bounds.slo_ms:g} ms" + (" (binding)" if slo_binding else ""),
    )
    caption = ""
    if plan.chosen is not None and bound is None:
        caption = (
            f"binding: no candidate had a lower cost than #{plan.chosen.index}; the replica floor "
            f"(min {plan.chosen.settings.min_replicas}) and the load bound the cost"
        )
    if bound is not None:
        # The binding constraint: every cheaper candidate that failed on it, and the nearest one named.
        stopped_beyond = limits.outside(p95s(stopped))
        axes.scatter(
            *xy(stopped),
            s=24,
            marker="x",
            color="tab:orange",
            label=f"cheaper, lost on {KIND_TEXT[bound.kind]} (binding)"
            + (f"; {stopped_beyond} beyond the axis" if stopped_beyond else ""),
        )
        axes.scatter(
            *xy([bound.nearest]),
            s=160,
            marker="o",
            facecolors="none",
            color="tab:orange",
            label=f"nearest cheaper (#{bound.nearest.index})",
        )
        caption = (
            f"binding: the nearest cheaper candidate, #{bound.nearest.index}, lost on {lost_on(plan, bound.nearest)}"
        )
    axes.set_yscale("log")
    axes.set_ylim(limits.low, limits.high)
    axes.set_xlabel("cost: worst-case GPU-hours over the shapes ÷ the current settings' oracle (mean over seeds)")
    axes.set_ylabel("p95 ms on the trace (mean over seeds, log)")
    axes.set_title(f"{plan.stack} / {plan.deployment} / {plan.model}: {len(plan.results)} candidates")
    figure.legend(loc="outside right upper", fontsize=8)
    if caption:
        figure.supxlabel(caption, fontsize=8, x=0.01, ha="left")
    return figure


def pareto_png(plan: Plan) -> bytes:
    import matplotlib.pyplot as plt  # noqa: PLC0415 - only the plot needs it

    figure = pareto_figure(plan)
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100)
    plt.close(figure)
    return image.getvalue()
