"""`stackctl plan --stream-profile`: the fewest GPU-hours that hold a streaming model's p95 time-to-first-token
objective on a trace, over the `time-to-first-token` trigger's target and the replica floor, beside the oracle's.

Each candidate runs the deployment over the trace (simulator/stream_fleet.py); it holds where the p95 over every
request of the trace is within the objective. The cheapest that holds is chosen, and its values become the stack
file's patch: `scaling.timeToFirstTokenTarget` and the deployment's `replicas.min`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from planner.settings import Place, Value
from platform_config.schema import section_key
from simulator.stream_fleet import FleetRun, FleetSettings, TtftTable, oracle_replicas, run_fleet, weighted_p95

TARGETS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""The trigger targets tried (`scaling.timeToFirstTokenTarget`, above 0 up to 1)."""
FLOORS = 4
"""Replica floors tried: the stack's and up to this many above it, within `replicas.max`."""


@dataclass(frozen=True)
class StreamCandidate:
    target: float
    min_replicas: int
    gpu_hours: float
    ttft_p95_ms: float
    """inf: more than 5% of the requests met a saturated replica."""
    held: bool


@dataclass(frozen=True)
class StreamPlan:
    deployment: str
    model: str
    objective_ms: int
    gpus_per_pod: int
    current: StreamCandidate
    candidates: tuple[StreamCandidate, ...]
    oracle_gpu_hours: float
    oracle_ttft_p95_ms: float

    @property
    def chosen(self) -> StreamCandidate | None:
        held = [c for c in self.candidates if c.held]
        return min(held, key=lambda c: (c.gpu_hours, -c.target, c.min_replicas)) if held else None

    @property
    def changes(self) -> dict[Place, Value]:
        """The stack-file values the chosen candidate changes; none without one."""
        chosen = self.chosen
        if chosen is None:
            return {}
        out: dict[Place, Value] = {}
        if chosen.target != self.current.target:
            out[(section_key("scaling"), "timeToFirstTokenTarget")] = chosen.target
        if chosen.min_replicas != self.current.min_replicas:
            place = (section_key("serving"), "deployments", self.deployment, "replicas", "min")
            out[place] = chosen.min_replicas
        return out


def _candidate(
    rate: NDArray[np.float64], table: TtftTable, settings: FleetSettings, gpus: int, objective_ms: int
) -> StreamCandidate:
    run: FleetRun = run_fleet(rate, table, settings)
    p95_ms = run.ttft_p95 * 1000
    return StreamCandidate(
        settings.target, settings.min_replicas, run.replica_seconds * gpus / 3600, p95_ms, p95_ms <= objective_ms
    )


def plan_stream(
    rate: NDArray[np.float64],
    table: TtftTable,
    base: FleetSettings,
    *,
    deployment: str,
    model: str,
    objective_ms: int,
    gpus_per_pod: int,
    highest_floor: int | None = None,
) -> StreamPlan:
    """Every target and floor tried over `rate` (requests per second, a value a second), from the stack's `base`;
    `highest_floor`, the most `replicas.min` may be (a fallback's or a pause's replicas must stay within the range)."""
    top = min(base.max_replicas, base.min_replicas + FLOORS, highest_floor or base.max_replicas)
    floors = range(base.min_replicas, max(top, base.min_replicas) + 1)
    candidates = tuple(
        _candidate(rate, table, replace(base, target=target, min_replicas=floor), gpus_per_pod, objective_ms)
        for floor in floors
        for target in TARGETS
    )
    oracle = oracle_replicas(rate, table, base.objective_seconds, base.max_replicas)
    return StreamPlan(
        deployment,
        model,
        objective_ms,
        gpus_per_pod,
        _candidate(rate, table, base, gpus_per_pod, objective_ms),
        candidates,
        float(oracle.sum()) * gpus_per_pod / 3600,
        weighted_p95(table, rate, oracle) * 1000,
    )


def _ms(value: float) -> str:
    return "saturated" if not np.isfinite(value) else f"{value:.0f} ms"


def stream_plan_markdown(plan: StreamPlan, trace: str) -> str:
    """plan.md: the chosen candidate against the current settings and the oracle, then every candidate."""
    chosen = plan.chosen
    lines = [
        f"# Stream plan: {plan.deployment}/{plan.model} on {trace}",
        "",
        f"p95 time-to-first-token objective {plan.objective_ms} ms (serving.tokenObjectives); each candidate runs the "
        "deployment over the trace as the time-to-first-token trigger scales it (simulator/stream_fleet.py).",
        "",
        "| | target | replicas.min | GPU-hours | x oracle | TTFT p95 | holds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]

    def row(name: str, c: StreamCandidate) -> str:
        ratio = c.gpu_hours / plan.oracle_gpu_hours if plan.oracle_gpu_hours else float("nan")
        held = "yes" if c.held else "no"
        return (
            f"| {name} | {c.target:g} | {c.min_replicas} | {c.gpu_hours:.3f} | {ratio:.2f} | {_ms(c.ttft_p95_ms)} | "
            f"{held} |"
        )

    lines.append(row("current", plan.current))
    if chosen is not None:
        lines.append(row("chosen", chosen))
    lines.append(
        f"| oracle | | | {plan.oracle_gpu_hours:.3f} | 1.00 | {_ms(plan.oracle_ttft_p95_ms)} | "
        "perfect foresight, instant pods |"
    )
    lines += ["", "Every candidate:", "", "| target | replicas.min | GPU-hours | TTFT p95 | holds |"]
    lines.append("| ---: | ---: | ---: | ---: | --- |")
    for c in plan.candidates:
        held = "yes" if c.held else "no"
        lines.append(f"| {c.target:g} | {c.min_replicas} | {c.gpu_hours:.3f} | {_ms(c.ttft_p95_ms)} | {held} |")
    if chosen is None:
        lines += ["", "No candidate holds the objective: raise replicas.max, or start pods sooner."]
    if plan.oracle_ttft_p95_ms > plan.objective_ms:
        lines += [
            "",
            f"Even the oracle misses the objective ({_ms(plan.oracle_ttft_p95_ms)}): replicas.max is too few for the "
            "trace's peak.",
        ]
    return "\n".join(lines) + "\n"


def stream_plan_json(plan: StreamPlan, trace: str) -> str:
    def figures(c: StreamCandidate) -> dict[str, Any]:
        p95 = c.ttft_p95_ms if np.isfinite(c.ttft_p95_ms) else None
        return {"target": c.target, "min_replicas": c.min_replicas, "gpu_hours": c.gpu_hours, "ttft_p95_ms": p95}

    chosen = plan.chosen
    return json.dumps(
        {
            "deployment": plan.deployment,
            "model": plan.model,
            "trace": trace,
            "objective_ms": plan.objective_ms,
            "current": figures(plan.current),
            "chosen": None if chosen is None else figures(chosen),
            "oracle_gpu_hours": plan.oracle_gpu_hours,
            "candidates": [{**figures(c), "held": c.held} for c in plan.candidates],
        },
        indent=2,
    )
