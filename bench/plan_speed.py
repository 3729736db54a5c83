"""How fast `stackctl plan` runs: 200 candidates x 3 seeds, with the shapes, for every model of production's first
deployment that has a latency profile, on production's committed 24 h trace.

    .venv/bin/python bench/plan_speed.py [--budget 200] [--seeds 3] [--trace stacks/traces/production.csv]
                                         [--model NAME ...] [--engine local|dask]

Prints, per model and in all, the wall time, and that time scaled to 200 candidates, against the 120 s target side
by side, as Markdown (bench/results/plan_speed.md keeps the latest run on the default trace, seeds, models and
engine). The fluid model is compiled (or loaded from numba's cache) before the timings, and that time printed. A plan
runs the stack's simulated model (`scaling.simulation.model`, else the first with a profile): each other model's
plan runs on a copy of the stack file that names it there.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.plan import make_plan  # noqa: E402
from planner.search import ENGINES, Bounds, Result  # noqa: E402
from platform_config.loader import load_stack, load_stack_file  # noqa: E402
from platform_config.paths import display_path, stack_file  # noqa: E402
from simulator.fluid import evaluate  # noqa: E402
from simulator.scenario import PROFILES, read_trace, scenario  # noqa: E402

TARGET_SECONDS = 120.0
TARGET_BUDGET = 200
DEFAULT_TRACE = ROOT / "stacks" / "traces" / "production.csv"


def simulating(model: str, folder: Path) -> Path:
    """A copy of production's stack file in `folder` whose `scaling.simulation.model` is `model`: a plan runs the
    stack's simulated model, its head's and every candidate's scenario alike."""
    yaml = YAML()
    data = yaml.load(stack_file("production").read_text(encoding="utf-8"))
    data["config"]["triton-platform:scaling"].setdefault("simulation", {})["model"] = model
    path = folder / "Pulumi.production.yaml"
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump(data, handle)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--model", action="append", help="default: every model of the deployment with a profile")
    parser.add_argument("--engine", choices=ENGINES, default="local")
    args = parser.parse_args()
    loaded = load_stack("production")
    first = scenario(loaded)
    served = loaded.config.serving.deployments[first.deployment].models
    models = args.model or [m for m in served if (PROFILES / f"{m}.json").exists()]
    rate = read_trace(args.trace)
    trace = display_path(args.trace)
    hours = len(rate) / 3600
    load_before = os.getloadavg()[0]
    # Compile the fluid model outside the timings (or load it from numba's cache): a machine pays that once.
    start = time.perf_counter()
    evaluate(first, rate[:60])
    compiled = time.perf_counter() - start
    folder = tempfile.TemporaryDirectory()
    rows, lines = [], []
    total_wall, total_projected = 0.0, 0.0
    for model in models:
        path = stack_file("production") if model == first.model else simulating(model, Path(folder.name))
        model_loaded = load_stack_file(path, "production")
        head = scenario(model_loaded)
        start = time.perf_counter()

        def progress(done: int, total: int, best: Result | None, model: str = model, start: float = start) -> None:
            if done % 20 == 0 or done == total:
                print(f"{model}: {done}/{total} candidates, {time.perf_counter() - start:.0f} s", file=sys.stderr)

        plan = make_plan(
            path,
            model_loaded,
            head,
            rate,
            trace=trace,
            bounds=Bounds(loaded.config.serving.p95_latency_slo_ms, 0.1),
            budget=args.budget,
            seeds=args.seeds,
            seed=0,
            progress=progress,
            engine=args.engine,
        )
        wall = time.perf_counter() - start
        runs = len(plan.results) * args.seeds
        # A smaller --budget measures faster; the target is about 200 candidates, each costing about the same.
        projected = wall / len(plan.results) * TARGET_BUDGET
        total_wall, total_projected = total_wall + wall, total_projected + projected
        rows.append(
            f"| {head.deployment}/{model} | {len(plan.results)} | {runs} | {wall:.1f} | {wall / runs:.3f} | "
            f"{projected:.0f} | | |"
        )
        chosen = plan.chosen
        lines.append(
            f"{model}: chosen #{chosen.index}, {chosen.mean['gpu_hours']:.1f} GPU-hours against the current "
            f"{plan.current.mean['gpu_hours']:.1f}"
            if chosen
            else f"{model}: chosen: none passed"
        )
    text = "\n".join(
        [
            f"# stackctl plan speed, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}; load average "
            f"(1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} at the end (the plan's own processes count)",
            f"command: .venv/bin/python bench/plan_speed.py --budget {args.budget} --seeds {args.seeds} "
            f"--trace {trace}{''.join(f' --model {m}' for m in args.model or [])} --engine {args.engine}",
            f"load: production, {trace} ({hours:g} h, peak {rate.max():,.0f} req/s), with the plan's shapes",
            "",
            "| model | candidates | runs | wall s | s per run | wall s at 200 candidates | target s | ratio |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            f"| every model | | | {total_wall:.1f} | | {total_projected:.0f} | {TARGET_SECONDS:.0f} | "
            f"{total_projected / TARGET_SECONDS:.2f} |",
            "",
            *lines,
            f"compiling the fluid model beforehand (once per machine, then numba's cache): {compiled:.1f} s",
        ]
    )
    print(text)
    default = args.trace.resolve() == DEFAULT_TRACE and not args.model and args.engine == "local"
    if default and (args.budget, args.seeds) == (TARGET_BUDGET, 3):
        (ROOT / "bench" / "results" / "plan_speed.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
