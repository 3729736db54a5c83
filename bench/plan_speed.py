"""How fast `stackctl plan` runs: 200 candidates x 3 seeds on production's committed 24 h trace.

    .venv/bin/python bench/plan_speed.py [--budget 200] [--seeds 3] [--trace stacks/traces/production.csv]

Prints the wall time, and that time scaled to 200 candidates, against the 300 s target side by side, as
Markdown (bench/results/plan_speed.md keeps the latest run on the default trace and seeds).
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

from planner.plan import make_plan  # noqa: E402
from planner.search import Bounds, Result  # noqa: E402
from platform_config.loader import load_stack  # noqa: E402
from platform_config.paths import display_path, stack_file  # noqa: E402
from simulator.scenario import read_trace, scenario  # noqa: E402

TARGET_SECONDS = 300.0
TARGET_BUDGET = 200
DEFAULT_TRACE = ROOT / "stacks" / "traces" / "production.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    args = parser.parse_args()
    loaded = load_stack("production")
    head = scenario(loaded)
    rate = read_trace(args.trace)
    trace = display_path(args.trace)
    hours = len(rate) / 3600

    def progress(done: int, total: int, best: Result | None) -> None:
        if done % 20 == 0 or done == total:
            print(f"{done}/{total} candidates, {time.perf_counter() - start:.0f} s", file=sys.stderr)

    start = time.perf_counter()
    plan = make_plan(
        stack_file("production"),
        loaded,
        head,
        rate,
        trace=trace,
        bounds=Bounds(loaded.config.serving.p95_latency_slo_ms, 0.1),
        budget=args.budget,
        seeds=args.seeds,
        seed=0,
        progress=progress,
    )
    wall = time.perf_counter() - start
    runs = len(plan.results) * args.seeds
    # A smaller --budget measures faster; the target is about 200 candidates, each costing about the same.
    projected = wall / len(plan.results) * TARGET_BUDGET
    chosen = plan.chosen
    lines = [
        f"# stackctl plan speed, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        f"command: .venv/bin/python bench/plan_speed.py --budget {args.budget} --seeds {args.seeds} --trace {trace}",
        "",
        "| plan | candidates | runs | wall s | s per run | wall s at 200 candidates | target s | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| production {head.deployment}/{head.model}, {trace} ({hours:g} h, peak {rate.max():,.0f} req/s) | "
        f"{len(plan.results)} | {runs} | {wall:.1f} | {wall / runs:.2f} | {projected:.0f} | {TARGET_SECONDS:.0f} | "
        f"{projected / TARGET_SECONDS:.2f} |",
        "",
        f"chosen: #{chosen.index}, {chosen.mean['gpu_hours']:.1f} GPU-hours against the current "
        f"{plan.current.mean['gpu_hours']:.1f}"
        if chosen
        else "chosen: none passed",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.trace.resolve() == DEFAULT_TRACE:
        (ROOT / "bench" / "results" / "plan_speed.md").write_text(text)


if __name__ == "__main__":
    main()
