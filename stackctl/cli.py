"""Command line: a thin layer over platform_config and the mock runner."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from model_repository.publish import write_model_repository
from model_repository.remote import PublishError, publish_repository
from model_repository.render import render_repository
from model_repository.source import DEFAULT_MODEL_REPO, read_repository
from platform_config.errors import ConfigError, ConfigIssue
from platform_config.loader import STACKS_DIR, load_stack_file, stack_file
from platform_config.paths import PROJECT_ROOT, display_path
from platform_config.schema import section_key
from simulator.shapes import PROFILE_SHAPES
from stackctl.image_pins import unpinned_images
from stackctl.monitoring_files import write_monitoring_files
from stackctl.synth import synthesize, write_synth


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


def cmd_synth(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    result = synthesize(path, stack)
    try:
        written = write_synth(result, Path(args.out))
    except (FileExistsError, ValueError) as err:
        print(f"stackctl synth: {err}", file=sys.stderr)
        return 1
    print(f"{result.stack.source}: wrote {len(written) - 1} manifests and resources.json to {args.out}")
    return 0


def cmd_model_repo(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    repo = read_repository(Path(args.model_repo)) if args.model_repo else read_repository(DEFAULT_MODEL_REPO)
    loaded = load_stack_file(path, stack, repo)
    rendered = render_repository(loaded.stack, loaded.config, repo)
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
    except FileExistsError as err:
        print(f"stackctl model-repo: {err}", file=sys.stderr)
        return 1
    listing = ", ".join(written)
    print(f"{loaded.source}: wrote {len(written)} models ({listing}) with configs/{loaded.stack}.pbtxt to {args.out}")
    return 0


def cmd_publish_models(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    repo = read_repository(Path(args.model_repo)) if args.model_repo else read_repository(DEFAULT_MODEL_REPO)
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
    rendered = render_repository(loaded.stack, loaded.config, repo)
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
        written = write_monitoring_files(loaded.config, Path(args.out))
    except FileExistsError as err:
        print(f"stackctl rules: {err}", file=sys.stderr)
        return 1
    print(f"{loaded.source}: wrote {', '.join(p.name for p in written)} to {args.out}")
    return 0


def _outage(text: str) -> tuple[float, float]:
    """`START:SECONDS` of --metrics-outage."""
    start, sep, length = text.partition(":")
    try:
        parsed = (float(start), float(length))
    except ValueError:
        parsed = (-1.0, 0.0)
    if not sep or parsed[0] < 0 or parsed[1] <= 0:
        raise argparse.ArgumentTypeError(f"expected START:SECONDS with START >= 0 and SECONDS > 0, got {text!r}")
    return parsed


def cmd_simulate(args: argparse.Namespace) -> int:
    import subprocess  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    from simulator.engine import simulate, summary  # noqa: PLC0415
    from simulator.report import compare, write_outputs  # noqa: PLC0415
    from simulator.scenario import read_trace, scenario, shaped_trace, trigger_rps  # noqa: PLC0415

    path, stack = _stack_source(args)
    loaded = load_stack_file(path, stack)
    try:
        head = scenario(loaded, args.deployment, args.model)
    except (FileNotFoundError, ValueError) as err:
        print(f"stackctl simulate: {err}", file=sys.stderr)
        return 1
    if args.trace:
        rate = read_trace(Path(args.trace))
    else:
        rate = shaped_trace(args.profile, args.peak_rps or 2 * trigger_rps(head), args.hours)
    timeline = simulate(head, rate, args.seed, args.metrics_outage)
    result = summary(head, timeline)
    write_outputs(head, timeline, result, Path(args.out), plot=not args.no_plot)
    print(f"{loaded.source}: {head.deployment}/{head.model}, {len(rate)} s simulated; outputs in {args.out}")
    keys = ["p50_ms", "p95_ms", "p99_ms", "slo_violation_seconds", "rejected_pct", "gpu_hours", "reaction_seconds"]
    if args.metrics_outage:
        keys += ["metrics_failing_seconds", "fallback_seconds"]
    for key in keys:
        print(f"  {key}: {result[key]:.1f}" if isinstance(result[key], float) else f"  {key}: {result[key]}")
    if args.compare:
        relative = path.resolve().relative_to(PROJECT_ROOT)
        shown = subprocess.run(
            ["git", "show", f"{args.compare}:{relative}"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=False
        )
        if shown.returncode != 0:
            print(
                f"stackctl simulate: cannot read {relative} at {args.compare}: {shown.stderr.strip()}", file=sys.stderr
            )
            return 1
        with tempfile.TemporaryDirectory() as tmp:
            base_file = Path(tmp) / path.name
            base_file.write_text(shown.stdout)
            base = scenario(load_stack_file(base_file, loaded.stack), args.deployment, args.model)
        table = compare(base, head, rate, args.seed, args.metrics_outage)
        (Path(args.out) / "compare.md").write_text(table)
        print(f"\nAgainst {args.compare}:\n{table}")
    return 0


def _add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads stacks/Pulumi.<NAME>.yaml")
    source.add_argument("--config", metavar="FILE", help="a stack YAML file anywhere")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="stackctl", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)

    validate = commands.add_parser("validate", help="check a stack's config and report every error")
    _add_stack_arguments(validate)
    validate.add_argument(
        "--model-repo", metavar="DIR", help="model repository to check names against (default: model_repo/)"
    )
    validate.set_defaults(run=cmd_validate)

    synth = commands.add_parser("synth", help="write every Kubernetes object the program would create")
    _add_stack_arguments(synth)
    synth.add_argument("--out", required=True, metavar="DIR", help="output folder")
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

    sim = commands.add_parser("simulate", help="simulate one deployment's scaling and latency under a load trace")
    _add_stack_arguments(sim)
    load = sim.add_mutually_exclusive_group(required=True)
    load.add_argument("--trace", metavar="FILE", help="CSV with t_seconds,rps")
    load.add_argument("--profile", choices=PROFILE_SHAPES, help="a built-in load shape")
    sim.add_argument(
        "--peak-rps",
        type=float,
        help="peak of --profile (default: twice the load that fires the queue trigger on the replica floor)",
    )
    sim.add_argument("--hours", type=float, default=1.0, help="length of --profile (default 1)")
    sim.add_argument("--deployment", metavar="NAME", help="default: the first deployment")
    sim.add_argument("--model", metavar="NAME", help="default: scaling.simulation.model, else the first profiled")
    sim.add_argument("--out", default="simulation", metavar="DIR", help="output folder (default simulation/)")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument(
        "--metrics-outage",
        type=_outage,
        action="append",
        default=[],
        metavar="START:SECONDS",
        help="Prometheus unreachable from second START for SECONDS (KEDA's fallback); repeatable",
    )
    sim.add_argument("--compare", metavar="REF", help="also run the stack config of this git revision; print deltas")
    sim.add_argument("--no-plot", action="store_true", help="skip timeline.png")
    sim.set_defaults(run=cmd_simulate)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    out = getattr(args, "out", None)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        print(
            f"stackctl {args.command}: --out {out} is a file; give a folder (new, or one this command wrote)",
            file=sys.stderr,
        )
        return 1
    try:
        return int(args.run(args))
    except ConfigError as err:
        print(err.report(), file=sys.stderr)
        return 1
    except (ValueError, OSError) as err:
        # Bad input files (traces, profiles) and unwritable outputs: the message names the file.
        print(f"stackctl {args.command}: {err}", file=sys.stderr)
        return 1
