"""What `stackctl simulate` writes: timeline.csv, summary.json, timeline.png; and deltas between two runs."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from offline.out_folder import claim
from simulator.engine import simulate
from simulator.oracle import Oracle
from simulator.scenario import Scenario
from simulator.summaries import summary
from simulator.timeline import Timeline

if TYPE_CHECKING:
    from matplotlib.axes import Axes

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
    "signal",
    "fallback",
)
FIGURES = (
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "slo_violation_seconds",
    "rejected_pct",
    "gpu_hours",
    "oracle_gpu_hours",
    "oracle_ratio",
    "oracle_hindsight_gpu_hours",
    "oracle_hindsight_ratio",
    "reaction_seconds",
    "reaction_floor_seconds",
)
"""The summary's figures `stackctl simulate` prints, and docs/simulation.md's example quotes."""
WAKE_FIGURES = (
    "wakes",
    "waited",
    "waited_p99_s",
    "waited_max_s",
    "wake_failed",
    "gpu_hours_at_min_1",
    "gpu_hours_saved",
)
"""What `stackctl simulate` prints besides FIGURES for a deployment at `replicas.min` 0 (summaries.wake_summary): its
wakes, the requests the interceptor held and forwarded with their wait's p99 and max (seconds), those failed at
its timeout, and the GPU-hours of the same run at `replicas.min` 1 (the fluid model, both) and what zero saves."""
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
                "" if np.isnan(timeline.signal[t]) else f"{timeline.signal[t]:.6g}",
                int(timeline.falling_back[t]),
            ]
        )
    return handle.getvalue()


def plot_title(s: Scenario, peak_rps: float, seed: int) -> str:
    """What ran: stack, deployment/model, the latency profile's file, the trace's peak and the seed."""
    return (
        f"{s.stack}: {s.deployment}/{'+'.join(s.models)}, profile {Path(s.profile).name}"
        f"{''.join(f' + {Path(m.profile).name}' for m in s.others)}, "
        f"peak demand {peak_rps:,.0f} req/s, seed {seed}"
    )


def runs(mask: NDArray[np.bool_]) -> list[tuple[int, int]]:
    """(first, past-last) second of each run of True in `mask`."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def shade(axes: Axes, mask: NDArray[np.bool_], color: str, label: str | None) -> None:
    """Shade the seconds of `mask` over the panel's height; one collection, as a long run may hold thousands."""
    from matplotlib.collections import PolyCollection  # noqa: PLC0415 - only the plot needs it

    boxes = [[(a / 60, 0), (a / 60, 1), (b / 60, 1), (b / 60, 0)] for a, b in runs(mask)]
    if boxes:
        shading = PolyCollection(
            boxes, transform=axes.get_xaxis_transform(), facecolor=color, edgecolor="none", alpha=0.2, label=label
        )
        axes.add_collection(shading, autolim=False)


def plot_png(s: Scenario, timeline: Timeline, bound: Oracle, summary: dict[str, Any], title: str) -> bytes:
    """Demand against ready capacity, replicas beside both oracles', the scaling signal against its target, p95
    against the SLO; seconds with rejections and with KEDA's fallback shaded on each panel."""
    import matplotlib  # noqa: PLC0415 - only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    minutes = np.arange(len(timeline.arrival_rps)) / 60
    smooth = np.convolve(timeline.arrival_rps, np.ones(60) / 60, mode="same")
    per_replica = summary["replica_capacity_rps"]
    figure, (load, replicas, signal, latency) = plt.subplots(
        4, 1, sharex=True, figsize=(11, 11), constrained_layout=True
    )
    figure.suptitle(title)
    for axes in (load, replicas, signal, latency):
        labelled = axes is load  # the shading's legend once, on the top panel
        shade(axes, timeline.rejected > 0, "tab:red", "seconds with rejections" if labelled else None)
        shade(axes, timeline.falling_back, "tab:purple", "KEDA answering with its fallback" if labelled else None)
    load.plot(minutes, smooth, label="demand (req/s, 1 min mean)", color="tab:blue")
    # The profile's tau(b) at full batches, not a measurement: say so where it is drawn.
    load.plot(
        minutes,
        timeline.ready * per_replica,
        label=f"ready capacity, estimated from the profile ({per_replica:,.0f} req/s per replica)",
        color="tab:green",
    )
    load.set_ylabel("req/s (log)")
    load.set_yscale("log")
    load.set_title("demand vs ready capacity")
    load.legend(loc="upper left", fontsize="small")
    replicas.step(minutes, timeline.desired, where="post", color="tab:orange", label="desired replicas")
    replicas.step(minutes, timeline.ready, where="post", color="tab:green", label="ready replicas")
    replicas.step(
        minutes,
        bound.replicas,
        where="post",
        color="black",
        linestyle=":",
        label=f"oracle: each second's fewest at the SLO ({summary['oracle_gpu_hours']:.2f} GPU-hours, "
        f"the run {summary['oracle_ratio']:.2f}x)",
    )
    replicas.step(
        minutes,
        bound.hindsight,
        where="post",
        color="grey",
        linestyle="--",
        label=f"hindsight oracle: the same, each pod paid from a start ahead "
        f"({summary['oracle_hindsight_gpu_hours']:.2f} GPU-hours, the run {summary['oracle_hindsight_ratio']:.2f}x)",
    )
    replicas.set_ylabel("replicas")
    replicas.yaxis.set_major_locator(MaxNLocator(integer=True))
    replicas.legend(loc="upper left", fontsize="small")
    per = " per replica" if s.signal.target_type == "AverageValue" else ""
    signal.step(minutes, timeline.signal, where="post", color="tab:brown", label=f"{s.signal.name}{per}, as read")
    signal.axhline(s.signal.target, color="black", linestyle="--", label=f"target {s.signal.target:g}")
    signal.set_ylabel(f"{s.signal.name}{per}")
    signal.set_title("scaling signal at each HPA sync (gaps: no read)")
    signal.legend(loc="upper left", fontsize="small")
    latency.plot(minutes, timeline.percentiles(95) * 1000, color="tab:red", label="p95 (ms)")
    latency.axhline(s.slo_seconds * 1000, color="black", linestyle="--", label=f"SLO {s.slo_seconds * 1000:.0f} ms")
    latency.set_yscale("log")
    latency.set_ylabel("ms")
    latency.set_xlabel("minutes")
    latency.legend(loc="upper left", fontsize="small")
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100)
    plt.close(figure)
    return image.getvalue()


def write_outputs(
    s: Scenario, timeline: Timeline, bound: Oracle, summary: dict[str, Any], out: Path, *, plot_title: str | None
) -> list[Path]:
    """timeline.csv, summary.json and, unless `plot_title` is None, timeline.png under that title; returns the
    paths written.

    Only into a new or empty folder, or one an earlier simulate wrote, whose files it replaces
    (offline/out_folder.py)."""
    files = {
        TIMELINE_FILE: timeline_csv(timeline).encode(),
        SUMMARY_FILE: (json.dumps(summary, indent=2) + "\n").encode(),
    }
    if plot_title is not None:
        files[PLOT_FILE] = plot_png(s, timeline, bound, summary, plot_title)
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
    """(label, base, head, change) per key; change in % where the base is non-zero.

    A None value (reaction_seconds when demand never exceeded ready capacity) reads "none"."""
    rows = []
    for key, label in DELTA_KEYS:
        old, new = base.get(key), head.get(key)
        if old is None or new is None:
            rows.append((label, "none" if old is None else f"{old:.1f}", "none" if new is None else f"{new:.1f}", "—"))
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
