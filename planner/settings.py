"""What `stackctl plan` tunes for one deployment, where each value lives in the stack file, and what it runs as.

Batching values go to each simulated model's own settings (`triton-platform:models.<model>`), never to
`serving.modelDefaults`: the defaults reach every model of the stack, and the plan measured only these.
Replica bounds go to the deployment, scaling policies and the signal's target to `triton-platform:scaling`.

A candidate's values are named by knob: Settings' own fields (the planned model's batching, the deployment's
replicas and scaling), then, with several models planned together, each other model's batching as
`<model>.<field>` (Settings.others).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from platform_config.loader import StackConfig, parse_config
from platform_config.scaling import SIGNAL_TARGETS
from platform_config.schema import section_key
from platform_config.stack_document import pulumi_config_from_stack_file
from simulator.batcher import BatcherConfig
from simulator.daily_floor import FloorWindow
from simulator.scenario import Scenario, scenario
from triton_platform.model_packaging.source import ModelRepository

Value = int | float | str | list[int] | dict[str, Any] | None
"""A value written to the stack file; None removes the key (a scale policy without its `pods`)."""
Floor = tuple[tuple[int, int, int], ...]
"""A daily floor's windows: (start, end, replicas), seconds after midnight (simulator.daily_floor.FloorWindow)."""
Pins = Mapping[str, tuple[str, str]]
"""Each model's latency profile and its sha256: what a switch to the `demand` signal pins (scaling.capacityProfiles)."""
Place = tuple[str, ...]
"""A value's place in the stack file's `config:`: the section key, then the keys below it."""

WAKE = "wake"
"""The deployment's `wake` in `locations`: no knob, but removed by `edits` with a floor raised from 0."""


@dataclass(frozen=True)
class Batching:
    """One model's batching values, as Settings holds the planned model's."""

    max_batch_size: int
    max_queue_delay_us: int
    preferred_sizes: tuple[int, ...]
    instances: int
    max_queue_size: int
    """0: unbounded."""
    timeout_us: int
    """0: no timeout."""

    def consistent(self) -> Batching:
        """Preferred sizes <= max batch."""
        return replace(self, preferred_sizes=tuple(p for p in self.preferred_sizes if p <= self.max_batch_size))


BATCHING = tuple(f.name for f in fields(Batching))


@dataclass(frozen=True)
class Settings(Batching):
    """One candidate: every value the plan may change. Batching's fields are the planned model's."""

    min_replicas: int
    max_replicas: int
    up_stabilization_s: int
    up_percent: int
    up_pods: int | None
    up_period_s: int
    down_stabilization_s: int
    down_percent: int
    down_pods: int | None
    down_period_s: int
    signal: str
    """The load trigger (`scaling.signal`): the stack's, for every deployment."""
    target: float | None
    """The signal's target; None where the signal derives it (queue-excess, queue-time)."""
    fallback_replicas: int | None = None
    """KEDA's fallback replica count; None where the stack sets no fallback. Not searched: it follows the replica
    range, which validation holds it inside, so a floor above it is a floor the plan can try."""
    daily_floor: Floor = ()
    """The deployment's daily floor (`scaling.dailyFloor.<deployment>`); empty: none. The plan tries floors learned
    from its trace (simulator.daily_floor.learn_floor)."""
    floor_zone: str = "UTC"
    """The time zone a floor's windows are written in: the stack's floor's, else UTC. Not a knob."""
    others: tuple[tuple[str, Batching], ...] = ()
    """With several models planned together, each other model's batching, in Scenario.models' order."""

    def consistent(self) -> Settings:
        """The same settings with the cross-field rules kept: preferred sizes <= max batch (every model's), min <=
        max replicas, the fallback inside the replica range, each floor window above the floor and at most the
        ceiling (or gone)."""
        max_replicas = max(self.max_replicas, self.min_replicas)
        fallback = self.fallback_replicas
        floor = tuple(
            (a, b, min(n, max_replicas)) for a, b, n in self.daily_floor if min(n, max_replicas) > self.min_replicas
        )
        return replace(
            self,
            daily_floor=floor,
            preferred_sizes=tuple(p for p in self.preferred_sizes if p <= self.max_batch_size),
            max_replicas=max_replicas,
            fallback_replicas=None if fallback is None else min(max(fallback, self.min_replicas), max_replicas),
            others=tuple((model, batching.consistent()) for model, batching in self.others),
        )

    def as_json(self) -> dict[str, Any]:
        """Every knob's value (JSON lists for tuples)."""
        values = {knob: knob_value(self, knob) for knob in knobs(self)}
        return {knob: list(v) if isinstance(v, tuple) else v for knob, v in values.items()}


FIELDS = tuple(f.name for f in fields(Settings) if f.name not in {"others", "floor_zone"})
"""Settings' own knobs."""


def knobs(settings: Settings) -> tuple[str, ...]:
    """Every value a candidate sets: FIELDS, then each other model's batching as `<model>.<field>`."""
    return (*FIELDS, *(f"{model}.{name}" for model, _ in settings.others for name in BATCHING))


def knob_value(settings: Settings, knob: str) -> Any:
    """A knob's value in `settings`."""
    model, _, name = knob.rpartition(".")
    return getattr(dict(settings.others)[model] if model else settings, name)


def with_values(settings: Settings, changes: Mapping[str, Any]) -> Settings:
    """`settings` with each knob of `changes` set, the cross-field rules kept (Settings.consistent)."""
    own = {knob: v for knob, v in changes.items() if "." not in knob}
    theirs: dict[str, dict[str, Any]] = {}
    for knob, v in changes.items():
        model, _, name = knob.rpartition(".")
        if model:
            theirs.setdefault(model, {})[name] = v
    unknown = set(theirs) - {model for model, _ in settings.others}
    if unknown:
        raise KeyError(f"no planned model {', '.join(sorted(unknown))} in these settings")
    others = tuple((model, replace(batching, **theirs.get(model, {}))) for model, batching in settings.others)
    return replace(settings, **own, others=others).consistent()


def _batching_places(model: str) -> dict[str, Place]:
    """Each batching field's place in the stack file: the model's own settings."""
    own = (section_key("models"), model)
    batching = (*own, "dynamicBatching")
    return {
        "max_batch_size": (*own, "maxBatchSize"),
        "max_queue_delay_us": (*batching, "maxQueueDelayMicroseconds"),
        "preferred_sizes": (*batching, "preferredBatchSize"),
        "instances": (*own, "instanceGroup", "count"),
        "max_queue_size": (*batching, "defaultQueuePolicy", "maxQueueSize"),
        "timeout_us": (*batching, "defaultQueuePolicy", "defaultTimeoutMicroseconds"),
    }


def target_place(signal: str) -> Place:
    """Where the stack file sets `signal`'s target."""
    return (section_key("scaling"), SIGNAL_TARGETS[signal][1])


def locations(deployment: str, model: str, signal: str, others: Sequence[str] = ()) -> dict[str, Place]:
    """Each knob's place in the stack file; `others`: the other models planned with `model`."""
    scaling = section_key("scaling")
    replicas = (section_key("serving"), "deployments", deployment, "replicas")
    places: dict[str, Place] = {
        **_batching_places(model),
        "min_replicas": (*replicas, "min"),
        "max_replicas": (*replicas, "max"),
    }
    for direction, prefix in (("scaleUp", "up"), ("scaleDown", "down")):
        for key, suffix in (
            ("stabilizationSeconds", "stabilization_s"),
            ("percent", "percent"),
            ("pods", "pods"),
            ("periodSeconds", "period_s"),
        ):
            places[f"{prefix}_{suffix}"] = (scaling, direction, key)
    places["signal"] = (scaling, "signal")
    if signal in SIGNAL_TARGETS:
        places["target"] = target_place(signal)
    places["fallback_replicas"] = (scaling, "fallback", "replicas")
    places["daily_floor"] = (scaling, "dailyFloor", deployment)
    # Not a knob: a floor of 1 or more leaves `wake` out (it requires replicas.min 0; edits).
    places[WAKE] = (section_key("serving"), "deployments", deployment, "wake")
    for other in others:
        places |= {f"{other}.{name}": place for name, place in _batching_places(other).items()}
    return places


def _batching(b: BatcherConfig) -> Batching:
    return Batching(
        max_batch_size=b.max_batch_size,
        max_queue_delay_us=round(b.max_queue_delay_s * 1e6),
        preferred_sizes=b.preferred_sizes,
        instances=b.instances,
        max_queue_size=b.max_queue_size,
        timeout_us=round(b.timeout_s * 1e6),
    )


def current_settings(stack: StackConfig, s: Scenario) -> Settings:
    """The settings the stack runs now, as the scenario of its deployment sees them."""
    scaling = stack.config.scaling
    return Settings(
        **asdict(_batching(s.batcher)),
        min_replicas=s.min_replicas,
        max_replicas=s.max_replicas,
        up_stabilization_s=scaling.scale_up.stabilization_seconds,
        up_percent=scaling.scale_up.percent,
        up_pods=scaling.scale_up.pods,
        up_period_s=scaling.scale_up.period_seconds,
        down_stabilization_s=scaling.scale_down.stabilization_seconds,
        down_percent=scaling.scale_down.percent,
        down_pods=scaling.scale_down.pods,
        down_period_s=scaling.scale_down.period_seconds,
        signal=s.signal.name,
        target=scaling.signal_target() if s.signal.name in SIGNAL_TARGETS else None,
        fallback_replicas=scaling.fallback.replicas if scaling.fallback is not None else None,
        daily_floor=tuple((w.start, w.end, w.replicas) for w in s.floor),
        floor_zone=scaling.daily_floor[s.deployment].time_zone if s.deployment in scaling.daily_floor else "UTC",
        others=tuple((m.model, _batching(m.batcher)) for m in s.others),
    )


def _value(value: object) -> Value:
    if isinstance(value, tuple):
        return list(value)
    # A whole-number target stays an integer in the file (`queueDepthTarget: 10`, not `10.0`).
    if isinstance(value, float) and value.is_integer():
        return int(value)
    assert value is None or isinstance(value, int | float | str)
    return value


def floor_value(settings: Settings) -> dict[str, Any] | None:
    """The daily floor as the stack writes it (`scaling.dailyFloor.<deployment>`); None: no floor."""
    if not settings.daily_floor:
        return None
    windows = [FloorWindow(*window) for window in settings.daily_floor]
    return {
        "timeZone": settings.floor_zone,
        "windows": [{"start": w.clock[0], "end": w.clock[1], "replicas": w.replicas} for w in windows],
    }


def edits(
    current: Settings, chosen: Settings, places: Mapping[str, Place], pins: Pins | None = None
) -> dict[Place, Value]:
    """The stack-file values that change from `current` to `chosen`, in knob order; from a floor of 0 (scale to
    zero) to 1 or more, the deployment's `wake` removed too, which validation allows only at 0. Another signal
    moves the target to its own key, and pins the models' profiles (`pins`) where it is `demand`."""
    changes = {
        places[knob]: floor_value(chosen) if knob == "daily_floor" else _value(knob_value(chosen, knob))
        for knob in knobs(chosen)
        if knob in places and knob_value(chosen, knob) != knob_value(current, knob)
    }
    if WAKE in places and current.min_replicas == 0 and chosen.min_replicas > 0:
        changes[places[WAKE]] = None
    if chosen.signal != current.signal:
        scaling = section_key("scaling")
        changes.pop(places.get("target", ()), None)
        changes[target_place(current.signal)] = None
        changes[target_place(chosen.signal)] = _value(chosen.target)
        profiles = (scaling, "capacityProfiles")
        if current.signal == "demand":
            changes[profiles] = None
        if chosen.signal == "demand":
            for model, (path, sha256) in sorted((pins or {}).items()):
                changes[(*profiles, model, "path")] = path
                changes[(*profiles, model, "sha256")] = sha256
    return changes


def apply_edits(
    tree: MutableMapping[str, Any], changes: Mapping[Place, Value], new_map: Callable[[MutableMapping[str, Any]], Any]
) -> list[tuple[MutableMapping[str, Any], str]]:
    """Set each value in `tree`, creating missing mappings with `new_map(parent)`; returns (mapping, key) set."""
    touched = []
    for path, value in changes.items():
        node = tree
        for key in path[:-1]:
            if not isinstance(node.get(key), MutableMapping):
                node[key] = new_map(node)
            node = node[key]
        if value is None:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value
            touched.append((node, path[-1]))
    return touched


@dataclass(frozen=True)
class StackInputs:
    """The stack file as the loader reads it, to run candidates through the project's own validation."""

    path: Path
    stack: str
    source: str
    flat: Mapping[str, str]
    secret_keys: tuple[str, ...]
    repo: ModelRepository
    deployment: str
    models: tuple[str, ...] = ()
    """With several models, the head scenario's (Scenario.models), simulated together; empty: the stack's one."""
    mix: tuple[float, ...] = ()
    """With several models, each one's share of the trace's requests (Scenario.mix)."""

    @classmethod
    def read(cls, path: Path, loaded: StackConfig, repo: ModelRepository, head: Scenario) -> StackInputs:
        """The stack file at `path`, whose candidates run the head scenario's deployment and models."""
        flat, secret_keys = pulumi_config_from_stack_file(path)
        models = head.models if head.others else ()
        return cls(path, loaded.stack, loaded.source, flat, tuple(secret_keys), repo, head.deployment, models, head.mix)

    def scenario(self, changes: Mapping[Place, Value]) -> Scenario:
        """The scenario of the stack with `changes`, validated as `stackctl validate` does; else ConfigError."""
        sections: dict[str, Any] = {}
        for path in changes:
            if path[0] not in sections:
                sections[path[0]] = json.loads(self.flat.get(path[0], "{}"))
        apply_edits(sections, changes, lambda _: {})
        flat = {**self.flat, **{key: json.dumps(value) for key, value in sections.items()}}
        config = parse_config(flat, self.source, self.repo, self.secret_keys, from_stack_file=True)
        stack = StackConfig(self.stack, self.source, config)
        if not self.models:
            return scenario(stack, self.deployment)
        return scenario(stack, self.deployment, self.models[0], others=self.models[1:], mix=self.mix)
