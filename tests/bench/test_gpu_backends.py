"""The parts of bench/gpu_backends.py that need no GPU: the server command it builds, the request bodies, the
metric names it reads from an exposition, the latencies, and its refusal to run without a GPU."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import gpu_backends
from bench.gpu_backends import BACKENDS, gpus, latencies, metric_names, pick_runner, server_command


def test_docker_runs_the_backends_image_with_a_deployments_flags() -> None:
    command = server_command(BACKENDS["vllm"], Path("/tmp/models"), "docker", "24.10")
    image = command.index("nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3")
    assert command[:image] == [
        "docker", "run", "--rm", "--gpus=all", "--network=host", "--shm-size=2g", "-v", "/tmp/models:/models:ro",
    ]  # fmt: skip
    flags = command[image + 2 :]
    assert command[image + 1] == "tritonserver"
    assert flags[:4] == [
        "--model-repository=/models",
        "--model-config-name=vllm",
        "--disable-auto-complete-config",
        "--model-control-mode=none",
    ]
    assert "--metrics-config=histogram_latencies=true" in flags


def test_tritonserver_on_path_reads_the_folder_itself() -> None:
    command = server_command(BACKENDS["trtllm"], Path("/work/models"), "tritonserver", "24.10")
    assert command[:3] == ["tritonserver", "--model-repository=/work/models", "--model-config-name=trtllm"]


def test_each_backend_streams_with_its_own_inputs() -> None:
    vllm = BACKENDS["vllm"].body("hi", 8)
    assert vllm == {"text_input": "hi", "stream": True, "sampling_parameters": '{"max_tokens": 8}'}
    assert BACKENDS["trtllm"].body("hi", 8) == {"text_input": "hi", "max_tokens": 8, "stream": True}
    ensemble = (Path(__file__).parents[2] / "stacks/examples/llm_repo/ensemble/config.pbtxt").read_text()
    assert all(f'name: "{key}"' in ensemble for key in BACKENDS["trtllm"].body("hi", 8))


def test_metric_names_of_a_backend() -> None:
    exposition = """# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{model="chat",version="1",le="0.1"} 1
vllm:time_to_first_token_seconds_count{model="chat",version="1"} 1
nv_inference_count{model="chat",version="1"} 1
vllm:num_requests_running 0
"""
    assert metric_names(exposition, "vllm:") == [
        "vllm:num_requests_running",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:time_to_first_token_seconds_count",
    ]
    assert metric_names(exposition, "nv_trt_llm_") == []


NAMES = st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,30}", fullmatch=True)
LABELS = st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), st.text(max_size=10).map(json.dumps))


@given(st.lists(st.tuples(NAMES, LABELS, st.floats(allow_nan=False)), max_size=10))
def test_every_sample_name_is_read_whatever_its_labels(samples: list[tuple[str, dict[str, str], float]]) -> None:
    lines = [f"{name}{{{','.join(f'{k}={v}' for k, v in labels.items())}}} {value}" for name, labels, value in samples]
    assert metric_names("\n".join(lines), "") == sorted({name for name, _, _ in samples})


def test_latencies_from_arrivals() -> None:
    ttft, gaps = latencies(10.0, [10.25, 10.3, 10.4])
    assert ttft == pytest.approx(250.0)
    assert gaps == pytest.approx([50.0, 100.0])
    with pytest.raises(ValueError, match="no token arrived"):
        latencies(10.0, [])


def test_gpus_and_runner_are_found_or_not() -> None:
    def listed(code: int, out: str) -> Any:
        return lambda *args, **kwargs: subprocess.CompletedProcess(args, code, stdout=out)

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError("nvidia-smi")

    assert gpus(listed(0, "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n")) == [
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)"
    ]
    assert gpus(listed(9, "NVIDIA-SMI has failed")) == []
    assert gpus(missing) == []
    on_path = {"docker": "/usr/bin/docker"}.get
    assert pick_runner("auto", on_path) == "docker"
    assert pick_runner("tritonserver", on_path) is None


def test_without_a_gpu_it_says_so_and_exits_non_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpu_backends, "gpus", lambda: [])
    assert gpu_backends.main(["--backend", "vllm"]) == 2
    assert capsys.readouterr().err == (
        "no GPU: `nvidia-smi -L` lists none (or there is no nvidia-smi). This check serves the example vllm stack on "
        "the vllm-python-py3 image and needs an NVIDIA GPU; nothing was run.\n"
    )


def test_the_repository_it_serves_is_the_example_stacks(tmp_path: Path) -> None:
    gpu_backends.render(BACKENDS["vllm"], tmp_path / "models", None, None)
    assert json.loads((tmp_path / "models" / "chat" / "1" / "model.json").read_text())["model"]
    assert (tmp_path / "models" / "chat" / "configs" / "vllm.pbtxt").is_file()
