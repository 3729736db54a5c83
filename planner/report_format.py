"""How plan.md, plan.json and pareto.png show a plan where more than one of them does: the knobs' labels and the
words for each failure kind; a value, a figure, a cost, a stack-file place and a daily floor as text; why a
candidate cheaper than the chosen lost; and a candidate's figures at replicas.min 0 (which `stackctl plan` also
prints)."""

from __future__ import annotations

from typing import Any

from planner.holding import REACTION_FIELDS
from planner.plan import Plan
from planner.search import ORACLE_TARGET, Result
from planner.settings import BATCHING, Floor, Place
from simulator.daily_floor import FloorWindow

LABELS = {
    "max_batch_size": "max batch size",
    "max_queue_delay_us": "max queue delay (µs)",
    "preferred_sizes": "preferred batch sizes",
    "instances": "model instances",
    "max_queue_size": "max queue size (0: unbounded)",
    "timeout_us": "queue timeout (µs, 0: none)",
    "min_replicas": "replicas min",
    "max_replicas": "replicas max",
    "up_stabilization_s": "scale-up stabilization (s)",
    "up_percent": "scale-up percent",
    "up_pods": "scale-up pods",
    "up_period_s": "scale-up period (s)",
    "down_stabilization_s": "scale-down stabilization (s)",
    "down_percent": "scale-down percent",
    "down_pods": "scale-down pods",
    "down_period_s": "scale-down period (s)",
    "signal": "signal (the stack's, every deployment's)",
    "target": "signal target",
    "fallback_replicas": "KEDA fallback replicas (kept inside the replica range)",
    "daily_floor": "daily floor (KEDA cron windows of minimum replicas)",
}
REACTION_LABELS = tuple(LABELS[name] for name in REACTION_FIELDS)


def knob_label(knob: str, planned: str | None = None) -> str:
    """A knob's label: another model's batching value (`<model>.<field>`) names the model, and with several models
    planned (`planned`: the first) so does the first's."""
    model, _, name = knob.rpartition(".")
    model = model or (planned if planned and name in BATCHING else "")
    return f"{model}: {LABELS[name]}" if model else LABELS[name]


KIND_TEXT = {
    "p95": "p95 over the SLO",
    "p99": "p99 over its bound",
    "rejected": "rejections over the bound",
    "invalid": "not a valid stack",
    "shapes": "fewer shapes held",
    "wake": "scale to zero not worth it (a wait over the budget, or nothing saved)",
}


def place_text(place: Place) -> str:
    return ".".join(place)


def windows_text(floor: Floor) -> str:
    """A daily floor as `HH:MM-HH:MM: n` per window."""
    shown = (FloorWindow(*window) for window in floor)
    return "; ".join(f"{w.clock[0]}-{w.clock[1]}: {w.replicas}" for w in shown) if floor else "none"


def value_text(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, tuple):
        return "[" + ", ".join(map(str, value)) + "]" if value else "none"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def figure_text(result: Result, key: str) -> str:
    value = result.mean[key]
    if value is None:
        return "—"
    return f"{value:.3f}" if key.endswith("gpu_hours") else f"{value:.2f}" if key.endswith("ratio") else f"{value:.1f}"


def cost_text(result: Result) -> str:
    return "—" if result.cost is None else f"{result.cost:.2f}×"


def lost_on(plan: Plan, result: Result) -> str:
    """Why a candidate cheaper than the chosen lost: its failures on the trace, else the shapes it does not hold."""
    if not result.passed:
        return "; ".join(result.failures)
    held = len(plan.shapes) - 1 - len(result.unheld)
    return (
        f"holding {held} of the {len(plan.shapes) - 1} derived shapes within {ORACLE_TARGET:g}× "
        f"(not {', '.join(result.unheld)})"
    )


def zero_figures(result: Result) -> dict[str, Any]:
    """A candidate at `replicas.min` 0 on the trace: wakes, the held requests' wait (p99, max), those failed at the
    interceptor's timeout, its GPU-hours, those of the same settings at min 1, and the saving (means over the
    seeds; None where not measured)."""
    mean = result.mean
    at_zero, at_one = mean.get("gpu_hours"), mean.get("gpu_hours_at_min_1")
    return {
        "wakes": mean.get("wakes"),
        "waited_p99_s": mean.get("waited_p99_s"),
        "waited_max_s": mean.get("waited_max_s"),
        "wake_failed": mean.get("wake_failed"),
        "gpu_hours": at_zero,
        "gpu_hours_at_min_1": at_one,
        "gpu_hours_saved": None if at_zero is None or at_one is None else at_one - at_zero,
    }
