"""The demand signal as the simulator reads it, and the capacity it divides by (platform_config/capacity.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Hashable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray

from platform_config.capacity import demand_capacities, pod_capacity_rps, tau_at
from platform_config.loader import StackConfig, load_stack
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO, PROJECT_ROOT
from platform_config.scaling import ScalePolicy
from simulator.batcher import COUNTER_REQUESTS, COUNTERS, BatcherConfig, LatencyProfile, Outcome, Replica
from simulator.fluid import evaluate
from simulator.hpa import Behavior
from simulator.oracle import oracle
from simulator.scenario import (
    PROFILES,
    Scenario,
    capacity_rps,
    model_load,
    read_trace_columns,
    rules,
    run_mix,
    scenario,
    shaped_trace,
)
from simulator.signals import SignalSpec, demand
from tests.conftest import SCALING, SERVING, Mutation, errors_of, setting, stack_values, validate
from tests.support.profile_warnings import PROFILE_WARNING
from triton_platform.model_packaging.source import read_repository


def _counters(requests: float) -> NDArray[np.float64]:
    counters = np.zeros(COUNTERS)
    counters[COUNTER_REQUESTS] = requests
    return counters


def test_demand_adds_each_models_share_of_a_pod() -> None:
    """Two pods of a deployment serving two models: 600 req/s of a model a pod carries 1,000 of is 0.6 pod, 300 of
    one it carries 500 of another 0.6; summed over pods and models, 2.4 pods."""
    rates: dict[Hashable, NDArray[np.float64]] = {
        (1, 0): _counters(600),
        (1, 1): _counters(300),
        (2, 0): _counters(600),
        (2, 1): _counters(300),
    }
    assert demand(rates, (1000.0, 500.0)) == pytest.approx(2.4)


def test_demand_is_not_bounded_by_a_pod() -> None:
    """Unlike a busy ratio, which reads at most 1 per instance, four times a pod's capacity reads 4."""
    assert demand({7: _counters(4000)}, (1000.0,)) == 4.0


def test_an_idle_deployment_demands_nothing() -> None:
    assert demand({}, (1000.0,)) == 0.0


def test_a_rejected_request_counts_as_demand() -> None:
    """A queue bounded at 2 requests, with one instance busy for a second: of 10 arrivals, the batcher serves some and
    rejects the rest; the requests counter holds all 10, as Triton's success and failure counters do together."""
    config = BatcherConfig(
        max_batch_size=1, max_queue_delay_s=0.0, preferred_sizes=(), instances=1, max_queue_size=2, dynamic=True
    )
    replica = Replica(config, LatencyProfile((1,), (1.0,)))
    out = Outcome()
    replica.offer(np.linspace(0.0, 0.09, 10))
    replica.advance(30.0, out)
    rejected = sum(len(r) for r in out.rejected_at)
    assert rejected > 0
    assert replica.counters[COUNTER_REQUESTS] == 10


def test_the_committed_profiles_capacities() -> None:
    """Three instances at full batches of 32, from bench/results/profiles: classifier's tau(32) is 7.0828 ms."""
    classifier = LatencyProfile((1, 32), (0.0004526214763075298, 0.007082751600196434))
    assert pod_capacity_rps(3, 32, classifier) == pytest.approx(13554.054, abs=1e-3)


sizes_and_seconds = st.lists(
    st.tuples(st.integers(1, 512), st.floats(1e-6, 60.0, allow_nan=False)), min_size=1, max_size=8
).map(lambda pairs: (sorted({size for size, _ in pairs}), sorted(seconds for _, seconds in pairs)))


@given(sizes_and_seconds, st.integers(0, 1024))
def test_tau_at_is_the_profiles_table(profile: tuple[list[int], list[float]], batch: int) -> None:
    """The pure-Python tau(b) the program reads a profile with gives the simulator's table's figure, to the bit."""
    sizes, seconds = profile
    seconds = seconds[: len(sizes)]
    table = LatencyProfile(tuple(sizes), tuple(seconds)).table(max(batch, 1))
    assert tau_at(sizes, seconds, batch) == table[batch]


# --- the stack's capacity profiles (platform_config/capacity.py) -----------------------------------------------

PROFILE_SHA256 = {
    "classifier": "8181a6ef428fc103325d7e72190072397924c4b496314189ed3ae2f8a34e1785",
    "preprocess": "996639543082d3bbc111fd5276f867874de2410a4a1dd9664312bc0e0448b7b1",
    "ranker": "d466540cc3565bd66b7539c3b9dbf4653e0d20bb3516c4190c693208d8b46572",
}
"""The committed profiles' sha256 (`sha256sum bench/results/profiles/*.json`)."""
PINS = {model: {"path": f"bench/results/profiles/{model}.json", "sha256": sha} for model, sha in PROFILE_SHA256.items()}


def on_demand(stack: str, pins: dict[str, Any] | None = None) -> list[Mutation]:
    """`stack` scaling on demand at 0.8, each served model pinned to its committed profile (or `pins`)."""
    scaling = stack_values(stack)[SCALING]
    served = {m for d in stack_values(stack)[SERVING]["deployments"].values() for m in d["models"]}
    chosen = pins if pins is not None else {m: p for m, p in PINS.items() if m in served}
    return [
        setting(SCALING, value={k: v for k, v in scaling.items() if not k.endswith("Target") or k.startswith("gpu")}),
        setting(SCALING, "signal", value="demand"),
        setting(SCALING, "demandTarget", value=0.8),
        setting(SCALING, "capacityProfiles", value=chosen),
    ]


def test_production_on_demand_divides_by_the_planners_capacity() -> None:
    """The capacity each ScaledObject's query divides by is what the simulator and planner derive for the same
    profile, to the bit: production's general pods serve 13,554.05 classifier and 13,558.49 preprocess requests per
    second alone, its ranker pods 20,127.48 ranker requests."""
    config = validate("production", *on_demand("production"))
    rendered = render_stack("production", config.serving, config.models, read_repository(DEFAULT_MODEL_REPO))
    capacities, problems = demand_capacities(
        config.serving, config.scaling, {m: r.config for m, r in rendered.models.items()}
    )
    assert problems == []
    rps = {d: {m: c.requests_per_second for m, c in models.items()} for d, models in capacities.items()}
    assert rps == {
        "general": {"classifier": pytest.approx(13554.0543307), "preprocess": pytest.approx(13558.4909132)},
        "ranker": {"ranker": pytest.approx(20127.4840433)},
    }
    stack = StackConfig("production", "stacks/Pulumi.production.yaml", config)
    planned = scenario(stack, "general", "classifier", others=("preprocess",), mix=(0.5, 0.5))
    assert planned.capacities == (rps["general"]["classifier"], rps["general"]["preprocess"])
    assert capacities["general"]["classifier"].why == (
        "3 instance(s) x batch 32 / tau(32) 7.083 ms, bench/results/profiles/classifier.json"
    )


def test_demand_needs_every_served_model_pinned() -> None:
    pins = {m: p for m, p in PINS.items() if m != "ranker"}
    assert errors_of("production", *on_demand("production", pins)) == [
        "triton-platform:scaling.capacityProfiles: no profile of model 'ranker' (deployment 'ranker'): signal demand "
        "divides each model's requests by what a pod of it serves, read from its latency profile; add ranker: "
        "{path: <its profile>, sha256: <the file's sha256>} (stackctl profile --stack <stack> --model ranker, "
        "docs/profiling.md)"
    ]


def test_a_changed_profile_is_refused_until_its_sha256_is_recorded() -> None:
    pins = {**PINS, "ranker": {**PINS["ranker"], "sha256": "0" * 64}}
    assert errors_of("production", *on_demand("production", pins)) == [
        f"triton-platform:scaling.capacityProfiles.ranker.sha256: {'0' * 64} is not the sha256 of "
        f"bench/results/profiles/ranker.json ({PROFILE_SHA256['ranker']}): the profile changed since the stack pinned "
        "it, and with it the capacity the demand signal divides by; review the new profile and record its sha256"
    ]


def test_a_profile_of_another_config_is_refused() -> None:
    """staging renders max batch size 16 and 2 instances; the committed profiles were measured on production's 32
    and 3."""
    found = errors_of("staging", *on_demand("staging"))
    assert found[0] == (
        "triton-platform:scaling.capacityProfiles.classifier.path: bench/results/profiles/classifier.json was measured "
        "on another config of 'classifier' than the stack renders (max_batch_size 32 in the profile, 16 rendered; "
        "instance_count 3 in the profile, 2 rendered), so its tau(b) does not give this config's capacity; measure "
        "this config (`stackctl profile --stack <stack> --model classifier`, docs/profiling.md)"
    )
    # classifier, preprocess and ranker; then staging's count bound (its modelDefaults) for each
    assert [f.split(":")[1] for f in found] == [
        "scaling.capacityProfiles.classifier.path",
        "scaling.capacityProfiles.preprocess.path",
        "scaling.capacityProfiles.ranker.path",
        *["serving.modelDefaults.dynamicBatching.defaultQueuePolicy.maxQueueSize"] * 3,
    ]


def test_an_ensemble_or_an_unserved_model_is_refused() -> None:
    pins = {**PINS, "pipeline": PINS["classifier"], "resnet": PINS["classifier"]}
    assert errors_of("production", *on_demand("production", pins)) == [
        "triton-platform:scaling.capacityProfiles.pipeline: 'pipeline' is an ensemble: it runs no instances of its "
        "own (its requests run on its steps' instances, each counted there), so the demand reads no capacity of it; "
        "remove it",
        "triton-platform:scaling.capacityProfiles.resnet: no deployment serves model 'resnet'; the deployments serve "
        "classifier, pipeline, preprocess, ranker",
    ]


def test_a_profile_that_records_no_config_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile says nothing of the config it was measured on: its capacity cannot be checked against the stack's."""
    profile = json.loads((PROFILES / "ranker.json").read_text())
    del profile["config"]
    folder = PROJECT_ROOT / "build" / "test-demand-signal"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        (folder / "ranker.json").write_text(json.dumps(profile))
        sha = hashlib.sha256((folder / "ranker.json").read_bytes()).hexdigest()
        pins = {**PINS, "ranker": {"path": "build/test-demand-signal/ranker.json", "sha256": sha}}
        assert errors_of("production", *on_demand("production", pins)) == [
            "triton-platform:scaling.capacityProfiles.ranker.path: build/test-demand-signal/ranker.json records no "
            "max_batch_size, instance_count, backend in its `config`: the capacity is instances x max batch size / "
            "tau(max batch size), which holds only for the config the profile was measured on; measure it with "
            "`stackctl profile --stack <stack> --model ranker` (docs/profiling.md), which records it"
        ]
    finally:
        shutil.rmtree(folder)


def test_a_missing_profile_is_named() -> None:
    pins = {**PINS, "ranker": {**PINS["ranker"], "path": "bench/results/profiles/none.json"}}
    [found] = errors_of("production", *on_demand("production", pins))
    assert found.startswith(
        "triton-platform:scaling.capacityProfiles.ranker.path: bench/results/profiles/none.json: "
    ), found


def test_capacity_profiles_are_read_by_demand_alone() -> None:
    assert errors_of("staging", setting(SCALING, "capacityProfiles", value=PINS)) == [
        "triton-platform:scaling: capacityProfiles is only read by another signal; signal 'busy-ratio' reads "
        "busyRatioTarget: remove capacityProfiles or set signal"
    ]


def test_dev_simulates_on_profiles_of_another_config_and_says_so() -> None:
    """What tests/support/profile_warnings.py takes out of other tests' stderr is printed, whole."""
    argv = ["simulate", "--stack", "dev", "--profile", "step", "--hours", "0.05", "--peak-rps", "20", "--no-plot"]
    with tempfile.TemporaryDirectory() as out:
        process = subprocess.run(
            [sys.executable, "-m", "stackctl", *argv, "--out", out], capture_output=True, text=True, check=False
        )
    assert process.returncode == 0, process.stderr
    assert PROFILE_WARNING.fullmatch(process.stderr), process.stderr


# --- production as committed, on days and steps it was not planned on ------------------------------------------


def production_general() -> Scenario:
    """production's `general` as its plan runs it: classifier and preprocess together, at the trace's mix."""
    stack = load_stack("production")
    names, rate = read_trace_columns(PROJECT_ROOT / "stacks" / "traces" / "production.csv")
    models, columns = model_load(stack, "general", names, rate, "stacks/traces/production.csv")
    return scenario(stack, "general", models[0], others=models[1:], mix=run_mix(columns))


def _columns(s: Scenario, rate: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.stack([rate * share for share in s.mix], axis=1)


@pytest.mark.slow
@pytest.mark.parametrize("multiple", [3, 4, 6])
@pytest.mark.parametrize("seed", [1, 2])
def test_production_reacts_to_a_step_within_its_floor_and_a_third(multiple: int, seed: int) -> None:
    """From the replica floor to `multiple` times a pod's capacity: capacity catches up within 1.3x the reaction
    floor (scrape, HPA sync, pod start and a node where one is needed: no setting reacts faster)."""
    s = production_general()
    assert s.signal.name == "demand"
    run = evaluate(s, _columns(s, shaped_trace("step", multiple * capacity_rps(s), 0.5)), seed)
    assert run["reaction_seconds"] is not None
    assert float(run["reaction_seconds"]) <= 1.3 * float(run["reaction_floor_seconds"] or 0), run


@pytest.mark.slow
def test_the_busy_ratio_reacted_to_the_same_step_in_a_third_more_than_its_floor() -> None:
    """What the demand signal replaced: the busy ratio at production's former 0.9 and scale-up (50% or a pod a
    minute, after 30 s) reads 1 per saturated pod, 11% more pods per sync at most."""
    s = production_general()
    former = Behavior(
        rules(ScalePolicy.model_validate({"stabilizationSeconds": 30, "percent": 50, "pods": 1, "periodSeconds": 60})),
        s.behavior.scale_down,
    )
    busy = replace(s, signal=SignalSpec("busy-ratio", 0.9), behavior=former)
    run = evaluate(busy, _columns(s, shaped_trace("step", 4 * capacity_rps(s), 0.5)), 1)
    assert float(run["reaction_seconds"] or 0) > 1.3 * float(run["reaction_floor_seconds"] or 0), run


@pytest.mark.slow
@pytest.mark.parametrize("seed", [5, 6, 7])
def test_production_holds_a_day_it_was_not_planned_on(seed: int) -> None:
    """A 1.5 h diurnal day peaking at 4 pods' capacity, seeds the plan never ran: rejected within the 0.1% bound, at
    most 1.15x the GPU-hours of the oracle (each second's fewest pods that hold the SLO, with no start delay)."""
    s = production_general()
    rate = shaped_trace("diurnal", 4 * capacity_rps(s), 1.5)
    run = evaluate(s, _columns(s, rate), seed)
    assert float(run["rejected_pct"] or 0) <= 0.1, run
    best = oracle(s, rate, s.slo_seconds, 0.2).gpu_hours
    assert float(run["gpu_hours"] or 0) <= 1.15 * best, (run["gpu_hours"], best)


def test_demand_refuses_a_queue_bounded_by_count() -> None:
    """A request refused for a full queue is counted nowhere (tests/cluster/test_demand_real.py): the demand would not see
    the overflow, so each model is bounded by time."""
    assert errors_of(
        "production",
        setting(
            "triton-platform:models", "ranker", "dynamicBatching", "defaultQueuePolicy", value={"maxQueueSize": 64}
        ),
    ) == [
        "triton-platform:models.ranker.dynamicBatching.defaultQueuePolicy.maxQueueSize: 64 bounds model 'ranker''s "
        "queue by count, but triton-platform:scaling.signal is demand: Triton (2.51, the default image) refuses a "
        "request to a full queue before it counts it (neither a success nor a failure), so the demand would not see "
        "the overflow; bound the queue by time instead: maxQueueSize 0 and defaultQueuePolicy.defaultTimeoutMicroseconds "
        "(a request rejected at its timeout is counted)"
    ]
