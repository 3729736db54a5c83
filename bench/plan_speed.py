"""How fast `stackctl plan` runs: 200 candidates x 3 seeds, with the shapes, every model of production's first
deployment that its load reaches planned together, on production's committed 24 h trace (a column per model).

    .venv/bin/python bench/plan_speed.py [--budget 200] [--seeds 3] [--trace stacks/traces/production.csv]
                                         [--engine local|dask]

The trace's models are read as `stackctl plan --trace` reads them (a column per model, or one column split by the
stack's `scaling.simulation.shares`; an ensemble's requests run on its steps), and the plan runs them together. Prints
the wall time, and that time scaled to 200 candidates, against the 120 s target side by side, as Markdown
(bench/results/plan_speed.md keeps the latest run on the default trace, seeds and engine). The fluid model is
compiled (or loaded from numba's cache) before the timings, and that time printed.

Then what a new user pays first: a fresh clone of HEAD (git clone into a temporary folder) with an empty cache
folder runs what `make venv` ends with, the simulator compiled ahead of time (simulator/ahead.py), then
`stackctl plan --stack dev --budget 4` twice; a second fresh clone beside it plans once (numba's cache is keyed by
the simulator's source, simulator/compiled.py, so it loads what the first compiled); a third, with a cache folder of
its own and no ahead step, plans once (the plan compiles). Each first run's wall time is set beside the warm one
against the target of at most 10 s more, and the ahead step's time printed (`--no-cold` leaves it out).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.plan import make_plan  # noqa: E402
from planner.search import ENGINES, Bounds, Result  # noqa: E402
from platform_config.loader import load_stack  # noqa: E402
from platform_config.paths import display_path, stack_file  # noqa: E402
from simulator.fluid import evaluate  # noqa: E402
from simulator.scenario import deployment_name, model_load, read_trace_columns, run_mix, scenario  # noqa: E402

TARGET_SECONDS = 120.0
TARGET_BUDGET = 200
DEFAULT_TRACE = ROOT / "stacks" / "traces" / "production.csv"
COLD_TARGET_SECONDS = 10.0
"""How much longer the first plan on a fresh clone may take than the second."""
COLD_PLAN = ("plan", "--stack", "dev", "--trace", "stacks/traces/dev.csv", "--budget", "4")


def _wall(clone: Path, args: list[str], cache: Path) -> float:
    """Seconds of `python args` in `clone`, with `cache` as the user's cache folder (simulator/compiled.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env["XDG_CACHE_HOME"] = str(cache)
    start = time.perf_counter()
    # The clone's own modules first (the working directory), as a new checkout runs them.
    done = subprocess.run([sys.executable, *args], cwd=clone, env=env, check=False, capture_output=True, text=True)
    wall = time.perf_counter() - start
    # 0: a candidate passed, 1: none did; either is a whole plan.
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} on a fresh clone exited {done.returncode}:\n{done.stderr}")
    return wall


def _plan_wall(clone: Path, out: Path, cache: Path) -> float:
    """Seconds of one COLD_PLAN in `clone`."""
    return _wall(clone, ["-m", "stackctl", *COLD_PLAN, "--out", str(out)], cache)


def cold_start() -> list[str]:
    """What a new machine pays first, as Markdown lines. Fresh clones of HEAD, each cache folder empty at first: one
    runs `make venv`'s ahead-of-time step (simulator/ahead.py), then the 4-candidate plan of dev twice; another
    clone beside it plans once (every later clone, CI run with a kept cache or installed copy); and a third, on a
    cache of its own, plans with no ahead step (the plan compiles: what a new machine paid before)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        clones = [root / f"clone-{i}" for i in (1, 2, 3)]
        for clone in clones:
            subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        ahead = _wall(clones[0], ["-m", "simulator.ahead"], root / "cache")
        first = _plan_wall(clones[0], root / "plan-1", root / "cache")
        second = _plan_wall(clones[0], root / "plan-2", root / "cache")
        other = _plan_wall(clones[1], root / "plan-3", root / "cache")
        unprepared = _plan_wall(clones[2], root / "plan-4", root / "cache-unprepared")
    rows = [
        ("a fresh clone after `make venv`'s ahead step (a new machine)", first),
        ("another fresh clone, same machine", other),
        ("a fresh clone, empty cache, no ahead step (the plan compiles)", unprepared),
    ]
    return [
        "",
        f"First plan on a fresh clone (`stackctl {' '.join(COLD_PLAN)}`) against the second in that clone "
        f"({second:.1f} s); the target is the first row's. `make venv` compiled the simulator ahead of time "
        f"(`python -m simulator.ahead`) in {ahead:.1f} s; numba's cache is keyed by the simulator's source, not its "
        "path:",
        "",
        "| first plan on | s | difference s | target difference s | ratio |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {what} | {wall:.1f} | {wall - second:.1f} | {COLD_TARGET_SECONDS:.0f} | "
            f"{(wall - second) / COLD_TARGET_SECONDS:.2f} |"
            for what, wall in rows
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--engine", choices=ENGINES, default="local")
    parser.add_argument("--no-cold", dest="cold", action="store_false", help="leave out the fresh-clone runs")
    args = parser.parse_args()
    loaded = load_stack("production")
    deployment = deployment_name(loaded, None)
    names, columns = read_trace_columns(args.trace)
    trace = display_path(args.trace)
    total = columns.sum(axis=1)
    models, rate = model_load(loaded, deployment, names, columns, trace)
    if len(models) < 2:
        raise SystemExit(f"{trace}: the load reaches one model of {deployment}, {models}: nothing to plan together")
    head = scenario(loaded, deployment, models[0], others=models[1:], mix=run_mix(rate))
    load_before = os.getloadavg()[0]
    # Compile the fluid model outside the timings (or load it from numba's cache): a machine pays that once.
    start = time.perf_counter()
    evaluate(head, rate[:60])
    compiled = time.perf_counter() - start
    start = time.perf_counter()

    def progress(done: int, total: int, best: Result | None) -> None:
        if done % 20 == 0 or done == total:
            print(f"{done}/{total} candidates, {time.perf_counter() - start:.0f} s", file=sys.stderr)

    plan = make_plan(
        stack_file("production"),
        loaded,
        head,
        rate,
        trace=trace,
        bounds=Bounds(loaded.config.serving.p95_latency_slo_ms, 0.1, loaded.config.serving.p99_latency_slo_ms),
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
    chosen = plan.chosen
    text = "\n".join(
        [
            f"# stackctl plan speed, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}; load average "
            f"(1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} at the end (the plan's own processes count)",
            f"command: .venv/bin/python bench/plan_speed.py --budget {args.budget} --seeds {args.seeds} "
            f"--trace {trace} --engine {args.engine}{'' if args.cold else ' --no-cold'}",
            f"load: production, {trace} ({len(total) / 3600:g} h, peak {total.max():,.0f} req/s to "
            f"{', '.join(names)}), run on {', '.join(models)} ({', '.join(f'{share:.1%}' for share in head.mix)} of "
            "the requests they run), with the plan's shapes",
            "",
            "| models | candidates | runs | wall s | s per run | wall s at 200 candidates | target s | ratio |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {deployment}/{'+'.join(models)} | {len(plan.results)} | {runs} | {wall:.1f} | {wall / runs:.3f} | "
            f"{projected:.0f} | {TARGET_SECONDS:.0f} | {projected / TARGET_SECONDS:.2f} |",
            "",
            f"chosen #{chosen.index}, {chosen.mean['gpu_hours']:.1f} GPU-hours against the current "
            f"{plan.current.mean['gpu_hours']:.1f}"
            if chosen
            else "chosen: none passed",
            f"compiling the fluid model beforehand (once per machine and source, then numba's cache): {compiled:.1f} s",
            *(cold_start() if args.cold else []),
        ]
    )
    print(text)
    default = args.trace.resolve() == DEFAULT_TRACE and args.engine == "local"
    if default and (args.budget, args.seeds) == (TARGET_BUDGET, 3):
        (ROOT / "bench" / "results" / "plan_speed.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
