"""The HPA's decision (simulator.hpa.Hpa.desired) compiled with numba over plain arrays, for the fluid model's
control plane (simulator.fluid `control`): `hpa_inputs` turns an HPA's metrics and behavior into arrays,
`new_hpa_state` holds its recommendations and scale events, `hpa_desired` decides one sync. Held to Hpa sync after
sync on random behaviors and the legacy path (tests/simulator/test_fluid.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from simulator.compiled import Floats, Ints, compiled
from simulator.hpa import LEGACY_DOWNSCALE_WINDOW, TOLERANCE, Behavior, Metric, Rules

TARGET_CODES = {"AverageValue": 0, "Value": 1}
SELECT_CODES = {"Max": 0, "Min": 1, "Disabled": 2}
POLICY_CODES = {"Pods": 0, "Percent": 1}


HpaInputs = tuple[Ints, Floats, bool, Floats, Ints, Floats, Floats]
HpaState = tuple[Floats, Ints, Floats, Ints, Ints]


@compiled
def new_hpa_state(syncs: int) -> HpaState:
    """Room for `syncs` syncs' recommendations and scale events, none kept yet."""
    return np.zeros(syncs), np.zeros(syncs, np.int64), np.zeros(syncs), np.zeros(syncs, np.int64), np.zeros(4, np.int64)


def hpa_inputs(metrics: Sequence[Metric], behavior: Behavior | None) -> HpaInputs:
    """What `hpa_desired` reads of an HPA: its metrics' target types and targets; whether it takes the legacy path (no
    behavior); per direction, up then down, the stabilization window and select policy; each direction's policies,
    (type, value, period) rows."""
    rules = (behavior or Behavior()).scale_up, (behavior or Behavior()).scale_down

    def policies(direction: Rules) -> NDArray[np.float64]:
        table = [(POLICY_CODES[p.type], p.value, p.period_seconds) for p in direction.policies]
        return np.array(table, np.float64).reshape(-1, 3)

    return (
        np.array([TARGET_CODES[m.target_type] for m in metrics], np.int64),
        np.array([m.target for m in metrics], np.float64),
        behavior is None,
        np.array([r.stabilization_window_seconds for r in rules], np.float64),
        np.array([SELECT_CODES[r.select_policy] for r in rules], np.int64),
        policies(rules[0]),
        policies(rules[1]),
    )


@compiled
def _proposal(target_type: int, target: float, value: float, current: int, ready: int) -> int:
    """hpa.proposal."""
    if target_type == 0:
        ratio = value / (target * current) if current else np.inf
        return current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(value / target)
    ratio = value / target
    return current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(ratio * ready)


@compiled
def _changed_within(  # noqa: PLR0917 - compiled: plain positional arrays and numbers
    events_t: NDArray[np.float64], events_d: NDArray[np.int64], lo: int, hi: int, now: float, period: float, sign: int
) -> int:
    """Hpa._changed_within over the events kept, `lo` to `hi`."""
    total = 0
    for i in range(lo, hi):
        if events_t[i] > now - period and events_d[i] * sign > 0:
            total += abs(events_d[i])
    return total


@compiled
def _limit(policies: NDArray[np.float64], select: int, current: int, changed: NDArray[np.int64], up: bool) -> int:
    """Hpa._up_limit (`up`) or Hpa._down_limit, with each policy's `changed` replicas within its period."""
    if select == 2:
        return current
    result = 0
    for k in range(len(policies)):
        value = policies[k, 1]
        if up:
            start = current - changed[k]
            limit = start + int(value) if policies[k, 0] == 0 else math.ceil(start * (1 + value / 100))
        else:
            start = current + changed[k]
            limit = start - int(value) if policies[k, 0] == 0 else math.floor(start * (1 - value / 100))
        # Max allows the largest change: upwards the highest count, downwards the lowest.
        if k == 0 or (limit > result) == (up == (select == 0)):
            result = limit
    return result


@compiled
def hpa_desired(  # noqa: PLR0912, PLR0917 - compiled: plain positional arrays and numbers
    now: float,
    current: int,
    ready: int,
    values: NDArray[np.float64],
    min_replicas: int,
    max_replicas: int,
    hpa: HpaInputs,
    state: HpaState,
) -> int:
    """Hpa.desired with every value read; `hpa`: hpa_inputs; `state`: the recommendations (times, counts) and scale
    events (times, changes) kept, kept[0]:kept[1] and kept[2]:kept[3] of their arrays, oldest first, then `kept`."""
    target_types, targets, legacy, windows, selects, up_policies, down_policies = hpa
    recommendations_t, recommendations_r, events_t, events_d, kept = state
    raw = _proposal(target_types[0], targets[0], values[0], current, ready)
    for m in range(1, len(values)):
        raw = max(raw, _proposal(target_types[m], targets[m], values[m], current, ready))
    recommendations_t[kept[1]], recommendations_r[kept[1]] = now, raw
    kept[1] += 1
    window = LEGACY_DOWNSCALE_WINDOW if legacy else max(windows[0], windows[1])
    # Hpa._forget: 1800 s, the longest policy period and stabilization window the API allows.
    horizon = now - max(window, 1800.0)
    while kept[0] < kept[1] and recommendations_t[kept[0]] <= horizon:
        kept[0] += 1
    while kept[2] < kept[3] and events_t[kept[2]] <= horizon:
        kept[2] += 1
    # The recommendations within the windows, newest first: the older ones kept count for neither.
    if legacy:
        stabilized = raw
        for i in range(kept[1] - 1, kept[0] - 1, -1):
            if not recommendations_t[i] > now - LEGACY_DOWNSCALE_WINDOW:
                break
            stabilized = max(stabilized, recommendations_r[i])
        result = max(min_replicas, min(stabilized, max(2 * current, 4), max_replicas))
    else:
        up, down = raw, raw
        for i in range(kept[1] - 1, kept[0] - 1, -1):
            t, r = recommendations_t[i], recommendations_r[i]
            if not (t > now - window or t == now):
                break
            if t > now - windows[0] or t == now:
                up = min(up, r)
            if t > now - windows[1] or t == now:
                down = max(down, r)
        stabilized = min(max(current, up), down)
        if stabilized != current:
            rising = stabilized > current
            policies = up_policies if rising else down_policies
            changed = np.empty(len(policies), np.int64)
            for k in range(len(policies)):
                changed[k] = _changed_within(
                    events_t, events_d, kept[2], kept[3], now, policies[k, 2], 1 if rising else -1
                )
            limit = _limit(policies, selects[0 if rising else 1], current, changed, rising)
            if rising:
                result = max(min_replicas, min(stabilized, max(current, limit), max_replicas))
            else:
                result = min(max_replicas, max(stabilized, min(current, limit), min_replicas))
        else:
            result = max(min_replicas, min(current, max_replicas))
    if result != current:
        events_t[kept[3]], events_d[kept[3]] = now, result - current
        kept[3] += 1
    return result
