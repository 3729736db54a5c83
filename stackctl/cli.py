"""Command line: a thin layer over platform_config and the mock runner."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from model_packaging.publish import write_model_repository
from model_packaging.remote import PublishError, publish_repository
from offline.chart_template import HelmTemplater
from offline.out_folder import OutputFolderError, claim
from offline.synth import synthesize, write_synth
from planner.options import budget_argument, rejected_pct_argument, seeds_argument, slo_ms_argument
from platform_config.errors import ConfigError, ConfigIssue, bounded
from platform_config.loader import STACKS_DIR, StackConfig, load_stack_file, stack_file
from platform_config.paths import PROJECT_ROOT, STACK_FILE, display_path
from platform_config.schema import section_key
from program.component_checks import component_issues
from simulator.shapes import (
    MAX_HOURS,
    MAX_REQUESTS,
    MAX_RPS,
    MAX_SECONDS,
    MAX_SEED,
    PROFILE_SHAPES,
    TRACE_RULES,
    hours_argument,
    outage_argument,
    peak_rps_argument,
    seed_argument,
    shape_argument,
)
from stackctl.image_pins import unpinned_images
from stackctl.monitoring_files import write_monitoring_files
from triton_platform.excerpts import excerpt
from triton_platform.input_files import InputFile
from triton_platform.model_packaging.source import read_repository

if TYPE_CHECKING:
    # The simulator needs numba, which the runtime virtualenv lacks: only its types here.
    import numpy as np
    from numpy.typing import NDArray

    from simulator.scenario import Scenario


def _stack_source(args: argparse.Namespace) -> tuple[Path, str | None]:
    if args.config:
        return Path(args.config), None
    path = stack_file(args.stack)
    if not path.exists():
        known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACKS_DIR.glob("Pulumi.*.yaml"))
        raise ConfigError(
            display_path(path), [ConfigIssue("(stack)", f"no stack {args.stack!r}; known stacks: {', '.join(known)}")]
        )
    return path, args.stack


def cmd_validate(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    repo = read_repository(Path(args.model_repo)) if args.model_repo else None
    loaded = load_stack_file(path, stack, repo, defer_to_esc=True)
    config = loaded.config
    # A section the file leaves to ESC is absent from the config: name it instead of its value.
    mode = "mode from ESC" if section_key("kubernetes") in loaded.deferred else config.kubernetes.mode
    environment = "environment from ESC" if section_key("environment") in loaded.deferred else config.environment
    summary = f"stack {loaded.stack} ({environment}, {mode})"
    if section_key("serving") not in loaded.deferred:
        deployments = config.serving.deployments
        models = sorted({m for d in deployments.values() for m in d.models})
        summary += f", {len(deployments)} deployment(s), {len(models)} model(s)"
    if not loaded.deferred:
        # The components' own checks of the Args the program builds, in stack keys: only on a whole stack that
        # passed the schema, so no problem is named twice.
        issues = component_issues(loaded)
        if issues:
            raise ConfigError(loaded.source, issues)
    if not loaded.deferred and config.environment == "production":
        issues = unpinned_images(synthesize(path, stack))
        if issues:
            raise ConfigError(loaded.source, issues)
    print(f"{loaded.source}: OK: {summary}")
    if loaded.deferred:
        print(
            f"{loaded.source}: deferred to the Pulumi CLI: {', '.join(loaded.deferred)} "
            f"(not in the file; ESC environment(s) {', '.join(loaded.environments)} may supply them, and "
            f"`pulumi preview --stack {loaded.stack}` validates them with the rest)"
        )
    return 0


def cmd_kube_context(args: argparse.Namespace) -> int:
    """The CI names the kubeconfig context it builds after this (.github/actions/cluster-credentials)."""
    path, stack = _stack_source(args)
    loaded = load_stack_file(path, stack, defer_to_esc=True)
    key = section_key("kubernetes")
    if key in loaded.deferred:
        raise ConfigError(
            loaded.source,
            [ConfigIssue(key, "left to ESC; the CI reads the cluster's context from the stack file: write it there")],
        )
    kubernetes = loaded.config.kubernetes
    if not kubernetes.context:
        raise ConfigError(
            loaded.source,
            [
                ConfigIssue(
                    f"{key}.context",
                    f"unset: mode {kubernetes.mode!r} reaches no cluster, so its GitHub environment needs no "
                    "cluster credentials (leave CLOUD unset, or none, and no KUBECONFIG_CONTENT)",
                )
            ],
        )
    print(kubernetes.context)
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    result = synthesize(path, stack, None if args.no_charts else HelmTemplater.from_environment())
    try:
        written = write_synth(result, Path(args.out))
    except OutputFolderError as err:
        print(err.report(), file=sys.stderr)
        return 1
    except ValueError as err:
        print(f"stackctl synth: {err}", file=sys.stderr)
        return 1
    print(f"{result.stack.source}: wrote {len(written) - 1} manifests and resources.json to {args.out}")
    return 0


def cmd_model_repo(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    repo = read_repository(Path(args.model_repo)) if args.model_repo else None
    loaded = load_stack_file(path, stack, repo)
    rendered = loaded.rendered
    assert rendered is not None  # nothing is deferred without defer_to_esc
    deployments = loaded.config.serving.deployments
    if args.deployment and args.deployment not in deployments:
        print(
            f"stackctl model-repo: no deployment {args.deployment!r}; known: {', '.join(sorted(deployments))}",
            file=sys.stderr,
        )
        return 1
    models = deployments[args.deployment].models if args.deployment else None
    try:
        written = write_model_repository(rendered, Path(args.out), models)
    except OutputFolderError as err:
        print(err.report(), file=sys.stderr)
        return 1
    listing = ", ".join(written)
    print(f"{loaded.source}: wrote {len(written)} models ({listing}) with configs/{loaded.stack}.pbtxt to {args.out}")
    return 0


def cmd_publish_models(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    repo = read_repository(Path(args.model_repo)) if args.model_repo else None
    loaded = load_stack_file(path, stack, repo)
    source = loaded.config.serving.model_repository
    store = source.store()
    if store is None:
        # Not an error: the deploy workflow runs this for every stack, dev's bundled one included.
        print(
            f"{loaded.source}: nothing to publish: modelRepository source {source.source!r}"
            f"{' without pvc.origin' if source.source == 'pvc' else ''} is not read from object storage "
            "(publishing is for sources s3 and gcs, and for a pvc with origin)"
        )
        return 0
    rendered = loaded.rendered
    assert rendered is not None  # nothing is deferred without defer_to_esc
    try:
        published = publish_repository(rendered, store, dry_run=args.dry_run)
    except PublishError as err:
        print(f"stackctl publish-models: {err}", file=sys.stderr)
        return 1
    where = store.triton_path(published.digest)
    if published.status == "already published":
        print(f"{loaded.source}: {where} is already published (digest {published.digest}); nothing uploaded")
    elif published.status == "dry run":
        print(f"{loaded.source}: dry run: would publish {len(rendered.models)} models to {where}")
    else:
        print(f"{loaded.source}: published {len(rendered.models)} models to {where}")
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    loaded = load_stack_file(path, stack)
    try:
        written = write_monitoring_files(loaded, Path(args.out))
    except OutputFolderError as err:
        print(err.report(), file=sys.stderr)
        return 1
    print(f"{loaded.source}: wrote {', '.join(p.name for p in written)} to {args.out}")
    return 0


def _outage(text: str) -> tuple[float, float]:
    """`START:SECONDS` of --metrics-outage."""
    return outage_argument(text)


def _compare_base(args: argparse.Namespace, path: Path, loaded: StackConfig) -> StackConfig:
    """The stack file at `--compare REF`, resolved and validated before any simulation runs."""
    import subprocess  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    ref = args.compare
    try:
        relative = path.resolve().relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        raise ValueError(
            f"--compare reads the stack file from git, and {display_path(path)} is outside the project; "
            f"give a stack file under {PROJECT_ROOT}"
        ) from None

    def git(*argv: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                ["git", *argv], cwd=PROJECT_ROOT, capture_output=True, text=True, check=False, encoding="utf-8"
            )
        except OSError as err:
            raise ValueError(f"--compare needs git, which did not run ({err.strerror}); install git") from None

    # --end-of-options: a REF that starts with '-' is a name, never an option of git's.
    commit = git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if commit.returncode != 0 or not commit.stdout.strip():
        raise ValueError(
            f"--compare {excerpt(ref)} is not a commit in the git repository at {PROJECT_ROOT}; "
            "give a branch, tag or commit (git rev-parse --verify REF^{commit} resolves it)"
        )
    sha = commit.stdout.strip()
    shown = git("show", f"{sha}:{relative}")
    if shown.returncode != 0:
        raise ValueError(
            f"--compare {excerpt(ref)}: {relative} does not exist at {sha[:12]}; "
            "compare with a revision that has this stack file"
        )
    with tempfile.TemporaryDirectory() as tmp:
        base_file = Path(tmp) / path.name
        base_file.write_text(shown.stdout, encoding="utf-8")
        try:
            base = load_stack_file(base_file, loaded.stack)
        except ConfigError as err:
            # Name the file as the revision holds it, not the temporary copy.
            raise ConfigError(f"{relative} at {ref[:60]}", err.issues) from None
    return replace(base, source=f"{relative} at {ref[:60]}")


def _run_inputs(
    args: argparse.Namespace,
) -> tuple[Path, StackConfig, Scenario, NDArray[np.float64], Scenario | None, dict[str, Any]]:
    """What `simulate` and `plan` run: the stack file and its config, the head scenario, the trace, the
    --compare scenario and what summary.json records as the run's inputs, every input checked before the run.

    ValueError: the message `stackctl simulate: ...` (or `plan`) prints.
    """
    from simulator.scenario import (  # noqa: PLC0415
        PROFILE_FILE,
        TRACE_FILE,
        read_trace,
        scenario,
        shaped_trace,
        trigger_rps,
    )

    path, stack = _stack_source(args)
    loaded = load_stack_file(path, stack)
    if args.trace:
        shaping = [
            flag for flag, value in (("--peak-rps", args.peak_rps), ("--hours", args.hours)) if value is not None
        ]
        if shaping:
            raise ValueError(
                f"{' and '.join(shaping)} {'shape' if len(shaping) > 1 else 'shapes'} a --profile, and --trace "
                f"sets its own rates and length; leave {'them' if len(shaping) > 1 else 'it'} out or use --profile"
            )
    head = scenario(loaded, args.deployment, args.model)
    base = None
    if args.compare:
        base = scenario(_compare_base(args, path, loaded), args.deployment, args.model)
    trace: dict[str, Any]
    if args.trace:
        rate = read_trace(Path(args.trace))
        # The digest tells a rerun whether the file at that path is still the one that ran.
        trace = {
            "file": display_path(Path(args.trace)),
            "sha256": InputFile(Path(args.trace), TRACE_FILE).sha256().hex(),
        }
    else:
        peak = args.peak_rps if args.peak_rps is not None else 2 * trigger_rps(head)
        if not 0 < peak <= MAX_RPS:
            raise ValueError(
                f"the default --peak-rps, twice the load that fires the scaling trigger of deployment "
                f"{head.deployment!r} in {loaded.source}, is {peak:.0f} req/s, above {MAX_RPS}; "
                f"give --peak-rps from above 0 to {MAX_RPS}"
            )
        hours = args.hours if args.hours is not None else 1.0
        rate = shaped_trace(args.profile, peak, hours)
        trace = {"shape": args.profile, "peak_rps": peak, "hours": hours}
    for start, length in args.metrics_outage:
        if start >= len(rate):
            raise ValueError(
                f"--metrics-outage {start:g}:{length:g} starts after the run, which lasts {len(rate)} s; "
                f"START is from 0 to {len(rate) - 1}"
            )
    inputs = {
        "stack": loaded.stack,
        "stack_file": loaded.source,
        "stack_sha256": InputFile(path, STACK_FILE).sha256().hex(),
        "deployment": head.deployment,
        "model": head.model,
        "profile": head.profile,
        "profile_sha256": InputFile(PROJECT_ROOT / head.profile, PROFILE_FILE).sha256().hex(),
        "trace": trace,
        "seed": args.seed,
        "metrics_outages": [list(outage) for outage in args.metrics_outage],
    }
    return path, loaded, head, rate, base, inputs


def _within_request_budget(rate: NDArray[np.float64], trace: dict[str, Any], runs: int) -> None:
    """Refuse a load the detailed simulation cannot run in about a minute (shapes.MAX_REQUESTS): it runs each
    request, so its cost grows with the rate; `runs`: 2 with --compare, which runs the load twice."""
    offered = float(rate.sum()) * runs
    if offered <= MAX_REQUESTS:
        return
    if "file" in trace:
        source, lower = trace["file"], "its rates or its length"
    else:
        source = f"--profile {trace['shape']} --peak-rps {trace['peak_rps']:.15g} --hours {trace['hours']:.15g}"
        lower = "--peak-rps or --hours"
    raise ValueError(
        f"{source} offers {offered:,.0f} requests{' over the two runs of --compare' if runs == 2 else ''}, above "
        f"the {MAX_REQUESTS:,} one simulation runs (each request goes through the batcher: about a minute on 2 "
        f"cores); lower {lower}, or search it with `stackctl plan`, whose cost does not grow with the rate"
    )


def cmd_simulate(args: argparse.Namespace) -> int:
    from simulator.engine import simulate, summary  # noqa: PLC0415
    from simulator.oracle import oracle  # noqa: PLC0415
    from simulator.report import FIGURES, compare, plot_title, write_compare, write_outputs  # noqa: PLC0415

    try:
        _, loaded, head, rate, base, inputs = _run_inputs(args)
        _within_request_budget(rate, inputs["trace"], 2 if base is not None else 1)
    except ValueError as err:
        print(f"stackctl simulate: {err}", file=sys.stderr)
        return 1
    timeline = simulate(head, rate, args.seed, args.metrics_outage)
    run = summary(head, timeline)
    bound = oracle(head, rate)
    # The inputs lead summary.json, so that the file alone says what ran and how to rerun it.
    result = {"inputs": inputs, **run, **bound.figures(float(run["gpu_hours"] or 0))}
    title = None if args.no_plot else plot_title(head, float(rate.max()), args.seed)
    try:
        write_outputs(head, timeline, bound, result, Path(args.out), plot_title=title)
    except OutputFolderError as err:
        print(err.report(), file=sys.stderr)
        return 1
    print(f"{loaded.source}: {head.deployment}/{head.model}, {len(rate)} s simulated; outputs in {args.out}")
    keys = list(FIGURES)
    if args.metrics_outage:
        keys += ["metrics_failing_seconds", "fallback_seconds"]
    for key in keys:
        value = result[key]
        if value is None:
            # Only reaction_seconds is ever None among these.
            print(f"  {key}: none (demand never exceeded ready capacity)")
        else:
            print(f"  {key}: {value:.1f}" if isinstance(value, float) else f"  {key}: {value}")
    if base is not None:
        table = compare(base, head, rate, args.seed, args.metrics_outage)
        try:
            write_compare(Path(args.out), table)
        except OutputFolderError as err:
            print(err.report(), file=sys.stderr)
            return 1
        print(f"\nAgainst {args.compare}:\n{table}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime  # noqa: PLC0415

    from planner.plan import make_plan  # noqa: PLC0415
    from planner.report import write_outputs  # noqa: PLC0415
    from planner.search import ORACLE_TARGET, Bounds, Result  # noqa: PLC0415
    from planner.stack_patch import PatchError, patched, unified_diff  # noqa: PLC0415

    try:
        path, loaded, head, rate, _, inputs = _run_inputs(args)
    except ValueError as err:
        print(f"stackctl plan: {err}", file=sys.stderr)
        return 1
    trace = inputs["trace"]
    label = (
        trace.get("file") or f"--profile {trace['shape']} --peak-rps {trace['peak_rps']:g} --hours {trace['hours']:g}"
    )
    slo_ms = args.slo_ms if args.slo_ms is not None else loaded.config.serving.p95_latency_slo_ms

    def progress(done: int, total: int, best: Result | None) -> None:
        if done == total or done % max(total // 20, 1) == 0:
            shown = (
                f"#{best.index}, {best.mean['gpu_hours']:.3f} GPU-hours, p95 {best.mean['p95_ms']:.1f} ms"
                if best
                else "none passes yet"
            )
            print(f"stackctl plan: {done}/{total} candidates; best so far: {shown}", file=sys.stderr)

    plan = make_plan(
        path,
        loaded,
        head,
        rate,
        trace=label,
        bounds=Bounds(slo_ms, args.max_rejected_pct),
        budget=args.budget,
        seeds=args.seeds,
        seed=args.seed,
        progress=progress,
    )
    # Bytes, not read_text: universal newlines would turn a CRLF file into LF (stack_patch keeps CRLF).
    before = InputFile(path, STACK_FILE).read_bytes().decode("utf-8")
    refusal = None
    try:
        after = (
            patched(before, plan.changes, f"stackctl plan: {label}, {datetime.now(UTC):%Y-%m-%d}")
            if plan.changes
            else before
        )
    except PatchError as err:
        after, refusal = None, f"stackctl plan: cannot patch {loaded.source}: {err}"
    patch = None if after is None else unified_diff(before, after, display_path(path))
    try:
        write_outputs(plan, inputs, patch, f"{path.name}.patch", Path(args.out))
    except OutputFolderError as err:
        print(err.report(), file=sys.stderr)
        return 1
    chosen = plan.chosen
    print(f"{loaded.source}: {head.deployment}/{head.model}, {len(plan.results)} candidates; outputs in {args.out}")
    if chosen is None:
        print("  no candidate passed; plan.md names the closest")
        return 0
    print(
        f"  chosen #{chosen.index}: {chosen.mean['gpu_hours']:.3f} GPU-hours "
        f"(current {plan.current.mean['gpu_hours']:.3f}), p95 {chosen.mean['p95_ms']:.1f} ms; "
        f"{len(plan.changes)} value(s) changed, see plan.md"
    )
    unheld = f" (not {', '.join(chosen.unheld)})" if chosen.unheld else ""
    worst = "unmeasured" if chosen.cost is None else f"{chosen.cost:.2f}x the current settings' oracle"
    held = f"{len(plan.shapes) - len(chosen.unheld)} of {len(plan.shapes)}{unheld}"
    print(f"  shapes held within {ORACLE_TARGET:g}x the current settings' oracle: {held}; worst case {worst}")
    if refusal is not None:
        # The outputs are written (plan.md lists the values), the patch is not: the file cannot take it as it is.
        print(refusal, file=sys.stderr)
        return 1
    if args.apply and after is not None and plan.changes:
        path.write_bytes(after.encode("utf-8"))
        print(f"  applied to {loaded.source}")
    return 0


DEBUG_HELP = "show the traceback of an unexpected error"


def _add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    # Also after the command (`stackctl validate --debug`); the root's default applies when absent.
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads stacks/Pulumi.<NAME>.yaml")
    source.add_argument("--config", metavar="FILE", help="a stack YAML file anywhere")


def _add_plan_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plan = commands.add_parser(
        "plan",
        help="search batching, replica bounds and scaling policies for the fewest GPU-hours within the SLO",
        description="Search one deployment's batching, replica bounds and scaling policies with the simulator for "
        "the fewest GPU-hours with p95 within the SLO and rejections within their bound on every seed; writes "
        "plan.md, plan.json, pareto.png and a patch of the stack file. Inputs are refused as by `stackctl simulate`.",
    )
    _add_stack_arguments(plan)
    plan_load = plan.add_mutually_exclusive_group(required=True)
    plan_load.add_argument("--trace", metavar="FILE", help="CSV t_seconds,rps, as `stackctl simulate --trace` reads")
    plan_load.add_argument(
        "--profile",
        type=shape_argument,
        choices=PROFILE_SHAPES,
        help=f"a built-in load shape: {', '.join(PROFILE_SHAPES)}",
    )
    plan.add_argument("--peak-rps", type=peak_rps_argument, help="peak of --profile, as for `stackctl simulate`")
    plan.add_argument(
        "--hours", type=hours_argument, help="length of --profile, as for `stackctl simulate` (default 1)"
    )
    plan.add_argument("--slo-ms", type=slo_ms_argument, help="p95 bound in ms (default: serving.p95LatencySloMs)")
    plan.add_argument(
        "--max-rejected-pct",
        type=rejected_pct_argument,
        default=0.1,
        help="rejected requests bound in %% (default 0.1)",
    )
    plan.add_argument("--budget", type=budget_argument, default=200, help="candidates to evaluate (default 200)")
    plan.add_argument("--seeds", type=seeds_argument, default=3, help="runs per candidate, seeds SEED.. (default 3)")
    plan.add_argument(
        "--seed", type=seed_argument, default=0, help=f"first seed and the search's, from 0 to {MAX_SEED} (default 0)"
    )
    plan.add_argument("--deployment", metavar="NAME", help="default: the first deployment")
    plan.add_argument("--out", required=True, metavar="DIR", help="output folder")
    plan.add_argument("--apply", action="store_true", help="also write the chosen values into the stack file")
    # What _run_inputs reads of simulate's options: the plan runs the stack's model, no outage, no base.
    plan.set_defaults(run=cmd_plan, model=None, compare=None, metrics_outage=[])


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="stackctl", description=__doc__)
    root.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    commands = root.add_subparsers(dest="command", required=True)

    validate = commands.add_parser("validate", help="check a stack's config and report every error")
    _add_stack_arguments(validate)
    validate.add_argument(
        "--model-repo", metavar="DIR", help="model repository to check names against (default: model_repo/)"
    )
    validate.set_defaults(run=cmd_validate)

    kube_context = commands.add_parser(
        "kube-context", help="print the kubeconfig context a deploy-mode stack deploys to (the CI names its own so)"
    )
    _add_stack_arguments(kube_context)
    kube_context.set_defaults(run=cmd_kube_context)

    synth = commands.add_parser("synth", help="write every Kubernetes object the program would create")
    _add_stack_arguments(synth)
    synth.add_argument("--out", required=True, metavar="DIR", help="output folder")
    synth.add_argument(
        "--no-charts",
        action="store_true",
        help="leave out the objects of the charts the stack installs (otherwise templated with Helm, as previews do)",
    )
    synth.set_defaults(run=cmd_synth)

    model_repo = commands.add_parser("model-repo", help="write the model repository Triton sees for a stack")
    _add_stack_arguments(model_repo)
    model_repo.add_argument("--out", required=True, metavar="DIR", help="output folder")
    model_repo.add_argument("--model-repo", metavar="DIR", help="source model repository (default: model_repo/)")
    model_repo.add_argument("--deployment", metavar="NAME", help="only the models of this deployment")
    model_repo.set_defaults(run=cmd_model_repo)

    publish = commands.add_parser(
        "publish-models",
        help="upload a stack's model repository to <uri>/<digest>/ (s3, gcs, pvc.origin) with rclone",
    )
    _add_stack_arguments(publish)
    publish.add_argument("--model-repo", metavar="DIR", help="source model repository (default: model_repo/)")
    publish.add_argument("--dry-run", action="store_true", help="show what would be uploaded; upload nothing")
    publish.set_defaults(run=cmd_publish_models)

    rules = commands.add_parser("rules", help="write the Prometheus rules, dashboards and Alertmanager config")
    _add_stack_arguments(rules)
    rules.add_argument("--out", required=True, metavar="DIR", help="output folder")
    rules.set_defaults(run=cmd_rules)

    sim = commands.add_parser(
        "simulate",
        help="simulate one deployment's scaling and latency under a load trace",
        description="Simulate one deployment's scaling and latency under a load trace. A bad input exits 2 "
        "(an option's value: argparse's usage error) or 1 (a file, a name in the stack, a git revision): "
        "`stackctl simulate: ...` naming the input, where it is and what is allowed.",
    )
    _add_stack_arguments(sim)
    load = sim.add_mutually_exclusive_group(required=True)
    load.add_argument(
        "--trace",
        metavar="FILE",
        help=f"CSV: {TRACE_RULES}; each rate holding until the next row's time",
    )
    load.add_argument(
        "--profile",
        type=shape_argument,
        choices=PROFILE_SHAPES,
        help=f"a built-in load shape: {', '.join(PROFILE_SHAPES)}",
    )
    sim.add_argument(
        "--peak-rps",
        type=peak_rps_argument,
        help=f"peak of --profile, above 0 and at most {MAX_RPS} (default: twice the load that fires the queue "
        "trigger on the replica floor)",
    )
    sim.add_argument(
        "--hours",
        type=hours_argument,
        help=f"length of --profile, from 1/60 (one minute) to {MAX_HOURS} (2 days) (default 1)",
    )
    sim.add_argument("--deployment", metavar="NAME", help="default: the first deployment")
    sim.add_argument("--model", metavar="NAME", help="default: scaling.simulation.model, else the first profiled")
    sim.add_argument("--out", default="simulation", metavar="DIR", help="output folder (default simulation/)")
    sim.add_argument(
        "--seed", type=seed_argument, default=0, help=f"random seed, an integer from 0 to {MAX_SEED} (default 0)"
    )
    sim.add_argument(
        "--metrics-outage",
        type=_outage,
        action="append",
        default=[],
        metavar="START:SECONDS",
        help="Prometheus unreachable from second START for SECONDS (KEDA's fallback): finite, START >= 0 and "
        f"inside the run, 0 < SECONDS <= {MAX_SECONDS}; repeatable",
    )
    sim.add_argument(
        "--compare",
        metavar="REF",
        help="also run the stack file as git revision REF (a branch, tag or commit that has it); print deltas",
    )
    sim.add_argument("--no-plot", action="store_true", help="skip timeline.png")
    sim.set_defaults(run=cmd_simulate)

    _add_plan_parser(commands)
    return root


def encoding_safe_output() -> None:
    """Print what the terminal's encoding cannot show as escapes (`\\xe9`) instead of failing on it.

    Messages echo paths and values, which may hold any character; under PYTHONIOENCODING=ascii (or a C locale)
    a stack that validates must not fail for printing its own path."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    encoding_safe_output()
    args = parser().parse_args(argv)
    out = getattr(args, "out", None)
    try:
        if out is not None:
            # Refuse a folder before any work (a synth, a simulation), not only when writing into it.
            claim(Path(out), args.command)
        return int(args.run(args))
    except OutputFolderError as err:
        print(err.report(), file=sys.stderr)
        return 1
    except ConfigError as err:
        print(err.report(), file=sys.stderr)
        return 1
    except (ValueError, OSError) as err:
        # Bad input files (traces, profiles) and unwritable outputs: the message names the file.
        print(f"stackctl {args.command}: {bounded(str(err))}", file=sys.stderr)
        return 1
    except Exception as err:
        # A bug, not a user mistake: one line, and the traceback only when asked for.
        if args.debug:
            raise
        print(
            f"stackctl {args.command}: unexpected error: {type(err).__name__}: {bounded(str(err))}; "
            f"this is a bug in stackctl; rerun with --debug for the traceback",
            file=sys.stderr,
        )
        return 1
