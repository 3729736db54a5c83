"""Which scaling signal means overload: each signal KEDA could read, on the same stack, traces and seeds.

    .venv/bin/python bench/scaling_signals.py [--stack production] [--hours 0.5] [--peak-replicas 3] [--seeds 2]

For every signal of simulator/signals.py, with its target derived from the stack's
config (scaling.signal's documentation says how), the stack's deployment runs a
step (a quarter of the peak, then the peak: a 4x step), a diurnal and a spike
trace in the simulator. The peak is `--peak-replicas` replicas' worth of the
profile's capacity. Printed side by side, as Markdown (bench/results/scaling_signals.md
keeps the latest): GPU-hours and their ratio to a static fleet sized for the
peak, the mean of ready capacity over demand (over-provisioning), p95, p99,
rejected %, reaction (seconds from demand first exceeding ready capacity to
capacity catching up) and the most replicas used.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from platform_config.loader import load_stack  # noqa: E402
from platform_config.scaling import SIGNAL_TARGETS  # noqa: E402
from simulator.engine import simulate  # noqa: E402
from simulator.scenario import Scenario, capacity_rps, scenario, shaped_trace  # noqa: E402
from simulator.signals import SIGNALS, SignalSpec, derived_target  # noqa: E402
from simulator.summaries import summary  # noqa: E402

SHAPES = ("step", "diurnal", "spike")


def with_signal(s: Scenario, name: str, configured: Mapping[str, float]) -> Scenario:
    target = derived_target(name, s.batcher, configured)  # type: ignore[arg-type]
    return dataclasses.replace(s, signal=SignalSpec(name, target))  # type: ignore[arg-type]


def row(s: Scenario, shape: str, rate: NDArray[np.float64], seeds: int) -> list[str]:
    runs = []
    for seed in range(seeds):
        timeline = simulate(s, rate, seed)
        result = summary(s, timeline)
        served = timeline.arrival_rps > 0
        over = float(np.mean(timeline.ready[served] * capacity_rps(s) / timeline.arrival_rps[served]))
        runs.append((result, over, int(timeline.desired.max())))
    per = capacity_rps(s)
    static = math.ceil(float(rate.max()) / per) * s.gpus_per_pod * len(rate) / 3600
    mean = {
        k: float(np.mean([r[k] or 0.0 for r, _, _ in runs])) for k in ("gpu_hours", "p95_ms", "p99_ms", "rejected_pct")
    }
    reactions = [r["reaction_seconds"] for r, _, _ in runs if r["reaction_seconds"] is not None]
    return [
        s.signal.name,
        f"{s.signal.target:g}",
        shape,
        f"{mean['gpu_hours']:.2f}",
        f"{mean['gpu_hours'] / static:.2f}",
        f"{np.mean([o for _, o, _ in runs]):.1f}x",
        f"{mean['p95_ms']:.1f}",
        f"{mean['p99_ms']:.1f}",
        f"{mean['rejected_pct']:.3f}",
        f"{np.mean(reactions):.0f}" if reactions else "—",
        str(max(m for _, _, m in runs)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="production")
    parser.add_argument("--hours", type=float, default=0.5)
    parser.add_argument("--peak-replicas", type=float, default=3.0)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    config = load_stack(args.stack).config
    base = scenario(load_stack(args.stack))
    peak = args.peak_replicas * capacity_rps(base)
    lines = [
        f"# Scaling signals compared, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        f"command: .venv/bin/python bench/scaling_signals.py --stack {args.stack} --hours {args.hours:g} "
        f"--peak-replicas {args.peak_replicas:g} --seeds {args.seeds}",
        f"stack {args.stack}, deployment {base.deployment}, model {base.model}; one replica's capacity "
        f"{capacity_rps(base):,.0f} req/s (from the profile); peak {peak:,.0f} req/s; SLO p95 "
        f"{base.slo_seconds * 1000:g} ms; replicas {base.min_replicas}-{base.max_replicas}",
        "",
        "| signal | target | trace | GPU-hours | vs static peak fleet | capacity / demand | p95 ms | p99 ms "
        "| rejected % | reaction s | max replicas |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in SIGNALS:
        s = with_signal(
            base, name, {signal: getattr(config.scaling, field) for signal, (field, _) in SIGNAL_TARGETS.items()}
        )
        for shape in SHAPES:
            rate = shaped_trace(shape, peak, args.hours)
            lines.append("| " + " | ".join(row(s, shape, rate, args.seeds)) + " |")
            print(lines[-1], file=sys.stderr)
    text = "\n".join(lines) + "\n"
    print(text)
    (ROOT / "bench" / "results" / "scaling_signals.md").write_text(text)


if __name__ == "__main__":
    main()
