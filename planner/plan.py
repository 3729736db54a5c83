"""A plan end to end: the stack's current settings, the candidate space, the shapes, the search and the choice."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from planner.candidates import SHARE_SIGNALS, Limits, Space, space
from planner.holding import Holding, cheapest_holding
from planner.search import Bounds, Job, Progress, Result, passing, search
from planner.settings import (
    Floor,
    Pins,
    Place,
    Settings,
    StackInputs,
    Value,
    current_settings,
    edits,
    locations,
)
from planner.shapes import Shape, measurable, plan_shapes
from platform_config.errors import ConfigError
from platform_config.latency_profile import read_profile
from platform_config.loader import StackConfig
from platform_config.paths import DEFAULT_MODEL_REPO, display_path
from simulator.batcher import LatencyProfile
from simulator.daily_floor import learn_floor
from simulator.oracle import oracle
from simulator.scenario import PROFILES, Scenario, capacity_rps, ensemble_steps
from triton_platform.model_packaging.source import ModelRepository, read_repository


@dataclass(frozen=True)
class Plan:
    stack: str
    deployment: str
    model: str
    trace: str
    """What load the plan ran: the trace file, or the built-in profile and its arguments."""
    bounds: Bounds
    seeds: tuple[int, ...]
    budget: int
    seed: int
    space: Space
    results: list[Result]
    places: dict[str, Place]
    shapes: tuple[Shape, ...]
    """The plan's trace first, then the shapes derived from it."""
    yardsticks: tuple[float, ...]
    """Per shape, the current settings' oracle GPU-hours (Job.yardsticks)."""
    pod_start_seconds: float
    node_provision_seconds: float
    holdings: tuple[Holding, ...] = ()
    """Per derived shape no candidate holds, the cheapest single reaction setting that would (planner.holding)."""
    unplanned: tuple[str, ...] = ()
    """The deployment's models the plan does not simulate: served on the same pods, carrying none of the trace's
    load (plan.md says so)."""
    models: tuple[str, ...] = ()
    """With several models simulated together, each (Scenario.models, `model` first); empty: `model` alone."""
    mix: tuple[float, ...] = ()
    """With several models, each one's share of the trace's requests."""
    pins: Pins = field(default_factory=dict)
    """What a switch to the demand signal pins (capacity_pins)."""

    @property
    def current(self) -> Result:
        return self.results[0]

    @property
    def ranked(self) -> list[Result]:
        """The candidates that passed, cheapest first."""
        return passing(self.results)

    @property
    def chosen(self) -> Result | None:
        return self.ranked[0] if self.ranked else None

    @property
    def changes(self) -> dict[Place, Value]:
        """The stack-file values the chosen candidate changes; none without one."""
        chosen = self.chosen
        return edits(self.current.settings, chosen.settings, self.places, self.pins) if chosen else {}


def capacity_pins(loaded: StackConfig, repo: ModelRepository) -> dict[str, tuple[str, str]]:
    """Each model the stack serves that runs instances, with the latency profile it would be pinned to by a switch
    to the `demand` signal and that file's sha256: the stack's own pin where it has one, else the profile the
    simulator reads (bench/results/profiles/<model>.json), where there is one."""
    pinned = loaded.config.scaling.capacity_profiles
    pins = {}
    for model in sorted({m for d in loaded.config.serving.deployments.values() for m in d.models}):
        if ensemble_steps(repo.models[model].config):
            continue
        if model in pinned:
            pins[model] = (pinned[model].path, pinned[model].sha256)
        elif (PROFILES / f"{model}.json").is_file():
            path = PROFILES / f"{model}.json"
            pins[model] = (display_path(path), read_profile(path).sha256)
    return pins


FLOOR_SHARES = (0.5, 0.75, 1.0)
"""The shares of the trace's quietest day's need a learned floor holds (simulator.daily_floor.learn_floor)."""


def learned_floors(head: Scenario, rate: NDArray[np.float64]) -> tuple[Floor, ...]:
    """Daily floors learned from `rate` (req/s per second, all the deployment's models) at each of FLOOR_SHARES:
    what a pod carries at the current signal's target share (0.8 where the signal's target is no share), its pods
    started one pod start, and where the pool adds nodes one node provisioning, ahead."""
    target = head.signal.target if head.signal.name in SHARE_SIGNALS else 0.8
    floors = (
        learn_floor(
            rate,
            pod_capacity=capacity_rps(head),
            target=target,
            lead_seconds=head.pod_start_seconds + head.node_provision_seconds,
            share=share,
            min_replicas=head.min_replicas,
            max_replicas=head.max_replicas,
        )
        for share in FLOOR_SHARES
    )
    learned = (tuple((w.start, w.end, w.replicas) for w in floor) for floor in floors)
    return tuple(dict.fromkeys(floor for floor in learned if floor))


def _runs_on(steps: tuple[str, ...], head: Scenario) -> bool:
    """Whether an ensemble of `steps` runs on models the head simulates: it has no instances of its own."""
    return bool(steps) and set(steps) <= set(head.models)


def make_plan(
    path: Path,
    loaded: StackConfig,
    head: Scenario,
    rate: NDArray[np.float64],
    *,
    trace: str,
    bounds: Bounds,
    budget: int,
    seeds: int,
    seed: int,
    progress: Progress,
    engine: str = "local",
    scheduler: str | None = None,
) -> Plan:
    """Search `budget` candidates for `head`'s deployment of the stack in `path` (validated as `loaded`), on `engine`
    (planner.search.search). With several models (`head.others`) `rate` has a column per model: they run together
    on the deployment's pods, every one held to the bounds; the candidates tune every one's batching and the
    deployment's scaling together."""
    columns = rate if head.others else None
    shapes = plan_shapes(np.asarray(rate.sum(axis=1), np.float64) if head.others else rate, columns, head.mix)
    measurable(shapes, trace, head.models if head.others else ())  # before anything runs: ValueError, an input error
    repo = read_repository(DEFAULT_MODEL_REPO)
    stack = StackInputs.read(path, loaded, repo, head)
    current = current_settings(loaded, head)
    others = tuple(m.model for m in head.others)
    places = locations(head.deployment, head.model, head.signal.name, others)
    pins = capacity_pins(loaded, repo)

    def refusal(settings: Settings) -> str | None:
        """Why the stack with `settings` does not validate (its first issue); None when it does."""
        try:
            stack.scenario(edits(current, settings, places, pins))
        except ConfigError as err:
            issue = err.issues[0]
            return f"{issue.path}: {issue.message}"
        return None

    def valid(settings: Settings) -> bool:
        return refusal(settings) is None

    def largest(model: str, tau: LatencyProfile) -> int:
        # Beyond the largest measured batch tau(b) is extrapolated, and past the model's own it is refused.
        return max(min(int(repo.models[model].config.max_batch_size), max(tau.sizes)), 1)

    limits = Limits(
        largest(head.model, head.tau),
        loaded.config.serving.p95_latency_slo_ms * 1000,
        head.signal.name,
        keep_floor=loaded.config.environment == "production",
        others_max_batch=tuple((m.model, largest(m.model, m.tau)) for m in head.others),
        may_idle=head.wake_timeout_seconds is not None,
        floors=() if head.scales_to_zero else learned_floors(head, shapes[0].rate),
    )
    candidates = space(current, limits, valid)
    run_seeds = tuple(range(seed, seed + seeds))
    yardsticks = tuple(oracle(head, shape.rate, *bounds.seconds).gpu_hours for shape in shapes)
    job = Job(stack, current, places, shapes, yardsticks, run_seeds, bounds, pins)
    results = search(job, candidates, budget, seed, progress, engine=engine, scheduler=scheduler)
    ranked = passing(results)
    base = ranked[0].settings if ranked else current
    holdings = tuple(
        cheapest_holding(job, base, number, candidates.options, refusal)
        for number in range(1, len(shapes))
        if not any(len(r.runs) == len(shapes) and r.runs[number].held for r in results)
    )
    return Plan(
        loaded.stack,
        head.deployment,
        head.model,
        trace,
        bounds,
        run_seeds,
        budget,
        seed,
        candidates,
        results,
        places,
        shapes,
        yardsticks,
        head.pod_start_seconds,
        head.node_provision_seconds,
        holdings,
        tuple(
            m
            for m in loaded.config.serving.deployments[head.deployment].models
            if m not in head.models and not (head.others and _runs_on(ensemble_steps(repo.models[m].config), head))
        ),
        head.models if head.others else (),
        head.mix,
        pins,
    )
