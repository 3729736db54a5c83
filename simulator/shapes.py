"""The built-in load shapes of `stackctl simulate --profile` and the bounds of every simulate input.

Apart from the simulator so that the CLI can list the shapes and check its
arguments without loading numba, which the runtime virtualenv
(requirements.txt) does not have.
"""

from __future__ import annotations

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
