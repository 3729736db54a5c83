"""`stackctl simulate`: one deployment's scaling and latency under a load, held to its SLO."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.shapes import MAX_HOURS, MAX_RPS, MAX_SECONDS, MAX_SEED, PROFILE_SHAPES, TRACE_RULES
from stackctl.command import Command, Exit, print_json, stack_arguments
from stackctl.options import (
    hours_argument,
    outage_argument,
    peak_rps_argument,
    rejected_pct_argument,
    seed_argument,
    shape_argument,
)
from stackctl.progress import Bar

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from platform_config.loader import StackConfig
    from simulator.scenario import Scenario
    from simulator.timeline import Timeline
    from stackctl.run_inputs import NamedLoad


def add_arguments(parser: argparse.ArgumentParser) -> None:
    stack_arguments(parser)
    load = parser.add_mutually_exclusive_group(required=True)
    load.add_argument(
        "--trace",
        metavar="FILE",
        help=f"CSV: {TRACE_RULES}; each rate holding until the next row's time; or a column per model, "
        "t_seconds,MODEL,MODEL..., to run the deployment's models together (docs/simulation.md, Several models)",
    )
    load.add_argument(
        "--profile",
        type=shape_argument,
        choices=PROFILE_SHAPES,
        help=f"a built-in load shape: {', '.join(PROFILE_SHAPES)}",
    )
    parser.add_argument(
        "--peak-rps",
        type=peak_rps_argument,
        help=f"peak of --profile, above 0 and at most {MAX_RPS} (default: twice the load that fires the queue "
        "trigger on the replica floor)",
    )
    parser.add_argument(
        "--hours",
        type=hours_argument,
        help=f"length of --profile, from 1/60 (one minute) to {MAX_HOURS} (2 days) (default 1)",
    )
    parser.add_argument("--deployment", metavar="NAME", help="default: the first deployment")
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="default: scaling.simulation.model, else the first profiled; one model alone, whatever the "
        "stack's scaling.simulation.shares",
    )
    parser.add_argument("--out", default="simulation", metavar="DIR", help="output folder (default simulation/)")
    parser.add_argument(
        "--seed", type=seed_argument, default=0, help=f"random seed, an integer from 0 to {MAX_SEED} (default 0)"
    )
    parser.add_argument(
        "--max-rejected-pct",
        type=rejected_pct_argument,
        default=0.1,
        help="the SLO's bound on rejected requests in %% (default 0.1, as `stackctl plan`'s); p95's is the stack's "
        "serving.p95LatencySloMs",
    )
    parser.add_argument(
        "--metrics-outage",
        type=outage_argument,
        action="append",
        default=[],
        metavar="START:SECONDS",
        help="Prometheus unreachable from second START for SECONDS (KEDA's fallback): finite, START >= 0 and "
        f"inside the run, 0 < SECONDS <= {MAX_SECONDS}; repeatable",
    )
    parser.add_argument(
        "--compare",
        metavar="REF",
        help="also run the stack file as git revision REF (a branch, tag or commit that has it); print deltas",
    )
    parser.add_argument("--no-plot", action="store_true", help="skip timeline.png")


def slo_failures(result: dict[str, Any], max_rejected_pct: float, p99_slo_ms: float | None = None) -> list[str]:
    """How a run missed its SLO: p95 above the stack's bound, p99 above its bound when one is set, or more rejected
    than allowed; empty when it held."""
    failures = []
    if math.isnan(result["p95_ms"]):
        # No request served (simulator.timeline.percentiles of an empty histogram): nothing was measured, so no
        # "p95 nan ms". The inputs refuse a load too small to serve any (stackctl.run_inputs.measurable).
        failures.append("p95 not measured: no request was served")
    else:
        if not result["p95_ms"] <= result["slo_ms"]:
            failures.append(f"p95 {result['p95_ms']:.4g} ms > {result['slo_ms']:g} ms")
        if p99_slo_ms is not None and not result["p99_ms"] <= p99_slo_ms:
            failures.append(f"p99 {result['p99_ms']:.4g} ms > {p99_slo_ms:g} ms")
    if not result["rejected_pct"] <= max_rejected_pct:
        failures.append(f"rejected {result['rejected_pct']:.4g}% > {max_rejected_pct:g}%")
    return failures


def model_table(per_model: dict[str, dict[str, Any]]) -> str:
    """Each model's p50, p95, p99, rejected % and requests, as lines under the run's figures; an ensemble's (with
    `steps`) are end to end, which a line under the table says."""
    lines = [f"  {'model':<16} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'rejected %':>11} {'requests':>12}"]
    lines += [
        f"  {model:<16} {f['p50_ms']:>9.1f} {f['p95_ms']:>9.1f} {f['p99_ms']:>9.1f} {f['rejected_pct']:>11.3f} "
        f"{f['requests']:>12,}"
        for model, f in per_model.items()
    ]
    lines += [
        f"  {model}: an ensemble, end to end over its steps {', '.join(f['steps'])}"
        for model, f in per_model.items()
        if "steps" in f
    ]
    return "\n".join(lines)


def warned_inputs(
    args: argparse.Namespace, command: str, *, models: bool = False
) -> tuple[Path, StackConfig, Scenario, NDArray[np.float64], Scenario | None, dict[str, Any], NamedLoad]:
    """What `simulate` and `plan` run (stackctl.run_inputs; `models`: several models of the deployment may run
    together), the head profile's warnings printed on stderr: a profile measured on a config that differs from the
    stack's in a field that changes tau(b)."""
    from stackctl.run_inputs import run_inputs  # noqa: PLC0415

    inputs = run_inputs(args, models=models)
    for warning in inputs[2].profile_warnings:
        print(f"stackctl {command}: warning: {warning}", file=sys.stderr)
    return inputs


def ensemble_summaries(
    args: argparse.Namespace, loaded: StackConfig, head: Scenario, named: NamedLoad, timeline: Timeline
) -> dict[str, dict[str, Any]]:
    """Each ensemble the load (`named`, before its ensembles' rates went to their steps) calls by name, end to end
    from its steps' latencies (simulator.ensembles, seeded with the run's seed), with the requests offered to it
    (its rate summed) and its `steps`; empty when it calls none."""
    from simulator.ensembles import end_to_end  # noqa: PLC0415
    from simulator.scenario import loaded_ensembles  # noqa: PLC0415
    from simulator.timeline import ModelCounts  # noqa: PLC0415

    if args.model:
        return {}
    where = args.trace or f"--profile {args.profile}"
    configs, ensembles = loaded_ensembles(loaded, args.deployment, named.names, named.rate, where)
    if not ensembles:
        return {}
    counts = timeline.per_model or {
        # One model simulated alone (an ensemble of one step) keeps no per-model counts: the run's are its own.
        head.model: ModelCounts(timeline.histogram.sum(axis=0), timeline.arrived, timeline.served, timeline.dropped)
    }
    histograms = {m: c.histogram for m, c in counts.items()}
    rejected = {m: float(c.summary()["rejected_pct"]) for m, c in counts.items()}
    return {
        name: {**end_to_end(configs, name, histograms, rejected, seed=args.seed), "requests": round(float(rps.sum()))}
        for name, rps in ensembles.items()
    }


def print_figures(result: dict[str, Any], keys: list[str]) -> None:
    """The run's figures of `keys`, a line each."""
    for key in keys:
        value = result[key]
        if value is None:
            # reaction_seconds, and at scale to zero the waits when no request waited.
            why = "no request waited" if key.startswith("waited") else "demand never exceeded ready capacity"
            print(f"  {key}: none ({why})")
        else:
            print(f"  {key}: {value:.1f}" if isinstance(value, float) else f"  {key}: {value}")


def floor_one_saving(head: Scenario, rate: NDArray[np.float64], seed: int) -> dict[str, float]:
    """For a deployment at `replicas.min` 0: the GPU-hours of the same load kept at one replica instead, and the
    saving, both from the fluid model (simulator.fluid: a second's work, where a second detailed run could take
    minutes), so that the saving compares like with like; the detailed run's own `gpu_hours` stays as measured."""
    from simulator import fluid  # noqa: PLC0415
    from simulator.scenario import at_floor_one  # noqa: PLC0415

    at_one = float(fluid.evaluate(at_floor_one(head), rate, seed)["gpu_hours"] or 0)
    at_zero = float(fluid.evaluate(head, rate, seed)["gpu_hours"] or 0)
    return {"gpu_hours_at_min_1": at_one, "gpu_hours_saved": at_one - at_zero}


def run(args: argparse.Namespace) -> Exit:
    from simulator.engine import simulate  # noqa: PLC0415
    from simulator.oracle import oracle  # noqa: PLC0415
    from simulator.report import (  # noqa: PLC0415
        FIGURES,
        WAKE_FIGURES,
        compare,
        plot_title,
        write_compare,
        write_outputs,
    )
    from simulator.summaries import model_summaries, summary  # noqa: PLC0415
    from stackctl.run_inputs import within_request_budget  # noqa: PLC0415

    _, loaded, head, rate, base, inputs, named = warned_inputs(args, "simulate", models=True)
    within_request_budget(rate, inputs["trace"], 2 if base is not None else 1)
    bar = Bar("simulate", len(rate), "s")
    try:
        timeline = simulate(head, rate, args.seed, args.metrics_outage, progress=bar.update)
    finally:
        bar.close()
    run_summary = summary(head, timeline)
    p99_slo_ms = loaded.config.serving.p99_latency_slo_ms
    bound = oracle(head, rate, None, None if p99_slo_ms is None else p99_slo_ms / 1000)
    # The inputs lead summary.json, so that the file alone says what ran and how to rerun it.
    result = {"inputs": inputs, **run_summary, **bound.figures(float(run_summary["gpu_hours"] or 0))}
    if head.scales_to_zero:
        result |= floor_one_saving(head, rate, args.seed)
    per_model = model_summaries(timeline) | ensemble_summaries(args, loaded, head, named, timeline)
    if per_model:
        result["models"] = per_model
    total = rate.reshape(len(rate), -1).sum(axis=1)
    title = None if args.no_plot else plot_title(head, float(total.max()), args.seed)
    write_outputs(head, timeline, bound, result, Path(args.out), plot_title=title)
    failures = slo_failures(result, args.max_rejected_pct, p99_slo_ms)
    for model, figures in per_model.items():
        # Each model held to the deployment's SLO: its own p95, p99 and rejections.
        own = {**figures, "slo_ms": result["slo_ms"]}
        failures += [f"{model}: {failure}" for failure in slo_failures(own, args.max_rejected_pct, p99_slo_ms)]
    keys = list(FIGURES)
    if head.scales_to_zero:
        keys += WAKE_FIGURES
    if args.metrics_outage:
        keys += ["metrics_failing_seconds", "fallback_seconds"]
    table = None
    if base is not None:
        table = compare(base, head, rate, args.seed, args.metrics_outage)
        write_compare(Path(args.out), table)
    if args.json:
        print_json(
            {
                "command": "simulate",
                "passed": not failures,
                "file": loaded.source,
                "stack": loaded.stack,
                "deployment": head.deployment,
                "model": head.model,
                **({"models": per_model} if per_model else {}),
                "out": args.out,
                "slo": {"p95_ms": result["slo_ms"], "p99_ms": p99_slo_ms, "max_rejected_pct": args.max_rejected_pct},
                "failures": failures,
                "figures": {key: result[key] for key in keys},
                "compare": args.compare,
            }
        )
    else:
        print(
            f"{loaded.source}: {head.deployment}/{'+'.join(head.models)}, {len(rate)} s simulated; "
            f"outputs in {args.out}"
        )
        print_figures(result, keys)
        if per_model:
            print(model_table(per_model))
        verdict = "; ".join(failures) if failures else "held"
        tail = "" if p99_slo_ms is None else f", p99 <= {p99_slo_ms:g} ms"
        print(f"  SLO (p95 <= {result['slo_ms']:g} ms{tail}, rejected <= {args.max_rejected_pct:g}%): {verdict}")
        if table is not None:
            print(f"\nAgainst {args.compare}:\n{table}")
    return Exit.FAILED if failures else Exit.PASSED


COMMAND = Command(
    "simulate",
    "simulate one deployment's scaling and latency under a load trace",
    add_arguments,
    run,
    "[simulation.md](simulation.md#scaling-simulator-stackctl-simulate)",
    description="Simulate one deployment's scaling and latency under a load trace, and hold the run to its SLO "
    "(p95 within serving.p95LatencySloMs, p99 within serving.p99LatencySloMs when set, rejected within "
    "--max-rejected-pct). Exits 0 when the SLO held, 1 when "
    "it was missed, 2 on a bad input (`stackctl simulate: ...` naming the input, where it is and what is allowed).",
    json=True,
)
