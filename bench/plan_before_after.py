"""Each stack's GPU-hours before and after `stackctl plan` re-derived it, on its committed trace, at its own SLO.

    .venv/bin/python bench/plan_before_after.py [--before 1475762]

"Before" is the stack file at `--before` (the revision before the busy-ratio signal and the plan),
which scaled on the queue-depth signal, the default then; "after" is the working tree's. Both run
the stack's trace in stacks/traces/ through the fluid model `stackctl plan` evaluates with
(simulator/fluid.py), 3 seeds, means printed side by side with a static fleet sized for the
trace's peak. Writes bench/results/plan_before_after.md.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from platform_config.loader import load_stack_file  # noqa: E402
from simulator import fluid  # noqa: E402
from simulator.scenario import capacity_rps, read_trace_columns, scenario  # noqa: E402

STACKS = ("dev", "staging", "production")
SEEDS = (0, 1, 2)


def figures(path: Path, stack: str, rate: NDArray[np.float64]) -> dict[str, float]:
    s = scenario(load_stack_file(path, stack))
    runs = [fluid.evaluate(s, rate, seed) for seed in SEEDS]
    static = math.ceil(float(rate.max()) / capacity_rps(s)) * s.gpus_per_pod * len(rate) / 3600
    mean = {
        key: float(np.mean([float(r[key] or 0.0) for r in runs])) for key in ("gpu_hours", "p95_ms", "rejected_pct")
    }
    return {**mean, "static": static, "slo_ms": s.slo_seconds * 1000}


def before_file(revision: str, stack: str, folder: Path) -> Path:
    text = subprocess.run(
        ["git", "show", f"{revision}:stacks/Pulumi.{stack}.yaml"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    # The signal key came later; the stack scaled on queue depth, then the only signal.
    if not re.search(r"^    signal:", text, re.MULTILINE):
        text = text.replace("  triton-platform:scaling:\n", "  triton-platform:scaling:\n    signal: queue-depth\n", 1)
    path = folder / f"Pulumi.{stack}.yaml"
    path.write_text(text)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="1475762")
    args = parser.parse_args()
    lines = [
        f"# Stacks before and after `stackctl plan`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        f"command: .venv/bin/python bench/plan_before_after.py --before {args.before}",
        "",
        "| stack | trace | SLO p95 ms | GPU-hours before | after | after / before | static peak fleet | after / static "
        "| p95 ms before / after | rejected % before / after |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for stack in STACKS:
            trace = ROOT / "stacks" / "traces" / f"{stack}.csv"
            # One model runs (the stack's): a trace with a column per model runs their sum on it.
            rate = read_trace_columns(trace)[1].sum(axis=1)
            old = figures(before_file(args.before, stack, Path(tmp)), stack, rate)
            new = figures(ROOT / "stacks" / f"Pulumi.{stack}.yaml", stack, rate)
            lines.append(
                f"| {stack} | {trace.relative_to(ROOT)} ({len(rate) / 3600:g} h) | {new['slo_ms']:g} | "
                f"{old['gpu_hours']:.1f} | {new['gpu_hours']:.1f} | {new['gpu_hours'] / old['gpu_hours']:.2f} | "
                f"{new['static']:.0f} | {new['gpu_hours'] / new['static']:.2f} | "
                f"{old['p95_ms']:.1f} / {new['p95_ms']:.1f} | {old['rejected_pct']:.3f} / {new['rejected_pct']:.3f} |"
            )
            print(lines[-1], file=sys.stderr)
    text = "\n".join(lines) + "\n"
    print(text)
    (ROOT / "bench" / "results" / "plan_before_after.md").write_text(text)


if __name__ == "__main__":
    main()
