"""How close `stackctl simulate`'s contention model comes to the real tritonserver with two models loaded at once.

    .venv/bin/python bench/simulator_fidelity_models.py [--stack production] [--models classifier preprocess]
        [--rates 200 1000 2500] [--seconds 5] [--reps 3]

bench/simulator_fidelity.py's check, for a pod of two models: one tritonserver loads both with the stack's
rendered configs and flags; at each load level two open-loop clients (bench/loadgen) send each model Poisson
arrivals at the level's rate at once, from fixed seeds, each seed on a fresh server; each figure is the median
over the seeds. The simulator then runs the same arrivals through one pod of the engine (simulator.pods:
a Shared replica per model with the model's committed profile, second by second, its tau(b) stretched by the
other model's share of the pod, as `stackctl simulate` runs them). Writes
bench/results/simulator_fidelity_models.json and .md, the side-by-side table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import triton_load  # noqa: E402
from bench.simulator_fidelity import TOLERANCE, error, percentile, poisson_arrivals, server_quantiles  # noqa: E402
from bench.triton_load import INPUTS, load, stack_server  # noqa: E402
from model_publishing.publish import write_model_repository  # noqa: E402
from platform_config.loader import load_stack  # noqa: E402
from simulator.batcher import COUNTER_BUSY_SECONDS, Outcome  # noqa: E402
from simulator.pods import Shared, share_gpu  # noqa: E402
from simulator.scenario import scenario  # noqa: E402
from tests.support.local_triton.server import TritonServer  # noqa: E402
from triton_platform.serving.triton_server_args import tritonserver_args  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "simulator_fidelity_models.json"


@contextmanager
def two_model_server(stack: str, models: list[str]) -> Iterator[TritonServer]:
    """bench.triton_load.stack_server with every model of `models` in its repository and loaded."""

    def write_all(rendered: Any, repo: Path, _: list[str]) -> Any:
        return write_model_repository(rendered, repo, models)

    def flags_all(stack_name: str, _: list[str], **kwargs: Any) -> list[str]:
        return tritonserver_args(stack_name, models, **kwargs)

    with (
        mock.patch.object(triton_load, "write_model_repository", write_all),
        mock.patch.object(triton_load, "tritonserver_args", flags_all),
        stack_server(stack, models[0]) as (server, _),
    ):
        yield server


def simulated(stack: str, models: list[str], rate: float, seconds: float, seeds: list[int]) -> dict[str, float]:
    """One pod of the engine under the same arrivals: each model's server-side p50/p95 (no request overhead) and
    busy ratio, the median over the seeds."""
    scenarios = [scenario(load_stack(stack), model=model) for model in models]
    runs = []
    for seed in seeds:
        replicas = [Shared(s.batcher, replace(s.tau, overhead_percentiles=(0.0,)), seed) for s in scenarios]
        outs = [Outcome() for _ in models]
        arrivals = [poisson_arrivals(rate, seconds, seed + 1000 * k) for k in range(len(models))]
        end = int(np.ceil(seconds)) + 5  # and a few seconds to finish the queues
        for second in range(end):
            for replica, times in zip(replicas, arrivals, strict=True):
                replica.offer(times[(times >= second) & (times < second + 1)])
            share_gpu(replicas)
            for replica, out in zip(replicas, outs, strict=True):
                replica.advance(second + 1.0, out)
        found: dict[str, float] = {}
        for model, s, replica, out in zip(models, scenarios, replicas, outs, strict=True):
            latencies = np.concatenate(out.latencies)
            found |= {
                f"{model}_server_p50_ms": percentile(latencies, 50) * 1000,
                f"{model}_server_p95_ms": percentile(latencies, 95) * 1000,
                f"{model}_busy_ratio": replica.counters[COUNTER_BUSY_SECONDS] / seconds / s.batcher.instances,
            }
        runs.append(found)
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def measure(stack: str, models: list[str], rate: float, seconds: float, seeds: list[int]) -> dict[str, float]:
    """One load level on the real server, every model at `rate` at once: the median over the seeds."""
    instances = [scenario(load_stack(stack), model=model).batcher.instances for model in models]
    runs = []
    for seed in seeds:
        with two_model_server(stack, models) as server, ThreadPoolExecutor(len(models)) as pool:
            loads = [
                pool.submit(load, server, model, arrivals=poisson_arrivals(rate, seconds, seed + 1000 * k))
                for k, model in enumerate(models)
            ]
            results = [future.result() for future in loads]
            found: dict[str, float] = {}
            for model, count, result in zip(models, instances, results, strict=True):
                quantiles = server_quantiles(server, model, seconds, count)
                found |= {
                    f"{model}_server_p50_ms": quantiles["server_p50_ms"],
                    f"{model}_server_p95_ms": quantiles["server_p95_ms"],
                    f"{model}_busy_ratio": quantiles["busy_ratio"],
                    f"{model}_throughput": len(result["latencies"]) / seconds,
                }
        runs.append(found)
    real = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(json.dumps({"rate": rate, **real}), file=sys.stderr, flush=True)
    return real


def table(result: dict[str, Any]) -> str:
    models = result["models"]
    lines = [
        f"# Simulator vs real tritonserver: {result['stack']} config, {' + '.join(models)} on one server",
        "",
        f"Open-loop Poisson load on each model at once, {result['seconds']:g} s per seed, medians over "
        f"{len(result['seeds'])} seeds, {result['measured']}, `{result['command']}`. Server-side latency (queue + "
        f"compute, Triton's request summary); the simulator: one pod of the engine, each model's tau(b) stretched "
        f"by the other's share (docs/simulation.md, Several models). Bar: p95 within ±{TOLERANCE:.0%}.",
        "",
        "| req/s per model | model | server p50 ms real/sim | server p95 ms real/sim | p95 error | busy ratio "
        "real/sim |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for level in result["levels"]:
        real, sim = level["real"], level["sim"]
        for model in models:
            p50, p95, busy = (f"{model}_{key}" for key in ("server_p50_ms", "server_p95_ms", "busy_ratio"))
            lines.append(
                f"| {level['rate']:g} | {model} | {real[p50]:.2f} / {sim[p50]:.2f} | {real[p95]:.2f} / "
                f"{sim[p95]:.2f} | {error(sim[p95], real[p95]):+.0%} | {real[busy]:.2f} / {sim[busy]:.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="production")
    parser.add_argument("--models", nargs=2, default=["classifier", "preprocess"], choices=sorted(INPUTS))
    parser.add_argument("--rates", type=float, nargs="+", default=[200, 1000, 2500])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    seeds = list(range(1, args.reps + 1))
    levels = []
    for rate in args.rates:
        real = measure(args.stack, args.models, rate, args.seconds, seeds)
        levels.append(
            {"rate": rate, "real": real, "sim": simulated(args.stack, args.models, rate, args.seconds, seeds)}
        )
    result = {
        "stack": args.stack,
        "models": args.models,
        "seconds": args.seconds,
        "seeds": seeds,
        "measured": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "command": f".venv/bin/python bench/simulator_fidelity_models.py --stack {args.stack} --models "
        f"{' '.join(args.models)} --rates {' '.join(f'{r:g}' for r in args.rates)} --seconds {args.seconds:g} "
        f"--reps {args.reps}",
        "levels": levels,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    text = table(result)
    RESULTS.with_suffix(".md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
