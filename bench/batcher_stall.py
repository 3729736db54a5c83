"""Half-second stalls of Triton 2.51's dynamic batcher under dev's classifier config, and what avoids them.

    .venv/bin/python bench/batcher_stall.py [--stack dev] [--model classifier] [--clients 8] [--seconds 4]

bench/batching.py showed dev's p95 at about 505 ms when dev's models had one
instance and a queue policy. This serves the stack's rendered config with that
queue policy (max_queue_size 32, 1 s timeout; kept if the stack sets one) and
variants of it, one setting changed each, to a closed loop of `--clients`
(bench/loadgen), and counts requests slower than 400 ms: the batcher thread
sleeps 500 ms when it finds its queue empty, and a request that does not wake
it waits that long. Writes bench/results/batcher_stall.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tritonclient.grpc import model_config_pb2  # noqa: E402

from bench.triton_load import load  # noqa: E402
from model_publishing.publish import write_model_repository  # noqa: E402
from platform_config.loader import load_stack  # noqa: E402
from platform_config.model_settings import render_stack  # noqa: E402
from platform_config.paths import DEFAULT_MODEL_REPO  # noqa: E402
from tests.support.local_triton.server import TritonServer  # noqa: E402
from triton_platform.model_packaging.render import config_text  # noqa: E402
from triton_platform.model_packaging.source import read_repository  # noqa: E402

STALL_SECONDS = 0.4


def variants(config: model_config_pb2.ModelConfig) -> dict[str, model_config_pb2.ModelConfig]:
    """The stack's config with a queue policy, and one-change variants of it."""
    base = model_config_pb2.ModelConfig()
    base.CopyFrom(config)
    if not base.dynamic_batching.HasField("default_queue_policy"):
        base.dynamic_batching.default_queue_policy.max_queue_size = 32
        base.dynamic_batching.default_queue_policy.default_timeout_microseconds = 1_000_000
    config = base
    out = {"one instance, queue policy": config}

    def changed(label: str, change: object) -> None:
        variant = model_config_pb2.ModelConfig()
        variant.CopyFrom(config)
        change(variant)  # type: ignore[operator]
        out[label] = variant

    changed("no default_queue_policy", lambda c: c.dynamic_batching.ClearField("default_queue_policy"))
    changed(
        "no queue timeout",
        lambda c: c.dynamic_batching.default_queue_policy.ClearField("default_timeout_microseconds"),
    )
    changed("no max_queue_size", lambda c: c.dynamic_batching.default_queue_policy.ClearField("max_queue_size"))
    changed("2 instances", lambda c: c.instance_group[0].__setattr__("count", 2))
    changed("max_queue_delay 5 ms", lambda c: c.dynamic_batching.__setattr__("max_queue_delay_microseconds", 5000))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--model", default="classifier")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    config = load_stack(args.stack).config
    rendered = render_stack(args.stack, config.serving, config.models, read_repository(DEFAULT_MODEL_REPO))
    lines = [
        f"# Batcher stalls: {args.stack} {args.model}, closed loop of {args.clients} clients, {args.seconds:g} s",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; tritonserver 2.51.0 (CPU); command: `.venv/bin/python "
        f"bench/batcher_stall.py --stack {args.stack} --model {args.model} --clients {args.clients} "
        f"--seconds {args.seconds:g}`",
        "",
        f"| config | requests | p50 ms | p95 ms | max ms | requests > {STALL_SECONDS * 1000:.0f} ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, variant in variants(rendered.models[args.model].config).items():
        with tempfile.TemporaryDirectory(prefix="bench-stall-") as work:
            repo = Path(work) / "models"
            write_model_repository(rendered, repo, [args.model])
            # Serve the variant as the model's only config.
            shutil.rmtree(repo / args.model / "configs")
            (repo / args.model / "config.pbtxt").write_text(config_text(variant))
            with TritonServer.for_repository(repo) as server:
                latencies = np.array(load(server, args.model, clients=args.clients, seconds=args.seconds)["latencies"])
        p50, p95 = np.percentile(latencies, [50, 95]) * 1000
        stalls = int((latencies > STALL_SECONDS).sum())
        lines.append(
            f"| {label} | {len(latencies)} | {p50:.1f} | {p95:.1f} | {latencies.max() * 1000:.0f} | {stalls} |"
        )
        print(lines[-1], flush=True)
    (ROOT / "bench" / "results" / "batcher_stall.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
