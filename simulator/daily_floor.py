"""A daily floor of replicas, as KEDA's cron trigger holds it, and one learned from a trace's daily shape.

KEDA's cron scaler (kedacore/keda v2.20 pkg/scalers/cron_scaler.go, GetMetricsAndActivity) reports a window's
`desiredReplicas` while the next end comes before the next start, so from its start (inclusive) to its end
(exclusive), and 0 outside, against an AverageValue target of 1: the HPA proposes that many replicas and takes the
largest of every trigger's proposal. The simulator models every window as one such metric (the largest active
window's replicas): the same largest proposal. Traces carry no clock: their second 0 is midnight in the floor's
time zone, and the day repeats every 86,400 s (daylight-saving days are not modelled).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from platform_config.scaling import DailyFloor

FLOOR_TARGET = 1.0
"""The cron trigger's per-replica target: its value is the replica count (GetMetricSpecForScaling, specReplicas 1)."""
DAY = 86400
SLOT_SECONDS = 1800
"""A learned floor's resolution: a window starts and ends on the half hour, and is one cron trigger."""
MAX_LEARNED_WINDOWS = 6
"""At most this many windows learned: few triggers to read in a ScaledObject and a plan."""


@dataclass(frozen=True)
class FloorWindow:
    start: int
    """Seconds after midnight the window opens (inclusive)."""
    end: int
    """Seconds after midnight it closes (exclusive); at or before `start`, it runs past midnight."""
    replicas: int

    def holds(self, second_of_day: int) -> bool:
        if self.start < self.end:
            return self.start <= second_of_day < self.end
        return second_of_day >= self.start or second_of_day < self.end

    @property
    def clock(self) -> tuple[str, str]:
        """The window's start and end as the stack writes them, HH:MM."""
        return _clock(self.start), _clock(self.end)


def _clock(second: int) -> str:
    return f"{second // 3600:02d}:{second % 3600 // 60:02d}"


def floor_at(windows: Sequence[FloorWindow], now: float) -> int:
    """The floor at trace second `now`: the largest active window's replicas, 0 outside every window."""
    second = int(now) % DAY
    return max((w.replicas for w in windows if w.holds(second)), default=0)


def floor_windows(floor: DailyFloor | None) -> tuple[FloorWindow, ...]:
    """A stack's floor as windows in seconds of the day."""
    if floor is None:
        return ()

    def seconds(clock: str) -> int:
        hour, minute = clock.split(":")
        return int(hour) * 3600 + int(minute) * 60

    return tuple(FloorWindow(seconds(w.start), seconds(w.end), w.replicas) for w in floor.windows)


def floor_array(windows: Sequence[FloorWindow]) -> NDArray[np.float64]:
    """Windows as (start, end, replicas) rows, for the compiled control plane."""
    return np.array([(w.start, w.end, w.replicas) for w in windows], np.float64).reshape(-1, 3)


def learn_floor(
    rate: NDArray[np.float64],
    *,
    pod_capacity: float,
    target: float,
    lead_seconds: float,
    share: float,
    min_replicas: int,
    max_replicas: int,
) -> tuple[FloorWindow, ...]:
    """A floor from `rate`'s daily shape (req/s per second, summed over the deployment's models, its second 0 at
    midnight): per half hour of the day, `share` of the fewest replicas the load asks for (at `target` of
    `pod_capacity` each) in the half hour that starts `lead_seconds` later (a pod's start, and a node's where the
    pool adds one), over every day of the trace, so a pod is up before the rise that needs it and no window holds
    more than the quietest of those days asked for; a trace shorter than a day learns none. Runs of half hours at
    one level above `min_replicas` become windows (`_windows`)."""
    days = len(rate) // DAY
    if days == 0:
        return ()  # a daily shape needs a whole day at least
    slots = DAY // SLOT_SECONDS
    lead_slots = math.ceil(lead_seconds / SLOT_SECONDS)
    needed = np.zeros(slots, np.int64)
    for slot in range(slots):
        fewest = max_replicas
        for day in range(days):
            ahead = (slot + lead_slots) % slots
            begin = day * DAY + ahead * SLOT_SECONDS
            window = rate[begin : begin + SLOT_SECONDS]
            fewest = min(fewest, math.ceil(float(window.min()) / (pod_capacity * target)))
        needed[slot] = min(max(math.floor(fewest * share), 0), max_replicas)
    return _windows(needed, min_replicas)


def _windows(levels: NDArray[np.int64], min_replicas: int) -> tuple[FloorWindow, ...]:
    """Runs of equal level above `min_replicas` as windows, one across midnight where the day ends and starts at one
    level; while more than MAX_LEARNED_WINDOWS, the shortest run is lowered to the higher of its lower neighbours'
    levels (the floor only ever drops, never holds more than was learned) and merged with it."""
    runs: list[list[int]] = []  # [first slot, slots, level]
    for slot, level in enumerate(levels.tolist()):
        kept = max(level, min_replicas)
        if runs and runs[-1][2] == kept:
            runs[-1][1] += 1
        else:
            runs.append([slot, 1, kept])
    while sum(1 for r in runs if r[2] > min_replicas) > MAX_LEARNED_WINDOWS:
        held = [i for i, r in enumerate(runs) if r[2] > min_replicas]
        shortest = min(held, key=lambda i: (runs[i][1], runs[i][2]))
        neighbours = [runs[j][2] for j in (shortest - 1, shortest + 1) if 0 <= j < len(runs)]
        runs[shortest][2] = max([n for n in neighbours if n < runs[shortest][2]], default=min_replicas)
        merged: list[list[int]] = []
        for run in runs:
            if merged and merged[-1][2] == run[2]:
                merged[-1][1] += run[1]
            else:
                merged.append(run)
        runs = merged
    if len(runs) == 1:
        return ()  # one level all day: that is `replicas.min`, not a window (a cron window cannot span a whole day)
    if runs[0][2] == runs[-1][2]:
        first, count, level = runs.pop()
        runs[0] = [first, count + runs[0][1], level]
    return tuple(
        FloorWindow(first * SLOT_SECONDS, (first + count) * SLOT_SECONDS % DAY, level)
        for first, count, level in runs
        if level > min_replicas
    )
