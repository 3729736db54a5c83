"""What one simulation runs: a deployment of a stack, its model's batching and profile, and a load trace.

Several models (`stackctl simulate` only; docs/simulation.md, "Several models"): a trace with a column per model
(`t_seconds,<model>,...`), or a one-column load split by `scaling.simulation.shares`, runs each model with its own
batcher and profile (Scenario.others). A request to an ensemble is a request to each of its steps (model_load);
loaded_ensembles names the ensembles a load calls, whose end-to-end latency simulator.ensembles reports.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from google.protobuf.json_format import MessageToDict
from numpy.typing import NDArray
from tritonclient.grpc.model_config_pb2 import ModelConfig

from platform_config.capacity import pod_capacity_rps
from platform_config.latency_profile import (
    MAX_PROFILE_SECONDS,
    ProfileFile,
    config_differences,
    read_profile,
    tau_config,
    tau_fields,
)
from platform_config.loader import StackConfig
from platform_config.model_settings import render_stack
from platform_config.node_provisioning import kept_nodes, pool_node_provisioning
from platform_config.paths import DEFAULT_MODEL_REPO, PROJECT_ROOT, display_path
from platform_config.scaling import ScalePolicy
from simulator.batcher import BatcherConfig, LatencyProfile
from simulator.daily_floor import FloorWindow, floor_windows
from simulator.hpa import Behavior, Policy, Rules
from simulator.keda import Fallback
from simulator.shapes import MAX_RPS, MAX_SECONDS, MIN_SECONDS, PROFILE_SHAPES, TRACE_RULES
from simulator.signals import SignalSpec
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import MODEL_NAME
from triton_platform.args.input_files import InputFile, InputKind
from triton_platform.model_packaging.instances import instances_per_pod
from triton_platform.model_packaging.source import read_repository

PROFILES = PROJECT_ROOT / "bench" / "results" / "profiles"
MODEL_NAME_RE = re.compile(MODEL_NAME)
TRACE_FILE = InputKind("trace", 16 * 1024 * 1024)
"""A row for every second of the longest run (MAX_SECONDS, 2 days) at 90 characters a row is under 16 MiB; rows
closer than a second add nothing, since the rate is taken per second."""


@dataclass(frozen=True)
class Served:
    """Another model of the deployment, simulated beside the scenario's own (Scenario.others)."""

    model: str
    batcher: BatcherConfig
    tau: LatencyProfile
    profile: str
    """Its latency profile's file, as Scenario.profile."""


@dataclass(frozen=True)
class Scenario:
    stack: str
    deployment: str
    model: str
    batcher: BatcherConfig
    tau: LatencyProfile
    min_replicas: int
    max_replicas: int
    signal: SignalSpec
    """The load trigger: which signal, against what target."""
    behavior: Behavior
    scrape_seconds: float
    gpus_per_pod: int
    gpus_per_node: int
    max_nodes: int
    warm_nodes: int
    """GPU nodes up at the start: the floor's plus the overprovisioning spares."""
    node_provision_seconds: float
    pod_start_seconds: float
    """Image pull plus model load plus the readiness probe, for a pod on a node already up."""
    drain_seconds: float
    slo_seconds: float
    fallback: Fallback | None
    """KEDA's fallback for failed metric reads; None: none configured."""
    gpu_memory_target: float
    """AverageValue target of the GPU-memory trigger (used/total per replica)."""
    gpu_memory_ratio: float | None
    """GPU memory used/total of a serving pod; None: the GPU-memory trigger is left out."""
    profile: str = ""
    """The latency profile's file, relative to the project when inside it: what the outputs name."""
    profile_warnings: tuple[str, ...] = ()
    """Where the profile was measured on a config that differs from the stack's in a field that changes tau(b)."""
    others: tuple[Served, ...] = ()
    """The deployment's other models simulated with `model`, each with its own batcher and instances on the same
    pods; empty: one model, as `stackctl plan` runs."""
    mix: tuple[float, ...] = ()
    """Each simulated model's share of the run's requests, `model` first, then `others`; empty with one model."""
    cooldown_seconds: float = 300.0
    """KEDA's `cooldownPeriod` (keda.sh/docs/2.20/reference/scaledobject-spec): with `min_replicas` 0, how long every
    trigger must have been inactive, since its last active check, before KEDA's own loop scales 1 -> 0."""
    polling_seconds: float = 30.0
    """KEDA's `pollingInterval`: how often its own loop checks the triggers (the 1 -> 0 decision)."""
    floor: tuple[FloorWindow, ...] = ()
    """The deployment's daily floor (`scaling.dailyFloor`): KEDA cron windows of minimum replicas; empty: none."""
    wake_timeout_seconds: float | None = None
    """With `min_replicas` 0: how long the KEDA HTTP add-on's interceptor holds a request while no pod is ready (the
    route's readiness timeout, which the platform sets to the deployment's `wake.budgetSeconds`) before answering
    504; None: no timeout (the deployment has no wake budget)."""

    @property
    def scales_to_zero(self) -> bool:
        """Whether the deployment idles at zero pods and wakes on a request (simulator.scale_to_zero)."""
        return self.min_replicas == 0

    @property
    def models(self) -> tuple[str, ...]:
        """Every model simulated, `model` first."""
        return (self.model, *(m.model for m in self.others))

    @property
    def batchers(self) -> tuple[tuple[BatcherConfig, LatencyProfile], ...]:
        """Every simulated model's batcher and latency profile, in `models`' order."""
        return ((self.batcher, self.tau), *((m.batcher, m.tau) for m in self.others))

    @property
    def capacities(self) -> tuple[float, ...]:
        """Every simulated model's requests per second one pod serves alone at full batches, in `models`' order: what
        the demand signal divides each model's arrivals by."""
        return tuple(model_capacity_rps(batcher, tau) for batcher, tau in self.batchers)


def rules(policy: ScalePolicy) -> Rules:
    policies = [Policy("Percent", policy.percent, policy.period_seconds)]
    if policy.pods:
        policies.append(Policy("Pods", policy.pods, policy.period_seconds))
    return Rules(policy.stabilization_seconds, tuple(policies), "Max")


def load_profile(source: Path | ProfileFile) -> LatencyProfile:
    """A profile written by `stackctl profile` or bench/latency_profile.py (its file, or the file already read),
    checked so that a bad file is named rather than run.

    `request_overhead_percentiles_seconds` may be left out (no overhead), e.g. for
    a tau(b) taken from a GPU server's own statistics. Other keys are not read here: profile_warnings reads
    what a profile records of where it was measured (simulator/profiling.py).
    """
    read = source if isinstance(source, ProfileFile) else read_profile(source)
    return profile_of(read.data, read.where)


def profile_of(profile: dict[str, object], where: str) -> LatencyProfile:
    """A profile's JSON object as the simulator's LatencyProfile; ValueError naming `where` and the key if not one."""
    return LatencyProfile(*tau_fields(profile, where))


def profile_warnings(profile: dict[str, object], where: str, model: str, config: ModelConfig) -> tuple[str, ...]:
    """ValueError when the profile records another model; a warning when its recorded config differs from the
    stack's rendered `config` in a field that changes tau(b) (max batch size, instance count, backend)."""
    recorded = profile.get("model")
    if recorded is not None and recorded != model:
        raise ValueError(
            f"{where} is the latency profile of model {excerpt(recorded)}, not of model {model!r} that the "
            f"simulation runs; measure {model!r} (stackctl profile --model {model}, docs/profiling.md) or point "
            "scaling.simulation.profile at its profile"
        )
    current = tau_config(MessageToDict(config, preserving_proto_field_name=True))
    differences = config_differences(profile.get("config"), current)
    if not differences:
        return ()
    return (
        f"{where} was measured on a config of model {model!r} that differs from the stack's rendered config "
        f"({'; '.join(differences)}); tau(b) may not hold for it: measure again with stackctl profile "
        "(docs/profiling.md)",
    )


def seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for unit in ("ms", "s", "m", "h"):
        if duration.endswith(unit) and duration[: -len(unit)].isdigit():
            return int(duration[: -len(unit)]) * units[unit]
    raise ValueError(f"not a Prometheus duration: {duration!r}")


def _profiled(profile: Path, model: str, profiled: Sequence[str]) -> None:
    """ValueError when the latency profile `profile` of `model` is missing."""
    if not profile.is_file():
        raise ValueError(
            f"no latency profile {display_path(profile)} for model {model!r}; "
            f"measure it with stackctl profile --model {model} (docs/profiling.md), or simulate a model with one"
            + (f" ({', '.join(profiled)})" if profiled else "")
        )


def _served(
    model_config: ModelConfig, chosen: str, profile: Path, gpus_per_pod: int
) -> tuple[BatcherConfig, LatencyProfile, tuple[str, ...]]:
    """A model's batcher from its rendered config, its latency profile, and the profile's warnings."""
    batching = model_config.dynamic_batching if model_config.HasField("dynamic_batching") else None
    policy = batching.default_queue_policy if batching and batching.HasField("default_queue_policy") else None
    instances = instances_per_pod(model_config, gpus_per_pod)
    batcher = BatcherConfig(
        max_batch_size=max(model_config.max_batch_size, 1),
        max_queue_delay_s=(batching.max_queue_delay_microseconds / 1e6) if batching else 0.0,
        preferred_sizes=tuple(batching.preferred_batch_size) if batching else (),
        instances=instances,
        max_queue_size=policy.max_queue_size if policy else 0,
        timeout_s=(policy.default_timeout_microseconds / 1e6) if policy else 0.0,
        dynamic=batching is not None,
    )
    read = read_profile(profile)
    tau = load_profile(read)
    warnings = profile_warnings(read.data, read.where, chosen, model_config)
    largest = tau(batcher.max_batch_size)
    if largest > MAX_PROFILE_SECONDS:
        # Past its last measured size tau(b) continues the last slope (LatencyProfile.table).
        raise ValueError(
            f"{display_path(profile)}: tau_seconds, extrapolated to model {chosen!r}'s max batch size "
            f"{batcher.max_batch_size}, is {largest:g} s, above {MAX_PROFILE_SECONDS:g} s; measure tau_seconds up "
            f"to batch size {batcher.max_batch_size} (stackctl profile --model {chosen})"
        )
    return batcher, tau, warnings


def deployment_name(stack: StackConfig, deployment: str | None) -> str:
    """`deployment`, or the stack's first; ValueError naming the known ones when the stack has none of that name."""
    deployments = stack.config.serving.deployments
    if deployment is not None and deployment not in deployments:
        raise ValueError(
            f"no deployment {excerpt(deployment)} in {stack.source}; known: {', '.join(sorted(deployments))}"
        )
    return deployment or sorted(deployments)[0]


def scenario(
    stack: StackConfig,
    deployment: str | None = None,
    model: str | None = None,
    repo: Path = DEFAULT_MODEL_REPO,
    *,
    others: Sequence[str] = (),
    mix: Sequence[float] = (),
) -> Scenario:
    """The scenario of one deployment, from the stack's validated config and its rendered model config.

    `others`: more models of the deployment simulated with `model` (model_load chooses them), `mix` the share of
    the run's requests of each, `model`'s first. Each model's profile is `bench/results/profiles/<model>.json`,
    but `scaling.simulation.profile` for the model that the stack simulates alone."""
    config = stack.config
    name = deployment_name(stack, deployment)
    spec = config.serving.deployments[name]
    sim = config.scaling.simulation
    profiled = [m for m in spec.models if (PROFILES / f"{m}.json").exists()]
    chosen = model or sim.model or (profiled[0] if profiled else spec.models[0])
    if chosen not in spec.models:
        # Say where the name came from: the flag, or the stack's scaling.simulation.model.
        origin = "" if model else " (scaling.simulation.model)"
        raise ValueError(
            f"model {excerpt(chosen)}{origin} is not served by deployment {name!r} of {stack.source}; "
            f"it serves {', '.join(spec.models)}"
        )
    alone = sim.model or (profiled[0] if profiled else spec.models[0])
    if others:
        profile = PROJECT_ROOT / sim.profile if sim.profile and chosen == alone else PROFILES / f"{chosen}.json"
    else:
        profile = PROJECT_ROOT / sim.profile if sim.profile and not model else PROFILES / f"{chosen}.json"
    _profiled(profile, chosen, profiled)
    rendered = render_stack(stack.stack, config.serving, config.models, read_repository(repo))
    batcher, tau, warnings = _served(rendered.models[chosen].config, chosen, profile, spec.gpus_per_pod)
    served = []
    for other in others:
        path = PROJECT_ROOT / sim.profile if sim.profile and other == alone else PROFILES / f"{other}.json"
        _profiled(path, other, profiled)
        b, t, w = _served(rendered.models[other].config, other, path, spec.gpus_per_pod)
        served.append(Served(other, b, t, display_path(path)))
        warnings += w
    pool = config.gpu_pool
    fallback = config.scaling.fallback
    return Scenario(
        stack=stack.stack,
        deployment=name,
        model=chosen,
        batcher=batcher,
        tau=tau,
        min_replicas=spec.replicas.min,
        max_replicas=spec.replicas.max,
        signal=SignalSpec(config.scaling.signal, config.scaling.signal_target()),
        behavior=Behavior(rules(config.scaling.scale_up), rules(config.scaling.scale_down)),
        scrape_seconds=seconds(config.monitoring.scrape_interval),
        gpus_per_pod=spec.gpus_per_pod,
        gpus_per_node=pool.gpus_per_node,
        max_nodes=pool.max_nodes,
        warm_nodes=kept_nodes(pool, spec.replicas.min * spec.gpus_per_pod),
        node_provision_seconds=pool_node_provisioning(config.cluster, pool, sim).seconds,
        pod_start_seconds=sim.pod_start_seconds,
        drain_seconds=config.serving.drain.pre_stop_seconds,
        slo_seconds=config.serving.p95_latency_slo_ms / 1000,
        fallback=Fallback(fallback.failure_threshold, fallback.replicas, fallback.behavior) if fallback else None,
        gpu_memory_target=config.scaling.gpu_memory_ratio_target,
        gpu_memory_ratio=sim.gpu_memory_ratio,
        profile=display_path(profile),
        profile_warnings=warnings,
        others=tuple(served),
        mix=tuple(mix),
        # At zero (docs/scale-to-zero.md): KEDA's cooldown and loop, and the interceptor's readiness timeout, the
        # deployment's wake budget (None: it never idles at zero).
        cooldown_seconds=config.scaling.cooldown_seconds,
        polling_seconds=config.scaling.polling_interval_seconds,
        wake_timeout_seconds=spec.wake.budget_seconds if spec.wake is not None else None,
        floor=floor_windows(config.scaling.daily_floor.get(name)),
    )


def at_floor_one(s: Scenario) -> Scenario:
    """A scenario at `replicas.min` 0 kept at one replica instead: what going to zero is measured against (its
    first pod's node warm, as the stack's floor would keep it)."""
    return replace(
        s,
        min_replicas=1,
        warm_nodes=max(s.warm_nodes, math.ceil(s.gpus_per_pod / s.gpus_per_node)),
        max_replicas=max(s.max_replicas, 1),
    )


def model_capacity_rps(batcher: BatcherConfig, tau: LatencyProfile) -> float:
    """Requests per second one model's instances serve at full batches: instances x max batch / tau(max batch)
    (without dynamic batching Triton runs each request alone: instances / tau(1))."""
    return pod_capacity_rps(batcher.instances, batcher.max_batch_size if batcher.dynamic else 1, tau)


def capacity_rps(s: Scenario) -> float:
    """Requests per second one replica serves at full batches: instances x max batch / tau(max batch).

    With several models, of the run's mix: the models share the pod's GPU time (simulator.pods' contention), so
    a pod carries R req/s where the mix's GPU shares add up to 1, R = 1 / sum(share / capacity) over the models."""
    if not s.others:
        return s.capacities[0]
    return 1 / sum(share / capacity for share, capacity in zip(s.mix, s.capacities, strict=True))


def trigger_rps(s: Scenario) -> float:
    """Load at which the replica floor's signal reaches its target, about (the floor: 1 at `replicas.min` 0).

    queue-depth: a request waits up to the batching delay, so a pod holds about rate x delay pending;
    busy-ratio: instances are busy about rate / capacity of the time at full batches; demand: rate / capacity
    exactly; queue-excess and
    queue-time stay low until the floor saturates.
    """
    # At `replicas.min` 0 the HPA's floor is 1 (simulator.scale_to_zero).
    floor = max(s.min_replicas, 1)
    if s.signal.name == "queue-depth":
        return s.signal.target / max(s.batcher.max_queue_delay_s, 0.001) * floor
    if s.signal.name in {"busy-ratio", "demand"}:
        return s.signal.target * capacity_rps(s) * floor
    return capacity_rps(s) * floor


def _trace_row(
    row: list[str], where: str, previous: float | None, names: Sequence[str] = ("rps",)
) -> tuple[float, tuple[float, ...]]:
    """One row of a trace, `where` naming its file and line; `previous`: the time of the row before; `names`: the
    rate columns the header names."""
    header = ",".join(("t_seconds", *names))
    try:
        if len(row) != 1 + len(names):
            raise ValueError
        t, rates = float(row[0]), tuple(float(value) for value in row[1:])
    except ValueError:
        count = "two" if len(names) == 1 else str(1 + len(names))
        raise ValueError(
            f"{where}: {excerpt(','.join(row))} is not a row of {header} ({count} numbers, the header naming them)"
        ) from None
    for name, rps in zip(names, rates, strict=True):
        if not (math.isfinite(t) and math.isfinite(rps)) or t < 0 or rps < 0:
            raise ValueError(f"{where}: t_seconds and {name} must be finite and non-negative; got {t}, {rps}")
    if previous is None and t != 0:
        raise ValueError(
            f"{where}: the first row is at t_seconds {t:g}; a trace starts at 0, or its first {t:g} s would run "
            f"at 0 req/s unseen: add a row 0,RPS before it (0,0 for a load that starts later)"
        )
    if previous is not None and t <= previous:
        raise ValueError(f"{where}: t_seconds must increase; {t} follows {previous}")
    if previous is not None and int(t) == int(previous):
        # A row holds from its whole second to the next row's (read_trace): two in one second leave the first none.
        raise ValueError(
            f"{where}: t_seconds {t:g} is in the same whole second as the row before ({previous:g}), which would "
            "never take effect; the simulation steps by seconds: give each row its own second"
        )
    if t > MAX_SECONDS:
        raise ValueError(f"{where}: t_seconds {t} is past {MAX_SECONDS} s; a trace lasts 2 days at most")
    for name, rps in zip(names, rates, strict=True):
        if rps > MAX_RPS:
            raise ValueError(f"{where}: {name} {rps} is above {MAX_RPS}; rates are {MAX_RPS} req/s at most")
    return t, rates


MODEL_COLUMNS = "or t_seconds,<model>,<model>... with a column of req/s per model the deployment serves"
"""What `stackctl simulate --trace` also reads: a column per model (read_trace_columns)."""


def _header(header: list[str] | None, path: Path, models: bool) -> tuple[str, ...]:
    """The rate columns a trace's header names; ValueError naming the file when it is no trace's header."""
    fields = [] if header is None else [field.strip() for field in header]
    if fields == ["t_seconds", "rps"]:
        return ("rps",)
    if not models or len(fields) < 2 or fields[0] != "t_seconds":
        found = "nothing" if header is None else excerpt(",".join(header))
        raise ValueError(f"{path}:1: the header is {found}; expected {TRACE_RULES}")
    expected = f"{TRACE_RULES} ({MODEL_COLUMNS})"
    names = tuple(fields[1:])
    for name in names:
        if not MODEL_NAME_RE.fullmatch(name) or name == "rps":
            raise ValueError(
                f"{path}:1: the header's column {excerpt(name)} is not a model's name; expected {expected}"
            )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{path}:1: the header names model {repeated[0]!r} twice; expected each model's column once")
    return names


def read_trace_columns(path: Path, *, models: bool = True) -> tuple[tuple[str, ...], NDArray[np.float64]]:
    """A trace's rate columns and the rate of each second in each, stepwise from each row to the next: ("rps",)
    for `t_seconds,rps`, else the models its header names (only when `models`).

    Anything but TRACE_RULES is refused, naming the file and line (and the column)."""
    rows: list[tuple[float, tuple[float, ...]]] = []
    names: tuple[str, ...] = ("rps",)
    last_line = 1
    try:
        # utf-8-sig: spreadsheets start their CSVs with a byte-order mark. newline="": csv reads line ends itself.
        text = InputFile(path, TRACE_FILE).read_text(encoding="utf-8-sig", newline="")
        reader = csv.reader(io.StringIO(text, newline=""))
        names = _header(next(reader, None), path, models)
        for row in reader:
            if row:  # a blank line (the last, often) says nothing
                rows.append(_trace_row(row, f"{path}:{reader.line_num}", rows[-1][0] if rows else None, names))
                last_line = reader.line_num
    except OSError as err:
        raise ValueError(
            f"{path}: cannot read the trace ({err.strerror}); expected a CSV file with {TRACE_RULES}"
        ) from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start}); expected a CSV file with {TRACE_RULES}") from None
    except csv.Error as err:
        raise ValueError(f"{path}:{reader.line_num}: not CSV ({err}); expected {TRACE_RULES}") from None
    if len(rows) < 2:
        raise ValueError(
            f"{path}: {len(rows)} row{'' if len(rows) == 1 else 's'} after the header; expected {TRACE_RULES}"
        )
    end = math.ceil(rows[-1][0]) + 1
    if end < MIN_SECONDS:
        raise ValueError(
            f"{path}:{last_line}: the last row, at t_seconds {rows[-1][0]}, ends the run after {end} s; "
            f"expected {TRACE_RULES}"
        )
    if not any(any(rates) for _, rates in rows):
        raise ValueError(f"{path}: every rate is 0, so the run would measure nothing; expected {TRACE_RULES}")
    rate = np.zeros((end, len(names)))
    for (t, rates), nxt in zip(rows, [*rows[1:], (end, ())], strict=True):
        rate[int(t) : int(nxt[0])] = rates
    return names, rate


def read_trace(path: Path) -> NDArray[np.float64]:
    """A `t_seconds,rps` CSV as the rate of each second, stepwise from each row to the next.

    Anything but TRACE_RULES is refused, naming the file and line.
    """
    return read_trace_columns(path, models=False)[1][:, 0].copy()


def ensemble_steps(config: ModelConfig) -> tuple[str, ...]:
    """The models an ensemble's steps call, in order; () for a model that is no ensemble."""
    if config.platform != "ensemble":
        return ()
    return tuple(step.model_name for step in config.ensemble_scheduling.step)


def _named_load(
    stack: StackConfig, deployment: str, names: Sequence[str], rate: NDArray[np.float64], where: str
) -> dict[str, NDArray[np.float64]]:
    """Each model the load names and its req/s per second: the trace's columns (`names`, each a model of the
    deployment), or its one column (`names` ("rps",)) split by scaling.simulation.shares; empty for a one-column
    load without shares for the deployment's models."""
    spec = stack.config.serving.deployments[deployment]
    if tuple(names) == ("rps",):
        shares = stack.config.scaling.simulation.shares or {}
        return {m: rate[:, 0] * shares[m] for m in spec.models if m in shares}
    for header in names:
        if header not in spec.models:
            raise ValueError(
                f"{where}:1: the column {header!r} is not a model of deployment {deployment!r} of {stack.source}; "
                f"it serves {', '.join(spec.models)}"
            )
    return {header: rate[:, i] for i, header in enumerate(names)}


def _model_configs(stack: StackConfig, repo: Path) -> dict[str, ModelConfig]:
    """Each served model's config as the stack renders it."""
    rendered = render_stack(stack.stack, stack.config.serving, stack.config.models, read_repository(repo)).models
    return {m: model.config for m, model in rendered.items()}


def model_load(
    stack: StackConfig,
    deployment: str | None,
    names: Sequence[str],
    rate: NDArray[np.float64],
    where: str,
    *,
    repo: Path = DEFAULT_MODEL_REPO,
) -> tuple[tuple[str, ...], NDArray[np.float64]]:
    """The models a load runs on and each one's rate per second (a column each): the trace's columns (`names`,
    each a model of the deployment), or its one column (`names` ("rps",)) split by scaling.simulation.shares.
    A one-column load without shares for the deployment's models: ((), `rate`), the one-model run.

    An ensemble runs no instance of its own: a request to it is a request to each of its steps, so its rate is
    added to each step model's (recursively). `where`: the trace's file, or the --profile, for messages."""
    name = deployment_name(stack, deployment)
    spec = stack.config.serving.deployments[name]
    load = _named_load(stack, name, names, rate, where)
    if not load:
        return (), rate
    configs = _model_configs(stack, repo)
    totals = {m: np.zeros(len(rate)) for m in spec.models}
    pending: list[tuple[str, NDArray[np.float64], tuple[str, ...]]] = [(m, rps, (m,)) for m, rps in load.items()]
    while pending:
        model, rps, path = pending.pop()
        steps = ensemble_steps(configs[model])
        if not steps:
            totals[model] += rps
        for step in steps:
            if step not in spec.models or step in path:
                raise ValueError(
                    f"ensemble {model!r} of deployment {name!r} calls model {step!r}, which the deployment does "
                    "not serve (or which calls it back); a request to an ensemble runs on its steps' instances"
                )
            pending.append((step, rps, (*path, step)))
    chosen = tuple(m for m in spec.models if totals[m].any())
    return chosen, np.stack([totals[m] for m in chosen], axis=1)


def loaded_ensembles(
    stack: StackConfig,
    deployment: str | None,
    names: Sequence[str],
    rate: NDArray[np.float64],
    where: str,
    *,
    repo: Path = DEFAULT_MODEL_REPO,
) -> tuple[dict[str, ModelConfig], dict[str, NDArray[np.float64]]]:
    """The ensembles a load calls by name (as model_load reads `names` and `rate`), each with its own req/s per
    second, and the served models' rendered configs, which their end-to-end latency reads (simulator.ensembles);
    two empty dicts for the one-model run."""
    load = _named_load(stack, deployment_name(stack, deployment), names, rate, where)
    if not load:
        return {}, {}
    configs = _model_configs(stack, repo)
    return configs, {m: rps for m, rps in load.items() if ensemble_steps(configs[m])}


def run_mix(rate: NDArray[np.float64]) -> tuple[float, ...]:
    """Each column's share of a load's requests."""
    totals = rate.sum(axis=0)
    return tuple(float(total / totals.sum()) for total in totals)


def shaped_trace(shape: str, peak_rps: float, hours: float = 1.0) -> NDArray[np.float64]:
    """Built-in traces: `step` (a quarter of the peak, then the peak), `diurnal` (a day's curve
    compressed into `hours`), `spike` (diurnal plus a burst of 3x)."""
    n = int(hours * 3600)
    t = np.arange(n, dtype=float)
    if shape == "step":
        return np.asarray(np.where(t < n / 4, peak_rps / 4, peak_rps), dtype=np.float64)
    day = np.asarray(peak_rps * (0.55 - 0.45 * np.cos(2 * np.pi * t / n)), dtype=np.float64)
    if shape == "diurnal":
        return day
    if shape == "spike":
        burst = (t >= 0.6 * n) & (t < 0.6 * n + max(60, n // 100))
        return np.asarray(np.where(burst, np.minimum(3 * day, 3 * peak_rps), day), dtype=np.float64)
    raise ValueError(f"unknown profile {shape!r}; expected one of {', '.join(PROFILE_SHAPES)}")
