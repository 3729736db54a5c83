"""Token streams on one replica under continuous batching: when each request's tokens come out.

A replica's engine runs a loop of steps. At each step boundary it admits waiting requests, oldest first, while
fewer than `max_sequences` are in flight. A step that admitted any is a prefill step: it takes `prefill_seconds`
(the admitted prompts are prefilled together) and ends with each admitted sequence's first token; sequences already
in flight wait through it. Otherwise the step is a decode step: with n sequences in flight it takes step(n), read
from the profile, and ends with one token of each. A sequence leaves after its last token. An idle engine starts
the moment a request arrives. This is the loop tests/fixtures/streaming_repo/tokens runs for real (a vLLM-like
scheduler without chunked prefill), so bench/stream_fidelity.py can hold one against the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from platform_config.stream_profile import StreamProfileFile, read_stream_profile


@dataclass(frozen=True)
class StreamProfile:
    """A streaming model's measured costs: its prefill, and its decode step time by sequences in flight."""

    prefill_seconds: float
    concurrencies: tuple[int, ...]
    step_seconds: tuple[float, ...]
    max_sequences: int

    def step(self, sequences: int) -> float:
        """A decode step's seconds with `sequences` in flight: linear between measured concurrencies, the last
        slope continued beyond the last (as LatencyProfile.table does for batch sizes), the first below it."""
        c, s = self.concurrencies, self.step_seconds
        if len(c) > 1 and sequences > c[-1]:
            slope = (s[-1] - s[-2]) / (c[-1] - c[-2])
            return s[-1] + slope * (sequences - c[-1])
        return float(np.interp(sequences, c, s))


def load_stream_profile(path: Path) -> StreamProfile:
    """A stream profile file (`stackctl profile` of a decoupled model), checked; ValueError naming what is wrong."""
    return profile_of(read_stream_profile(path))


def profile_of(read: StreamProfileFile) -> StreamProfile:
    """What the simulator runs of a checked stream profile file."""
    return StreamProfile(read.prefill_seconds, read.concurrencies, read.step_seconds, read.max_sequences)


@dataclass(frozen=True)
class StreamRun:
    """Each request's token times (seconds, the arrivals' clock), in arrival order."""

    arrivals: NDArray[np.float64]
    token_times: tuple[NDArray[np.float64], ...]

    def time_to_first_token(self) -> NDArray[np.float64]:
        return np.array([times[0] for times in self.token_times]) - self.arrivals

    def inter_token_latencies(self) -> NDArray[np.float64]:
        """Every gap between two consecutive tokens of one request, all requests together."""
        gaps = [np.diff(times) for times in self.token_times]
        return np.concatenate(gaps) if gaps else np.zeros(0)


def run_stream(
    profile: StreamProfile,
    arrival_times: Sequence[float] | NDArray[np.float64],
    token_counts: Sequence[int] | NDArray[np.int64],
) -> StreamRun:
    """One replica serving requests arriving at `arrival_times` (sorted), each streaming its count of tokens (>= 1)."""
    # Python floats and ints: the loop reads them one at a time, which numpy scalars would slow.
    arrivals = [float(a) for a in arrival_times]
    output_tokens = [int(c) for c in token_counts]
    if len(arrivals) != len(output_tokens):
        raise ValueError(f"{len(arrivals)} arrivals but {len(output_tokens)} token counts")
    if any(count < 1 for count in output_tokens):
        raise ValueError("every request streams at least one token (its first comes from the prefill)")
    times: list[list[float]] = [[] for _ in arrivals]
    in_flight: list[int] = []
    clock, waiting = 0.0, 0
    while waiting < len(arrivals) or in_flight:
        if not in_flight:
            clock = max(clock, arrivals[waiting])
        admitted = []
        while waiting < len(arrivals) and arrivals[waiting] <= clock and len(in_flight) < profile.max_sequences:
            admitted.append(waiting)
            in_flight.append(waiting)
            waiting += 1
        stepping = admitted or in_flight
        clock += profile.prefill_seconds if admitted else profile.step(len(in_flight))
        for request in stepping:
            times[request].append(clock)
        in_flight = [r for r in in_flight if len(times[r]) < output_tokens[r]]
    return StreamRun(np.asarray(arrivals, dtype=np.float64), tuple(np.array(t) for t in times))


@dataclass(frozen=True)
class StreamSummary:
    """What a token objective is stated in (serving.tokenObjectives), and the tokens served per second."""

    ttft_p95: float
    ttft_p99: float
    itl_mean: float
    itl_p95: float
    itl_p99: float
    tokens_per_second: float


def summarize(run: StreamRun) -> StreamSummary:
    """Percentiles over every request (TTFT) and every gap between tokens (ITL); the tokens per second from the
    first arrival to the last token."""
    if not run.token_times:
        raise ValueError("no request arrived in the run: it has no token latencies to summarize")
    ttft, itl = run.time_to_first_token(), run.inter_token_latencies()
    tokens = sum(len(t) for t in run.token_times)
    span = max(t[-1] for t in run.token_times) - float(run.arrivals[0])
    # A run of one-token requests has no gap between tokens: its ITL is nil, not undefined.
    gaps = itl if len(itl) else np.zeros(1)
    return StreamSummary(
        ttft_p95=float(np.percentile(ttft, 95)),
        ttft_p99=float(np.percentile(ttft, 99)),
        itl_mean=float(np.mean(gaps)),
        itl_p95=float(np.percentile(gaps, 95)),
        itl_p99=float(np.percentile(gaps, 99)),
        tokens_per_second=tokens / span,
    )
