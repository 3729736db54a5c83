"""What `stackctl plan` writes: plan.md (the choice and why), plan.json (every candidate), pareto.png."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from planner.pareto import binding, pareto_front
from planner.plan import Plan
from planner.search import Result
from planner.settings import FIELDS, Place
from stackctl.out_folder import claim

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
    "target": "signal target",
}
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
)
KIND_TEXT = {"p95": "p95 over the SLO", "rejected": "rejections over the bound", "invalid": "not a valid stack"}


def _place(place: Place) -> str:
    return ".".join(place)


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


def _differs(a: Result, b: Result) -> list[str]:
    return [LABELS[name] for name in FIELDS if getattr(a.settings, name) != getattr(b.settings, name)]


def _binding(plan: Plan, chosen: Result) -> str:
    """Which constraint stopped a cheaper candidate: counted over every failed one below the chosen's GPU-hours."""
    bound = binding(plan.results, chosen)
    headroom = (
        f"It runs p95 at {_figure(chosen, 'p95_ms')} ms of the {plan.bounds.slo_ms:g} ms SLO and rejects "
        f"{_figure(chosen, 'rejected_pct')}% against a bound of {plan.bounds.max_rejected_pct:g}%."
    )
    if bound is None:
        return (
            f"Nothing cheaper was found: no candidate used fewer GPU-hours, so the replica floor "
            f"(min {chosen.settings.min_replicas}) and the load bound the cost, not the SLO. {headroom}"
        )
    counts = ", ".join(f"{KIND_TEXT[kind]}: {count}" for kind, count in bound.counts.items())
    nearest = bound.nearest
    return (
        f"Bound by **{KIND_TEXT[bound.kind]}**: all {len(bound.cheaper)} cheaper candidates failed ({counts}). The "
        f"nearest, #{nearest.index} at {_figure(nearest, 'gpu_hours')} GPU-hours, failed on "
        f"{'; '.join(nearest.failures)}. {headroom}"
    )


def _failed_table(failed: Sequence[Result]) -> list[str]:
    lines = ["| # | origin | GPU-hours | p95 ms | rejected % | why |", "|---:|---|---:|---:|---:|---|"]
    lines += [
        f"| {r.index} | {r.origin} | {_figure(r, 'gpu_hours')} | {_figure(r, 'p95_ms')} | "
        f"{_figure(r, 'rejected_pct')} | {'; '.join(r.failures)} |"
        for r in failed
    ]
    return lines


def plan_markdown(plan: Plan) -> str:
    current, chosen, ranked = plan.current, plan.chosen, plan.ranked
    runner_up = ranked[1] if len(ranked) > 1 else None
    failed = [r for r in plan.results if not r.passed]
    lines = [
        f"# stackctl plan: {plan.stack} / {plan.deployment} / {plan.model}",
        "",
        f"Load: {plan.trace}. Objective: the fewest GPU-hours with p95 <= {plan.bounds.slo_ms:g} ms and rejected "
        f"<= {plan.bounds.max_rejected_pct:g}% on every one of {len(plan.seeds)} seeds "
        f"({', '.join(map(str, plan.seeds))}); figures are means over the seeds. {len(plan.results)} candidates "
        f"evaluated (budget {plan.budget}, seed {plan.seed}).",
        "",
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
        for name in FIELDS:
            old, new = getattr(current.settings, name), getattr(chosen.settings, name)
            where = _place(plan.places[name]) if name in plan.places else "derived from the batching config"
            changed = "**" if old != new else ""
            lines.append(f"| {LABELS[name]} | {_shown(old)} | {changed}{_shown(new)}{changed} | {where} |")
        lines += ["", f"| result | current #0 | chosen #{chosen.index} |"]
        lines[-1] += f" runner-up #{runner_up.index} |" if runner_up else ""
        lines.append("|---|---:|---:|" + ("---:|" if runner_up else ""))
        for key, label in METRICS:
            row = f"| {label} | {_figure(current, key)} | {_figure(chosen, key)} |"
            lines.append(row + (f" {_figure(runner_up, key)} |" if runner_up else ""))
        lines += ["", "## Why", "", f"- {_binding(plan, chosen)}"]
        if runner_up:
            lines.append(
                f"- Runner-up: #{runner_up.index} ({runner_up.origin}), {_figure(runner_up, 'gpu_hours')} GPU-hours, "
                f"p95 {_figure(runner_up, 'p95_ms')} ms; it differs in {', '.join(_differs(chosen, runner_up))}."
            )
        else:
            lines.append("- Runner-up: none; no other candidate passed.")
        status = "pass" if current.passed else f"fail ({'; '.join(current.failures)})"
        lines.append(f"- The current settings (#0) {status}.")
    kinds = Counter(kind for r in failed for kind in r.failure_kinds())
    why = ", ".join(f"{KIND_TEXT[kind]}: {count}" for kind, count in sorted(kinds.items()))
    lines.append(f"- {len(failed)} of {len(plan.results)} candidates failed" + (f" ({why})." if why else "."))
    fixed = [LABELS[name] for name in FIELDS if len(plan.space.options[name]) == 1]
    if fixed:
        lines.append(
            f"- Held at their current values (no other value of the grid validates, or the signal derives it): "
            f"{', '.join(fixed)}."
        )
    lines += [
        "- Batching values go to the model's own settings (triton-platform:models), which override "
        "serving.modelDefaults for this model only: the plan measured no other model.",
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
        "trace": plan.trace,
        "slo_ms": plan.bounds.slo_ms,
        "max_rejected_pct": plan.bounds.max_rejected_pct,
        "seeds": list(plan.seeds),
        "budget": plan.budget,
        "chosen": chosen.index if chosen else None,
        "changes": [{"path": _place(path), "value": value} for path, value in plan.changes.items()],
        "options": {
            name: [list(v) if isinstance(v, tuple) else v for v in plan.space.options[name]] for name in FIELDS
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
            }
            for r in plan.results
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def pareto_png(plan: Plan) -> bytes:
    import matplotlib  # noqa: PLC0415 - only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    def xy(results: Sequence[Result]) -> tuple[list[float], list[float]]:
        shown = [r for r in results if r.mean["gpu_hours"] is not None and r.mean["p95_ms"] is not None]
        return [r.mean["gpu_hours"] or 0.0 for r in shown], [r.mean["p95_ms"] or 0.0 for r in shown]

    bound = binding(plan.results, plan.chosen) if plan.chosen is not None else None
    stopped = [] if bound is None else [r for r in bound.cheaper if bound.kind in r.failure_kinds()]
    stopped_ids = {r.index for r in stopped}
    figure, axes = plt.subplots(figsize=(9, 6), constrained_layout=True)
    axes.scatter(*xy([r for r in plan.results if r.passed]), s=14, color="tab:green", label="passed")
    others = [r for r in plan.results if not r.passed and r.index not in stopped_ids]
    axes.scatter(*xy(others), s=14, marker="x", color="0.6", label="failed (never on the front)")
    axes.plot(*xy(pareto_front(plan.results)), color="tab:blue", marker="o", label="Pareto front of the passed")
    axes.scatter(*xy([plan.current]), s=120, marker="s", facecolors="none", color="black", label="current (#0)")
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
    if plan.chosen is not None and bound is None:
        axes.text(
            0.02,
            0.04,
            f"binding: no candidate used fewer GPU-hours than #{plan.chosen.index}; the replica floor "
            f"(min {plan.chosen.settings.min_replicas}) and the load bound the cost",
            transform=axes.transAxes,
            fontsize=8,
        )
    if bound is not None:
        # The binding constraint: every cheaper candidate that failed on it, and the nearest one named.
        axes.scatter(
            *xy(stopped),
            s=24,
            marker="x",
            color="tab:orange",
            label=f"cheaper, failed: {KIND_TEXT[bound.kind]} (binding)",
        )
        x, y = xy([bound.nearest])
        if x:
            axes.annotate(
                f"#{bound.nearest.index}: {'; '.join(bound.nearest.failures)}",
                (x[0], y[0]),
                xytext=(0.02, 0.04),
                textcoords="axes fraction",
                fontsize=8,
                arrowprops={"arrowstyle": "->", "color": "tab:orange"},
            )
    axes.set_yscale("log")
    axes.set_xlabel("GPU-hours (mean over seeds)")
    axes.set_ylabel("p95 ms (mean over seeds, log)")
    axes.set_title(f"{plan.stack} / {plan.deployment} / {plan.model}: {len(plan.results)} candidates")
    axes.legend(loc="upper right")
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
