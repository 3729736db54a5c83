"""The values of `stackctl plan`'s own options, checked as argparse types (the rest are `stackctl simulate`'s)."""

from __future__ import annotations

import argparse
import math

from platform_config.bounds import SLO_MAX_MS
from triton_platform.excerpts import excerpt

MAX_BUDGET = 10_000
MAX_SEEDS = 20


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
