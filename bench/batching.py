"""Dynamic batching on a real tritonserver: the stack's batching config against batching off.

    .venv/bin/python bench/batching.py [--stack production] [--model classifier]
        [--concurrency 1 8 32 64] [--reps 3] [--seconds 5]

Two servers load the same model: A with the stack's rendered config, B with
its dynamic_batching removed (same max_batch_size, single-item requests).
Runs alternate A B A B at each concurrency; the load is a closed loop from
bench/loadgen (compiled, HTTP with binary tensors), so the generator leaves the
server the CPU. Reported per run: throughput,
p50/p95/p99 latency, the average batch size from Triton's own counters
(nv_inference_count / nv_inference_exec_count), and the CPU seconds the
server (with its backend stubs) and the load generator used, to show which
saturated. (The simulator's latency profiles come from bench/latency_profile.py.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.triton_load import INPUTS, load, loadgen  # noqa: E402
from model_publishing.publish import write_model_repository  # noqa: E402
from platform_config.loader import load_stack  # noqa: E402
from platform_config.model_settings import render_stack  # noqa: E402
from platform_config.paths import DEFAULT_MODEL_REPO  # noqa: E402
from tests.support.local_triton.server import TritonServer, free_ports  # noqa: E402
from triton_platform.model_packaging.render import config_text  # noqa: E402
from triton_platform.model_packaging.source import read_repository  # noqa: E402
from triton_platform.serving.triton_server_args import tritonserver_args  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def _process_tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its descendants (the server and its backend stubs)."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += cpu.get(current, 0.0)
        todo += children.get(current, [])
    return total


def _counter(server: TritonServer, name: str, model: str) -> float:
    with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
        text = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{") and f'model="{model}"' in line
    )


def run_load(server: TritonServer, model: str, concurrency: int, seconds: float) -> dict[str, float]:
    """A closed loop of `concurrency` clients (bench/loadgen) for `seconds`; what the server and the clients did."""
    assert server.process is not None
    count0, exec0 = _counter(server, "nv_inference_count", model), _counter(server, "nv_inference_exec_count", model)
    server_cpu0 = _process_tree_cpu(server.process.pid)
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = load(server, model, clients=concurrency, seconds=seconds)
    wall = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = children.ru_utime + children.ru_stime - children0.ru_utime - children0.ru_stime
    server_cpu = _process_tree_cpu(server.process.pid) - server_cpu0
    time.sleep(2.5)  # Triton refreshes /metrics every 2 s
    count = _counter(server, "nv_inference_count", model) - count0
    executions = _counter(server, "nv_inference_exec_count", model) - exec0
    latencies = sorted(result["latencies"])
    rejected = result["rejected"]
    q = statistics.quantiles(latencies, n=100)
    return {
        "throughput": len(latencies) / seconds,
        "p50_ms": q[49] * 1000,
        "p95_ms": q[94] * 1000,
        "p99_ms": q[98] * 1000,
        "batch": count / executions if executions else 0.0,
        "server_cpu": server_cpu / wall,
        "client_cpu": client_cpu / wall,
        "rejected_pct": 100 * rejected / max(1, rejected + len(latencies)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="production")
    parser.add_argument("--model", default="classifier", choices=sorted(INPUTS))
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    loadgen()  # built before any run, so its compile time is not counted as client CPU

    stack = load_stack(args.stack)
    rendered = render_stack(args.stack, stack.config.serving, stack.config.models, read_repository(DEFAULT_MODEL_REPO))
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-batching-{os.getpid()}"
    repos = {"A": work / "batching", "B": work / "off"}
    write_model_repository(rendered, repos["A"], [args.model])
    write_model_repository(rendered, repos["B"], [args.model])
    off = rendered.models[args.model].config.__deepcopy__()
    off.ClearField("dynamic_batching")
    (repos["B"] / args.model / "configs" / f"{args.stack}.pbtxt").write_text(config_text(off))

    servers = {}
    for label, repo in repos.items():
        ports = free_ports()
        flags = tritonserver_args(
            args.stack,
            [args.model],
            source=stack.config.serving.model_repository.source,
            exit_timeout_seconds=stack.config.serving.drain.exit_timeout_seconds,
            model_repository=str(repo),
            ports=ports,
            admin_key="bench",
        )
        servers[label] = TritonServer(flags, ports).start()
    try:
        rows: list[dict[str, Any]] = []
        for concurrency in args.concurrency:
            for rep in range(args.reps):
                for label in ("A", "B"):  # interleaved: A B A B ...
                    result = run_load(servers[label], args.model, concurrency, args.seconds)
                    rows.append({"config": label, "concurrency": concurrency, "rep": rep, **result})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        for server in servers.values():
            server.stop()

    report(args, rows)


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    lines = [
        f"# Dynamic batching: {args.stack} config vs batching off, model {args.model}",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} cores; tritonserver 2.51.0 (nvidia-pytriton wheel, CPU,",
        "Python-based onnxruntime backend); closed-loop HTTP load from bench/loadgen (Go).",
        "",
        f"Command: `.venv/bin/python bench/batching.py --stack {args.stack} --model {args.model} "
        f"--concurrency {' '.join(map(str, args.concurrency))} --reps {args.reps} --seconds {args.seconds:g}`",
        "",
        "Medians over the repetitions. A = the stack's batching config, B = batching off. CPU is cores busy (s/s).",
        "",
        "| concurrency | A req/s | B req/s | gain | A p50 ms | B p50 ms | A p95 ms | B p95 ms | p95 ratio | A p99 ms | B p99 ms | A batch | B batch | rejected % A/B | server CPU A/B | client CPU A/B |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    best = None
    for concurrency in args.concurrency:
        med = {
            label: {
                key: statistics.median(r[key] for r in rows if r["config"] == label and r["concurrency"] == concurrency)
                for key in (
                    "throughput",
                    "p50_ms",
                    "p95_ms",
                    "p99_ms",
                    "batch",
                    "server_cpu",
                    "client_cpu",
                    "rejected_pct",
                )
            }
            for label in ("A", "B")
        }
        a, b = med["A"], med["B"]
        gain = a["throughput"] / b["throughput"]
        if best is None or a["throughput"] > best[1]["throughput"]:
            best = (concurrency, a, b, gain)
        lines.append(
            f"| {concurrency} | {a['throughput']:.0f} | {b['throughput']:.0f} | {gain:.2f}x | {a['p50_ms']:.1f} | "
            f"{b['p50_ms']:.1f} | {a['p95_ms']:.1f} | {b['p95_ms']:.1f} | {a['p95_ms'] / b['p95_ms']:.2f} | "
            f"{a['p99_ms']:.1f} | {b['p99_ms']:.1f} | {a['batch']:.1f} | {b['batch']:.1f} | "
            f"{a['rejected_pct']:.1f}/{b['rejected_pct']:.1f} | "
            f"{a['server_cpu']:.2f}/{b['server_cpu']:.2f} | {a['client_cpu']:.2f}/{b['client_cpu']:.2f} |"
        )
    assert best is not None
    concurrency, a, b, gain = best
    lines += [
        "",
        f"At the concurrency where A's throughput peaks ({concurrency}): {gain:.2f}x throughput, "
        f"p95 {a['p95_ms']:.1f} ms vs {b['p95_ms']:.1f} ms.",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"batching-{args.stack}-{args.model}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
