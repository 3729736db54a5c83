"""What `stackctl simulate` and `stackctl plan` both read: the stack, the load (a trace or a built-in shape), the
--compare revision, and what their outputs record as the run's inputs, every input checked before a run."""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platform_config.errors import ConfigError
from platform_config.loader import StackConfig, load_stack_file
from platform_config.paths import PROJECT_ROOT, STACK_FILE, display_path
from simulator.shapes import MAX_REQUESTS, MAX_RPS, MIN_REQUESTS
from stackctl.command import stack_source
from triton_platform.args.excerpts import excerpt
from triton_platform.args.input_files import InputFile

if TYPE_CHECKING:
    # The simulator needs numba, which the runtime virtualenv lacks: only its types here.
    import numpy as np
    from numpy.typing import NDArray

    from simulator.scenario import Scenario


def compare_base(args: argparse.Namespace, path: Path, loaded: StackConfig) -> StackConfig:
    """The stack file at `--compare REF`, resolved and validated before any simulation runs."""
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


@dataclass(frozen=True)
class NamedLoad:
    """A load's rate columns as it names them: a model each, or ("rps",), one column split by the shares."""

    names: tuple[str, ...]
    rate: NDArray[np.float64]


def run_inputs(
    args: argparse.Namespace, *, models: bool = False
) -> tuple[Path, StackConfig, Scenario, NDArray[np.float64], Scenario | None, dict[str, Any], NamedLoad]:
    """What `simulate` and `plan` run: the stack file and its config, the head scenario, the trace, the
    --compare scenario, what summary.json records as the run's inputs, every input checked before the run, and the
    load as it names its models (before an ensemble's rate goes to its steps).

    `models` (simulate): the load may run several models of the deployment together (a trace with a column per
    model, or scaling.simulation.shares); the trace then has a column per model of the scenarios (Scenario.models).

    ValueError: the message `stackctl simulate: ...` (or `plan`) prints.
    """
    from platform_config.latency_profile import PROFILE_FILE  # noqa: PLC0415
    from simulator.scenario import (  # noqa: PLC0415
        TRACE_FILE,
        model_load,
        read_trace,
        scenario,
        shaped_trace,
        trigger_rps,
    )

    path, stack = stack_source(args)
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
    names, columns, served, head = _head(args, loaded, models=models)
    base = None
    if args.compare:
        old = compare_base(args, path, loaded)
        base = (
            scenario(old, args.deployment, head.model, others=head.models[1:], mix=head.mix)
            if head.others
            else scenario(old, args.deployment, served[0] if served else args.model)
        )
    trace: dict[str, Any]
    if args.trace:
        rate = read_trace(Path(args.trace)) if columns is None else columns if names != ("rps",) else columns[:, 0]
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
    named = NamedLoad(names, rate.reshape(len(rate), -1))
    if models and not args.model and (len(served) > 1 or names != ("rps",)):
        # Each model's req/s per second, a column each (ensembles' load on their steps).
        _, rate = model_load(loaded, args.deployment, names, rate.reshape(len(rate), -1), trace.get("file", ""))
        if not head.others:
            rate = rate[:, 0].copy()
    measurable(rate, trace)
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
        **({"models": _model_inputs(head)} if head.others else {}),
        "seed": args.seed,
        "metrics_outages": [list(outage) for outage in args.metrics_outage],
        # A default by autoscaler and platform (platform_config/node_provisioning.py): a new default moves results
        # without the stack file changing.
        "node_provision_seconds": head.node_provision_seconds,
    }
    return path, loaded, head, rate, base, inputs, named


def _head(
    args: argparse.Namespace, loaded: StackConfig, *, models: bool
) -> tuple[tuple[str, ...], NDArray[np.float64] | None, tuple[str, ...], Scenario]:
    """The trace's rate columns (("rps",) for a one-column load) and its rates when it has a column per model, the
    models a run of several runs on (empty: one model), and the head scenario."""
    from simulator.scenario import read_trace_columns, scenario  # noqa: PLC0415

    names: tuple[str, ...] = ("rps",)
    columns = None
    if args.trace and models:
        names, columns = read_trace_columns(Path(args.trace))
        if args.model and names != ("rps",):
            raise ValueError(
                f"--model {excerpt(args.model)} runs one model, and {display_path(Path(args.trace))} has a column "
                f"per model ({', '.join(names)}); leave --model out, or give a trace of t_seconds,rps"
            )
    if not models or args.model:
        return names, columns, (), scenario(loaded, args.deployment, args.model)
    where = display_path(Path(args.trace)) if args.trace else f"--profile {args.profile}"
    served, mix = _models(loaded, args.deployment, names, columns, where)
    if len(served) > 1:
        return names, columns, served, scenario(loaded, args.deployment, served[0], others=served[1:], mix=mix)
    return names, columns, served, scenario(loaded, args.deployment, served[0] if served else None)


def _models(
    loaded: StackConfig,
    deployment: str | None,
    names: tuple[str, ...],
    columns: NDArray[np.float64] | None,
    where: str,
) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The models a load runs on (simulator.scenario.model_load) and each one's share of its requests: of the
    trace's columns, or (a one-column load) of the shares; ((), ()) for the one-model run."""
    import numpy as np  # noqa: PLC0415 - the simulator's environment has it

    from simulator.scenario import model_load, run_mix  # noqa: PLC0415

    # A one-column load splits the same at every rate: one second of 1 req/s gives the models and the mix.
    served, split = model_load(loaded, deployment, names, columns if columns is not None else np.ones((1, 1)), where)
    return served, run_mix(split) if served else ()


def _model_inputs(head: Scenario) -> list[dict[str, Any]]:
    """Each simulated model's latency profile, its sha256 and its share of the run's requests."""
    from platform_config.latency_profile import PROFILE_FILE  # noqa: PLC0415

    profiles = [head.profile, *(m.profile for m in head.others)]
    return [
        {
            "model": model,
            "profile": profile,
            "profile_sha256": InputFile(PROJECT_ROOT / profile, PROFILE_FILE).sha256().hex(),
            "share": share,
        }
        for model, profile, share in zip(head.models, profiles, head.mix, strict=True)
    ]


def _load_source(trace: dict[str, Any]) -> tuple[str, str]:
    """How the load is named in a message (the trace file, or the --profile options), and what raises or lowers it."""
    if "file" in trace:
        return trace["file"], "its rates or its length"
    source = f"--profile {trace['shape']} --peak-rps {trace['peak_rps']:.15g} --hours {trace['hours']:.15g}"
    return source, "--peak-rps or --hours"


def measurable(rate: NDArray[np.float64], trace: dict[str, Any]) -> None:
    """Refuse a load too small to measure a p95 on: fewer than shapes.MIN_REQUESTS requests offered. Without it a
    run may serve no request, and its p95 (simulator.timeline.percentiles of an empty histogram) is NaN: `p95 nan ms`,
    which the plan read as a missed SLO and answered with advice to raise replicas.max."""
    offered = float(rate.sum())
    if offered >= MIN_REQUESTS:
        return
    source, change = _load_source(trace)
    raise ValueError(
        f"{source} carries {offered:,.4g} requests over {len(rate)} s (each rate times the seconds it holds), too "
        f"little load to measure: a p95 needs at least {MIN_REQUESTS} requests (with fewer, 5% of them is less than "
        f"one request, and a run may serve none); raise {change}"
    )


def within_request_budget(rate: NDArray[np.float64], trace: dict[str, Any], runs: int) -> None:
    """Refuse a load the detailed simulation cannot run in about a minute (shapes.MAX_REQUESTS): it runs each
    request, so its cost grows with the rate; `runs`: 2 with --compare, which runs the load twice."""
    offered = float(rate.sum()) * runs
    if offered <= MAX_REQUESTS:
        return
    source, lower = _load_source(trace)
    raise ValueError(
        f"{source} offers {offered:,.0f} requests{' over the two runs of --compare' if runs == 2 else ''}, above "
        f"the {MAX_REQUESTS:,} one simulation runs (each request goes through the batcher: about a minute on 2 "
        f"cores); lower {lower}, or search it with `stackctl plan`, whose cost does not grow with the rate"
    )
