"""plan.json, every candidate: after the inputs that ran, the bounds, the shapes, the stack file's changes, the
reaction settings tried on a shape no candidate holds, each knob's options, and each candidate's settings and
figures, mean and per seed, on the trace and on each shape."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from planner.plan import Plan
from planner.report_format import place_text, zero_figures
from planner.settings import knobs


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
        "changes": [{"path": place_text(path), "value": value} for path, value in plan.changes.items()],
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
