"""How fast the fluid evaluator (simulator.fluid) scores one candidate, next to the detailed engine.

    .venv/bin/python bench/fluid_speed.py [--replicas 9] [--candidates 5]

Production's config on a 24 h diurnal trace peaking at `--replicas` pods' full-batch capacity:
the surface's one-off build, then the fluid evaluation of the whole day (the mean of
`--candidates` runs, as a planner evaluates many configs; and one run with the control plane in Python,
`evaluate_reference`), against the detailed engine on a
10-minute slice at the peak, per simulated second. Prints Markdown; with the defaults,
bench/results/fluid_speed.md keeps the latest.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from platform_config.loader import load_stack  # noqa: E402
from simulator.engine import simulate  # noqa: E402
from simulator.fluid import evaluate  # noqa: E402
from simulator.fluid_reference import evaluate_reference  # noqa: E402
from simulator.scenario import capacity_rps, scenario, shaped_trace  # noqa: E402
from simulator.surface import surface  # noqa: E402

PLANNER_CANDIDATES = 200
PLANNER_BUDGET_SECONDS = 120.0
SLICE_SECONDS = 600


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=float, default=9.0)
    parser.add_argument("--candidates", type=int, default=5)
    args = parser.parse_args()
    s = scenario(load_stack("production"))
    rate = shaped_trace("diurnal", args.replicas * capacity_rps(s), 24)
    # Compile the numba kernels outside the timings: a planner pays that once.
    evaluate(s, rate[:60])
    surface.cache_clear()
    start = time.perf_counter()
    surface(s.batcher, s.tau)
    build = time.perf_counter() - start
    start = time.perf_counter()
    for seed in range(args.candidates):
        result = evaluate(s, rate, seed)
    fluid = (time.perf_counter() - start) / args.candidates
    # The same run with the control plane in Python, on the engine's own objects: what the compiled one replaced.
    start = time.perf_counter()
    evaluate_reference(s, rate, 0)
    reference = time.perf_counter() - start
    # The slice around the peak (mid-trace), where the detailed engine has the most requests to run.
    middle = len(rate) // 2
    piece = rate[middle - SLICE_SECONDS // 2 : middle + SLICE_SECONDS // 2]
    start = time.perf_counter()
    simulate(s, piece, seed=0)
    detailed = time.perf_counter() - start
    fluid_per_second = fluid / len(rate)
    detailed_per_second = detailed / len(piece)
    planner = build + PLANNER_CANDIDATES * fluid
    lines = [
        f"# Fluid evaluator speed, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        f"command: .venv/bin/python bench/fluid_speed.py --replicas {args.replicas:g} --candidates {args.candidates}",
        "",
        f"production, 24 h diurnal trace peaking at {args.replicas:g} replicas' capacity "
        f"({rate.max():,.0f} req/s; {int(result['arrived'] or 0):,} requests); "
        f"detailed engine on the {SLICE_SECONDS // 60}-minute slice at the peak.",
        "",
        "| step | wall s | simulated s | wall ms per simulated hour | detailed / fluid |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| surface build (once per batching config) | {build:.2f} | | | |",
        f"| fluid evaluate, one candidate | {fluid:.3f} | {len(rate):,} | {fluid_per_second * 3.6e6:,.1f} | |",
        f"| the same, control plane in Python (evaluate_reference) | {reference:.2f} | {len(rate):,} | "
        f"{reference / len(rate) * 3.6e6:,.1f} | |",
        f"| detailed simulate, peak slice | {detailed:.2f} | {len(piece):,} | {detailed_per_second * 3.6e6:,.0f} | "
        f"{detailed_per_second / fluid_per_second:,.0f} |",
        "",
        f"{PLANNER_CANDIDATES} candidates, one surface, one core: {planner:.0f} s "
        f"(budget {PLANNER_BUDGET_SECONDS:.0f} s on 2 cores); with a surface per candidate: "
        f"{PLANNER_CANDIDATES * (build + fluid):.0f} s.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.replicas == 9 and args.candidates == 5:
        (ROOT / "bench" / "results" / "fluid_speed.md").write_text(text)


if __name__ == "__main__":
    main()
