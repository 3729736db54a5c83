"""How close `stackctl simulate`'s batcher comes to the real tritonserver, one replica.

    .venv/bin/python bench/simulator_fidelity.py [--stack production] [--model classifier]
        [--rates 200 1000 2500] [--seconds 5] [--reps 5] [--beyond 6000]

The real server runs the stack's rendered config and flags. At each load level
an open-loop client sends Poisson arrivals (the simulator's arrival process)
from fixed seeds, each seed on a fresh server; each figure is the median over
the seeds. Measured: throughput, the server's own
request-latency quantiles (`nv_inference_request_summary_us`: queue plus
compute, what the batcher decides) and the client's (plus HTTP transport); the
load generator is bench/loadgen (Go), so it leaves the server the CPU. The
simulator then runs the same arrivals through one replica with the model's
committed profile (bench/latency_profile.py). Writes
bench/results/simulator_fidelity.json, which tests/simulator/test_simulator_fidelity.py
holds the simulator to, and prints the side-by-side table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.triton_load import INPUTS, load, stack_server  # noqa: E402
from platform_config.loader import load_stack  # noqa: E402
from simulator.batcher import (  # noqa: E402
    COUNTER_BUSY_SECONDS,
    COUNTER_QUEUE_SECONDS,
    COUNTER_SUCCESS,
    Outcome,
    Replica,
)
from simulator.scenario import scenario  # noqa: E402
from tests.support.local_triton.server import TritonServer  # noqa: E402
from triton_platform.scaling_signal import COMPUTE_PHASES  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "simulator_fidelity.json"
TOLERANCE = 0.20


def poisson_arrivals(rate: float, seconds: float, seed: int) -> NDArray[np.float64]:
    """Arrival times in [0, seconds) of a Poisson process; the same for the real run and the simulation."""
    rng = np.random.default_rng(seed)
    times: NDArray[np.float64] = np.cumsum(rng.exponential(1 / rate, int(rate * seconds * 1.5) + 100))
    return times[times < seconds]


def percentile(values: list[float] | NDArray[np.float64], q: float) -> float:
    return float(np.percentile(values, q))


def simulated(stack: str, model: str, rate: float, seconds: float, seeds: list[int]) -> dict[str, float]:
    """The simulator's one replica under the same arrivals: the median over the seeds, like the measurement."""
    s = scenario(load_stack(stack), model=model)
    runs = []
    for seed in seeds:
        arrivals = poisson_arrivals(rate, seconds, seed)
        # The request overhead does not change what the batcher does: a run without it gives the server's side.
        found: dict[str, float] = {}
        for side, tau in (("server", replace(s.tau, overhead_percentiles=(0.0,))), ("client", s.tau)):
            replica, out = Replica(s.batcher, tau, seed), Outcome()
            replica.offer(arrivals)
            replica.advance(np.inf, out)
            latencies = np.concatenate(out.latencies)
            rejected = sum(len(r) for r in out.rejected_at)
            counters = replica.counters
            found |= {
                "busy_ratio": counters[COUNTER_BUSY_SECONDS] / seconds / s.batcher.instances,
                "queue_ms": 1000 * counters[COUNTER_QUEUE_SECONDS] / max(counters[COUNTER_SUCCESS], 1),
                f"{side}_p50_ms": percentile(latencies, 50) * 1000,
                f"{side}_p95_ms": percentile(latencies, 95) * 1000,
                "throughput": len(latencies) / seconds,
                "rejected_pct": 100 * rejected / len(arrivals),
            }
        runs.append(found)
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def server_quantiles(server: TritonServer, model: str, seconds: float, instances: int) -> dict[str, float]:
    """p50 and p95 (ms) of the server's request summary, and the two counter signals (simulator/signals.py),
    over every request since this server started: the busy ratio of its instances over the run's `seconds`,
    and the mean queue time per request."""
    with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
        text = response.read().decode()

    def counter(name: str) -> float:
        prefix = f'{name}{{model="{model}",'
        return float(next(x for x in text.splitlines() if x.startswith(prefix)).rsplit(" ", 1)[1])

    # Triton adds a batch's compute times to each request in it: x executions / inferences is the batches' time.
    held_us = sum(counter(f"nv_inference_compute_{phase}_duration_us") for phase in COMPUTE_PHASES)
    busy_us = held_us * counter("nv_inference_exec_count")
    busy_us /= max(counter("nv_inference_count"), 1)
    found = {
        "busy_ratio": busy_us / 1e6 / seconds / instances,
        "queue_ms": counter("nv_inference_queue_duration_us") / max(counter("nv_inference_request_success"), 1) / 1000,
    }
    for q in ("0.5", "0.95"):
        prefix = f'nv_inference_request_summary_us{{model="{model}",'
        line = next(x for x in text.splitlines() if x.startswith(prefix) and f'quantile="{q}"' in x)
        found[f"server_p{round(float(q) * 100)}_ms"] = float(line.rsplit(" ", 1)[1]) / 1000
    return found


def error(sim: float, real: float) -> float:
    return (sim - real) / real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="production")
    parser.add_argument("--model", default="classifier", choices=sorted(INPUTS))
    parser.add_argument("--rates", type=float, nargs="+", default=[200, 1000, 2500])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument(
        "--beyond",
        type=float,
        nargs="*",
        default=[6000],
        help="rates also measured and shown, but past what this host can serve with CPU to spare (not held to)",
    )
    args = parser.parse_args()
    seeds = list(range(1, args.reps + 1))
    result = {
        "stack": args.stack,
        "model": args.model,
        "seconds": args.seconds,
        "seeds": seeds,
        "measured": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "command": f".venv/bin/python bench/simulator_fidelity.py --stack {args.stack} --model {args.model} "
        f"--rates {' '.join(f'{r:g}' for r in args.rates)} --seconds {args.seconds:g} --reps {args.reps} "
        f"--beyond {' '.join(f'{r:g}' for r in args.beyond)}",
        "levels": [measure(args.stack, args.model, rate, args.seconds, seeds) for rate in args.rates],
        "beyond": [measure(args.stack, args.model, rate, args.seconds, seeds) for rate in args.beyond],
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    text = table(result)
    RESULTS.with_suffix(".md").write_text(text + "\n")
    print(text)


def measure(stack: str, model: str, rate: float, seconds: float, seeds: list[int]) -> dict[str, Any]:
    """One load level on the real server: the median over the seeds of each figure.

    Each seed runs on a fresh server, so its latency summary holds that run only (the
    stack's warmup config warms the model at load), and one run disturbed by another
    tenant of this shared machine moves the median little.
    """
    runs = []
    instances = scenario(load_stack(stack), model=model).batcher.instances
    for seed in seeds:
        with stack_server(stack, model) as (server, _):
            run = load(server, model, arrivals=poisson_arrivals(rate, seconds, seed))
            quantiles = server_quantiles(server, model, seconds, instances)
        latencies, rejected = run["latencies"], run["rejected"]
        runs.append(
            {
                "throughput": len(latencies) / seconds,
                **quantiles,
                "client_p50_ms": percentile(latencies, 50) * 1000,
                "client_p95_ms": percentile(latencies, 95) * 1000,
                "rejected_pct": 100 * rejected / (len(latencies) + rejected),
                "send_lag_p95_ms": run["lag_p95"] * 1000,
            }
        )
    real = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(json.dumps({"rate": rate, **real}), file=sys.stderr, flush=True)
    return {"rate": rate, "real": real}


def table(result: dict[str, Any]) -> str:
    """The measured levels beside the simulator's, as a Markdown table."""
    lines = [
        f"# Simulator vs real tritonserver: {result['stack']} config, {result['model']}, one replica",
        "",
        f"Open-loop Poisson load, {result['seconds']:g} s per seed, medians over {len(result['seeds'])} seeds, "
        f"{result['measured']}, `{result['command']}`. Server: Triton's own request latency "
        "(queue + compute); client: what bench/loadgen saw (plus HTTP transport). "
        f"Levels marked *beyond* saturate this {os.cpu_count()}-core host (load generator, HTTP frontend "
        "and the instances share its cores); tests/simulator/test_simulator_fidelity.py holds the others to "
        f"±{TOLERANCE:.0%}.",
        "",
        "| offered req/s | real req/s | sim req/s | error | server p50 ms real/sim | server p95 ms real/sim | error "
        "| client p50 ms real/sim | client p95 ms real/sim | error | busy ratio real/sim | queue ms per request "
        "real/sim | client send lag p95 ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for level in result["levels"] + result["beyond"]:
        real = level["real"]
        sim = simulated(result["stack"], result["model"], level["rate"], result["seconds"], result["seeds"])
        beyond = " *beyond*" if level in result["beyond"] else ""
        lines.append(
            f"| {level['rate']:g}{beyond} | {real['throughput']:.0f} | {sim['throughput']:.0f} | "
            f"{error(sim['throughput'], real['throughput']):+.0%} | "
            f"{real['server_p50_ms']:.2f} / {sim['server_p50_ms']:.2f} | "
            f"{real['server_p95_ms']:.2f} / {sim['server_p95_ms']:.2f} | "
            f"{error(sim['server_p95_ms'], real['server_p95_ms']):+.0%} | "
            f"{real['client_p50_ms']:.2f} / {sim['client_p50_ms']:.2f} | "
            f"{real['client_p95_ms']:.2f} / {sim['client_p95_ms']:.2f} | "
            f"{error(sim['client_p95_ms'], real['client_p95_ms']):+.0%} | "
            f"{real['busy_ratio']:.2f} / {sim['busy_ratio']:.2f} | {real['queue_ms']:.2f} / {sim['queue_ms']:.2f} | "
            f"{real['send_lag_p95_ms']:.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
