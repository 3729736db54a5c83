"""A model's latency profile measured against a running Triton by URL: what `stackctl profile --url` and
bench/latency_profile.py both run, and what a profile records of where it was measured.

The load comes from bench/loadgen (closed loops of 1, 2, 4 ... clients, up to twice the max batch size), so the
dynamic batcher forms batches of every size. Two things are read, from Triton's own statistics
(`GET /v2/models/<model>/stats`):

- tau(b), the time one model instance is busy with a batch of b requests: `batch_stats` (compute input + infer +
  output per batch size), fitted as a + c*b by least squares weighted by executions, so rare sizes do not add
  noise. It includes what the backend pays per request and the CPU the instances share, because it is measured
  under load.
- the request overhead: what a lone client waits beyond the server's mean request time (`inference_stats.success`):
  transport, (de)serialization and the jitter of the batcher's timer, kept as its distribution (percentiles 0 to
  100). It adds to latency, not to an instance's busy time.

A profile also records what it was measured on: the model, the server's config fields that change tau(b)
(max_batch_size, instance_count, backend; `tau_config`), the sha256 of the stack's rendered config.pbtxt when a
stack is named, Triton's version (`GET /v2`) and the GPU. Triton labels its GPU metrics by `gpu_uuid` alone (core
src/metrics.cc: the device name only reaches its log), so the GPU is recorded as the UUIDs of the `nv_gpu_*`
series on the metrics endpoint, a name given by the caller, or "cpu" when the server exports no GPU series.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from offline.server_answer import Document, ServerAnswerError, read, shown
from platform_config.latency_profile import tau_config
from platform_config.paths import PROJECT_ROOT
from triton_platform.args.excerpts import excerpt

SAMPLE_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
MAX_PROFILED_BATCH = 4096
"""The largest max batch size measured: the load doubles up to twice as many clients, each a connection."""
MAX_INSTANCES = 1024
"""The most instances a served config may count in one group (Triton's own configs hold a handful)."""
VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}")
"""What a profile records of Triton's version (`2.51.0`, `2.51.0dev`): the server's text is recorded and printed."""
GPU_UUID = re.compile(r"[A-Za-z0-9-]{1,80}")
"""A `gpu_uuid` label's characters (`GPU-<uuid>` in Triton's metrics, core src/metrics.cc)."""
"""The batch sizes below the max batch size that a measured profile lists tau(b) at, beside the max itself."""


def config_sha256(text: str) -> str:
    """sha256 of a rendered config.pbtxt, as the model repository holds it."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Stats:
    """What a profile reads of a model version's statistics (`GET /v2/models/<m>/stats`)."""

    success_count: int
    success_ns: int
    batches: dict[int, tuple[int, int]]
    """Per batch size: executions and the instance nanoseconds of compute input + infer + output."""

    @classmethod
    def of(cls, version: Document) -> Stats:
        """The statistics of one entry of `model_stats`, every field typed (offline/server_answer.py)."""
        success = version.at("inference_stats", "success")
        batches: dict[int, tuple[int, int]] = {}
        for entry in version.items("batch_stats") if "batch_stats" in version.get(kind=dict) else []:
            size = entry.get("batch_size", kind=int, minimum=1)
            ns = sum(
                entry.get(k, "ns", kind=int, minimum=0) for k in ("compute_input", "compute_infer", "compute_output")
            )
            batches[size] = (entry.get("compute_infer", "count", kind=int, minimum=0), ns)
        return cls(success.get("count", kind=int, minimum=0), success.get("ns", kind=int, minimum=0), batches)


def batch_seconds(before: Stats, after: Stats) -> dict[int, tuple[int, float]]:
    """Executions and mean instance seconds per batch size between two statistics snapshots."""
    out = {}
    for size, (count, ns) in after.batches.items():
        count0, ns0 = before.batches.get(size, (0, 0))
        if count > count0:
            out[size] = (count - count0, (ns - ns0) / (count - count0) / 1e9)
    return out


def fit(samples: dict[int, tuple[int, float]]) -> tuple[float, float]:
    """(a, c) of tau(b) = a + c*b, least squares weighted by executions; c is kept >= 0."""
    sizes = np.array(list(samples), float)
    counts = np.array([n for n, _ in samples.values()], float)
    means = np.array([s for _, s in samples.values()])
    weights = np.sqrt(counts)
    (c, a), *_ = np.linalg.lstsq(
        np.stack([sizes, np.ones_like(sizes)], 1) * weights[:, None], means * weights, rcond=None
    )
    if c < 0 or len(samples) == 1:  # flat in b within noise, or one size: a constant
        return float(np.average(means, weights=counts)), 0.0
    return float(a), float(c)


def default_metrics_url(netloc: str) -> str:
    """Triton's metrics endpoint beside the HTTP endpoint at `netloc` (`host:port`, `[::1]:8000`): the same host
    on port 8002 (`--metrics-port`'s default), over plain HTTP whatever the HTTP endpoint's scheme (Triton serves
    its metrics without TLS; a TLS proxy in front is given with --metrics-url)."""
    # The port is what follows the last colon after any IPv6 literal's closing bracket; the brackets stay.
    host = re.sub(r":[0-9]*$", "", netloc)
    return f"http://{host}:8002/metrics"


class Server:
    """A running Triton's HTTP endpoint (`http://host:port`) and its metrics endpoint, read with urllib."""

    def __init__(self, url: str, metrics_url: str | None = None) -> None:
        parsed = urllib.parse.urlsplit(url)
        try:
            _ = parsed.port  # raises on a port that is no number, or past 65535
            port_ok = True
        except ValueError:
            port_ok = False
        extra = parsed.path not in ("", "/") or parsed.query or parsed.fragment or url.endswith(("?", "#"))
        if not port_ok or parsed.scheme not in ("http", "https") or not parsed.hostname or extra:
            raise ValueError(
                f"--url {excerpt(url)} is not a Triton HTTP endpoint; expected http://HOST:PORT (Triton's "
                "--http-port, 8000 by default), without a path, query or fragment"
            )
        self.url = url.rstrip("/")
        self.metrics_url = metrics_url or default_metrics_url(parsed.netloc)

    def document(self, path: str, what: str) -> Document:
        """A JSON answer of Triton's HTTP API, read within the deadline and size bound (offline/server_answer.py)."""
        url = f"{self.url}{path}"
        return Document.parse(url, what, read(url, what))

    def version(self) -> str:
        """Triton's version, from its server metadata."""
        found = self.document("/v2", "the server metadata").get("version", kind=str, default="unknown")
        if not VERSION.fullmatch(found):
            raise ServerAnswerError(
                f"{self.url}/v2: the server metadata: version is {shown(found)}; expected Triton's version such as "
                "2.51.0"
            )
        return found

    def stats(self, model: str) -> Stats:
        """Statistics of the version of `model` that requests without a version reach (the highest loaded)."""
        quoted = urllib.parse.quote(model, safe="")
        stats = self.document(f"/v2/models/{quoted}/stats", "the model's statistics")
        versions = stats.items("model_stats") if "model_stats" in stats.get(kind=dict) else []
        if not versions:
            raise ValueError(f"{self.url}: no statistics of model {model!r}; expected Triton's statistics API")

        def number(version: Document) -> int:
            text = version.get("version", kind=str)
            if not text.isdigit() or len(text) > 18:
                raise ServerAnswerError(f"{version.url}: {version.what}: version is {shown(text)}; expected digits")
            return int(text)

        return Stats.of(max(versions, key=number))

    def gpu_uuids(self) -> list[str]:
        """The `gpu_uuid` labels of the server's GPU series (`nv_gpu_utilization` and its family); none on a
        server without GPUs or with GPU metrics off. A label that is not a GPU UUID's characters is left out:
        it is recorded and printed."""
        text = read(self.metrics_url, "Triton's metrics").decode(errors="replace")
        labels = set(re.findall(r'^nv_gpu_\w+\{[^}]*gpu_uuid="([^"]*)"', text, re.MULTILINE))
        return sorted(label for label in labels if GPU_UUID.fullmatch(label))


def served_config(config: Document) -> dict[str, Any]:
    """The fields of a served model config that tau_config reads, each typed and bounded: a max batch size the
    profile can load (it runs up to twice as many clients), instance counts of at least 1."""
    groups = config.get("instance_group", kind=list, default=[])
    return {
        "max_batch_size": config.get("max_batch_size", kind=int, default=0, minimum=0, maximum=MAX_PROFILED_BATCH),
        "instance_group": [
            {"count": group.get("count", kind=int, default=1, minimum=1, maximum=MAX_INSTANCES)}
            for group in (config.items("instance_group") if groups else [])
        ],
        "platform": config.get("platform", kind=str, default=""),
        "backend": config.get("backend", kind=str, default=""),
    }


def _input(entry: Document) -> dict[str, Any]:
    return {
        "name": entry.get("name", kind=str),
        "datatype": entry.get("datatype", kind=str),
        "shape": entry.get("shape", kind=list),
    }


def load_input(metadata: Mapping[str, Any], model: str) -> tuple[str, int]:
    """The input bench/loadgen fills, from the model's metadata: one FP32 input of shape [-1, width]."""
    inputs = metadata.get("inputs") or []
    shapes = ", ".join(shown(f"{i.get('name')} {i.get('datatype')} {i.get('shape')}") for i in inputs) or "none"
    if len(inputs) == 1 and inputs[0].get("datatype") == "FP32":
        shape = inputs[0].get("shape") or []
        if len(shape) == 2 and shape[0] == -1 and isinstance(shape[1], int) and shape[1] > 0:
            return str(inputs[0]["name"]), shape[1]
    raise ValueError(
        f"model {model!r} takes {shapes}; the load generator (bench/loadgen) sends one FP32 input of shape "
        "[-1, WIDTH] (a batching model, one item a request): measure this model with perf_analyzer and import "
        "its CSV (--import-perf-analyzer)"
    )


def loadgen_binary() -> Path:
    """bench/loadgen (Go, standard library only) built into .tools/bin, rebuilt when its source changes."""
    source = PROJECT_ROOT / "bench" / "loadgen"
    binary = PROJECT_ROOT / ".tools" / "bin" / "loadgen"
    if not source.is_dir():
        raise ValueError(f"the load generator's source {source} is missing: measure from the project's checkout")
    if binary.exists() and binary.stat().st_mtime >= max(f.stat().st_mtime for f in source.iterdir()):
        return binary
    if not shutil.which("go"):
        raise ValueError("the load generator bench/loadgen is built with Go (the version in .go-version): install it")
    binary.parent.mkdir(parents=True, exist_ok=True)
    build = subprocess.run(
        ["go", "build", "-o", str(binary), "."],
        cwd=source,
        env={**os.environ, "GOTOOLCHAIN": "local"},
        capture_output=True,
        text=True,
        check=False,
    )
    if build.returncode:
        raise ValueError(f"bench/loadgen did not build: {excerpt(build.stderr.strip())}")
    return binary


def closed_loop(url: str, model: str, tensor: tuple[str, int], clients: int, seconds: float) -> list[float]:
    """Latencies (seconds) of the requests a closed loop of `clients` served in `seconds`, sent by bench/loadgen."""
    name, width = tensor
    command = [str(loadgen_binary()), f"-url={url}", f"-model={model}", f"-input={name}", f"-width={width}"]
    run = subprocess.run(
        [*command, f"-clients={clients}", f"-seconds={seconds}"], capture_output=True, text=True, check=False
    )
    if run.returncode:
        raise ValueError(f"bench/loadgen failed against {url}: {excerpt(run.stderr.strip())}")
    latencies = [float(line.split()[2]) for line in run.stdout.splitlines() if line.startswith("ok ")]
    if not latencies:
        raise ValueError(
            f"{url}: model {model!r} served none of the requests of {clients} client(s) in {seconds:g} s; "
            "is the model loaded and ready?"
        )
    return latencies


def measure(server: Server, model: str, seconds: float) -> dict[str, Any]:
    """tau(b), the request overhead and the batch statistics of `model` on `server`, under bench/loadgen's load."""
    quoted = urllib.parse.quote(model, safe="")
    config = tau_config(served_config(server.document(f"/v2/models/{quoted}/config", f"model {model!r}'s config")))
    metadata = server.document(f"/v2/models/{quoted}", f"model {model!r}'s metadata")
    tensor = load_input({"inputs": [_input(entry) for entry in metadata.items("inputs")]}, model)
    max_batch = max(config["max_batch_size"], 1)
    closed_loop(server.url, model, tensor, 1, 1.0)  # warm
    before = server.stats(model)
    one = closed_loop(server.url, model, tensor, 1, seconds)
    after = server.stats(model)
    served = max(after.success_count - before.success_count, 1)
    server_mean = (after.success_ns - before.success_ns) / served / 1e9
    overhead = np.maximum(np.percentile(np.array(one) - server_mean, np.arange(101)), 0.0)
    samples = batch_seconds(before, after)
    clients = 2
    while clients <= 2 * max_batch:
        before = server.stats(model)
        closed_loop(server.url, model, tensor, clients, seconds)
        for size, (count, mean) in batch_seconds(before, server.stats(model)).items():
            n0, m0 = samples.get(size, (0, 0.0))
            samples[size] = (n0 + count, (n0 * m0 + count * mean) / (n0 + count))
        clients *= 2
    if not samples:
        raise ValueError(f"{server.url}: model {model!r}'s statistics report no batch executions; nothing to fit")
    a, c = fit(samples)
    sizes = [b for b in SAMPLE_SIZES if b < max_batch] + [max_batch]
    return {
        "config": config,
        "request_overhead_percentiles_seconds": [float(v) for v in overhead],
        "tau_seconds": {str(b): a + c * b for b in sizes},
        "batch_stats": {str(b): {"executions": n, "mean_seconds": s} for b, (n, s) in sorted(samples.items())},
    }


def gpu_of(uuids: list[str], name: str | None) -> str:
    """What a profile records as its GPU: the name given, else the UUIDs Triton's metrics label, else "cpu"."""
    return name or ", ".join(uuids) or "cpu"


def measured_profile(
    server: Server,
    model: str,
    seconds: float,
    *,
    gpu_name: str | None = None,
    rendered_config: str | None = None,
    by: str = "stackctl profile",
) -> dict[str, Any]:
    """A whole profile of `model` measured on `server`: the measurement and what it ran on.

    rendered_config: the config.pbtxt the stack renders for the model (its sha256 is recorded), or None."""
    version = server.version()
    try:
        uuids = server.gpu_uuids()
    except ValueError as err:
        if gpu_name is None:
            raise ValueError(f"{err}; give --metrics-url, or --gpu NAME to record the GPU without them") from None
        uuids = []
    measurement = measure(server, model, seconds)
    return {
        "model": model,
        "measured": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC at {server.url} by {by}",
        "source": {"kind": "measured", "from": server.url},
        "triton_version": version,
        "gpu": gpu_of(uuids, gpu_name),
        "gpu_uuids": uuids,
        "config_sha256": config_sha256(rendered_config) if rendered_config is not None else None,
        **measurement,
    }


def profile_bytes(profile: Mapping[str, Any]) -> bytes:
    """A profile as its file holds it."""
    return (json.dumps(profile, indent=2) + "\n").encode("utf-8")


def is_profile_of(data: bytes, model: str) -> bool:
    """Whether `data` is a profile file of `model` (its JSON object names the model and holds tau(b)): what
    `stackctl profile` may replace without --force."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(value, dict) and value.get("model") == model and "tau_seconds" in value
