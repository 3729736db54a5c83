"""What the Triton benchmarks share: the models' inputs, a server on a stack's config, its statistics."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from model_publishing.publish import write_model_repository
from platform_config.loader import load_stack
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO, PROJECT_ROOT
from tests.support.local_triton.server import TritonServer, free_ports
from triton_platform.model_packaging.source import read_repository
from triton_platform.serving.triton_server_args import tritonserver_args

# Input tensor name and width of each benchmarked model (one item per request).
INPUTS = {"classifier": ("input_tensor", 128), "ranker": ("features", 16), "preprocess": ("raw", 128)}
ADMIN_KEY = "bench"


@contextmanager
def stack_server(stack: str, model: str) -> Iterator[tuple[TritonServer, int]]:
    """A tritonserver loading `model` with the stack's rendered config and flags; yields it and the max batch size."""
    config = load_stack(stack).config
    rendered = render_stack(stack, config.serving, config.models, read_repository(DEFAULT_MODEL_REPO))
    with tempfile.TemporaryDirectory(prefix="bench-repo-", dir=os.environ.get("TMPDIR")) as work:
        repo = Path(work) / "models"
        write_model_repository(rendered, repo, [model])
        ports = free_ports()
        flags = tritonserver_args(
            stack,
            [model],
            source=config.serving.model_repository.source,
            exit_timeout_seconds=config.serving.drain.exit_timeout_seconds,
            model_repository=str(repo),
            ports=ports,
            admin_key=ADMIN_KEY,
        )
        with TritonServer(flags, ports) as server:
            yield server, rendered.models[model].config.max_batch_size


def model_stats(server: TritonServer, model: str) -> dict[str, Any]:
    """Triton's statistics of the version of `model` that requests without a version reach (the
    highest loaded): counts and cumulative nanoseconds."""
    request = urllib.request.Request(f"http://{server.http_url}/v2/models/{model}/stats")
    with urllib.request.urlopen(request, timeout=10) as response:
        versions: list[dict[str, Any]] = json.load(response)["model_stats"]
    return max(versions, key=lambda v: int(v["version"]))


def loadgen() -> Path:
    """bench/loadgen (Go, standard library only) built into .tools/bin, rebuilt when its source changes."""
    source = PROJECT_ROOT / "bench" / "loadgen"
    binary = PROJECT_ROOT / ".tools" / "bin" / "loadgen"
    newest = max(f.stat().st_mtime for f in source.iterdir())
    if not binary.exists() or binary.stat().st_mtime < newest:
        if not shutil.which("go"):
            sys.exit("the Triton benchmarks need Go (version in .go-version) to build bench/loadgen")
        binary.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "GOTOOLCHAIN": "local"}
        subprocess.run(["go", "build", "-o", str(binary), "."], cwd=source, env=env, check=True)
    return binary


def load(
    server: TritonServer,
    model: str,
    *,
    arrivals: Iterable[float] | None = None,
    clients: int = 0,
    seconds: float = 0.0,
) -> dict[str, Any]:
    """Load from bench/loadgen: open loop at `arrivals` (seconds from the start), or a closed loop of
    `clients` for `seconds`. Returns the served requests' latencies, the rejected count and the p95 send lag."""
    name, width = INPUTS[model]
    command = [str(loadgen()), f"-url=http://{server.http_url}", f"-model={model}", f"-input={name}", f"-width={width}"]
    if clients:
        command += [f"-clients={clients}", f"-seconds={seconds}"]
    stdin = "\n".join(f"{t:.6f}" for t in arrivals) if arrivals is not None else ""
    run = subprocess.run(command, input=stdin, capture_output=True, text=True, check=True)
    latencies, rejected, lag = [], 0, 0.0
    for line in run.stdout.splitlines():
        status, value, *rest = line.split()
        if status == "ok":
            latencies.append(float(rest[0]))
        elif status == "rejected":
            rejected += 1
        else:
            lag = float(value)
    return {"latencies": latencies, "rejected": rejected, "lag_p95": lag}
