"""A model's latency profile for `stackctl simulate`, measured on the real tritonserver.

    .venv/bin/python bench/latency_profile.py [--stack production] [--model classifier]

The server runs the stack's rendered config. A closed loop of C clients
(C = 1, 2, 4 ... up to twice the max batch size; bench/loadgen, over HTTP) makes
the dynamic batcher form batches of every size. Two things are read:

- tau(b), the time one model instance is busy with a batch of b requests: from
  Triton's own statistics (`batch_stats`: compute input + infer + output per
  batch size), fitted as a + c*b by least squares weighted by executions, so
  rare sizes do not add noise. It includes what the backend pays per request
  and the CPU the instances share, because it is measured under load.
- the request overhead: what a lone client waits beyond the server's mean
  request time (`inference_stats.success`): gRPC transport, (de)serialization
  and the jitter of the batcher's timer, kept as its distribution (percentiles
  0 to 100). It adds to latency, not to an instance's busy time.

Writes bench/results/profiles/<model>.json, which the simulator reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.triton_load import INPUTS, load, model_stats, stack_server  # noqa: E402

PROFILES = ROOT / "bench" / "results" / "profiles"


def batch_seconds(before: dict[str, Any], after: dict[str, Any]) -> dict[int, tuple[int, float]]:
    """Executions and mean instance seconds per batch size between two statistics snapshots."""

    def totals(stats: dict[str, Any]) -> dict[int, tuple[int, int]]:
        return {
            b["batch_size"]: (
                b["compute_infer"]["count"],
                sum(b[k]["ns"] for k in ("compute_input", "compute_infer", "compute_output")),
            )
            for b in stats["batch_stats"]
        }

    start, end = totals(before), totals(after)
    out = {}
    for size, (count, ns) in end.items():
        count0, ns0 = start.get(size, (0, 0))
        if count > count0:
            out[size] = (count - count0, (ns - ns0) / (count - count0) / 1e9)
    return out


def fit(samples: dict[int, tuple[int, float]]) -> tuple[float, float]:
    """(a, c) of tau(b) = a + c*b, least squares weighted by executions; c is kept >= 0."""
    sizes = np.array(list(samples), float)
    counts = np.array([n for n, _ in samples.values()], float)
    means = np.array([s for _, s in samples.values()])
    weights = np.sqrt(counts)
    (c, a), *_ = np.linalg.lstsq(
        np.stack([sizes, np.ones_like(sizes)], 1) * weights[:, None], means * weights, rcond=None
    )
    if c < 0:  # flat in b within noise: a constant
        return float(np.average(means, weights=counts)), 0.0
    return float(a), float(c)


def measure(stack: str, model: str, seconds: float) -> dict[str, Any]:
    with stack_server(stack, model) as (server, max_batch):
        load(server, model, clients=1, seconds=1.0)  # warm
        before = model_stats(server, model)
        one = load(server, model, clients=1, seconds=seconds)["latencies"]
        after = model_stats(server, model)
        success = after["inference_stats"]["success"]
        success0 = before["inference_stats"]["success"]
        server_mean = (success["ns"] - success0["ns"]) / (success["count"] - success0["count"]) / 1e9
        overhead = np.maximum(np.percentile(np.array(one) - server_mean, np.arange(101)), 0.0)
        samples = batch_seconds(before, after)
        clients = 2
        while clients <= 2 * max_batch:
            before = model_stats(server, model)
            load(server, model, clients=clients, seconds=seconds)
            for size, (count, mean) in batch_seconds(before, model_stats(server, model)).items():
                n0, m0 = samples.get(size, (0, 0.0))
                samples[size] = (n0 + count, (n0 * m0 + count * mean) / (n0 + count))
            clients *= 2
    a, c = fit(samples)
    sizes = [b for b in (1, 2, 4, 8, 16, 32, 64, 128) if b < max_batch] + [max_batch]
    return {
        "model": model,
        "measured": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC on the {stack} config by bench/latency_profile.py",
        "request_overhead_percentiles_seconds": [float(v) for v in overhead],
        "tau_seconds": {str(b): a + c * b for b in sizes},
        "batch_stats": {str(b): {"executions": n, "mean_seconds": s} for b, (n, s) in sorted(samples.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="production")
    parser.add_argument("--model", default="classifier", choices=sorted(INPUTS))
    parser.add_argument("--seconds", type=float, default=3.0, help="per concurrency")
    args = parser.parse_args()
    profile = measure(args.stack, args.model, args.seconds)
    PROFILES.mkdir(parents=True, exist_ok=True)
    (PROFILES / f"{args.model}.json").write_text(json.dumps(profile, indent=2) + "\n")
    tau = profile["tau_seconds"]
    overhead = profile["request_overhead_percentiles_seconds"]
    print(
        f"{args.model}: overhead p50 {overhead[50] * 1000:.2f} ms, p95 {overhead[95] * 1000:.2f} ms; tau(b) ms: "
        + ", ".join(f"{b}: {t * 1000:.2f}" for b, t in tau.items())
    )


if __name__ == "__main__":
    main()
