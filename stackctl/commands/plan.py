"""`stackctl plan`: search one deployment's batching, replica bounds and scaling policies for the fewest GPU-hours
within the SLO, and write the plan and a patch of the stack file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.shapes import MAX_SEED, PROFILE_SHAPES
from stackctl.command import Command, Exit, print_json, stack_arguments
from stackctl.options import (
    budget_argument,
    hours_argument,
    peak_rps_argument,
    rejected_pct_argument,
    seed_argument,
    seeds_argument,
    shape_argument,
    slo_ms_argument,
)
from stackctl.progress import Bar

if TYPE_CHECKING:
    from planner.plan import Plan
    from planner.search import Result
    from platform_config.loader import StackConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    stack_arguments(parser)
    load = parser.add_mutually_exclusive_group(required=True)
    load.add_argument(
        "--trace",
        metavar="FILE",
        help="CSV t_seconds,rps (or a column per model), as `stackctl simulate --trace` reads",
    )
    load.add_argument(
        "--profile",
        type=shape_argument,
        choices=PROFILE_SHAPES,
        help=f"a built-in load shape: {', '.join(PROFILE_SHAPES)}",
    )
    parser.add_argument("--peak-rps", type=peak_rps_argument, help="peak of --profile, as for `stackctl simulate`")
    parser.add_argument(
        "--hours", type=hours_argument, help="length of --profile, as for `stackctl simulate` (default 1)"
    )
    parser.add_argument("--slo-ms", type=slo_ms_argument, help="p95 bound in ms (default: serving.p95LatencySloMs)")
    parser.add_argument(
        "--p99-slo-ms",
        type=slo_ms_argument,
        help="p99 bound in ms, at least the p95 bound (default: serving.p99LatencySloMs, else none)",
    )
    parser.add_argument(
        "--max-rejected-pct",
        type=rejected_pct_argument,
        default=0.1,
        help="rejected requests bound in %% (default 0.1)",
    )
    parser.add_argument("--budget", type=budget_argument, default=200, help="candidates to evaluate (default 200)")
    parser.add_argument("--seeds", type=seeds_argument, default=3, help="runs per candidate, seeds SEED.. (default 3)")
    parser.add_argument(
        "--seed", type=seed_argument, default=0, help=f"first seed and the search's, from 0 to {MAX_SEED} (default 0)"
    )
    parser.add_argument("--deployment", metavar="NAME", help="default: the first deployment")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    parser.add_argument("--apply", action="store_true", help="also write the chosen values into the stack file")
    parser.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="where the candidates run: local processes (default), or a Dask cluster (--scheduler, else a local one)",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --engine dask: the Dask scheduler, e.g. tcp://10.0.0.5:8786"
    )
    # What run_inputs reads of simulate's options: the plan runs the stack's models, no outage, no base.
    parser.set_defaults(model=None, compare=None, metrics_outage=[])


def _ms(value: float | None) -> str:
    return "unmeasured" if value is None else f"{value:.1f} ms"


def _latency_bounds(args: argparse.Namespace, loaded: StackConfig) -> tuple[int, int | None]:
    """The p95 and p99 bounds, each the option's or else the stack's; a p99 bound below the p95's is refused."""
    slo_ms = args.slo_ms if args.slo_ms is not None else loaded.config.serving.p95_latency_slo_ms
    p99_ms = args.p99_slo_ms if args.p99_slo_ms is not None else loaded.config.serving.p99_latency_slo_ms
    if p99_ms is not None and p99_ms < slo_ms:
        if args.p99_slo_ms is not None:
            where, fix = "--p99-slo-ms", f"give at least {slo_ms}"
        else:
            where, fix = f"{loaded.source}: serving.p99LatencySloMs", f"give --p99-slo-ms of at least {slo_ms} too"
        raise ValueError(
            f"{where} = {p99_ms} is below the p95 bound of {slo_ms} ms: a p99 is never below the p95; {fix}"
        )
    return slo_ms, p99_ms


def _patch(path: Path, loaded: StackConfig, plan: Plan, label: str) -> tuple[str | None, str | None, str | None]:
    """The stack file with the plan's changes, its unified diff, and why it cannot take them (None: it can)."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from planner.stack_patch import PatchError, patched, unified_diff  # noqa: PLC0415
    from platform_config.paths import STACK_FILE, display_path  # noqa: PLC0415
    from triton_platform.args.input_files import InputFile  # noqa: PLC0415

    # Bytes, not read_text: universal newlines would turn a CRLF file into LF (stack_patch keeps CRLF).
    before = InputFile(path, STACK_FILE).read_bytes().decode("utf-8")
    if not plan.changes:
        return before, unified_diff(before, before, display_path(path)), None
    try:
        after = patched(before, plan.changes, f"stackctl plan: {label}, {datetime.now(UTC):%Y-%m-%d}")
    except PatchError as err:
        return None, None, f"stackctl plan: cannot patch {loaded.source}: {err}"
    return after, unified_diff(before, after, display_path(path)), None


def run(args: argparse.Namespace) -> Exit:
    from offline.output_file import OutputFile  # noqa: PLC0415
    from planner.plan import make_plan  # noqa: PLC0415
    from planner.report import write_outputs  # noqa: PLC0415
    from planner.report_format import zero_figures  # noqa: PLC0415
    from planner.search import ORACLE_TARGET, Bounds  # noqa: PLC0415
    from stackctl.commands.simulate import warned_inputs  # noqa: PLC0415

    if args.scheduler is not None and args.engine != "dask":
        raise ValueError("--scheduler is the Dask scheduler's address: give --engine dask with it")
    # models: a trace with a column per model, or scaling.simulation.shares, plans the models together.
    path, loaded, head, rate, _, inputs, _ = warned_inputs(args, "plan", models=True)
    stack_out = OutputFile(path, "the stack file")
    if args.apply:
        stack_out.check()  # before the search: a link is refused at once, not after minutes of planning
    trace = inputs["trace"]
    label = (
        trace.get("file") or f"--profile {trace['shape']} --peak-rps {trace['peak_rps']:g} --hours {trace['hours']:g}"
    )
    slo_ms, p99_ms = _latency_bounds(args, loaded)
    bar = Bar("plan", args.budget, "candidates")

    def progress(done: int, total: int, best: Result | None) -> None:
        shown = f"best #{best.index}, {best.mean['gpu_hours']:.3f} GPU-h" if best else "none passes yet"
        bar.update(done, shown)

    try:
        plan = make_plan(
            path,
            loaded,
            head,
            rate,
            trace=label,
            bounds=Bounds(slo_ms, args.max_rejected_pct, p99_ms, head.wake_timeout_seconds),
            budget=args.budget,
            seeds=args.seeds,
            seed=args.seed,
            progress=progress,
            engine=args.engine,
            scheduler=args.scheduler,
        )
    finally:
        bar.close()
    after, patch, refusal = _patch(path, loaded, plan, label)
    write_outputs(plan, inputs, patch, f"{path.name}.patch", Path(args.out))
    chosen = plan.chosen
    # A deployment with a wake budget: the plan chose between a floor of 0 and 1 or more (planner.report_floors).
    zero = plan.bounds.wake_budget_s is not None and chosen is not None and chosen.settings.min_replicas == 0
    applied = bool(args.apply and after is not None and plan.changes and chosen is not None and refusal is None)
    if applied and after is not None:
        stack_out.write(after.encode("utf-8"))
    if args.json:
        print_json(
            {
                "command": "plan",
                "passed": chosen is not None and refusal is None,
                "file": loaded.source,
                "stack": loaded.stack,
                "deployment": head.deployment,
                "model": head.model,
                "models": list(head.models),
                "out": args.out,
                "candidates": len(plan.results),
                "slo": {"p95_ms": slo_ms, "p99_ms": p99_ms, "max_rejected_pct": args.max_rejected_pct},
                "current": {
                    "gpu_hours": plan.current.mean["gpu_hours"],
                    "p95_ms": plan.current.mean["p95_ms"],
                    "p99_ms": plan.current.mean["p99_ms"],
                },
                "chosen": None
                if chosen is None
                else {
                    "index": chosen.index,
                    "gpu_hours": chosen.mean["gpu_hours"],
                    "p95_ms": chosen.mean["p95_ms"],
                    "p99_ms": chosen.mean["p99_ms"],
                    "shapes_not_held": list(chosen.unheld),
                    **({"scale_to_zero": zero_figures(chosen)} if zero else {}),
                },
                "changes": len(plan.changes),
                "applied": applied,
                "error": refusal,
            }
        )
    else:
        print(
            f"{loaded.source}: {head.deployment}/{'+'.join(head.models)}, {len(plan.results)} candidates; "
            f"outputs in {args.out}"
        )
    if chosen is None:
        if not args.json:
            print("  no candidate passed; plan.md names the closest")
        return Exit.FAILED
    if not args.json:
        print(
            f"  chosen #{chosen.index}: {chosen.mean['gpu_hours']:.3f} GPU-hours "
            f"(current {plan.current.mean['gpu_hours']:.3f}), p95 {chosen.mean['p95_ms']:.1f} ms, "
            f"p99 {_ms(chosen.mean['p99_ms'])} (current {_ms(plan.current.mean['p99_ms'])}); "
            f"{len(plan.changes)} value(s) changed, see plan.md"
        )
        unheld = f" (not {', '.join(chosen.unheld)})" if chosen.unheld else ""
        worst = "unmeasured" if chosen.cost is None else f"{chosen.cost:.2f}x the current settings' oracle"
        held = f"{len(plan.shapes) - len(chosen.unheld)} of {len(plan.shapes)}{unheld}"
        print(f"  shapes held within {ORACLE_TARGET:g}x the current settings' oracle: {held}; worst case {worst}")
        if zero:
            print(f"  {zero_line(chosen, plan.bounds.wake_budget_s)}")
    if refusal is not None:
        # The outputs are written (plan.md lists the values), the patch is not: the file cannot take it as it is.
        print(refusal, file=sys.stderr)
        return Exit.INPUT
    if applied and not args.json:
        print(f"  applied to {loaded.source}")
    return Exit.PASSED


def zero_line(chosen: Result, budget: float | None) -> str:
    """What scale to zero gives the chosen candidate at a floor of 0, on the trace."""
    from planner.report_format import zero_figures  # noqa: PLC0415

    f = zero_figures(chosen)
    return (
        f"scale to zero (replicas min 0): {f['wakes']:.1f} wakes, waited p99 {f['waited_p99_s'] or 0:.1f} s "
        f"(budget {budget:g} s), {f['wake_failed']:.1f} failed at the timeout, {f['gpu_hours_saved'] or 0:.3f} "
        "GPU-hours saved against replicas min 1"
    )


COMMAND = Command(
    "plan",
    "search batching, replica bounds and scaling policies for the fewest GPU-hours within the SLO",
    add_arguments,
    run,
    "[simulation.md](simulation.md#capacity-planning-stackctl-plan)",
    description="Search one deployment's batching, replica bounds and scaling policies with the simulator for the "
    "fewest GPU-hours with p95 within the SLO (and p99 within its bound, when set) and rejections within their "
    "bound on every seed; writes plan.md, "
    "plan.json, pareto.png and a patch of the stack file. Inputs are refused as by `stackctl simulate`. Exits 0 "
    "with a passing candidate, 1 with none, 2 on a bad input or a stack file the patch cannot be written into.",
    json=True,
)
