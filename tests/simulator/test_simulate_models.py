"""`stackctl simulate` of several models of a deployment together (docs/simulation.md, "Several models"): a trace
with a column per model or a one-column load split by scaling.simulation.shares, ensembles on their steps, each
model's own batcher on pods whose GPU time the models share, one scaling signal, per-model figures, and each
ensemble of the load end to end from its steps'."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from tritonclient.grpc.model_config_pb2 import ModelConfig

from platform_config.loader import StackConfig, load_stack, load_stack_file
from simulator.batcher import BatcherConfig, LatencyProfile
from simulator.engine import simulate
from simulator.ensembles import end_to_end
from simulator.pods import MAX_OTHERS_SHARE, Shared, share_gpu
from simulator.scenario import (
    Scenario,
    Served,
    capacity_rps,
    model_load,
    read_trace,
    read_trace_columns,
    scenario,
)
from simulator.signals import SignalSpec
from simulator.summaries import model_summaries
from simulator.timeline import EDGES
from stackctl.main import main
from tests.conftest import errors_of, setting

MODEL_RULES = (
    "a header t_seconds,rps, then at least two rows of finite numbers: times from 0 (the first row at 0), "
    "strictly increasing, each row in a later whole second, the last from 59 to 172800 s "
    "(a run of one minute to 2 days); rates from 0 to 1000000 req/s, not all 0 "
    "(or t_seconds,<model>,<model>... with a column of req/s per model the deployment serves)"
)


@pytest.fixture(scope="module")
def production() -> StackConfig:
    return load_stack("production")


def with_shares(stack: StackConfig, shares: dict[str, float]) -> StackConfig:
    """`stack` with scaling.simulation.shares set."""
    scaling = stack.config.scaling
    simulation = scaling.simulation.model_copy(update={"shares": shares})
    config = stack.config.model_copy(update={"scaling": scaling.model_copy(update={"simulation": simulation})})
    return dataclasses.replace(stack, config=config)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(text, encoding="utf-8")
    return path


# --- the trace: a column per model -------------------------------------------------------------------------------


def test_a_trace_with_a_column_per_model_reads_each_column_stepwise(tmp_path: Path) -> None:
    path = write(tmp_path, "t_seconds,classifier,preprocess\n0,10,1\n30,20,2\n59,0,0\n")
    names, rate = read_trace_columns(path)
    assert names == ("classifier", "preprocess")
    assert rate.shape == (60, 2)
    assert rate[0].tolist() == [10, 1]
    assert rate[29].tolist() == [10, 1]
    assert rate[30].tolist() == [20, 2]
    assert rate[59].tolist() == [0, 0]


def test_a_one_column_trace_reads_as_before(tmp_path: Path) -> None:
    path = write(tmp_path, "t_seconds,rps\n0,10\n59,5\n")
    names, rate = read_trace_columns(path)
    assert names == ("rps",)
    assert rate[:, 0].tolist() == read_trace(path).tolist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "t_seconds,classifier,class ifier\n0,1,1\n60,1,1\n",
            "{path}:1: the header's column 'class ifier' is not a model's name; expected " + MODEL_RULES,
        ),
        (
            "t_seconds,classifier,rps\n0,1,1\n60,1,1\n",
            "{path}:1: the header's column 'rps' is not a model's name; expected " + MODEL_RULES,
        ),
        (
            "t_seconds,classifier,classifier\n0,1,1\n60,1,1\n",
            "{path}:1: the header names model 'classifier' twice; expected each model's column once",
        ),
        (
            "t_seconds,classifier,preprocess\n0,1\n60,1,1\n",
            "{path}:2: '0,1' is not a row of t_seconds,classifier,preprocess (3 numbers, the header naming them)",
        ),
        (
            "t_seconds,classifier,preprocess\n0,1,1\n60,1,-2\n",
            "{path}:3: t_seconds and preprocess must be finite and non-negative; got 60.0, -2.0",
        ),
        (
            "t_seconds,classifier,preprocess\n0,1,1\n60,1e7,1\n",
            "{path}:3: classifier 10000000.0 is above 1000000; rates are 1000000 req/s at most",
        ),
        (
            "t_seconds,classifier,preprocess\n0,0,0\n60,0,0\n",
            "{path}: every rate is 0, so the run would measure nothing; expected "
            + MODEL_RULES[
                : -len(" (or t_seconds,<model>,<model>... with a column of req/s per model the deployment serves)")
            ],
        ),
    ],
)
def test_a_bad_model_column_is_refused_naming_file_line_and_column(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=r".") as caught:
        read_trace_columns(path)
    assert str(caught.value) == expected.format(path=path)


def test_a_planner_trace_keeps_one_column(tmp_path: Path) -> None:
    """`stackctl plan` reads read_trace: a column per model is no trace of its (its header message unchanged)."""
    path = write(tmp_path, "t_seconds,classifier,preprocess\n0,1,1\n60,1,1\n")
    with pytest.raises(ValueError, match="the header is 't_seconds,classifier,preprocess'; expected a header"):
        read_trace(path)


def test_a_column_the_deployment_does_not_serve_is_refused(production: StackConfig) -> None:
    rate = np.ones((60, 2))
    with pytest.raises(ValueError, match=r".") as caught:
        model_load(production, "general", ("classifier", "ranker"), rate, "load.csv")
    assert str(caught.value) == (
        "load.csv:1: the column 'ranker' is not a model of deployment 'general' of stacks/Pulumi.production.yaml; "
        "it serves classifier, preprocess, pipeline"
    )


def simulate_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args, "--no-plot", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def test_model_with_a_column_per_model_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "t_seconds,classifier,preprocess\n0,1,1\n60,1,1\n")
    code, _, err = simulate_cli(
        capsys, tmp_path, "--stack", "production", "--trace", str(path), "--model", "classifier"
    )
    assert code == 2
    assert err.strip() == (
        f"stackctl simulate: --model 'classifier' runs one model, and {path} has a column per model "
        "(classifier, preprocess); leave --model out, or give a trace of t_seconds,rps"
    )


# --- shares ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shares", "expected"),
    [
        (
            {"classifier": 0.5, "preprocess": 0.4},
            [
                "triton-platform:scaling.simulation.shares: the shares of deployment 'general''s models "
                "(classifier: 0.5, preprocess: 0.4) sum to 0.9; expected 1, each a fraction of the deployment's load"
            ],
        ),
        (
            {"classifier": 1.0, "nosuch": 1.0, "other": 0.5},
            [
                "triton-platform:scaling.simulation.shares.nosuch: no deployment serves model 'nosuch'; the "
                "deployments serve classifier, pipeline, preprocess, ranker",
                "triton-platform:scaling.simulation.shares.other: no deployment serves model 'other'; the "
                "deployments serve classifier, pipeline, preprocess, ranker",
            ],
        ),
    ],
)
def test_bad_shares_are_refused_by_validation_naming_the_key(shares: dict[str, float], expected: list[str]) -> None:
    # Every problem at once, as `stackctl validate` and `pulumi up` report them, before any simulation.
    assert errors_of("production", setting("triton-platform:scaling", "simulation", "shares", value=shares)) == expected


def test_a_share_out_of_range_is_refused_by_the_schema() -> None:
    from pydantic import ValidationError  # noqa: PLC0415

    from platform_config.simulation import SimulationConfig  # noqa: PLC0415

    for bad in (0, -0.1, 1.5):
        with pytest.raises(ValidationError, match="shares"):
            SimulationConfig.model_validate({"shares": {"classifier": bad}})


def test_shares_split_a_one_column_load_and_an_ensemble_runs_on_its_steps(production: StackConfig) -> None:
    """pipeline is preprocess then classifier: its requests are a request to each."""
    stack = with_shares(production, {"classifier": 0.25, "preprocess": 0.25, "pipeline": 0.5})
    rate = np.full((60, 1), 100.0)
    models, split = model_load(stack, "general", ("rps",), rate, "--profile step")
    assert models == ("classifier", "preprocess")
    assert split[0].tolist() == [75.0, 75.0]


def test_without_shares_a_one_column_load_runs_one_model(production: StackConfig) -> None:
    rate = np.full((60, 1), 100.0)
    assert model_load(production, "general", ("rps",), rate, "x")[0] == ()


# --- the engine: contention, one signal ---------------------------------------------------------------------------


def test_the_gpu_share_stretches_each_model_by_the_others(production: StackConfig) -> None:
    """By hand: u the other models' share, tau(b) x 1 / (1 - u), u at most MAX_OTHERS_SHARE."""
    config, tau = BatcherConfig(1, 0.0), LatencyProfile((1,), (0.01,))
    a, b, c = Shared(config, tau), Shared(config, tau), Shared(config, tau)
    a.share, b.share = 0.25, 0.25
    share_gpu([a, b])
    assert a.stretch == pytest.approx(1 / 0.75)
    assert b.stretch == pytest.approx(1 / 0.75)
    a.share, b.share, c.share = 0.5, 0.2, 0.3
    share_gpu([a, b, c])
    assert (a.stretch, b.stretch, c.stretch) == pytest.approx((2.0, 1 / 0.2, 1 / 0.3))
    a.share, b.share = 0.05, 1.2
    share_gpu([a, b])
    assert a.stretch == pytest.approx(1 / (1 - MAX_OTHERS_SHARE))
    assert b.stretch == pytest.approx(1 / 0.95)
    share_gpu([a])  # alone: never stretched
    assert a.stretch == 1.0


def two_models(production: StackConfig) -> Scenario:
    """One pod (floor = ceiling = 1) of two models each of one instance, no batching, tau 10 ms, no overhead,
    scaling on the busy ratio."""
    base = scenario(production, "general", "classifier")
    config, tau = BatcherConfig(1, 0.0, dynamic=False), LatencyProfile((1,), (0.01,))
    return dataclasses.replace(
        base,
        batcher=config,
        tau=tau,
        min_replicas=1,
        max_replicas=1,
        signal=SignalSpec("busy-ratio", 0.9),
        gpu_memory_ratio=None,
        others=(Served("preprocess", config, tau, "bench/results/profiles/preprocess.json"),),
        mix=(0.5, 0.5),
    )


def test_two_models_at_a_quarter_each_run_at_a_third_each(production: StackConfig) -> None:
    """Each model alone keeps its instance busy 25 req/s x 10 ms = 0.25 of the time; together each one's tau is
    stretched by 1 / (1 - 0.25), so each is busy 0.25 / 0.75 = 1/3 of the time: the signal, the busiest model's
    busy ratio, reads 1/3 where one model alone reads 1/4."""
    s = two_models(production)
    seconds = 900
    together = simulate(s, np.full((seconds, 2), 25.0), seed=3)
    alone = simulate(dataclasses.replace(s, others=(), mix=()), np.full(seconds, 25.0), seed=3)
    assert np.nanmean(together.signal[120:]) == pytest.approx(1 / 3, rel=0.05)
    assert np.nanmean(alone.signal[120:]) == pytest.approx(1 / 4, rel=0.05)
    figures = model_summaries(together)
    assert set(figures) == {"classifier", "preprocess"}
    for model in figures.values():
        assert model["requests"] == pytest.approx(25 * seconds, rel=0.03)
        assert model["rejected_pct"] == 0
        # The median request is one stretched batch: 10 ms x 4/3, with a little queueing on top.
        assert 13.0 <= model["p50_ms"] <= 16.5
    assert model_summaries(alone) == {}
    # Capacity of the mix: each model's 100 req/s, half each of the GPU's time: 100 req/s together.
    assert capacity_rps(s) == pytest.approx(100.0)


def test_one_model_runs_the_same_as_a_single_column(production: StackConfig) -> None:
    s = scenario(production, "general", "classifier")
    rate = np.full(120, 2000.0)
    flat, column = simulate(s, rate, seed=1), simulate(s, rate[:, None], seed=1)
    assert np.array_equal(flat.histogram, column.histogram)
    assert np.array_equal(flat.ready, column.ready)
    assert (flat.arrived, flat.served, flat.dropped) == (column.arrived, column.served, column.dropped)


def test_rates_for_other_models_than_the_scenarios_are_refused(production: StackConfig) -> None:
    s = scenario(production, "general", "classifier")
    with pytest.raises(ValueError, match="2 columns of rates for the 1 models classifier"):
        simulate(s, np.ones((60, 2)))


# --- the command ---------------------------------------------------------------------------------------------------


def test_simulate_reports_each_model_and_holds_each_to_the_slo(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "t_seconds,classifier,pipeline\n0,300,100\n89,300,100\n")
    code, out, _ = simulate_cli(capsys, tmp_path, "--stack", "production", "--trace", str(path))
    assert code == 0, out
    assert "general/classifier+preprocess" in out
    assert "  model               p50 ms    p95 ms    p99 ms  rejected %     requests" in out
    assert "  pipeline: an ensemble, end to end over its steps preprocess, classifier" in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    models = summary["models"]
    assert set(models) == {"classifier", "preprocess", "pipeline"}
    assert set(models["classifier"]) == {"p50_ms", "p95_ms", "p99_ms", "rejected_pct", "requests"}
    # pipeline's 100 req/s run on both of its steps: classifier 400, preprocess 100.
    assert models["classifier"]["requests"] == pytest.approx(400 * 90, rel=0.03)
    assert models["preprocess"]["requests"] == pytest.approx(100 * 90, rel=0.05)
    # The ensemble itself, end to end: the requests its column offers, 100 req/s for 90 s.
    assert set(models["pipeline"]) == {"p50_ms", "p95_ms", "p99_ms", "rejected_pct", "requests", "steps"}
    assert models["pipeline"]["requests"] == 9000
    assert summary["arrived"] == models["classifier"]["requests"] + models["preprocess"]["requests"]
    assert [m["model"] for m in summary["inputs"]["models"]] == ["classifier", "preprocess"]
    assert sum(m["share"] for m in summary["inputs"]["models"]) == pytest.approx(1.0)
    header = (tmp_path / "out" / "timeline.csv").read_text(encoding="utf-8").splitlines()[0]
    assert (
        header == "t,arrival_rps,desired_replicas,ready_replicas,pending,p50_ms,p95_ms,p99_ms,rejected,signal,fallback"
    )


def test_a_per_model_slo_miss_is_named() -> None:
    from stackctl.commands.simulate import model_table, slo_failures  # noqa: PLC0415

    figures = {"p50_ms": 1.0, "p95_ms": 250.0, "p99_ms": 260.0, "rejected_pct": 0.0, "requests": 10}
    assert slo_failures({**figures, "slo_ms": 200.0}, 0.1, 300.0) == ["p95 250 ms > 200 ms"]
    assert "classifier" in model_table({"classifier": figures})


# --- an ensemble end to end ----------------------------------------------------------------------------------------


def leaf(name: str) -> ModelConfig:
    return ModelConfig(name=name, backend="onnxruntime")


def ensemble(name: str, *steps: tuple[str, tuple[str, ...], str]) -> ModelConfig:
    """An ensemble of steps (model, the tensors it reads, the tensor it writes), in the order given."""
    config = ModelConfig(name=name, platform="ensemble")
    for model, reads, written in steps:
        step = config.ensemble_scheduling.step.add()
        step.model_name = model
        for k, tensor in enumerate(reads):
            step.input_map[f"in{k}"] = tensor
        step.output_map["out"] = written
    return config


def at(seconds: float) -> NDArray[np.int64]:
    """A point mass: every request in the EDGES bin that holds `seconds`."""
    histogram = np.zeros(len(EDGES) - 1, np.int64)
    histogram[np.searchsorted(EDGES, seconds, side="right") - 1] = 1000
    return histogram


CONFIGS = {
    **{m: leaf(m) for m in ("a", "b", "c", "d")},
    "chain": ensemble("chain", ("a", ("raw",), "x"), ("b", ("x",), "out")),
    "parallel": ensemble("parallel", ("a", ("raw",), "x"), ("b", ("raw",), "y")),
    # Listed out of order: Triton orders the steps by their tensors, so d, which reads y and z, runs last.
    "diamond": ensemble(
        "diamond", ("d", ("y", "z"), "out"), ("a", ("raw",), "x"), ("b", ("x",), "y"), ("c", ("x",), "z")
    ),
    "nested": ensemble("nested", ("chain", ("raw",), "m"), ("c", ("m",), "out")),
}
TIMES = {"a": at(0.010), "b": at(0.020), "c": at(0.005), "d": at(0.001)}


@pytest.mark.parametrize(
    ("name", "expected_ms"),
    [
        ("chain", 10 + 20),  # a then b: the sum
        ("parallel", 20),  # a beside b: the slower
        ("diamond", 10 + 20 + 1),  # a, then b (20) beside c (5), then d
        ("nested", 10 + 20 + 5),  # the chain, then c
    ],
)
def test_an_ensembles_latency_is_the_latest_finish_over_its_steps(name: str, expected_ms: float) -> None:
    """By hand, from steps at a point each (a 10 ms, b 20 ms, c 5 ms, d 1 ms). Each step's time is drawn inside
    its 2% bin and the percentile read at a bin's centre: within 3% of the exact figure."""
    figures = end_to_end(CONFIGS, name, TIMES, dict.fromkeys(TIMES, 0.0), seed=0, samples=20_000)
    for q in ("p50_ms", "p95_ms", "p99_ms"):
        assert figures[q] == pytest.approx(expected_ms, rel=0.03)
    assert figures["rejected_pct"] == 0


def test_an_ensemble_fails_when_any_step_rejects() -> None:
    """1 - (1 - r_a)(1 - r_b)...: a 1%, b 2%: 1 - 0.99 x 0.98 = 2.98%; with c 50% after the chain as well:
    1 - 0.99 x 0.98 x 0.5 = 51.49%."""
    rejected = {"a": 1.0, "b": 2.0, "c": 50.0, "d": 0.0}
    assert end_to_end(CONFIGS, "chain", TIMES, rejected, seed=0, samples=100)["rejected_pct"] == pytest.approx(2.98)
    assert end_to_end(CONFIGS, "nested", TIMES, rejected, seed=0, samples=100)["rejected_pct"] == pytest.approx(51.49)


def test_an_ensemble_is_drawn_the_same_for_a_seed_and_names_its_steps() -> None:
    spread = {m: np.arange(len(EDGES) - 1) % 7 for m in ("a", "b")}
    rejected = {"a": 0.0, "b": 0.0}
    first = end_to_end(CONFIGS, "chain", spread, rejected, seed=5, samples=10_000)
    assert first == end_to_end(CONFIGS, "chain", spread, rejected, seed=5, samples=10_000)
    assert first["steps"] == ["a", "b"]
    empty = {"a": at(0.010), "b": np.zeros(len(EDGES) - 1, np.int64)}
    assert math.isnan(end_to_end(CONFIGS, "chain", empty, rejected, seed=5, samples=100)["p95_ms"])


def stack_as(monkeypatch: pytest.MonkeyPatch, change: Callable[[StackConfig], StackConfig]) -> None:
    """`stackctl simulate` runs the stack file as `change` makes it."""
    import stackctl.run_inputs  # noqa: PLC0415

    monkeypatch.setattr(
        stackctl.run_inputs, "load_stack_file", lambda path, stack: change(load_stack_file(path, stack))
    )


def with_slo(stack: StackConfig, p95_ms: int) -> StackConfig:
    """`stack` with serving.p95LatencySloMs `p95_ms` and no p99 bound."""
    serving = stack.config.serving.model_copy(update={"p95_latency_slo_ms": p95_ms, "p99_latency_slo_ms": None})
    return dataclasses.replace(stack, config=stack.config.model_copy(update={"serving": serving}))


PIPELINE_SHARES = {"classifier": 0.4, "pipeline": 0.6}
STEP_LOAD = ("--stack", "production", "--profile", "step", "--hours", "0.02", "--peak-rps", "2000", "--json")
"""72 s: 18 s at a quarter of 2000 req/s, then 54 s at 2000, 117,000 requests."""


def test_simulate_reports_an_ensemble_end_to_end(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stack_as(monkeypatch, lambda stack: with_shares(stack, PIPELINE_SHARES))
    code, out, _ = simulate_cli(capsys, tmp_path, *STEP_LOAD)
    assert code == 0, out
    models = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))["models"]
    assert json.loads(out)["models"] == models
    pipeline = models["pipeline"]
    assert pipeline["steps"] == ["preprocess", "classifier"]
    assert pipeline["requests"] == 70_200  # 0.6 x 117,000
    for step in ("preprocess", "classifier"):
        assert pipeline["p95_ms"] >= models[step]["p95_ms"]
        assert pipeline["p99_ms"] >= models[step]["p99_ms"]


def test_an_ensemble_over_the_slo_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An SLO between the steps' p95 and the ensemble's end-to-end p95: only the ensemble misses it."""
    stack_as(monkeypatch, lambda stack: with_shares(stack, PIPELINE_SHARES))
    models = json.loads(simulate_cli(capsys, tmp_path, *STEP_LOAD)[1])["models"]
    steps, pipeline = max(models["preprocess"]["p95_ms"], models["classifier"]["p95_ms"]), models["pipeline"]["p95_ms"]
    slo = int((steps + pipeline) / 2)
    assert steps < slo < pipeline
    stack_as(monkeypatch, lambda stack: with_slo(with_shares(stack, PIPELINE_SHARES), slo))
    code, out, _ = simulate_cli(capsys, tmp_path, *STEP_LOAD)
    assert code == 1
    assert json.loads(out)["failures"] == [f"pipeline: p95 {pipeline:.4g} ms > {slo} ms"]


def test_steps_in_a_cycle_or_a_model_that_is_no_ensemble_are_refused() -> None:
    loop = ensemble("loop", ("a", ("y",), "x"), ("b", ("x",), "y"))
    with pytest.raises(ValueError, match="the steps of ensemble 'loop' wait for each other's tensors in a cycle"):
        end_to_end({**CONFIGS, "loop": loop}, "loop", TIMES, dict.fromkeys(TIMES, 0.0), seed=0, samples=10)
    with pytest.raises(ValueError, match="model 'a' is no ensemble"):
        end_to_end(CONFIGS, "a", TIMES, dict.fromkeys(TIMES, 0.0), seed=0, samples=10)
