"""How close the stream simulator (simulator/streams.py) comes to the real tritonserver streaming tokens, one replica.

    .venv/bin/python bench/stream_fidelity.py [--rates 1 2 3] [--seconds 30] [--reps 2]

The real server (2.51, CPU, the flags a Deployment serving a decoupled model gets) serves
tests/fixtures/streaming_repo/tokens, which batches continuously at its stated cost. At each load level an
open-loop client sends Poisson arrivals from fixed seeds (bench/simulator_fidelity.py's), each request asking for
8 to 24 tokens (drawn from the same seed), each streamed over HTTP `generate_stream` on a thread of its own
(simulator/stream_client.py). Measured on the client: the time to first token (TTFT, from sending to the first
event) and each gap between two tokens (ITL), pooled over the seeds. The simulator then runs the same arrivals and
token counts with the model's stream profile, measured on the same server first by what `stackctl profile` runs
(simulator/stream_profiling.py) and recorded with the results. Writes
bench/results/stream_fidelity.json, which tests/simulator/test_stream_fidelity.py holds the simulator to, and prints
the side-by-side table.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.simulator_fidelity import TOLERANCE, error, poisson_arrivals  # noqa: E402
from platform_config.stream_profile import stream_fields  # noqa: E402
from simulator.profiling import Server  # noqa: E402
from simulator.stream_client import open_loop  # noqa: E402
from simulator.stream_profiling import measured_stream_profile  # noqa: E402
from simulator.streams import StreamProfile, run_stream  # noqa: E402
from tests.support.local_triton.server import TritonServer  # noqa: E402
from tests.support.local_triton.streaming import MODEL, REPOSITORY, streaming_server  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "stream_fidelity.json"
TOKENS = (8, 24)
"""The fewest and most tokens a request asks for."""
PROFILE_SECONDS = 2.0
"""The profile's load per concurrency, as `stackctl profile --seconds`."""


def fixture_profile() -> StreamProfile:
    """The fixture's stated cost (its config.pbtxt parameters) as the simulator's profile: step(n) is linear in n,
    so its two ends state it exactly."""
    text = (REPOSITORY / MODEL / "config.pbtxt").read_text(encoding="utf-8")
    found = dict(re.findall(r'key: "(\w+)" value: \{ string_value: "([^"]*)" \}', text))
    token, per_sequence, most = float(found["token_ms"]), float(found["per_sequence_ms"]), int(found["max_sequences"])
    return StreamProfile(
        prefill_seconds=float(found["prefill_ms"]) / 1000,
        concurrencies=(1, most),
        step_seconds=(token / 1000, (token + per_sequence * (most - 1)) / 1000),
        max_sequences=most,
    )


def load(rate: float, seconds: float, seed: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A seed's arrivals and each request's token count: the same for the server and the simulator."""
    arrivals = poisson_arrivals(rate, seconds, seed)
    counts = np.random.default_rng([seed, 1]).integers(TOKENS[0], TOKENS[1] + 1, len(arrivals))
    return arrivals, counts


def figures(ttfts: list[float], gaps: list[float], tokens: int, span: float) -> dict[str, float]:
    """TTFT p95 and ITL over every request and gap, and the tokens per second of stream time (each seed's first
    send to its last token)."""
    return {
        "ttft_p95_ms": 1000 * float(np.percentile(ttfts, 95)),
        "itl_mean_ms": 1000 * float(np.mean(gaps)),
        "itl_p95_ms": 1000 * float(np.percentile(gaps, 95)),
        "tokens_per_second": tokens / span,
    }


def simulated(profile: StreamProfile, rate: float, seconds: float, seeds: list[int]) -> dict[str, float]:
    """The simulator's replica under each seed's load, pooled over the seeds as the measurement is."""
    ttfts: list[float] = []
    gaps: list[float] = []
    tokens, span = 0, 0.0
    for seed in seeds:
        run = run_stream(profile, *load(rate, seconds, seed))
        ttfts += run.time_to_first_token().tolist()
        gaps += run.inter_token_latencies().tolist()
        tokens += sum(len(times) for times in run.token_times)
        span += max(times[-1] for times in run.token_times) - float(run.arrivals[0])
    return figures(ttfts, gaps, tokens, span)


def measure(server: TritonServer, rate: float, seconds: float, seeds: list[int]) -> dict[str, Any]:
    ttfts: list[float] = []
    gaps: list[float] = []
    lags: list[float] = []
    tokens, span = 0, 0.0
    for seed in seeds:
        arrivals, counts = load(rate, seconds, seed)
        streamed = open_loop(f"http://{server.http_url}", MODEL, arrivals.tolist(), counts.tolist())
        start = streamed[0].sent - arrivals[0]
        for request, at, count in zip(streamed, arrivals, counts, strict=True):
            assert len(request.tokens) == count, (len(request.tokens), count)
            ttfts.append(request.tokens[0] - request.sent)
            gaps += np.diff(request.tokens).tolist()
            lags.append(request.sent - start - at)
            tokens += count
        span += max(request.tokens[-1] for request in streamed) - streamed[0].sent
    real = figures(ttfts, gaps, tokens, span)
    real |= {"requests": len(ttfts), "send_lag_p95_ms": 1000 * float(np.percentile(lags, 95))}
    print(json.dumps({"rate": rate, **real}), file=sys.stderr, flush=True)
    return {"rate": rate, "real": real}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=float, nargs="+", default=[1, 2, 3])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    seeds = list(range(1, args.reps + 1))
    import tempfile  # noqa: PLC0415 - the scratch folder of this run only

    most = fixture_profile().max_sequences
    with tempfile.TemporaryDirectory() as scratch, streaming_server(Path(scratch)) as server:
        profile = measured_stream_profile(Server(f"http://{server.http_url}"), MODEL, most, PROFILE_SECONDS)
        levels = [measure(server, rate, args.seconds, seeds) for rate in args.rates]
    result = {
        "model": MODEL,
        "profile": profile,
        "seconds": args.seconds,
        "seeds": seeds,
        "measured": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "command": f".venv/bin/python bench/stream_fidelity.py --rates {' '.join(f'{r:g}' for r in args.rates)} "
        f"--seconds {args.seconds:g} --reps {args.reps}",
        "levels": levels,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    text = table(result)
    RESULTS.with_suffix(".md").write_text(text + "\n")
    print(text)


def recorded_profile(result: dict[str, Any]) -> StreamProfile:
    """The stream profile the benchmark measured before its load, as the simulator runs it."""
    read = stream_fields(result["profile"], str(RESULTS))
    return StreamProfile(read.prefill_seconds, read.concurrencies, read.step_seconds, read.max_sequences)


def table(result: dict[str, Any]) -> str:
    """The measured levels beside the simulator's, as a Markdown table."""
    profile = recorded_profile(result)
    steps = ", ".join(f"{c}: {t * 1000:.1f}" for c, t in zip(profile.concurrencies, profile.step_seconds, strict=True))
    lines = [
        f"# Stream simulator vs real tritonserver: {result['model']} (tests/fixtures/streaming_repo), one replica",
        "",
        f"Open-loop Poisson load, {result['seconds']:g} s per seed, {TOKENS[0]}-{TOKENS[1]} tokens a request, "
        f"pooled over {len(result['seeds'])} seeds, {result['measured']}, `{result['command']}`. Real: what the "
        "client saw over HTTP generate_stream; sim: simulator/streams.py with the stream profile measured on the "
        f"server first (prefill {profile.prefill_seconds * 1000:.1f} ms; step ms by sequences in flight: {steps}; "
        "the model states 50 ms, and 40 ms + 10 ms per further sequence). "
        f"tests/simulator/test_stream_fidelity.py holds TTFT p95 and ITL to ±{TOLERANCE:.0%}.",
        "",
        "| offered req/s | requests | TTFT p95 ms real/sim | error | ITL mean ms real/sim | error "
        "| ITL p95 ms real/sim | error | tokens/s real/sim | send lag p95 ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for level in result["levels"]:
        real = level["real"]
        sim = simulated(profile, level["rate"], result["seconds"], result["seeds"])
        cells = [f"{level['rate']:g}", f"{real['requests']}"]
        for key in ("ttft_p95_ms", "itl_mean_ms", "itl_p95_ms"):
            cells += [f"{real[key]:.1f} / {sim[key]:.1f}", f"{error(sim[key], real[key]):+.0%}"]
        cells += [f"{real['tokens_per_second']:.1f} / {sim['tokens_per_second']:.1f}", f"{real['send_lag_p95_ms']:.1f}"]
        lines.append(f"| {' | '.join(cells)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
