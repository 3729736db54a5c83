"""How close `stackctl simulate`'s batcher comes to the real tritonserver, one replica.

    .venv/bin/python bench/simulator_fidelity.py [--stack production] [--model classifier]

bench/batching.py measured the stack's config (side A) with a closed loop of C
clients. The simulator is open-loop, so each concurrency is matched by Little's
law: the arrival rate is iterated to C / (mean latency the simulator predicts at
that rate). Prints simulated vs measured throughput and p95, and the error of each.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from platform_config.loader import load_stack  # noqa: E402
from simulator.engine import EDGES, simulate  # noqa: E402
from simulator.scenario import scenario  # noqa: E402


def measured(stack: str, model: str) -> list[tuple[int, float, float]]:
    """(concurrency, A req/s, A p95 ms) rows of bench/results/batching-<stack>-<model>.md."""
    text = (ROOT / "bench" / "results" / f"batching-{stack}-{model}.md").read_text()
    rows = []
    for line in text.splitlines():
        if re.match(r"\| \d+ \|", line):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows.append((int(cells[0]), float(cells[1]), float(cells[6])))
    return rows


def closed_loop(stack: str, model: str, clients: int) -> tuple[float, float]:
    s = scenario(load_stack(stack), model=model)
    one = replace(s, min_replicas=1, max_replicas=1)
    centers = np.sqrt(EDGES[:-1] * EDGES[1:])
    rate = 100.0
    for _ in range(8):
        timeline = simulate(one, np.full(20, rate), seed=3)
        counts = timeline.histogram[2:].sum(axis=0)
        mean = float((counts * centers).sum() / max(counts.sum(), 1))
        rate = clients / mean
    p95 = float(timeline.percentiles(95)[2:].mean() * 1000)
    return rate, p95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="production")
    parser.add_argument("--model", default="classifier")
    args = parser.parse_args()
    print(f"# Simulator vs real tritonserver: {args.stack}, {args.model}, one replica\n")
    print("| clients | real req/s | sim req/s | error | real p95 ms | sim p95 ms | error |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for clients, real_rps, real_p95 in measured(args.stack, args.model):
        sim_rps, sim_p95 = closed_loop(args.stack, args.model, clients)
        print(
            f"| {clients} | {real_rps:.0f} | {sim_rps:.0f} | {(sim_rps - real_rps) / real_rps:+.0%} | "
            f"{real_p95:.1f} | {sim_p95:.1f} | {(sim_p95 - real_p95) / real_p95:+.0%} |"
        )


if __name__ == "__main__":
    main()
