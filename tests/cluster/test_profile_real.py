"""`stackctl profile --url` against the real local tritonserver (2.51.0, CPU, on loopback, stopped by its PID when
the test ends): the profile it writes records what it ran on, and `stackctl simulate` runs it unwarned."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import platform_config.types
import simulator.scenario
from bench.triton_load import stack_server
from platform_config.loader import load_stack
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO, PROJECT_ROOT
from simulator.profiling import config_sha256
from stackctl.main import main
from tests.support.local_triton.server import TritonServer
from triton_platform.model_packaging.source import read_repository

pytestmark = pytest.mark.real_tools


def server_state(server: TritonServer) -> str:
    """Whether the server still runs, and its log's errors: what a refused connection mid-test needs to show."""
    code = server.process.poll() if server.process else None
    state = "running" if code is None else f"exited with {code}"
    return f"tritonserver {state}; its log's errors:\n{server.errors()}"


@pytest.fixture(scope="module")
def server() -> Iterator[TritonServer]:
    with stack_server("dev", "classifier") as (running, _):
        yield running


def test_a_profile_measured_by_url_records_its_server_and_runs_in_simulate(
    server: TritonServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "profile.json"
    url = f"http://{server.http_url}"
    argv = ["--url", url, "--metrics-url", server.metrics_url, "--model", "classifier", "--stack", "dev"]
    code = main(["profile", *argv, "--seconds", "0.5", "--output", str(out)])
    printed, err = capsys.readouterr()
    assert (code, err) == (0, ""), f"{err}\n{server_state(server)}"
    profile = json.loads(out.read_text(encoding="utf-8"))
    config = load_stack("dev").config
    rendered = render_stack("dev", config.serving, config.models, read_repository(DEFAULT_MODEL_REPO))
    assert profile["model"] == "classifier"
    assert profile["source"] == {"kind": "measured", "from": url}
    assert profile["triton_version"] == "2.51.0"
    # The wheel's server has no GPU: its metrics hold no nv_gpu_* series.
    assert (profile["gpu"], profile["gpu_uuids"]) == ("cpu", [])
    assert profile["config_sha256"] == config_sha256(rendered.models["classifier"].text)
    assert profile["config"] == {"max_batch_size": 8, "instance_count": 1, "backend": "onnxruntime"}
    tau = profile["tau_seconds"]
    assert list(tau) == ["1", "2", "4", "8"]
    assert all(t > 0 for t in tau.values())
    assert len(profile["request_overhead_percentiles_seconds"]) == 101
    assert sum(stats["executions"] for stats in profile["batch_stats"].values()) > 0
    assert printed.startswith(f"{out}: model 'classifier' from {url}; GPU cpu, Triton 2.51.0; overhead p50 ")

    # simulate reads it where scaling.simulation.profile points, the dev stack's own config: no warning.
    monkeypatch.setattr(platform_config.types, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(simulator.scenario, "PROJECT_ROOT", tmp_path)
    text = (PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml").read_text(encoding="utf-8")
    anchor = "  triton-platform:scaling:\n"
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(text.replace(anchor, anchor + '    simulation: {profile: "profile.json"}\n'), encoding="utf-8")
    argv = ["--config", str(stack), "--profile", "step", "--hours", "0.02", "--peak-rps", "20", "--no-plot"]
    code = main(["simulate", *argv, "--out", str(tmp_path / "out")])
    _, err = capsys.readouterr()
    assert code in (0, 1), err
    assert "warning" not in err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert (summary["inputs"]["model"], summary["inputs"]["profile"]) == ("classifier", str(out))


def test_a_server_whose_config_differs_from_the_stacks_is_warned_of_and_recorded_as_served(
    server: TritonServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The server runs dev's config; production renders classifier with max batch 32 and 3 instances.
    out = tmp_path / "profile.json"
    argv = ["--url", f"http://{server.http_url}", "--metrics-url", server.metrics_url, "--model", "classifier"]
    code = main(["profile", *argv, "--stack", "production", "--seconds", "0.2", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 0, f"{err}\n{server_state(server)}"
    assert err.strip() == (
        "stackctl profile: warning: the profiled config differs from stacks/Pulumi.production.yaml's rendered config "
        "of 'classifier' (max_batch_size 8 -> 32; instance_count 1 -> 3; profile -> stack); simulate and plan will "
        "say so"
    )
    assert json.loads(out.read_text(encoding="utf-8"))["config"]["max_batch_size"] == 8
