"""A model's latency profile for `stackctl simulate`, measured on the real tritonserver.

    .venv/bin/python bench/latency_profile.py [--stack production] [--model classifier]

The server runs the stack's rendered config on loopback; the measurement is `stackctl profile --url`'s
(simulator/profiling.py: closed loops of bench/loadgen clients, tau(b) fitted from Triton's `batch_stats`, the
request overhead of a lone client), against this server. For your own Triton on your own GPU, run
`stackctl profile --url ...` instead (docs/profiling.md).

Writes bench/results/profiles/<model>.json, which the simulator reads.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.triton_load import INPUTS, stack_server  # noqa: E402
from offline.output_file import OutputFile  # noqa: E402
from platform_config.loader import load_stack  # noqa: E402
from platform_config.model_settings import render_stack  # noqa: E402
from platform_config.paths import DEFAULT_MODEL_REPO  # noqa: E402
from simulator.profiling import Server, is_profile_of, measured_profile, profile_bytes  # noqa: E402
from simulator.scenario import PROFILES  # noqa: E402
from triton_platform.model_packaging.source import read_repository  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="production")
    parser.add_argument("--model", default="classifier", choices=sorted(INPUTS))
    parser.add_argument("--seconds", type=float, default=3.0, help="per concurrency")
    args = parser.parse_args()
    config = load_stack(args.stack).config
    rendered = render_stack(args.stack, config.serving, config.models, read_repository(DEFAULT_MODEL_REPO))
    with stack_server(args.stack, args.model) as (server, _):
        profile = measured_profile(
            Server(f"http://{server.http_url}", server.metrics_url),
            args.model,
            args.seconds,
            rendered_config=rendered.models[args.model].text,
            by=f"bench/latency_profile.py on the {args.stack} config",
        )
    OutputFile(
        PROFILES / f"{args.model}.json",
        f"a latency profile of model {args.model!r}",
        lambda data: is_profile_of(data, args.model),
    ).write(profile_bytes(profile))
    tau = profile["tau_seconds"]
    overhead = profile["request_overhead_percentiles_seconds"]
    print(
        f"{args.model}: overhead p50 {overhead[50] * 1000:.2f} ms, p95 {overhead[95] * 1000:.2f} ms; tau(b) ms: "
        + ", ".join(f"{b}: {t * 1000:.2f}" for b, t in tau.items())
    )


if __name__ == "__main__":
    main()
