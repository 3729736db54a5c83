"""What `stackctl simulate` writes: timeline.csv, summary.json, timeline.png; and deltas between two runs."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simulator.engine import Timeline, simulate, summary
from simulator.scenario import Scenario
from stackctl.out_folder import claim

COLUMNS = (
    "t",
    "arrival_rps",
    "desired_replicas",
    "ready_replicas",
    "pending",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "rejected",
)
TIMELINE_FILE = "timeline.csv"
SUMMARY_FILE = "summary.json"
PLOT_FILE = "timeline.png"
COMPARE_FILE = "compare.md"


def timeline_csv(timeline: Timeline) -> str:
    p50, p95, p99 = (timeline.percentiles(q) * 1000 for q in (50, 95, 99))
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(COLUMNS)
    for t in range(len(timeline.arrival_rps)):
        writer.writerow(
            [
                t,
                int(timeline.arrival_rps[t]),
                int(timeline.desired[t]),
                int(timeline.ready[t]),
                int(timeline.pending[t]),
                *(f"{v[t]:.2f}" if not np.isnan(v[t]) else "" for v in (p50, p95, p99)),
                int(timeline.rejected[t]),
            ]
        )
    return handle.getvalue()


def plot_png(s: Scenario, timeline: Timeline, summary: dict[str, Any]) -> bytes:
    import matplotlib  # noqa: PLC0415 - only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    minutes = np.arange(len(timeline.arrival_rps)) / 60
    smooth = np.convolve(timeline.arrival_rps, np.ones(60) / 60, mode="same")
    figure, (load, latency) = plt.subplots(2, 1, sharex=True, figsize=(10, 6), constrained_layout=True)
    load.plot(minutes, smooth, label="demand (req/s, 1 min mean)", color="tab:blue")
    load.plot(
        minutes, timeline.ready * summary["replica_capacity_rps"], label="ready capacity (req/s)", color="tab:green"
    )
    load.set_ylabel("req/s (log)")
    load.set_yscale("log")
    twin = load.twinx()
    twin.step(minutes, timeline.desired, where="post", color="tab:orange", alpha=0.6, label="desired replicas")
    twin.set_ylabel("replicas")
    load.legend(loc="upper left")
    twin.legend(loc="upper right")
    load.set_title(f"{s.stack} / {s.deployment} / {s.model}: demand vs ready capacity")
    latency.plot(minutes, timeline.percentiles(95) * 1000, color="tab:red", label="p95 (ms)")
    latency.axhline(s.slo_seconds * 1000, color="black", linestyle="--", label=f"SLO {s.slo_seconds * 1000:.0f} ms")
    latency.set_yscale("log")
    latency.set_ylabel("ms")
    latency.set_xlabel("minutes")
    latency.legend(loc="upper left")
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100)
    plt.close(figure)
    return image.getvalue()


def write_outputs(s: Scenario, timeline: Timeline, summary: dict[str, Any], out: Path, plot: bool = True) -> list[Path]:
    """timeline.csv, summary.json and (with `plot`) timeline.png; returns the paths written.

    Only into a new or empty folder, or one an earlier simulate wrote, whose files it replaces
    (stackctl/out_folder.py)."""
    files = {
        TIMELINE_FILE: timeline_csv(timeline).encode(),
        SUMMARY_FILE: (json.dumps(summary, indent=2) + "\n").encode(),
    }
    if plot:
        files[PLOT_FILE] = plot_png(s, timeline, summary)
    return claim(out, "simulate").replace(files)


def write_compare(out: Path, table: str) -> Path:
    """compare.md beside the outputs write_outputs has just written to `out`."""
    [written] = claim(out, "simulate").add({COMPARE_FILE: table.encode()})
    return written


DELTA_KEYS = (
    ("p95_ms", "p95 ms"),
    ("p99_ms", "p99 ms"),
    ("slo_violation_seconds", "SLO-violation s"),
    ("rejected_pct", "rejected %"),
    ("gpu_hours", "GPU-hours"),
    ("reaction_seconds", "reaction s"),
)


def deltas(base: dict[str, Any], head: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(label, base, head, change) per key; change in % where the base is non-zero."""
    rows = []
    for key, label in DELTA_KEYS:
        old, new = base.get(key), head.get(key)
        if old is None or new is None:
            rows.append((label, str(old), str(new), "—"))
            continue
        change = f"{(new - old) / old * 100:+.0f}%" if old else ("0" if new == old else "new")
        rows.append((label, f"{old:.1f}", f"{new:.1f}", change))
    return rows


def deltas_markdown(rows: list[tuple[str, str, str, str]]) -> str:
    lines = ["| metric | base | head | change |", "|---|---:|---:|---:|"]
    lines += [f"| {label} | {old} | {new} | {change} |" for label, old, new, change in rows]
    return "\n".join(lines) + "\n"


def compare(
    base: Scenario,
    head: Scenario,
    rate: NDArray[np.float64],
    seed: int,
    outages: Sequence[tuple[float, float]] = (),
) -> str:
    """Both scenarios under the same trace, seed and metric outages; the deltas as a Markdown table."""
    results = [summary(s, simulate(s, rate, seed, outages)) for s in (base, head)]
    return deltas_markdown(deltas(*results))
