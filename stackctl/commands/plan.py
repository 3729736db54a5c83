"""`stackctl plan`: search one deployment's batching, replica bounds and scaling policies for the fewest GPU-hours
within the SLO, and write the plan and a patch of the stack file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from simulator.shapes import MAX_SEED, PROFILE_SHAPES
from stackctl.command import Command, Exit, model_repo_argument, print_json, stack_arguments, stack_source
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
    import numpy as np
    from numpy.typing import NDArray

    from planner.search import Result
    from planner.settings import Place, Value
    from platform_config.loader import StackConfig
    from platform_config.schema import PlatformConfig
    from simulator.stream_fleet import FleetSettings


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
    parser.add_argument(
        "--stream-profile",
        metavar="FILE",
        help="plan a streaming deployment instead: the stream profile (`stackctl profile --max-sequences`) of its "
        "model with serving.tokenObjectives; searches scaling.timeToFirstTokenTarget and replicas.min for the "
        "fewest GPU-hours holding the p95 time-to-first-token objective (docs/streaming.md)",
    )
    model_repo_argument(parser, "with --stream-profile: the model repository the stack serves (default: model_repo/)")
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


class Changes(Protocol):
    """A plan's stack-file changes: the request plan's (planner/plan.py) or the stream plan's."""

    @property
    def changes(self) -> Mapping[Place, Value]: ...


def _patch(path: Path, loaded: StackConfig, plan: Changes, label: str) -> tuple[str | None, str | None, str | None]:
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
    if args.stream_profile is not None:
        return _stream_run(args)
    if args.model_repo is not None:
        raise ValueError("--model-repo is read with --stream-profile only; the request plan reads model_repo/")
    return _request_run(args)


def _request_run(args: argparse.Namespace) -> Exit:
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


def _streaming_model(loaded: StackConfig, deployment: str | None, profiled: str) -> tuple[str, str, int]:
    """The deployment (`--deployment`, else the first serving a model with token objectives) and its model the
    stream profile measured, with the model's p95 TTFT objective in ms."""
    config = loaded.config
    objectives = config.serving.token_objectives
    streaming = [k for k, d in config.serving.deployments.items() if set(d.models) & set(objectives)]
    if deployment is None:
        if not streaming:
            raise ValueError(
                f"{loaded.source}: no deployment serves a model with serving.tokenObjectives, which a stream plan "
                "holds; state the streaming model's objectives"
            )
        deployment = streaming[0]
    if deployment not in config.serving.deployments:
        known = ", ".join(sorted(config.serving.deployments))
        raise ValueError(f"--deployment {deployment!r} is not in {loaded.source}; known deployments: {known}")
    served = [m for m in config.serving.deployments[deployment].models if m in objectives]
    if profiled not in served:
        has = f"its models with token objectives are {', '.join(served)}" if served else "none of its models has"
        raise ValueError(
            f"--stream-profile measured model {profiled!r}, which deployment {deployment!r} does not serve with "
            f"serving.tokenObjectives ({has}); profile one of its streaming models"
        )
    return deployment, profiled, objectives[profiled].time_to_first_token_p95_ms


def _stream_trace(args: argparse.Namespace) -> tuple[NDArray[np.float64], str]:
    """The load a stream plan runs (a value a second), and how its report names it."""
    from simulator.scenario import read_trace, shaped_trace  # noqa: PLC0415

    if args.trace:
        return read_trace(Path(args.trace)), args.trace
    if args.peak_rps is None:
        raise ValueError("--profile needs --peak-rps, the load's peak in requests per second")
    hours = args.hours or 1.0
    label = f"--profile {args.profile} --peak-rps {args.peak_rps:g} --hours {hours:g}"
    return shaped_trace(args.profile, args.peak_rps, hours), label


def _fleet_settings(config: PlatformConfig, deployment: str, objective_ms: int) -> FleetSettings:
    """How the stack scales `deployment`, as the stream fleet runs it."""
    from platform_config.node_provisioning import pool_node_provisioning  # noqa: PLC0415
    from simulator.stream_fleet import FleetSettings  # noqa: PLC0415

    replicas = config.serving.deployments[deployment].replicas
    node = pool_node_provisioning(config.cluster, config.gpu_pool, config.scaling.simulation)
    up, down = config.scaling.scale_up, config.scaling.scale_down
    return FleetSettings(
        min_replicas=max(1, replicas.min),  # the trigger reads no series at zero: a wake brings the first pod
        max_replicas=replicas.max,
        objective_seconds=objective_ms / 1000,
        target=config.scaling.time_to_first_token_target,
        start_seconds=config.scaling.simulation.pod_start_seconds + (node.seconds if node.provisions else 0),
        scale_up=(up.percent, up.pods, up.period_seconds),
        scale_down=(down.percent, down.period_seconds),
        scale_down_window_seconds=down.stabilization_seconds,
    )


def _stream_run(args: argparse.Namespace) -> Exit:
    """`plan --stream-profile`: planner/stream_plan.py on the stack's streaming deployment."""
    from offline.out_folder import claim  # noqa: PLC0415
    from offline.output_file import OutputFile  # noqa: PLC0415
    from planner.stream_plan import plan_stream, stream_plan_json, stream_plan_markdown  # noqa: PLC0415
    from platform_config.loader import load_stack_file  # noqa: PLC0415
    from platform_config.stream_profile import read_stream_profile  # noqa: PLC0415
    from simulator.stream_fleet import ttft_table  # noqa: PLC0415
    from simulator.streams import profile_of  # noqa: PLC0415
    from triton_platform.model_packaging.source import read_repository  # noqa: PLC0415

    path, stack = stack_source(args)
    loaded = load_stack_file(path, stack, read_repository(args.model_repo) if args.model_repo else None)
    read = read_stream_profile(Path(args.stream_profile))
    deployment, model, objective_ms = _streaming_model(loaded, args.deployment, read.model)
    rate, label = _stream_trace(args)
    stack_out = OutputFile(path, "the stack file")
    if args.apply:
        stack_out.check()
    folder = claim(Path(args.out), "plan")
    config = loaded.config
    base = _fleet_settings(config, deployment, objective_ms)
    table = ttft_table(profile_of(read), read.output_tokens, seed=args.seed)
    gpus = config.serving.deployments[deployment].gpus_per_pod
    # Validation keeps a fallback's and a pause's replicas within every deployment's range, and a deployment woken
    # on request at a floor of 0: a floor above them would break the stack.
    fallback = config.scaling.fallback.replicas if config.scaling.fallback else None
    woken = 1 if config.serving.deployments[deployment].wake is not None else None
    ceilings = [r for r in (config.scaling.paused_replicas, fallback, woken) if r]
    plan = plan_stream(
        rate,
        table,
        base,
        deployment=deployment,
        model=model,
        objective_ms=objective_ms,
        gpus_per_pod=gpus,
        highest_floor=min(ceilings, default=None),
    )
    after, patch, refusal = _patch(path, loaded, plan, label)
    files = {"plan.md": stream_plan_markdown(plan, label).encode(), "plan.json": stream_plan_json(plan, label).encode()}
    if patch is not None:
        files[f"{path.name}.patch"] = patch.encode()
    folder.replace(files)
    chosen = plan.chosen
    print(f"{loaded.source}: {deployment}/{model}, {len(plan.candidates)} stream candidates; outputs in {args.out}")
    if chosen is None:
        print("  no candidate holds the p95 time-to-first-token objective; plan.md lists them")
        return Exit.FAILED
    print(
        f"  chosen: timeToFirstTokenTarget {chosen.target:g}, replicas.min {chosen.min_replicas}: "
        f"{chosen.gpu_hours:.3f} GPU-hours ({chosen.gpu_hours / plan.oracle_gpu_hours:.2f}x the oracle's "
        f"{plan.oracle_gpu_hours:.3f}), TTFT p95 {chosen.ttft_p95_ms:.0f} ms within {objective_ms} ms "
        f"(current: {plan.current.gpu_hours:.3f} GPU-hours, TTFT p95 "
        f"{'saturated' if plan.current.ttft_p95_ms == float('inf') else f'{plan.current.ttft_p95_ms:.0f} ms'})"
    )
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return Exit.INPUT
    if args.apply and after is not None and plan.changes:
        stack_out.write(after.encode("utf-8"))
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
