"""Evaluate candidates with the simulator over several seeds and every shape of the plan, on every core, and pick
the one that holds the most shapes at the lowest worst-case cost.

A candidate holds a shape (planner.shapes) when every seed keeps p95 within the SLO, p99 within its bound when one
is set, and rejections within their bound; its figures on a shape are the means over the seeds. It passes when it
holds the plan's own trace. A shape's yardstick is the current settings' oracle on it: one per shape whatever the
candidate, so that a higher replica floor, which raises a candidate's own oracle, cannot pass for a better fit.
Among the candidates that pass, the objective is, first, the most derived shapes held within ORACLE_TARGET of their
yardstick (a shape whose load rises faster than a pod starts may be beyond every candidate, or held only by a fleet
kept far above the load), then the lowest cost: the worst case over the shapes of the GPU-hours ÷ the yardstick.
Each result depends only on the candidate, the shapes and the seeds, so the plan is the same whatever the number of
processes.
"""

from __future__ import annotations

import contextlib
import copyreg
import math
import multiprocessing
import multiprocessing.pool
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from tritonclient.grpc.model_config_pb2 import ModelConfig

from planner.candidates import Space, explore, refine
from planner.settings import Pins, Place, Settings, StackInputs, edits
from planner.shapes import TRACE, Shape
from platform_config.errors import ConfigError
from simulator import fluid
from simulator.oracle import oracle
from simulator.scenario import Scenario, at_floor_one, capacity_rps

REPORTED = (
    "gpu_hours",
    "p95_ms",
    "p99_ms",
    "rejected_pct",
    "reaction_seconds",
    "reaction_floor_seconds",
    "slo_violation_seconds",
    "static_gpu_hours",
    "oracle_gpu_hours",
    "oracle_ratio",
    "oracle_replica_rps",
    "oracle_hindsight_gpu_hours",
    "oracle_hindsight_ratio",
)
ORACLE_TARGET = 1.15
"""The most GPU-hours, as a multiple of a shape's yardstick, at which holding the shape counts for the objective
(issue 29): holding a spike with a fleet kept at twice the load is no plan for it."""
REFINE_SHARE = 1 / 3
"""Of the budget, the part spent on neighbours of the best candidates found by exploring."""
REFINE_AROUND = 5
"""How many of the best candidates the refinement walks around."""


WAKE_REPORTED = ("wakes", "waited_p99_s", "waited_max_s", "wake_failed", "gpu_hours_at_min_1")
"""At `replicas.min` 0 (Scenario.scales_to_zero), besides REPORTED: the wakes, the held requests' wait (p99, max;
seconds), those failed at the interceptor's timeout (also rejected), and the GPU-hours of the same settings at
`replicas.min` 1, which the saving of zero is measured against (summaries.wake_summary)."""
MODEL_REPORTED = ("p95_ms", "p99_ms", "rejected_pct")
"""With several models, each one's figures, reported and held to the bounds as `<model>/<figure>`."""


def evaluate(
    s: Scenario, load: NDArray[np.float64], seed: int, slo_seconds: float, p99_seconds: float | None = None
) -> dict[str, Any]:
    """One run's summary (simulator.summaries.summary's keys), from the fluid model: fast enough for a plan's many runs;
    with `static_gpu_hours`, what a fixed fleet sized for the trace's peak would use with these batching settings,
    and the oracle's GPU-hours at the plan's SLO `slo_seconds` (and p99 bound `p99_seconds`) with the run's as a
    multiple of them (simulator.oracle). With several models (Scenario.others) `load` has a column per model, and
    the summary each model's MODEL_REPORTED as `<model>/<figure>`."""
    rate = np.asarray(load.sum(axis=1), np.float64) if load.ndim > 1 else load
    static = math.ceil(float(rate.max()) / capacity_rps(s)) * s.gpus_per_pod * len(rate) / 3600
    run, models = fluid.evaluate_models(s, load, seed)
    bound = oracle(s, rate, slo_seconds, p99_seconds)
    per_model = {f"{model}/{key}": figures[key] for model, figures in models.items() for key in MODEL_REPORTED}
    if s.scales_to_zero:
        run["gpu_hours_at_min_1"] = fluid.evaluate(at_floor_one(s), load, seed)["gpu_hours"]
    return {**run, "static_gpu_hours": static, **bound.figures(float(run["gpu_hours"] or 0)), **per_model}


@dataclass(frozen=True)
class Bounds:
    slo_ms: float
    """The p95 bound."""
    max_rejected_pct: float
    p99_ms: float | None = None
    """The p99 bound; None: none (plan.md still shows each candidate's p99)."""
    wake_budget_s: float | None = None
    """At `replicas.min` 0: the deployment's `wake.budgetSeconds`, which the p99 wait of the requests held during a
    wake is held to (their failures at the timeout count as rejected); None: the deployment has no wake."""

    @property
    def seconds(self) -> tuple[float, float | None]:
        """The p95 and p99 bounds in seconds, as the oracle takes them."""
        return self.slo_ms / 1000, None if self.p99_ms is None else self.p99_ms / 1000


@dataclass(frozen=True)
class Job:
    """What every evaluation needs; forked workers inherit it rather than receive it pickled."""

    stack: StackInputs
    current: Settings
    places: dict[str, Place]
    shapes: tuple[Shape, ...]
    """The plan's trace first."""
    yardsticks: tuple[float, ...]
    """Per shape, the GPU-hours of the current settings' oracle: what the objective divides each shape's by."""
    seeds: tuple[int, ...]
    bounds: Bounds
    pins: Pins = field(default_factory=dict)
    """What a switch to the demand signal pins (planner.plan.capacity_pins)."""


@dataclass(frozen=True)
class ShapeRun:
    """A candidate's runs on one shape."""

    shape: str
    mean: dict[str, float | None]
    per_seed: tuple[dict[str, Any], ...]
    failures: tuple[str, ...]
    """Why it does not hold the shape, each `kind: detail` (p95 or rejected); empty when it does."""
    multiple: float | None = None
    """Its GPU-hours ÷ the shape's yardstick; None when not measured."""

    @property
    def held(self) -> bool:
        return not self.failures

    @property
    def within_target(self) -> bool:
        """Held, at most ORACLE_TARGET times the yardstick."""
        return self.held and self.multiple is not None and self.multiple <= ORACLE_TARGET


@dataclass(frozen=True)
class Result:
    index: int
    origin: str
    """current, sweep, random or refine: how the candidate was generated."""
    settings: Settings
    mean: dict[str, float | None]
    per_seed: tuple[dict[str, Any], ...]
    """The plan's own trace: means over the seeds, and each seed's figures."""
    failures: tuple[str, ...] = field(default=())
    """Why it failed on the trace, each `kind: detail` (kind: p95, rejected or invalid); empty when it passed."""
    shapes: tuple[ShapeRun, ...] = field(default=())
    """Its runs on the shapes derived from the trace (planner.shapes), in their order."""
    multiple: float | None = None
    """On the trace: its GPU-hours ÷ the trace's yardstick."""

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def runs(self) -> tuple[ShapeRun, ...]:
        """Every shape's runs, the trace's first."""
        return (ShapeRun(TRACE, self.mean, self.per_seed, self.failures, self.multiple), *self.shapes)

    @property
    def cost(self) -> float | None:
        """The worst case over every shape, the trace's too, of the GPU-hours ÷ the shape's yardstick; None when
        one is not measured."""
        multiples = [run.multiple for run in self.runs]
        return None if None in multiples else max(m for m in multiples if m is not None)

    @property
    def unheld(self) -> tuple[str, ...]:
        """The derived shapes it does not hold within ORACLE_TARGET of their yardstick."""
        return tuple(run.shape for run in self.shapes if not run.within_target)

    def failure_kinds(self) -> tuple[str, ...]:
        return tuple(f.split(":", 1)[0] for f in self.failures)


def _mean(values: Sequence[Any]) -> float | None:
    """The mean of finite numbers; None when a seed has none (no reaction measured, no request served)."""
    numbers = [float(v) for v in values if v is not None]
    if len(numbers) < len(values) or not all(math.isfinite(v) for v in numbers):
        return None
    return sum(numbers) / len(numbers)


def _failures(per_seed: Sequence[dict[str, Any]], bounds: Bounds) -> tuple[str, ...]:
    """Each bound broken, `kind: detail`: by the deployment's figures, then by each model's (`<model>/<figure>`,
    named in the detail), so that with several models every one of them is held to the SLO."""
    failures = []
    checked: list[tuple[str, float, str, str]] = [("p95_ms", bounds.slo_ms, "p95", " ms")]
    if bounds.p99_ms is not None:
        checked.append(("p99_ms", bounds.p99_ms, "p99", " ms"))
    checked.append(("rejected_pct", bounds.max_rejected_pct, "rejected", "%"))
    if bounds.wake_budget_s is not None and "waited_p99_s" in per_seed[0]:
        waits = [run["waited_p99_s"] for run in per_seed if run["waited_p99_s"] is not None]
        if any(not wait <= bounds.wake_budget_s for wait in waits):
            failures.append(
                f"wake: waited p99 {max(waits):.4g} s > {bounds.wake_budget_s:g} s budget in "
                f"{sum(not w <= bounds.wake_budget_s for w in waits)} of {len(per_seed)} seeds"
            )
    models = dict.fromkeys(key.split("/")[0] for key in per_seed[0] if "/" in key)
    for prefix in ("", *(f"{model}/" for model in models)):
        who = f"{prefix[:-1]} " if prefix else ""
        for figure, bound, label, unit in checked:
            key = prefix + figure
            broken = [(seed, run[key]) for seed, run in enumerate(per_seed) if not run[key] <= bound]
            unmeasured = [value for _, value in broken if math.isnan(value)]
            if unmeasured:
                # No request served on those seeds: nothing to compare with the bound, rather than "nan ms".
                failures.append(
                    f"{label}: {who}not measured (no request served) in {len(unmeasured)} of {len(per_seed)} seeds"
                )
            elif broken:
                worst = max(value for _, value in broken)
                failures.append(
                    f"{label}: {who}{worst:.4g}{unit} > {bound:g}{unit} in {len(broken)} of {len(per_seed)} seeds"
                )
    return tuple(failures)


def _shape_run(job: Job, s: Scenario, shape: Shape, yardstick: float) -> ShapeRun:
    runs = [evaluate(s, shape.load, seed, *job.bounds.seconds) for seed in job.seeds]
    keys = (*REPORTED, *(key for key in runs[0] if "/" in key), *(key for key in WAKE_REPORTED if key in runs[0]))
    per_seed = tuple({key: run[key] for key in keys} for run in runs)
    mean = {key: _mean([run[key] for run in per_seed]) for key in keys}
    gpu_hours = mean["gpu_hours"]
    multiple = None if gpu_hours is None else gpu_hours / yardstick
    return ShapeRun(shape.name, mean, per_seed, _failures(per_seed, job.bounds), multiple)


def shape_run(job: Job, settings: Settings, shape: int) -> ShapeRun:
    """`settings` (valid: planner.holding checks them first) on job.shapes[`shape`] alone, over the job's seeds."""
    s = job.stack.scenario(edits(job.current, settings, job.places, job.pins))
    return _shape_run(job, s, job.shapes[shape], job.yardsticks[shape])


def evaluate_candidate(job: Job, index: int, origin: str, settings: Settings) -> Result:
    try:
        s = job.stack.scenario(edits(job.current, settings, job.places, job.pins))
    except ConfigError as err:
        # Generation keeps candidates valid; should one slip through, it fails visibly rather than stops the plan.
        return Result(index, origin, settings, dict.fromkeys(REPORTED), (), (f"invalid: {err.issues[0].message}",))
    trace, *shapes = (
        _shape_run(job, s, shape, yardstick) for shape, yardstick in zip(job.shapes, job.yardsticks, strict=True)
    )
    failures = (*trace.failures, *_never_idle(trace.per_seed))
    return Result(index, origin, settings, trace.mean, trace.per_seed, failures, tuple(shapes), trace.multiple)


def _never_idle(per_seed: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """At a floor of 0, on the plan's own trace: a failure when no seed ever reached zero. Such a floor saves
    nothing and leaves the next request after any restart of its pod to wait for a wake: a floor of 1 or more is
    the same run without that risk. (The derived shapes, built from the trace's peak, have no idle spell to show.)"""
    if "gpu_hours_at_min_1" in per_seed[0] and all(
        not run["gpu_hours_at_min_1"] > run["gpu_hours"] for run in per_seed
    ):
        return ("wake: never idle at zero on any seed (no GPU-hours saved against replicas min 1)",)
    return ()


_JOB: Job | None = None


def _work(task: tuple[int, str, Settings]) -> Result:
    assert _JOB is not None
    return evaluate_candidate(_JOB, *task)


Task = tuple[int, str, Settings]
Runner = Callable[[list[Task]], Iterator[Result]]
"""Evaluates tasks, yielding their results in task order."""
ENGINES = ("local", "dask")
"""Where a plan's candidates run: `local`, a fork pool on this machine; `dask`, a Dask cluster."""


@contextlib.contextmanager
def _run(job: Job, processes: int) -> Iterator[Runner]:
    """A runner on a fork pool of `processes` (inline for one), kept from batch to batch so that its workers keep
    the response surfaces they measured; forked at the first batch run, after the current settings' run in this
    process, whose compiled code and surface the workers inherit."""
    global _JOB  # noqa: PLW0603 - the fork pool's workers read the job from the module they inherit
    _JOB = job
    with contextlib.ExitStack() as stack:
        pools: list[multiprocessing.pool.Pool] = []

        def run(tasks: list[Task]) -> Iterator[Result]:
            if processes <= 1 or len(tasks) <= 1:
                yield from map(_work, tasks)
                return
            if not pools:
                pools.append(stack.enter_context(multiprocessing.get_context("fork").Pool(processes)))
            yield from pools[0].imap(_work, tasks)

        yield run


def _model_config(data: bytes) -> ModelConfig:
    config = ModelConfig()
    config.ParseFromString(data)
    return config


def _pickled_model_config(config: ModelConfig) -> tuple[Callable[[bytes], ModelConfig], tuple[bytes]]:
    """A model's config as its bytes: pickle cannot find its generated class by the module name it carries."""
    return _model_config, (config.SerializeToString(),)


# A plan's job goes to Dask's workers pickled, its stack's model repository with it, and they pass it on to each
# other: wherever this module is imported (the workers import it to unpickle the job).
copyreg.pickle(ModelConfig, _pickled_model_config)


SCHEDULER_TIMEOUT = "15s"
"""How long to try to reach `--scheduler` before naming it: a scheduler on the network answers in milliseconds."""


@contextlib.contextmanager
def _dask(job: Job, processes: int, scheduler: str | None) -> Iterator[Runner]:
    """A runner on the Dask scheduler at `scheduler`, or on a LocalCluster of `processes` worker processes, one
    thread each, on loopback; the job goes to every worker once. Each result depends only on the job and its task,
    so the results are the local run's."""
    from distributed import Client, LocalCluster  # noqa: PLC0415 - only a plan on Dask needs it

    with contextlib.ExitStack() as stack:
        if scheduler is None:
            # distributed's constructors are untyped.
            cluster = stack.enter_context(
                LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=processes,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                )
            )
            client = stack.enter_context(Client(cluster))  # type: ignore[no-untyped-call]
        else:
            try:
                client = stack.enter_context(Client(scheduler, timeout=SCHEDULER_TIMEOUT))  # type: ignore[no-untyped-call]
            except (OSError, TimeoutError, ValueError) as err:
                raise ValueError(
                    f"--scheduler {scheduler}: cannot reach the Dask scheduler ({err}); start one there "
                    "(`dask scheduler`), or leave --scheduler out for a LocalCluster on this machine"
                ) from None
        shared = client.scatter(job, broadcast=True)

        def run(tasks: list[Task]) -> Iterator[Result]:
            futures = [client.submit(evaluate_candidate, shared, *task, pure=False) for task in tasks]
            for future in futures:
                yield future.result()

        yield run


@contextlib.contextmanager
def _runner(job: Job, processes: int, engine: str, scheduler: str | None) -> Iterator[Runner]:
    if engine == "dask":
        with _dask(job, processes, scheduler) as run:
            yield run
        return
    if engine != "local" or scheduler is not None:
        raise ValueError(f"engine {engine!r}{' with a scheduler' if scheduler else ''}: expected local, or dask")
    with _run(job, processes) as run:
        yield run


def rank(result: Result) -> tuple[int, float, float, int]:
    """The most shapes held first; then the lowest worst-case cost; then the lower p95 on the trace; then the
    earlier candidate."""
    cost, p95 = result.cost, result.mean["p95_ms"]
    return (
        len(result.unheld),
        cost if cost is not None else math.inf,
        p95 if p95 is not None else math.inf,
        result.index,
    )


def passing(results: Iterable[Result]) -> list[Result]:
    return sorted((r for r in results if r.passed), key=rank)


Progress = Callable[[int, int, Result | None], None]
"""Called after each result: done, total, the best passing so far (None: none yet)."""


def search(
    job: Job,
    space: Space,
    budget: int,
    seed: int,
    progress: Progress,
    *,
    processes: int = 0,
    engine: str = "local",
    scheduler: str | None = None,
) -> list[Result]:
    """Evaluate up to `budget` candidates: explore, then refine around the best passing ones; on `engine` (ENGINES):
    `processes` (default: this machine's cores) local processes, or the Dask `scheduler`'s workers (none: a
    LocalCluster of `processes` workers)."""
    with _runner(job, processes or len(os.sched_getaffinity(0)), engine, scheduler) as runner:
        return _search(job, space, budget, seed, progress, runner=runner)


def _search(job: Job, space: Space, budget: int, seed: int, progress: Progress, *, runner: Runner) -> list[Result]:
    explored = explore(space, budget - int(budget * REFINE_SHARE) if budget > 1 else 1, seed)
    # The current settings alone first, in this process: the simulator compiles before the pool forks.
    results = [evaluate_candidate(job, 0, *explored[0])]
    best = passing(results)
    progress(1, budget, best[0] if best else None)

    def run(batch: list[tuple[str, Settings]]) -> None:
        tasks = [(len(results) + i, origin, settings) for i, (origin, settings) in enumerate(batch)]
        for result in runner(tasks):
            results.append(result)
            best = passing(results)
            progress(len(results), budget, best[0] if best else None)

    run(explored[1:])
    around = [r.settings for r in passing(results)[:REFINE_AROUND]] or [job.current]
    run(refine(space, around, {r.settings for r in results}, budget - len(results), seed + 1))
    return results
