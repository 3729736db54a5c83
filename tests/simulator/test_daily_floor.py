"""A daily floor: KEDA's cron windows as the simulator holds them, one learned from a trace, its stack checks, and
the planner's edits (simulator/daily_floor.py, platform_config/scaling_checks.py `daily_floor`, planner/settings.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from planner.settings import current_settings, edits, locations, with_values
from platform_config.loader import StackConfig, load_stack
from simulator.daily_floor import DAY, MAX_LEARNED_WINDOWS, SLOT_SECONDS, FloorWindow, _windows, floor_at, learn_floor
from simulator.fluid import evaluate
from simulator.fluid_reference import evaluate_reference
from simulator.scenario import scenario
from tests.conftest import SCALING, SERVING, errors_of, setting, validate

HOUR = 3600
FLOOR = {"timeZone": "Europe/Berlin", "windows": [{"start": "06:00", "end": "22:00", "replicas": 3}]}


def test_a_window_holds_from_its_start_to_its_end_every_day() -> None:
    # KEDA's cron scaler: active while the next end comes before the next start, so [start, end).
    day = FloorWindow(6 * HOUR, 9 * HOUR, 3)
    night = FloorWindow(22 * HOUR, 1 * HOUR, 2)
    windows = (day, night)
    assert [floor_at(windows, t) for t in (6 * HOUR - 1, 6 * HOUR, 9 * HOUR - 1, 9 * HOUR)] == [0, 3, 3, 0]
    assert [floor_at(windows, t) for t in (22 * HOUR - 1, 23 * HOUR, 0, HOUR - 1, HOUR)] == [0, 2, 2, 2, 0]
    assert floor_at(windows, DAY + 7 * HOUR) == 3
    assert floor_at((day, FloorWindow(8 * HOUR, 10 * HOUR, 5)), 8 * HOUR) == 5
    assert night.clock == ("22:00", "01:00")


def test_a_learned_floor_starts_pods_one_start_ahead_of_the_rise() -> None:
    rate = np.full(DAY, 100.0)
    rate[8 * HOUR : 20 * HOUR] = 1000.0
    learned = learn_floor(
        rate, pod_capacity=100.0, target=1.0, lead_seconds=600, share=1.0, min_replicas=1, max_replicas=20
    )
    # The half hour from 07:30 already looks 30 minutes ahead, at 08:00's 10 pods; 19:30's sees 20:00's 1.
    assert learned == (FloorWindow(int(7.5 * HOUR), int(19.5 * HOUR), 10),)
    half = learn_floor(
        rate, pod_capacity=100.0, target=1.0, lead_seconds=600, share=0.5, min_replicas=1, max_replicas=20
    )
    assert half == (FloorWindow(int(7.5 * HOUR), int(19.5 * HOUR), 5),)
    # A node to add as well: a longer lead, a slot earlier.
    later = learn_floor(
        rate, pod_capacity=100.0, target=1.0, lead_seconds=2400, share=1.0, min_replicas=1, max_replicas=8
    )
    assert later == (FloorWindow(7 * HOUR, 19 * HOUR, 8),)
    # Less than a day has no daily shape.
    assert (
        learn_floor(
            rate[:-1], pod_capacity=100.0, target=1.0, lead_seconds=0, share=1.0, min_replicas=1, max_replicas=20
        )
        == ()
    )


def test_the_quietest_day_sets_the_floor_and_a_level_held_all_day_is_no_window() -> None:
    busy, quiet = np.full(DAY, 900.0), np.full(DAY, 100.0)
    busy[: 2 * HOUR] = quiet[: 2 * HOUR] = 0.0
    two_days = np.concatenate([busy, quiet])
    learned = learn_floor(
        two_days, pod_capacity=100.0, target=1.0, lead_seconds=0, share=1.0, min_replicas=0, max_replicas=9
    )
    assert learned == (FloorWindow(2 * HOUR, 0, 1),)
    flat = learn_floor(
        np.full(DAY, 500.0), pod_capacity=100.0, target=1.0, lead_seconds=0, share=1.0, min_replicas=1, max_replicas=9
    )
    assert flat == ()


@given(st.lists(st.integers(0, 12), min_size=DAY // SLOT_SECONDS, max_size=DAY // SLOT_SECONDS), st.integers(0, 4))
def test_learned_windows_are_few_valid_and_never_above_what_was_learned(levels: list[int], low: int) -> None:
    windows = _windows(np.array(levels, np.int64), low)
    assert len(windows) <= MAX_LEARNED_WINDOWS
    for window in windows:
        assert window.replicas > low
        assert window.start != window.end
        assert window.start % SLOT_SECONDS == 0
        assert window.end % SLOT_SECONDS == 0
    for slot, level in enumerate(levels):
        assert floor_at(windows, slot * SLOT_SECONDS) <= max(level, low)


def test_the_compiled_control_plane_holds_the_floor_as_the_reference_does() -> None:
    base = scenario(load_stack("production"), "general", "classifier")
    rate = np.full(2 * HOUR, 2000.0)
    rate[HOUR:] = 40000.0
    floor = (FloorWindow(HOUR // 2, int(1.5 * HOUR), 5),)
    for memory in (base.gpu_memory_ratio, None, 0.3):
        held = replace(base, floor=floor, gpu_memory_ratio=memory)
        assert evaluate(held, rate, 3) == evaluate_reference(held, rate, 3), memory
    without = evaluate(base, rate, 3)
    with_floor = evaluate(replace(base, floor=floor), rate, 3)
    # Pods up before the step: fewer rejected, more GPU-hours.
    assert float(with_floor["rejected_pct"] or 0) < float(without["rejected_pct"] or 0)
    assert float(with_floor["gpu_hours"] or 0) > float(without["gpu_hours"] or 0)


def test_a_stack_floor_reaches_the_scenario() -> None:
    loaded = load_stack("production")
    assert scenario(loaded, "general", "classifier").floor == ()
    parsed = validate("production", setting(SCALING, "dailyFloor", "general", value=FLOOR))
    floored = scenario(StackConfig(loaded.stack, loaded.source, parsed), "general", "classifier")
    assert floored.floor == (FloorWindow(6 * HOUR, 22 * HOUR, 3),)


def test_a_floor_for_no_deployment_or_at_zero_is_refused() -> None:
    assert errors_of("production", setting(SCALING, "dailyFloor", "generl", value=FLOOR)) == [
        "triton-platform:scaling.dailyFloor.generl: names no deployment; triton-platform:serving.deployments has "
        "general, ranker"
    ]
    assert errors_of("dev", setting(SCALING, "dailyFloor", "general", value=FLOOR)) == [
        "triton-platform:scaling.dailyFloor.general: is set but triton-platform:serving.deployments.general.replicas"
        ".min is 0: a floor for a deployment that idles at zero is not supported (the simulator and planner model "
        "it from one replica up); set replicas.min 1 or remove the floor"
    ]
    disabled = errors_of(
        "staging",
        setting(SCALING, "enabled", value=False),
        setting(SERVING, "deployments", "general", "replicas", value={"min": 2, "max": 2}),
        setting(SCALING, "dailyFloor", "general", value=FLOOR),
    )
    assert (
        "triton-platform:scaling.dailyFloor.general: is set but triton-platform:scaling.enabled is false: KEDA "
        "holds the floor" in disabled
    )
    [zone] = errors_of(
        "production",
        setting(SCALING, "dailyFloor", "general", "timeZone", value="Europe/Berln"),
        setting(SCALING, "dailyFloor", "general", "windows", value=FLOOR["windows"]),
    )
    assert zone.startswith("triton-platform:scaling.dailyFloor.general.timeZone: ")
    assert "'Europe/Berln' is not an IANA time zone name such as UTC or Europe/Berlin" in zone


def test_the_planner_writes_a_floor_in_the_stacks_zone_and_removes_it() -> None:
    loaded = load_stack("production")
    head = scenario(loaded, "general", "classifier")
    current = current_settings(loaded, head)
    assert (current.daily_floor, current.floor_zone) == ((), "UTC")
    places = locations("general", "classifier", head.signal.name)
    chosen = with_values(current, {"daily_floor": ((7 * HOUR, 20 * HOUR, 5), (22 * HOUR, HOUR, 3), (0, HOUR, 2))})
    # A window at or below the replica floor (2) holds nothing: dropped; one above the ceiling is clamped.
    assert chosen.daily_floor == ((7 * HOUR, 20 * HOUR, 5), (22 * HOUR, HOUR, 3))
    assert with_values(current, {"daily_floor": ((0, HOUR, 99),)}).daily_floor == ((0, HOUR, current.max_replicas),)
    written = edits(current, chosen, places)
    assert written == {
        ("triton-platform:scaling", "dailyFloor", "general"): {
            "timeZone": "UTC",
            "windows": [
                {"start": "07:00", "end": "20:00", "replicas": 5},
                {"start": "22:00", "end": "01:00", "replicas": 3},
            ],
        }
    }
    assert edits(chosen, current, places) == {("triton-platform:scaling", "dailyFloor", "general"): None}
