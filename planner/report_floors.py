"""plan.md's sections on the replica floor: the daily floors learned from the trace and what the chosen one costs
(Daily floor), and, for a deployment with a wake budget, the choice between a floor of 0 and 1 or more and what
zero gives on the trace (Scale to zero)."""

from __future__ import annotations

from planner.plan import Plan
from planner.report_format import cost_text, figure_text, windows_text, zero_figures
from planner.search import Result
from simulator.daily_floor import DAY, FloorWindow


def _number(value: float | None, form: str) -> str:
    return "—" if value is None else format(value, form)


def floor_section(plan: Plan) -> list[str]:
    """The daily floors learned from the trace and tried: the chosen one's windows, time zone and what it costs
    against the best passing candidate without one."""
    learned = [floor for floor in plan.space.options["daily_floor"] if floor]
    if not learned:
        return []
    chosen = plan.chosen
    lines = [
        "## Daily floor",
        "",
        "Learned from the trace's daily shape (its second 0 read as midnight in the floor's time zone; "
        "simulator/daily_floor.py): per half hour, a share of the fewest replicas the quietest day asks for one "
        "pod start (and a node's provisioning) later, tried as KEDA cron windows beside no floor: "
        + ", ".join(f"`{windows_text(floor)}`" for floor in learned)
        + ".",
        "",
    ]
    if chosen is None or not chosen.settings.daily_floor:
        return [*lines, "The chosen settings keep no daily floor: on this trace none paid for its GPU-hours.", ""]
    zone = chosen.settings.floor_zone
    held = sum(
        ((w.end - w.start) % DAY or DAY) / 3600 * (w.replicas - chosen.settings.min_replicas)
        for w in (FloorWindow(*window) for window in chosen.settings.daily_floor)
    )
    without = [r for r in plan.ranked if not r.settings.daily_floor]
    versus = (
        f" The best passing candidate without a floor, #{without[0].index}, costs {cost_text(without[0])} the "
        f"oracle at worst and {figure_text(without[0], 'gpu_hours')} GPU-hours on the trace, against the chosen's "
        f"{cost_text(chosen)} and {figure_text(chosen, 'gpu_hours')}."
        if without
        else " No candidate without a floor passed."
    )
    return [
        *lines,
        f"The chosen settings hold `{windows_text(chosen.settings.daily_floor)}` (time zone {zone}): at most "
        f"{held:.1f} pod-hours a day above the replica floor, where the load would not already ask for them.{versus}",
        "",
    ]


def zero_section(plan: Plan) -> list[str]:
    """For a deployment with a wake budget: the choice between a floor of 0 (scale to zero) and 1 or more, and what
    zero gives on the trace (the chosen candidate's, or the best at 0 when a floor of 1 or more won)."""
    budget = plan.bounds.wake_budget_s
    if budget is None:
        return []
    chosen = plan.chosen
    at_zero = [r for r in plan.ranked if r.settings.min_replicas == 0]
    tried = [r for r in plan.results if r.settings.min_replicas == 0]
    lines = [
        "## Scale to zero",
        "",
        f"The deployment has a wake budget of {budget:g} s (`wake.budgetSeconds`), so the candidates tried replicas "
        "min 0, idle at zero GPUs after KEDA's cooldown and woken by the first request, beside 1 or more; a floor "
        f"of 0 passes when the requests held during a wake wait p99 within the budget and those failed at its "
        f"timeout (504) stay within the rejection bound. {len(tried)} of {len(plan.results)} candidates ran at 0, "
        f"{len(at_zero)} passed.",
        "",
    ]
    subject: Result | None = chosen if chosen is not None and chosen.settings.min_replicas == 0 else None
    if subject is None and (at_zero or tried):
        subject = (at_zero or tried)[0]
    if chosen is not None:
        floor = chosen.settings.min_replicas
        above = [r for r in plan.ranked if r.settings.min_replicas > 0]
        if floor == 0 and above:
            why = (
                f" (scale to zero); the best at 1 or more, #{above[0].index} (min {above[0].settings.min_replicas}), "
                f"ranks lower at {cost_text(above[0])} the oracle at worst, {figure_text(above[0], 'gpu_hours')} "
                "GPU-hours."
            )
        elif floor == 0:
            why = " (scale to zero); no candidate at 1 or more passed."
        elif subject is None:
            why = "; no candidate at 0 was tried."
        elif subject.passed:
            why = f"; the best at 0, #{subject.index}, ranks lower ({cost_text(subject)} the oracle at worst)."
        else:
            why = f"; the best at 0, #{subject.index}, failed: {'; '.join(subject.failures)}."
        lines += [f"Chosen: replicas min **{floor}**{why}", ""]
    if subject is not None:
        f = zero_figures(subject)
        lines += [
            f"| at min 0, #{subject.index} on the trace | value |",
            "|---|---:|",
            f"| wakes | {_number(f['wakes'], '.1f')} |",
            f"| waited p99 s (budget {budget:g}) | {_number(f['waited_p99_s'], '.1f')} |",
            f"| waited max s | {_number(f['waited_max_s'], '.1f')} |",
            f"| failed at the timeout | {_number(f['wake_failed'], '.1f')} |",
            f"| GPU-hours at min 0 | {_number(f['gpu_hours'], '.3f')} |",
            f"| GPU-hours, same settings at min 1 | {_number(f['gpu_hours_at_min_1'], '.3f')} |",
            f"| GPU-hours saved | {_number(f['gpu_hours_saved'], '.3f')} |",
            "",
        ]
    return lines
