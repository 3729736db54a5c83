"""The values of `stackctl simulate`'s and `stackctl plan`'s own options, checked as argparse types.

The bounds are the libraries' (simulator.shapes, platform_config.bounds); checking a value given on the command
line, and the usage error that names it, are the command line's.
"""

from __future__ import annotations

import argparse
import math

from platform_config.bounds import SLO_MAX_MS
from simulator.shapes import MAX_HOURS, MAX_RPS, MAX_SECONDS, MAX_SEED, MIN_SECONDS, PROFILE_SHAPES
from triton_platform.args.excerpts import excerpt

MAX_BUDGET = 10_000
MAX_SEEDS = 20


def _number(text: str) -> float | None:
    """A finite float, else None (NaN and inf are no number of seconds or requests)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def hours_argument(text: str) -> float:
    """--hours: from a minute to MAX_HOURS; 0 is not "the default"."""
    value = _number(text)
    if value is None or not MIN_SECONDS <= value * 3600 <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"expected HOURS from 1/60 (one minute) to {MAX_HOURS} (2 days), got {excerpt(text)}"
        )
    return value


def peak_rps_argument(text: str) -> float:
    """--peak-rps: above 0 (0 does not mean "the default") up to MAX_RPS."""
    value = _number(text)
    if value is None or not 0 < value <= MAX_RPS:
        raise argparse.ArgumentTypeError(f"expected PEAK_RPS with 0 < PEAK_RPS <= {MAX_RPS}, got {excerpt(text)}")
    return value


def seed_argument(text: str) -> int:
    """--seed: what numpy's generators take, bounded so a run is reproducible from its printed seed."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected an integer SEED with 0 <= SEED <= {MAX_SEED}, got {excerpt(text)}")
    return value


def outage_argument(text: str) -> tuple[float, float]:
    """`START:SECONDS` of --metrics-outage; whether START falls inside the run is checked once its length is known."""
    start_text, sep, length_text = text.partition(":")
    start, length = _number(start_text), _number(length_text)
    if not sep or start is None or length is None or not (0 <= start <= MAX_SECONDS and 0 < length <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(
            f"expected START:SECONDS with START >= 0 and SECONDS > 0, got {excerpt(text)}; "
            f"both finite, at most {MAX_SECONDS} (2 days)"
        )
    return start, length


def shape_argument(text: str) -> str:
    """--profile: argparse's own `choices` error would echo the whole value."""
    if text not in PROFILE_SHAPES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(PROFILE_SHAPES)}, got {excerpt(text)}")
    return text


def _integer(text: str, low: int, high: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"expected an integer {what} from {low} to {high}, got {excerpt(text)}")
    return value


def budget_argument(text: str) -> int:
    """--budget: how many candidates to evaluate."""
    return _integer(text, 1, MAX_BUDGET, "BUDGET")


def seeds_argument(text: str) -> int:
    """--seeds: runs per candidate, each with its own seed."""
    return _integer(text, 1, MAX_SEEDS, "SEEDS")


def slo_ms_argument(text: str) -> int:
    """--slo-ms: whole milliseconds, as serving.p95LatencySloMs."""
    return _integer(text, 1, SLO_MAX_MS, "SLO_MS")


def rejected_pct_argument(text: str) -> float:
    """--max-rejected-pct: a share of requests, from 0 (none may be rejected) to 100."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 100, got {excerpt(text)}")
    return value
