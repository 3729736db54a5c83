"""What `stackctl plan` writes: plan.md (the choice and why), plan.json (every candidate), pareto.png."""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from offline.out_folder import claim
from planner.holding import REACTION_FIELDS
from planner.pareto import binding, kinds, pareto_front, span
from planner.plan import Plan
from planner.search import ORACLE_TARGET, Result, ShapeRun, rank
from planner.settings import BATCHING, Floor, Place, knob_value, knobs, target_place
from planner.shapes import rise
from simulator.daily_floor import DAY, FloorWindow

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PLAN_FILE = "plan.md"
JSON_FILE = "plan.json"
PARETO_FILE = "pareto.png"

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


METRICS = (
    ("gpu_hours", "GPU-hours"),
    ("p95_ms", "p95 ms"),
    ("p99_ms", "p99 ms"),
    ("rejected_pct", "rejected %"),
    ("reaction_seconds", "reaction s"),
    ("slo_violation_seconds", "SLO-violation s"),
    ("static_gpu_hours", "GPU-hours of a static fleet for the peak"),
    ("oracle_gpu_hours", "GPU-hours of the oracle (each second's fewest replicas, no start delay)"),
    ("oracle_ratio", "GPU-hours as a multiple of the oracle's"),
    ("oracle_hindsight_gpu_hours", "GPU-hours of the hindsight oracle (each pod paid from one start delay before)"),
    ("oracle_hindsight_ratio", "GPU-hours as a multiple of the hindsight oracle's"),
    ("reaction_floor_seconds", "reaction floor s (scrape + HPA sync + pod start, + a node's provisioning)"),
)
KIND_TEXT = {
    "p95": "p95 over the SLO",
    "p99": "p99 over its bound",
    "rejected": "rejections over the bound",
    "invalid": "not a valid stack",
    "shapes": "fewer shapes held",
    "wake": "scale to zero not worth it (a wait over the budget, or nothing saved)",
}


def _place(place: Place) -> str:
    return ".".join(place)


def _windows(floor: Floor) -> str:
    """A daily floor as `HH:MM-HH:MM: n` per window."""
    shown = (FloorWindow(*window) for window in floor)
    return "; ".join(f"{w.clock[0]}-{w.clock[1]}: {w.replicas}" for w in shown) if floor else "none"


def _knob_shown(knob: str, value: object) -> str:
    return _windows(cast(Floor, value)) if knob == "daily_floor" else _shown(value)


def _shown(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, tuple):
        return "[" + ", ".join(map(str, value)) + "]" if value else "none"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def _figure(result: Result, key: str) -> str:
    value = result.mean[key]
    if value is None:
        return "—"
    return f"{value:.3f}" if key.endswith("gpu_hours") else f"{value:.2f}" if key.endswith("ratio") else f"{value:.1f}"


def _label(plan: Plan, knob: str) -> str:
    """knob_label, naming the planned model's own knobs when the plan runs several models."""
    return knob_label(knob, plan.model if plan.models else None)


def _differs(plan: Plan, a: Result, b: Result) -> list[str]:
    return [_label(plan, k) for k in knobs(a.settings) if knob_value(a.settings, k) != knob_value(b.settings, k)]


def _cost(result: Result) -> str:
    return "—" if result.cost is None else f"{result.cost:.2f}×"


def _binding(plan: Plan, chosen: Result) -> str:
    """Which constraint stopped a cheaper candidate: counted over every one below the chosen's cost that failed the
    trace or held fewer shapes."""
    bound = binding(plan.results, chosen)
    tail = "" if plan.bounds.p99_ms is None else f", p99 at {_figure(chosen, 'p99_ms')} ms of {plan.bounds.p99_ms:g}"
    headroom = (
        f"On the trace it runs p95 at {_figure(chosen, 'p95_ms')} ms of the {plan.bounds.slo_ms:g} ms SLO{tail} and "
        f"rejects {_figure(chosen, 'rejected_pct')}% against a bound of {plan.bounds.max_rejected_pct:g}%."
    )
    if bound is None:
        return (
            f"Nothing cheaper was found: no candidate had a lower worst-case cost, so the replica floor "
            f"(min {chosen.settings.min_replicas}) and the load bound the cost, not the SLO. {headroom}"
        )
    counts = ", ".join(f"{KIND_TEXT[kind]}: {count}" for kind, count in bound.counts.items())
    nearest = bound.nearest
    return (
        f"Bound by **{KIND_TEXT[bound.kind]}**: all {len(bound.cheaper)} cheaper candidates failed the trace or held "
        f"fewer shapes ({counts}). The nearest, #{nearest.index} at {_cost(nearest)}, lost on "
        f"{_lost_on(plan, nearest)}. {headroom}"
    )


def _lost_on(plan: Plan, result: Result) -> str:
    """Why a candidate cheaper than the chosen lost: its failures on the trace, else the shapes it does not hold."""
    if not result.passed:
        return "; ".join(result.failures)
    held = len(plan.shapes) - 1 - len(result.unheld)
    return (
        f"holding {held} of the {len(plan.shapes) - 1} derived shapes within {ORACLE_TARGET:g}× "
        f"(not {', '.join(result.unheld)})"
    )


def _failed_table(failed: Sequence[Result]) -> list[str]:
    lines = ["| # | origin | GPU-hours | p95 ms | p99 ms | rejected % | why |", "|---:|---|---:|---:|---:|---:|---|"]
    lines += [
        f"| {r.index} | {r.origin} | {_figure(r, 'gpu_hours')} | {_figure(r, 'p95_ms')} | {_figure(r, 'p99_ms')} | "
        f"{_figure(r, 'rejected_pct')} | {'; '.join(r.failures)} |"
        for r in failed
    ]
    return lines


def _passed_table(plan: Plan) -> list[str]:
    """Every candidate that passed, in the objective's order: its p99 beside its p95, so a cheaper choice's tail
    shows even where no p99 bound is set."""
    lines = [
        "| rank | # | origin | cost | shapes held | GPU-hours | p95 ms | p99 ms | rejected % |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {rank_number} | {r.index} | {r.origin} | {_cost(r)} | {_held(plan, r)} | {_figure(r, 'gpu_hours')} | "
        f"{_figure(r, 'p95_ms')} | {_figure(r, 'p99_ms')} | {_figure(r, 'rejected_pct')} |"
        for rank_number, r in enumerate(plan.ranked, 1)
    ]
    return lines


def _bounds_text(plan: Plan) -> str:
    """What a run must keep to hold a shape."""
    tail = "" if plan.bounds.p99_ms is None else f", p99 <= {plan.bounds.p99_ms:g} ms"
    return f"p95 <= {plan.bounds.slo_ms:g} ms{tail} and rejected <= {plan.bounds.max_rejected_pct:g}%"


def _tail(plan: Plan, chosen: Result) -> str:
    """The chosen candidate's tail against the current settings', on the trace, and what bounds it."""
    current = plan.current
    before, after = current.mean["p99_ms"], chosen.mean["p99_ms"]
    if before is None or after is None:
        return "Tail: p99 not measured on the trace for the current or the chosen settings."
    change = (
        "keeps p99 on the trace at"
        if f"{before:.1f}" == f"{after:.1f}"
        else f"moves p99 on the trace from {before:.1f} ms to"
    )
    bound = (
        f"within the p99 bound of {plan.bounds.p99_ms:g} ms"
        if plan.bounds.p99_ms is not None
        else "with no p99 bound set (serving.p99LatencySloMs or --p99-slo-ms would hold it)"
    )
    text = (
        f"Tail: the chosen #{chosen.index} {change} {after:.1f} ms ({after / before:.2f}× the current) and p95 "
        f"from {_figure(current, 'p95_ms')} ms to {_figure(chosen, 'p95_ms')} ms, {bound}."
        if before > 0
        else f"Tail: the chosen #{chosen.index} runs p99 at {after:.1f} ms on the trace, {bound}."
    )
    # With several models each has its own tail, which the deployment's mixes away.
    per_model = [
        f"{model} {_figure(current, f'{model}/p99_ms')} ms to {_figure(chosen, f'{model}/p99_ms')} ms"
        for model in plan.models
    ]
    return text + (f" Per model, p99 from {', '.join(per_model)}." if per_model else "")


COST_LABEL = "cost: worst-case GPU-hours over the shapes ÷ the current settings' oracle"
HELD_LABEL = f"shapes held within {ORACLE_TARGET:g}× the current settings' oracle"


def _held(plan: Plan, result: Result) -> str:
    held = sum(run.within_target for run in result.runs) if _measured(plan, result) else 0
    return f"{held} of {len(plan.shapes)}"


def _shape_row(shape: str, label: str, run: ShapeRun) -> str:
    mean = run.mean

    def shown(value: float | None, form: str) -> str:
        return "—" if value is None else format(value, form)

    return (
        f"| {shape} | {label} | {shown(mean['gpu_hours'], '.3f')} | {shown(mean['oracle_gpu_hours'], '.3f')} | "
        f"{shown(mean['oracle_ratio'], '.2f')} | {shown(mean['oracle_hindsight_ratio'], '.2f')} | "
        f"{shown(run.multiple, '.2f')} | {shown(mean['reaction_seconds'], '.0f')} | "
        f"{shown(mean['reaction_floor_seconds'], '.0f')} | {shown(mean['p95_ms'], '.1f')} | "
        f"{shown(mean['p99_ms'], '.1f')} | {shown(mean['rejected_pct'], '.3f')} | {'yes' if run.held else 'no'} |"
    )


def _measured(plan: Plan, result: Result) -> bool:
    """Whether `result` ran every shape (an invalid candidate ran none)."""
    return len(result.runs) == len(plan.shapes)


def _holders(plan: Plan, shape: int) -> str:
    """Which candidates held the derived shape at `shape` of plan.shapes, said in a few words."""
    holders = [r for r in plan.results if _measured(plan, r) and r.runs[shape].held]
    if not holders:
        return f"none of the {len(plan.results)} candidates holds it; {_holding(plan, shape)}"
    within = sorted((r for r in holders if r.passed and r.runs[shape].within_target), key=rank)
    return f"{len(holders)} of the {len(plan.results)} candidates hold it, " + (
        f"{len(within)} of them passing the trace within {ORACLE_TARGET:g}× on it (the first ranked, "
        f"#{within[0].index}, at {_cost(within[0])} at worst)"
        if within
        else f"none of them passing the trace within {ORACLE_TARGET:g}× on it"
    )


def _holding(plan: Plan, shape: int) -> str:
    """The cheapest single reaction setting that holds a shape no candidate holds (planner.holding), in words."""
    name = plan.shapes[shape].name
    found = next((h for h in plan.holdings if h.shape == name), None)
    if found is None:
        return "no reaction setting was tried on it"
    subject = "the chosen" if plan.chosen is not None else "the current"
    if found.run is None or found.field is None:
        text = (
            f"nor does any of the {len(found.tried)} single changes of a reaction setting "
            f"({', '.join(REACTION_LABELS)}) to {subject} settings that the stack validates"
        )
        nearest = found.nearest
        if nearest is not None:
            field, value, run = nearest
            text += (
                f"; the nearest, **{LABELS[field]} {_shown(value)}**, rejects {run.mean['rejected_pct']:.3f}% at "
                f"{run.mean['gpu_hours']:.3f} GPU-hours on the shape"
            )
        if found.refused:
            # Per field its refused values and the first's reason: the floors above a shared bound share one.
            by_field: dict[str, list[tuple[Any, str]]] = {}
            for field, value, why in found.refused:
                by_field.setdefault(field, []).append((value, why))
            refused = "; ".join(
                f"{LABELS[field]} {', '.join(_shown(v) for v, _ in values)} ({_shown(values[0][0])}: {values[0][1]})"
                for field, values in by_field.items()
            )
            text += f"; refused by the stack's validation: {refused}"
        return text
    was = getattr(plan.chosen.settings if plan.chosen is not None else plan.current.settings, found.field)
    run = found.run
    return (
        f"the cheapest single reaction setting that holds it (of {len(found.tried)} tried on {subject} settings) is "
        f"**{LABELS[found.field]} {_shown(found.value)}** (now {_shown(was)}): {run.mean['gpu_hours']:.3f} GPU-hours "
        f"on the shape, {_shown(run.multiple)}× the current settings' oracle, p95 {run.mean['p95_ms']:.1f} ms, "
        f"rejected {run.mean['rejected_pct']:.3f}%"
    )


def _worth(count: int) -> str:
    return f"{count} replica's worth" if count == 1 else f"{count} replicas' worth"


def _rise(plan: Plan, subject: Result, shape: int) -> str:
    """The steepest rise of the shape against a pod start, and what a fleet for the peak would cost."""
    run, described = subject.runs[shape], plan.shapes[shape]
    replica_rps = run.mean["oracle_replica_rps"]
    if replica_rps is None:
        return ""
    settings = subject.settings
    up = rise(described.rate, replica_rps, settings.min_replicas, settings.max_replicas, plan.pod_start_seconds)
    bound = plan.bounds.max_rejected_pct
    before = f"{up.before_replicas} replica{'' if up.before_replicas == 1 else 's'}"
    text = (
        f" Its steepest rise, at {up.at:,} s, takes the load from {up.before_rps:,.0f} to {up.after_rps:,.0f} req/s "
        f"in {up.seconds} s; a new pod serves {plan.pod_start_seconds:g} s after it is started, "
        f"{plan.pod_start_seconds + plan.node_provision_seconds:g} s where it needs a new node. The oracle's "
        f"{before} of {replica_rps:,.0f} req/s before the rise {'leaves' if up.before_replicas == 1 else 'leave'} "
        f"{up.missing_rps:,.0f} req/s "
        f"({_worth(up.after_replicas - up.before_replicas)}) uncarried while pods start: "
        f"{up.lost_pct:.3f}% of the shape's requests over {up.start_seconds:g} s, "
        + ("above" if up.lost_pct > bound else "within")
        + f" the {bound:g}% bound."
    )
    static, oracle_hours = run.mean["static_gpu_hours"], run.mean["oracle_gpu_hours"]
    if up.lost_pct > bound and static is not None and oracle_hours:
        # No replica holds the SLO at any rate (replica_rps 0): there is no floor to name.
        floor = math.ceil(float(described.rate.max()) / replica_rps) if replica_rps > 0 else None
        where = "" if floor is None else "within" if floor <= settings.max_replicas else "above"
        text += (
            " Without knowing when the rise comes, only a fleet that already carries what follows it holds it: "
            "one sized for the peak throughout "
            + ("" if floor is None else f"(replicas min {floor}, {where} replicas.max {settings.max_replicas}) ")
            + f"uses {static:.3f} GPU-hours, {static / oracle_hours:.2f}× the oracle's {oracle_hours:.3f}."
        )
    return text


def _cannot_hold(plan: Plan, subject: Result, shape: int) -> str | None:
    """Why `subject` does not hold shape number `shape` within ORACLE_TARGET of its yardstick; None when it does."""
    run, described = subject.runs[shape], plan.shapes[shape]
    if run.within_target:
        return None
    holders = "" if shape == 0 else f"; {_holders(plan, shape)}"
    if not run.held or run.multiple is None:
        return f"- **{described.name}** ({described.what}): not held: {'; '.join(run.failures)}{holders}." + _rise(
            plan, subject, shape
        )
    extra = (run.mean["gpu_hours"] or 0.0) - plan.yardsticks[shape]
    return (
        f"- **{described.name}** ({described.what}): held (p95 {run.mean['p95_ms']:.1f} ms, rejected "
        f"{run.mean['rejected_pct']:.3f}%), but at {run.multiple:.2f}× the current settings' oracle, above "
        f"{ORACLE_TARGET:g}×{holders}: {extra:.3f} GPU-hours over the oracle's {plan.yardsticks[shape]:.3f}, what "
        f"the replica floor ({subject.settings.min_replicas}), the signal's headroom and the scale-down's "
        "stabilization and drain keep running above each second's need."
    )


def _shapes_section(plan: Plan) -> list[str]:
    """Each shape's figures for the current and the chosen settings, and why any is not held within ORACLE_TARGET."""
    subject = plan.chosen or plan.current
    compared = [("current #0", plan.current)]
    if plan.chosen is not None and plan.chosen is not plan.current:
        compared.append((f"chosen #{plan.chosen.index}", plan.chosen))
    lines = [
        "## Shapes",
        "",
        "| shape | length | peak req/s | what |",
        "|---|---:|---:|---|",
        *(
            f"| {shape.name} | {len(shape.rate):,} s | {float(shape.rate.max()):,.0f} | {shape.what} |"
            for shape in plan.shapes
        ),
        "",
        "Per shape: GPU-hours, the oracle's (of these settings), the GPU-hours ÷ the oracle's and ÷ the hindsight "
        "oracle's (each pod paid from one start delay before its need: what a fleet that must start its pods can "
        "reach at best), and ÷ the current settings' oracle, the yardstick the objective reads; the reaction (from "
        "the first second demand exceeds ready capacity to capacity again, — when it never does) against its floor "
        "(scrape + HPA sync + pod start, + a node's provisioning where the shape needs one: no setting reacts "
        "faster).",
        "",
        f"| shape | settings | GPU-hours | oracle GPU-hours | ÷ oracle | ÷ hindsight oracle | ÷ current's oracle "
        f"| reaction s | reaction floor s | p95 ms "
        f"(SLO {plan.bounds.slo_ms:g}) | p99 ms"
        + ("" if plan.bounds.p99_ms is None else f" (bound {plan.bounds.p99_ms:g})")
        + f" | rejected % (bound {plan.bounds.max_rejected_pct:g}) | held |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for number, shape in enumerate(plan.shapes):
        lines += [_shape_row(shape.name, label, r.runs[number]) for label, r in compared if _measured(plan, r)]
    reasons = (
        [reason for number in range(len(plan.shapes)) if (reason := _cannot_hold(plan, subject, number)) is not None]
        if _measured(plan, subject)
        else []
    )
    who = "chosen" if plan.chosen is not None else "current"
    lines += [
        "",
        f"Every shape held by the {who} settings, within {ORACLE_TARGET:g}× the current settings' oracle."
        if not reasons
        else f"Not held within {ORACLE_TARGET:g}× the current settings' oracle by the {who} settings, and why:",
        "",
        *([*reasons, ""] if reasons else []),
    ]
    return lines


def _unplanned(plan: Plan) -> str:
    """What the plan leaves out: the deployment's models it does not simulate share its pods' GPUs."""
    others = ", ".join(plan.unplanned)
    if plan.models:
        return (
            f"Deployment {plan.deployment} also serves {others}, which the trace gives no load: not in these figures."
        )
    return (
        f"Models: this plan simulates {plan.model} alone. Deployment {plan.deployment} also serves {others}, whose "
        "load shares the same pods and GPUs and is not in these figures: plan them together with a trace column per "
        'model or scaling.simulation.shares (docs/simulation.md, "Several models").'
    )


def _models_section(plan: Plan) -> list[str]:
    """With several models: which ran together, what the candidates tune, and each model's figures on the trace for
    the current settings and the chosen (or, with none, the closest) candidate."""
    if not plan.models:
        return []
    shares = ", ".join(f"{model} {share:.1%}" for model, share in zip(plan.models, plan.mix, strict=True))
    shown = [("current", plan.current)]
    if plan.chosen is not None and plan.chosen is not plan.current:
        shown.append(("chosen", plan.chosen))
    lines = [
        f"Models: this plan simulates {', '.join(plan.models)} together on the deployment's pods, their instances "
        "sharing each pod's GPUs (docs/simulation.md, \"Several models\"), each with its share of the trace's "
        f"requests ({shares}; an ensemble's requests count on each of its steps), and holds every one of them to the "
        "bounds. The candidates tune every one's batching and the deployment's replicas and scaling together.",
        "",
        "| settings | model | p95 ms | p99 ms | rejected % |",
        "|---|---|---:|---:|---:|",
    ]
    for label, result in shown:
        lines += [
            f"| {label} #{result.index} | {model} | {_figure(result, f'{model}/p95_ms')} | "
            f"{_figure(result, f'{model}/p99_ms')} | {_figure(result, f'{model}/rejected_pct')} |"
            for model in plan.models
        ]
    return [*lines, ""]


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


def _number(value: float | None, form: str) -> str:
    return "—" if value is None else format(value, form)


def _floor_section(plan: Plan) -> list[str]:
    """The daily floors learned from the trace and tried: the chosen one's windows, time zone and what it costs
    against the best passing candidate without one."""
    learned = [floor for floor in plan.space.options["daily_floor"] if floor]
    if not learned:
        return []
    chosen = plan.chosen
    lines = [
        "## Daily floor",
        "",
        "Learned from the trace's daily shape (its second 0 read as midnight in the floor's time zone; "
        "simulator/daily_floor.py): per half hour, a share of the fewest replicas the quietest day asks for one "
        "pod start (and a node's provisioning) later, tried as KEDA cron windows beside no floor: "
        + ", ".join(f"`{_windows(floor)}`" for floor in learned)
        + ".",
        "",
    ]
    if chosen is None or not chosen.settings.daily_floor:
        return [*lines, "The chosen settings keep no daily floor: on this trace none paid for its GPU-hours.", ""]
    zone = chosen.settings.floor_zone
    held = sum(
        ((w.end - w.start) % DAY or DAY) / 3600 * (w.replicas - chosen.settings.min_replicas)
        for w in (FloorWindow(*window) for window in chosen.settings.daily_floor)
    )
    without = [r for r in plan.ranked if not r.settings.daily_floor]
    versus = (
        f" The best passing candidate without a floor, #{without[0].index}, costs {_cost(without[0])} the oracle at "
        f"worst and {_figure(without[0], 'gpu_hours')} GPU-hours on the trace, against the chosen's {_cost(chosen)} "
        f"and {_figure(chosen, 'gpu_hours')}."
        if without
        else " No candidate without a floor passed."
    )
    return [
        *lines,
        f"The chosen settings hold `{_windows(chosen.settings.daily_floor)}` (time zone {zone}): at most "
        f"{held:.1f} pod-hours a day above the replica floor, where the load would not already ask for them.{versus}",
        "",
    ]


def _zero_section(plan: Plan) -> list[str]:
    """For a deployment with a wake budget: the choice between a floor of 0 (scale to zero) and 1 or more, and what
    zero gives on the trace (the chosen candidate's, or the best at 0 when a floor of 1 or more won)."""
    budget = plan.bounds.wake_budget_s
    if budget is None:
        return []
    chosen = plan.chosen
    at_zero = [r for r in plan.ranked if r.settings.min_replicas == 0]
    tried = [r for r in plan.results if r.settings.min_replicas == 0]
    lines = [
        "## Scale to zero",
        "",
        f"The deployment has a wake budget of {budget:g} s (`wake.budgetSeconds`), so the candidates tried replicas "
        "min 0, idle at zero GPUs after KEDA's cooldown and woken by the first request, beside 1 or more; a floor "
        f"of 0 passes when the requests held during a wake wait p99 within the budget and those failed at its "
        f"timeout (504) stay within the rejection bound. {len(tried)} of {len(plan.results)} candidates ran at 0, "
        f"{len(at_zero)} passed.",
        "",
    ]
    subject: Result | None = chosen if chosen is not None and chosen.settings.min_replicas == 0 else None
    if subject is None and (at_zero or tried):
        subject = (at_zero or tried)[0]
    if chosen is not None:
        floor = chosen.settings.min_replicas
        above = [r for r in plan.ranked if r.settings.min_replicas > 0]
        if floor == 0 and above:
            why = (
                f" (scale to zero); the best at 1 or more, #{above[0].index} (min {above[0].settings.min_replicas}), "
                f"ranks lower at {_cost(above[0])} the oracle at worst, {_figure(above[0], 'gpu_hours')} GPU-hours."
            )
        elif floor == 0:
            why = " (scale to zero); no candidate at 1 or more passed."
        elif subject is None:
            why = "; no candidate at 0 was tried."
        elif subject.passed:
            why = f"; the best at 0, #{subject.index}, ranks lower ({_cost(subject)} the oracle at worst)."
        else:
            why = f"; the best at 0, #{subject.index}, failed: {'; '.join(subject.failures)}."
        lines += [f"Chosen: replicas min **{floor}**{why}", ""]
    if subject is not None:
        f = zero_figures(subject)
        lines += [
            f"| at min 0, #{subject.index} on the trace | value |",
            "|---|---:|",
            f"| wakes | {_number(f['wakes'], '.1f')} |",
            f"| waited p99 s (budget {budget:g}) | {_number(f['waited_p99_s'], '.1f')} |",
            f"| waited max s | {_number(f['waited_max_s'], '.1f')} |",
            f"| failed at the timeout | {_number(f['wake_failed'], '.1f')} |",
            f"| GPU-hours at min 0 | {_number(f['gpu_hours'], '.3f')} |",
            f"| GPU-hours, same settings at min 1 | {_number(f['gpu_hours_at_min_1'], '.3f')} |",
            f"| GPU-hours saved | {_number(f['gpu_hours_saved'], '.3f')} |",
            "",
        ]
    return lines


def plan_markdown(plan: Plan) -> str:
    current, chosen, ranked = plan.current, plan.chosen, plan.ranked
    runner_up = ranked[1] if len(ranked) > 1 else None
    failed = [r for r in plan.results if not r.passed]
    lines = [
        f"# stackctl plan: {plan.stack} / {plan.deployment} / {plan.model}",
        "",
        f"Load: {plan.trace}, and {len(plan.shapes) - 1} shapes derived from its peak "
        f"({', '.join(shape.name for shape in plan.shapes[1:])}: see [Shapes](#shapes)). A candidate holds a shape "
        f"when {_bounds_text(plan)} on every one of {len(plan.seeds)} seeds ({', '.join(map(str, plan.seeds))}), "
        "and passes when it holds the trace. "
        f"Objective: of those that pass, the most derived shapes held within {ORACLE_TARGET:g}× the current "
        "settings' oracle on the shape, then the lowest cost: the worst case over the shapes of the GPU-hours ÷ "
        f"that oracle. Figures are means over the seeds. {len(plan.results)} candidates evaluated (budget "
        f"{plan.budget}, seed {plan.seed}).",
        "",
        *([_tail(plan, chosen), ""] if chosen is not None else []),
        *_models_section(plan),
        *([_unplanned(plan), ""] if plan.unplanned else []),
    ]
    if chosen is None:
        closest = min(plan.results, key=lambda r: (len(r.failures), r.mean["p95_ms"] or float("inf"), r.index))
        lines += [
            "## No candidate passed",
            "",
            f"None of the {len(plan.results)} candidates met both bounds, so the stack file is left as it is "
            f"(the patch is empty). The closest, #{closest.index}, failed on {'; '.join(closest.failures)}. "
            "Raise replicas.max or the GPU pool, relax --slo-ms or --max-rejected-pct, or give a larger --budget.",
            "",
        ]
    else:
        lines += [
            f"## Chosen: candidate #{chosen.index} ({chosen.origin})",
            "",
            "| setting | current | chosen | stack file |",
            "|---|---:|---:|---|",
        ]
        for name in knobs(current.settings):
            old, new = knob_value(current.settings, name), knob_value(chosen.settings, name)
            where = _place(plan.places[name]) if name in plan.places else "derived from the batching config"
            if name == "target" and chosen.settings.signal != current.settings.signal:
                # Another signal reads its own target key (planner.settings.edits moves it).
                where = _place(target_place(chosen.settings.signal))
            changed = "**" if old != new else ""
            lines.append(
                f"| {_label(plan, name)} | {_knob_shown(name, old)} | {changed}{_knob_shown(name, new)}{changed} "
                f"| {where} |"
            )
        lines += ["", f"| result on the trace | current #0 | chosen #{chosen.index} |"]
        lines[-1] += f" runner-up #{runner_up.index} |" if runner_up else ""
        lines.append("|---|---:|---:|" + ("---:|" if runner_up else ""))
        for key, label in METRICS:
            row = f"| {label} | {_figure(current, key)} | {_figure(chosen, key)} |"
            lines.append(row + (f" {_figure(runner_up, key)} |" if runner_up else ""))
        compared = [current, chosen, *([runner_up] if runner_up else [])]
        lines.append(f"| {COST_LABEL} | " + " | ".join(_cost(r) for r in compared) + " |")
        lines.append(f"| {HELD_LABEL} | " + " | ".join(_held(plan, r) for r in compared) + " |")
        lines += ["", "## Why", "", f"- {_binding(plan, chosen)}"]
        if runner_up:
            lines.append(
                f"- Runner-up: #{runner_up.index} ({runner_up.origin}), {_cost(runner_up)} the oracle at worst, "
                f"{_figure(runner_up, 'gpu_hours')} GPU-hours and p95 {_figure(runner_up, 'p95_ms')} ms on the trace; "
                f"it differs in {', '.join(_differs(plan, chosen, runner_up))}."
            )
        else:
            lines.append("- Runner-up: none; no other candidate passed.")
        status = "pass" if current.passed else f"fail ({'; '.join(current.failures)})"
        lines.append(f"- The current settings (#0) {status}.")
    zero = [*_floor_section(plan), *_zero_section(plan)]
    kinds = Counter(kind for r in failed for kind in r.failure_kinds())
    why = ", ".join(f"{KIND_TEXT[kind]}: {count}" for kind, count in sorted(kinds.items()))
    lines.append(f"- {len(failed)} of {len(plan.results)} candidates failed" + (f" ({why})." if why else "."))
    fixed = [_label(plan, name) for name in knobs(current.settings) if len(plan.space.options[name]) == 1]
    if fixed:
        lines.append(
            f"- Held at their current values (no other value of the grid validates, or the signal derives it): "
            f"{', '.join(fixed)}."
        )
    lines += [
        "- Batching values go to each planned model's own settings (triton-platform:models), which override "
        "serving.modelDefaults for that model only: the plan measured no other model."
        if plan.models
        else "- Batching values go to the model's own settings (triton-platform:models), which override "
        "serving.modelDefaults for this model only: the plan measured no other model.",
        "",
        *zero,
        *_shapes_section(plan),
        "## Passed candidates",
        "",
        *(_passed_table(plan) if ranked else ["None."]),
        "",
        "## Failed candidates",
        "",
        *(_failed_table(failed) if failed else ["None."]),
    ]
    return "\n".join(lines) + "\n"


def plan_json(plan: Plan, inputs: Mapping[str, Any]) -> str:
    """Every candidate, after `inputs`: what ran, as `stackctl simulate`'s summary.json records it (the stack file's
    and the trace's sha256 among them), so the file alone says whether the tree still holds what it planned."""
    chosen = plan.chosen
    document: dict[str, Any] = {
        "inputs": dict(inputs),
        "stack": plan.stack,
        "deployment": plan.deployment,
        "model": plan.model,
        "models_not_simulated": list(plan.unplanned),
        # With several models simulated together: each, and its share of the trace's requests.
        **({"models": dict(zip(plan.models, plan.mix, strict=True))} if plan.models else {}),
        "trace": plan.trace,
        "slo_ms": plan.bounds.slo_ms,
        "p99_slo_ms": plan.bounds.p99_ms,
        "max_rejected_pct": plan.bounds.max_rejected_pct,
        "seeds": list(plan.seeds),
        "budget": plan.budget,
        "chosen": chosen.index if chosen else None,
        **(
            {
                "wake_budget_s": plan.bounds.wake_budget_s,
                "scale_to_zero": None if chosen is None else chosen.settings.min_replicas == 0,
                "chosen_at_zero": zero_figures(chosen) if chosen and chosen.settings.min_replicas == 0 else None,
            }
            if plan.bounds.wake_budget_s is not None
            else {}
        ),
        "shapes": [
            {
                "name": shape.name,
                "what": shape.what,
                "seconds": len(shape.rate),
                "peak_rps": float(shape.rate.max()),
                "yardstick_oracle_gpu_hours": yardstick,
            }
            for shape, yardstick in zip(plan.shapes, plan.yardsticks, strict=True)
        ],
        "changes": [{"path": _place(path), "value": value} for path, value in plan.changes.items()],
        "holdings": [
            {
                "shape": h.shape,
                "field": h.field,
                "value": list(h.value) if isinstance(h.value, tuple) else h.value,
                "tried": [
                    {"field": field, "value": value, "held": run.held, "multiple": run.multiple, "mean": run.mean}
                    for field, value, run in h.tried
                ],
                "refused": [{"field": field, "value": value, "why": why} for field, value, why in h.refused],
            }
            for h in plan.holdings
        ],
        "options": {
            name: [list(v) if isinstance(v, tuple) else v for v in plan.space.options[name]]
            for name in knobs(plan.current.settings)
        },
        "candidates": [
            {
                "index": r.index,
                "origin": r.origin,
                "passed": r.passed,
                "failures": list(r.failures),
                "settings": r.settings.as_json(),
                "mean": r.mean,
                "per_seed": [{"seed": plan.seeds[i], **run} for i, run in enumerate(r.per_seed)],
                "multiple": r.multiple,
                "cost": r.cost,
                "unheld": list(r.unheld),
                "shapes": [
                    {
                        "shape": run.shape,
                        "held": run.held,
                        "failures": list(run.failures),
                        "multiple": run.multiple,
                        "mean": run.mean,
                        "per_seed": [{"seed": plan.seeds[i], **seed} for i, seed in enumerate(run.per_seed)],
                    }
                    for run in r.shapes
                ],
            }
            for r in plan.results
        ],
    }
    return json.dumps(document, indent=2) + "\n"


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
            f"binding: the nearest cheaper candidate, #{bound.nearest.index}, lost on {_lost_on(plan, bound.nearest)}"
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


def write_outputs(plan: Plan, inputs: Mapping[str, Any], patch: str | None, patch_name: str, out: Path) -> list[Path]:
    """plan.md, plan.json, pareto.png and the stack file's patch (None: none, the file cannot take the plan), into
    a folder stackctl plan may write."""
    files = {
        PLAN_FILE: plan_markdown(plan).encode(),
        JSON_FILE: plan_json(plan, inputs).encode(),
        PARETO_FILE: pareto_png(plan),
    }
    if patch is not None:
        files[patch_name] = patch.encode()
    return claim(out, "plan").replace(files)
