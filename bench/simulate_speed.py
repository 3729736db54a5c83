"""How fast `stackctl simulate` runs: a 24 h diurnal trace averaging 1,000 req/s, production's config.

    .venv/bin/python bench/simulate_speed.py [--hours 24] [--mean-rps 1000]

Prints the wall time, simulated requests per second of wall time, and the ratio to
the 60 s target, as Markdown (bench/results/simulate_speed.md keeps the latest).
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
from simulator.scenario import scenario, shaped_trace  # noqa: E402
from simulator.summaries import summary  # noqa: E402

TARGET_SECONDS = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--mean-rps", type=float, default=1000.0)
    args = parser.parse_args()
    s = scenario(load_stack("production"))
    # The diurnal shape's mean is 0.55 x its peak.
    rate = shaped_trace("diurnal", args.mean_rps / 0.55, args.hours)
    start = time.perf_counter()
    timeline = simulate(s, rate, seed=1)
    wall = time.perf_counter() - start
    result = summary(s, timeline)
    target = TARGET_SECONDS * args.hours / 24
    requests = int(result["arrived"] or 0)
    lines = [
        f"# stackctl simulate speed, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        f"command: .venv/bin/python bench/simulate_speed.py --hours {args.hours:g} --mean-rps {args.mean_rps:g}",
        "",
        "| trace | requests | wall s | simulated req per wall s | target s | wall / target |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| production, diurnal {args.hours:g} h, mean {args.mean_rps:g} req/s | {requests:,} | {wall:.1f} | "
        f"{requests / wall:,.0f} | {target:.0f} | {wall / target:.2f} |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.hours == 24 and args.mean_rps == 1000:
        (ROOT / "bench" / "results" / "simulate_speed.md").write_text(text)


if __name__ == "__main__":
    main()
