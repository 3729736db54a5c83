"""One streamed request through Triton's vLLM or TensorRT-LLM backend on a GPU, from the example LLM stacks.

    .venv/bin/python bench/gpu_backends.py --backend vllm [--runner auto|docker|tritonserver] [--release 24.10]
    .venv/bin/python bench/gpu_backends.py --backend trtllm --engine ENGINE_DIR --backend-models ALL_MODELS_DIR

Renders the example stack's model repository (stacks/examples/Pulumi.vllm.yaml or Pulumi.trtllm.yaml over
stacks/examples/llm_repo: the vLLM model's model.json and the TensorRT-LLM engine's parameters written from the
stack, as `stackctl model-repo` writes them), starts tritonserver on it with the flags a Deployment gets
(triton_platform/serving/triton_server_args.py), either the `tritonserver` on PATH (inside the backend's image) or
the `nvcr.io/nvidia/tritonserver:<release>-vllm-python-py3` / `-trtllm-python-py3` image with docker, waits until it
is ready, streams one request through HTTP `generate_stream`, and prints the time to first token, the inter-token
latencies, and the backend's metric names it scraped from the metrics port (`vllm:` for vLLM, vllm_backend r24.10
src/utils/metrics.py; `nv_trt_llm_` for TensorRT-LLM, tensorrtllm_backend v0.14.0
inflight_batcher_llm/src/custom_metrics_reporter). TensorRT-LLM needs its engine (trtllm-build's output, with the
Hugging Face tokenizer under tokenizer/) and the release's real pre- and postprocessing model.py
(tensorrtllm_backend v0.14.0 all_models/inflight_batcher_llm), which replace the example's stand-ins.

Without a GPU (`nvidia-smi -L` lists none) it says so and exits 2; it exits 1 when the server fails to come up or
the stream or metrics are not what the backend should give. Nothing here has run on a GPU yet (docs/streaming.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triton_platform.serving.triton_server_args import tritonserver_args  # noqa: E402

EXAMPLES = ROOT / "stacks" / "examples"
REPOSITORY = EXAMPLES / "llm_repo"
PORTS = (8000, 8001, 8002)
CONTAINER_MODELS = "/models"
PROMPT = "Write one sentence about GPUs."


@dataclass(frozen=True)
class Backend:
    stack: str
    """The example stack: stacks/examples/Pulumi.<stack>.yaml."""
    model: str
    """The model a client streams from."""
    image_variant: str
    """The NGC image's tag after the release."""
    metric_prefix: str
    body: Callable[[str, int], dict[str, Any]]
    """generate_stream's JSON body: its keys name the model's inputs."""


def _vllm_body(prompt: str, tokens: int) -> dict[str, Any]:
    # vllm_backend r24.10 src/model.py: inputs text_input, stream and sampling_parameters (a JSON string).
    return {"text_input": prompt, "stream": True, "sampling_parameters": json.dumps({"max_tokens": tokens})}


def _ensemble_body(prompt: str, tokens: int) -> dict[str, Any]:
    # stacks/examples/llm_repo/ensemble/config.pbtxt: text_input, max_tokens, stream (tensorrtllm_backend's names).
    return {"text_input": prompt, "max_tokens": tokens, "stream": True}


BACKENDS = {
    "vllm": Backend("vllm", "chat", "vllm-python-py3", "vllm:", _vllm_body),
    "trtllm": Backend("trtllm", "ensemble", "trtllm-python-py3", "nv_trt_llm_", _ensemble_body),
}


def gpus(run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> list[str]:
    """The GPUs `nvidia-smi -L` lists; none where it is missing or fails."""
    try:
        listed = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line for line in listed.stdout.splitlines() if line.startswith("GPU ")] if listed.returncode == 0 else []


def pick_runner(choice: str, which: Callable[[str], str | None] = shutil.which) -> str | None:
    """`tritonserver` (on PATH, as inside the backend's image) or `docker`; `auto` prefers tritonserver."""
    if choice != "auto":
        return choice if which(choice) else None
    return next((name for name in ("tritonserver", "docker") if which(name)), None)


def server_command(backend: Backend, repository: Path, runner: str, release: str) -> list[str]:
    """tritonserver with a Deployment's flags over the rendered repository, on PATH or in the backend's image."""
    inside = CONTAINER_MODELS if runner == "docker" else str(repository)
    flags = tritonserver_args(
        backend.stack,
        [],
        source="pvc",
        exit_timeout_seconds=30,
        model_repository=inside,
        ports=PORTS,
        admin_key="gpu-backends-bench",
        streaming=True,
    )
    if runner == "tritonserver":
        return ["tritonserver", *flags]
    image = f"nvcr.io/nvidia/tritonserver:{release}-{backend.image_variant}"
    # --shm-size: the python backend's stubs (vLLM, the ensemble's pre- and postprocessing) share memory with it.
    mount = f"{repository}:{CONTAINER_MODELS}:ro"
    return [
        "docker",
        "run",
        "--rm",
        "--gpus=all",
        "--network=host",
        "--shm-size=2g",
        "-v",
        mount,
        image,
        "tritonserver",
        *flags,
    ]


def metric_names(exposition: str, prefix: str) -> list[str]:
    """The names of the samples in a Prometheus text exposition that start with `prefix`, each once, sorted
    (`vllm:time_to_first_token_seconds_bucket{...} 3` gives `vllm:time_to_first_token_seconds_bucket`)."""
    names = set()
    for line in exposition.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name.startswith(prefix):
            names.add(name)
    return sorted(names)


def latencies(sent: float, arrivals: Sequence[float]) -> tuple[float, list[float]]:
    """Time to first token and each inter-token gap, in milliseconds, from a send time and the tokens' arrivals."""
    if not arrivals:
        raise ValueError("no token arrived")
    gaps = [(later - earlier) * 1000 for earlier, later in itertools.pairwise(arrivals)]
    return (arrivals[0] - sent) * 1000, gaps


def _events(response: Any) -> Iterator[tuple[float, dict[str, Any]]]:
    """Each server-sent event of a generate_stream response as it arrives: (time.monotonic(), its JSON)."""
    for raw in response:
        if raw.startswith(b"data: "):
            yield time.monotonic(), json.loads(raw[len(b"data: ") :])


def stream(base: str, backend: Backend, tokens: int) -> tuple[float, list[float], str]:
    """One request through generate_stream: its send time, each response's arrival, and the text."""
    request = urllib.request.Request(
        f"{base}/v2/models/{backend.model}/generate_stream",
        data=json.dumps(backend.body(PROMPT, tokens)).encode(),
        headers={"Content-Type": "application/json"},
    )
    sent, arrivals, text = time.monotonic(), [], []
    with urllib.request.urlopen(request, timeout=300) as response:
        for arrived, event in _events(response):
            if "error" in event:
                raise RuntimeError(f"the stream sent an error: {event['error']}")
            arrivals.append(arrived)
            text.append(str(event.get("text_output", "")))
    return sent, arrivals, "".join(text)


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/v2/health/ready", timeout=5) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def render(backend: Backend, out: Path, engine: Path | None, backend_models: Path | None) -> None:
    """The example stack's repository as Triton sees it, with the TensorRT-LLM engine and model files laid in."""
    from model_publishing.publish import write_model_repository  # noqa: PLC0415
    from platform_config.loader import load_stack_file  # noqa: PLC0415
    from platform_config.model_settings import render_stack  # noqa: PLC0415
    from triton_platform.model_packaging.source import read_repository  # noqa: PLC0415

    repo = read_repository(REPOSITORY)
    loaded = load_stack_file(EXAMPLES / f"Pulumi.{backend.stack}.yaml", repo=repo)
    write_model_repository(render_stack(backend.stack, loaded.config.serving, loaded.config.models, repo), out)
    if engine is not None:
        shutil.copytree(engine, out / "tensorrt_llm" / "1", dirs_exist_ok=True)
    if backend_models is not None:
        for step in ("preprocessing", "postprocessing"):
            shutil.copy(backend_models / step / "1" / "model.py", out / step / "1" / "model.py")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--backend", choices=sorted(BACKENDS), required=True)
    parser.add_argument("--runner", choices=("auto", "docker", "tritonserver"), default="auto")
    parser.add_argument("--release", default="24.10", help="the NGC image release, for --runner docker")
    parser.add_argument("--engine", type=Path, help="TensorRT-LLM: trtllm-build's output, with tokenizer/")
    parser.add_argument("--backend-models", type=Path, help="TensorRT-LLM: v0.14.0's all_models/inflight_batcher_llm")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--ready-seconds", type=float, default=900.0, help="how long the models may take to load")
    args = parser.parse_args(argv)
    backend = BACKENDS[args.backend]
    found = gpus()
    if not found:
        print(
            "no GPU: `nvidia-smi -L` lists none (or there is no nvidia-smi). This check serves the example "
            f"{backend.stack} stack on the {backend.image_variant} image and needs an NVIDIA GPU; nothing was run.",
            file=sys.stderr,
        )
        return 2
    runner = pick_runner(args.runner)
    if runner is None:
        print(f"neither tritonserver nor docker on PATH (--runner {args.runner}); nothing was run", file=sys.stderr)
        return 2
    if backend.stack == "trtllm" and (args.engine is None or args.backend_models is None):
        print("--backend trtllm needs --engine and --backend-models (see this script's doc)", file=sys.stderr)
        return 2
    print(f"{len(found)} GPU(s): {found[0]}; runner {runner}")
    with tempfile.TemporaryDirectory(prefix="gpu-backends-") as folder:
        repository = Path(folder) / "models"
        render(backend, repository, args.engine, args.backend_models)
        command = server_command(backend, repository, runner, args.release)
        print("$ " + " ".join(command), flush=True)
        log = open(Path(folder) / "server.log", "w+b")  # noqa: SIM115
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            return _check(backend, args, server, log)
        finally:
            server.terminate()
            server.wait(timeout=60)
            log.close()


def _check(backend: Backend, args: argparse.Namespace, server: subprocess.Popen[bytes], log: Any) -> int:
    base = f"http://127.0.0.1:{PORTS[0]}"
    deadline = time.monotonic() + args.ready_seconds
    while not _ready(base):
        if server.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-4000:]
            print(f"tritonserver did not become ready (exit {server.poll()}):\n{tail}", file=sys.stderr)
            return 1
        time.sleep(2)
    sent, arrivals, text = stream(base, backend, args.tokens)
    ttft, gaps = latencies(sent, arrivals)
    print(f"{len(arrivals)} responses; TTFT {ttft:.1f} ms", end="")
    if gaps:
        print(f"; ITL mean {statistics.fmean(gaps):.1f} ms, p50 {statistics.median(gaps):.1f}, max {max(gaps):.1f}")
    print(f"\ntext: {text[:200]!r}")
    with urllib.request.urlopen(f"http://127.0.0.1:{PORTS[2]}/metrics", timeout=10) as answer:
        names = metric_names(answer.read().decode(), backend.metric_prefix)
    print(f"{backend.metric_prefix} metrics: {', '.join(names) or 'none'}")
    return 0 if len(arrivals) > 1 and names else 1


if __name__ == "__main__":
    sys.exit(main())
