"""The built-in load shapes of `stackctl simulate --profile` and the bounds of every simulate input.

Apart from the simulator so that the CLI can list the shapes and check its
arguments without loading numba, which the runtime virtualenv
(requirements.txt) does not have.
"""

from __future__ import annotations

import argparse
import math

from triton_platform.excerpts import excerpt

PROFILE_SHAPES = ("step", "diurnal", "spike")

MIN_SECONDS = 60
"""Shortest run, trace or --hours: a pod takes about a minute to start, and the plot averages over one."""
MAX_SECONDS = 2 * 24 * 3600
"""Longest run, trace or --hours: two days. The latency histogram grows with the run (3.3 kB a second), and each
second costs the engine about 0.15 ms of CPU: two days at a low rate take about 0.8 GB and half a minute
(docs/simulation.md, "Bounds")."""
MAX_HOURS = MAX_SECONDS // 3600
MAX_RPS = 1_000_000
"""Highest request rate of a trace row or --peak-rps: eight times production's traced peak (stacks/traces), far
above any one deployment. One second's arrivals are arrays of the simulation (about 90 bytes a request): at 10 M
req/s a second alone took a gigabyte, at this bound (3 M req/s in a spike) about 300 MB."""
MAX_REQUESTS = 200_000_000
"""Most requests one `stackctl simulate` run offers (its rates summed over its seconds): the engine runs every
request through a batcher, about 6 M a second of CPU on a 2-core machine, so a run at this bound, with two days'
seconds on top, takes about a minute (docs/simulation.md, "Bounds"). `stackctl plan`'s fluid model does not
run requests one by one, and is not held to it."""
MIN_REQUESTS = 20
"""Fewest requests a run, and each shape `stackctl plan` runs, must offer (its rates summed over its seconds): a p95
of fewer is no percentile (5% of them is less than one request, so it is the slowest request, or none at all: a
run that serves nothing has no p95, which a report would print as nan)."""
MAX_SEED = 2**32 - 1

TRACE_RULES = (
    f"a header t_seconds,rps, then at least two rows of finite numbers: times from 0 (the first row at 0), "
    f"strictly increasing, each row in a later whole second, the last from {MIN_SECONDS - 1} to {MAX_SECONDS} s "
    f"(a run of one minute to 2 days); rates from 0 to {MAX_RPS} req/s, not all 0"
)
"""What a `--trace` CSV may hold (simulator.scenario.read_trace), as its errors and the CLI's help say it."""


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
