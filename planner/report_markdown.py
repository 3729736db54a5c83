"""plan.md, the choice and why: the load and the objective, the chosen candidate's tail, the models planned together or
left out, the chosen settings beside the current ones and the runner-up, the constraint that bound the choice, and
the tables of every passed and failed candidate. Its sections on the replica floor (planner.report_floors) and on
the shapes (planner.report_shapes) are written apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import cast

from planner.pareto import binding
from planner.plan import Plan
from planner.report_floors import floor_section, zero_section
from planner.report_format import (
    KIND_TEXT,
    cost_text,
    figure_text,
    knob_label,
    lost_on,
    place_text,
    value_text,
    windows_text,
)
from planner.report_shapes import held_text, shapes_section
from planner.search import ORACLE_TARGET, Result
from planner.settings import Floor, knob_value, knobs, target_place

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


def _knob_shown(knob: str, value: object) -> str:
    return windows_text(cast(Floor, value)) if knob == "daily_floor" else value_text(value)


def _label(plan: Plan, knob: str) -> str:
    """knob_label, naming the planned model's own knobs when the plan runs several models."""
    return knob_label(knob, plan.model if plan.models else None)


def _differs(plan: Plan, a: Result, b: Result) -> list[str]:
    return [_label(plan, k) for k in knobs(a.settings) if knob_value(a.settings, k) != knob_value(b.settings, k)]


def _binding(plan: Plan, chosen: Result) -> str:
    """Which constraint stopped a cheaper candidate: counted over every one below the chosen's cost that failed the
    trace or held fewer shapes."""
    bound = binding(plan.results, chosen)
    tail = (
        "" if plan.bounds.p99_ms is None else f", p99 at {figure_text(chosen, 'p99_ms')} ms of {plan.bounds.p99_ms:g}"
    )
    headroom = (
        f"On the trace it runs p95 at {figure_text(chosen, 'p95_ms')} ms of the {plan.bounds.slo_ms:g} ms SLO{tail} "
        f"and rejects {figure_text(chosen, 'rejected_pct')}% against a bound of {plan.bounds.max_rejected_pct:g}%."
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
        f"fewer shapes ({counts}). The nearest, #{nearest.index} at {cost_text(nearest)}, lost on "
        f"{lost_on(plan, nearest)}. {headroom}"
    )


def _failed_table(failed: Sequence[Result]) -> list[str]:
    lines = ["| # | origin | GPU-hours | p95 ms | p99 ms | rejected % | why |", "|---:|---|---:|---:|---:|---:|---|"]
    lines += [
        f"| {r.index} | {r.origin} | {figure_text(r, 'gpu_hours')} | {figure_text(r, 'p95_ms')} | "
        f"{figure_text(r, 'p99_ms')} | {figure_text(r, 'rejected_pct')} | {'; '.join(r.failures)} |"
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
        f"| {rank_number} | {r.index} | {r.origin} | {cost_text(r)} | {held_text(plan, r)} | "
        f"{figure_text(r, 'gpu_hours')} | {figure_text(r, 'p95_ms')} | {figure_text(r, 'p99_ms')} | "
        f"{figure_text(r, 'rejected_pct')} |"
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
        f"from {figure_text(current, 'p95_ms')} ms to {figure_text(chosen, 'p95_ms')} ms, {bound}."
        if before > 0
        else f"Tail: the chosen #{chosen.index} runs p99 at {after:.1f} ms on the trace, {bound}."
    )
    # With several models each has its own tail, which the deployment's mixes away.
    per_model = [
        f"{model} {figure_text(current, f'{model}/p99_ms')} ms to {figure_text(chosen, f'{model}/p99_ms')} ms"
        for model in plan.models
    ]
    return text + (f" Per model, p99 from {', '.join(per_model)}." if per_model else "")


COST_LABEL = "cost: worst-case GPU-hours over the shapes ÷ the current settings' oracle"
HELD_LABEL = f"shapes held within {ORACLE_TARGET:g}× the current settings' oracle"


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
            f"| {label} #{result.index} | {model} | {figure_text(result, f'{model}/p95_ms')} | "
            f"{figure_text(result, f'{model}/p99_ms')} | {figure_text(result, f'{model}/rejected_pct')} |"
            for model in plan.models
        ]
    return [*lines, ""]


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
            where = place_text(plan.places[name]) if name in plan.places else "derived from the batching config"
            if name == "target" and chosen.settings.signal != current.settings.signal:
                # Another signal reads its own target key (planner.settings.edits moves it).
                where = place_text(target_place(chosen.settings.signal))
            changed = "**" if old != new else ""
            lines.append(
                f"| {_label(plan, name)} | {_knob_shown(name, old)} | {changed}{_knob_shown(name, new)}{changed} "
                f"| {where} |"
            )
        lines += ["", f"| result on the trace | current #0 | chosen #{chosen.index} |"]
        lines[-1] += f" runner-up #{runner_up.index} |" if runner_up else ""
        lines.append("|---|---:|---:|" + ("---:|" if runner_up else ""))
        for key, label in METRICS:
            row = f"| {label} | {figure_text(current, key)} | {figure_text(chosen, key)} |"
            lines.append(row + (f" {figure_text(runner_up, key)} |" if runner_up else ""))
        compared = [current, chosen, *([runner_up] if runner_up else [])]
        lines.append(f"| {COST_LABEL} | " + " | ".join(cost_text(r) for r in compared) + " |")
        lines.append(f"| {HELD_LABEL} | " + " | ".join(held_text(plan, r) for r in compared) + " |")
        lines += ["", "## Why", "", f"- {_binding(plan, chosen)}"]
        if runner_up:
            lines.append(
                f"- Runner-up: #{runner_up.index} ({runner_up.origin}), {cost_text(runner_up)} the oracle at worst, "
                f"{figure_text(runner_up, 'gpu_hours')} GPU-hours and p95 {figure_text(runner_up, 'p95_ms')} ms on the "
                f"trace; it differs in {', '.join(_differs(plan, chosen, runner_up))}."
            )
        else:
            lines.append("- Runner-up: none; no other candidate passed.")
        status = "pass" if current.passed else f"fail ({'; '.join(current.failures)})"
        lines.append(f"- The current settings (#0) {status}.")
    zero = [*floor_section(plan), *zero_section(plan)]
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
        *shapes_section(plan),
        "## Passed candidates",
        "",
        *(_passed_table(plan) if ranked else ["None."]),
        "",
        "## Failed candidates",
        "",
        *(_failed_table(failed) if failed else ["None."]),
    ]
    return "\n".join(lines) + "\n"
