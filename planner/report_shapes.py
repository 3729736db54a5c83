"""plan.md's Shapes section: each shape derived from the trace, the current and the chosen settings' figures on it, and
why the chosen (else the current) settings do not hold one within ORACLE_TARGET of the current settings' oracle:
its steepest rise against a pod start, which candidates hold it, and the cheapest single reaction setting that
does (planner.holding)."""

from __future__ import annotations

import math
from typing import Any

from planner.plan import Plan
from planner.report_format import LABELS, REACTION_LABELS, cost_text, value_text
from planner.search import ORACLE_TARGET, Result, ShapeRun, rank
from planner.shapes import rise


def held_text(plan: Plan, result: Result) -> str:
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
        f"#{within[0].index}, at {cost_text(within[0])} at worst)"
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
                f"; the nearest, **{LABELS[field]} {value_text(value)}**, rejects {run.mean['rejected_pct']:.3f}% at "
                f"{run.mean['gpu_hours']:.3f} GPU-hours on the shape"
            )
        if found.refused:
            # Per field its refused values and the first's reason: the floors above a shared bound share one.
            by_field: dict[str, list[tuple[Any, str]]] = {}
            for field, value, why in found.refused:
                by_field.setdefault(field, []).append((value, why))
            refused = "; ".join(
                f"{LABELS[field]} {', '.join(value_text(v) for v, _ in values)} "
                f"({value_text(values[0][0])}: {values[0][1]})"
                for field, values in by_field.items()
            )
            text += f"; refused by the stack's validation: {refused}"
        return text
    was = getattr(plan.chosen.settings if plan.chosen is not None else plan.current.settings, found.field)
    run = found.run
    return (
        f"the cheapest single reaction setting that holds it (of {len(found.tried)} tried on {subject} settings) is "
        f"**{LABELS[found.field]} {value_text(found.value)}** (now {value_text(was)}): "
        f"{run.mean['gpu_hours']:.3f} GPU-hours on the shape, {value_text(run.multiple)}× the current settings' "
        f"oracle, p95 {run.mean['p95_ms']:.1f} ms, rejected {run.mean['rejected_pct']:.3f}%"
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


def shapes_section(plan: Plan) -> list[str]:
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
