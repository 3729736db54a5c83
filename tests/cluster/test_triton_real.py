"""A real tritonserver (2.51.0, CPU) loads every stack's rendered repository and serves it.

For each deployment of each stack: `stackctl model-repo --deployment` output,
served with exactly the flags the Deployment passes (tritonserver_args), only
the repository path and ports differing. The test then checks that every model
and version the policy selects is READY, that Triton loaded the stack's config
(not the base one), that every answer matches numpy, and that the dynamic
batcher batches under concurrent load.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from tritonclient.utils import InferenceServerException

from model_publishing.examples import expected_output
from model_publishing.publish import write_model_repository
from platform_config.loader import StackConfig, load_stack
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO
from tests.conftest import STACKS
from tests.support.local_triton.server import TritonServer, free_ports
from triton_platform.model_packaging.layout import assemble_script
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.model_packaging.source import read_repository
from triton_platform.serving.triton_server_args import ADMIN_KEY_HEADER, dynamic_model_control, tritonserver_args
from triton_platform.serving.triton_serving_args import DEFAULT_IMAGE, DEFAULT_TRITON_VERSION

ADMIN_KEY = "test-admin-key"
INPUTS = {"classifier": "input_tensor", "preprocess": "raw", "pipeline": "raw", "ranker": "features"}
OUTPUTS = {"classifier": "output_tensor", "preprocess": "input_tensor", "pipeline": "output_tensor", "ranker": "score"}
WIDTH = {"classifier": 128, "preprocess": 128, "pipeline": 128, "ranker": 16}

CASES = [(s, d) for s in STACKS for d in sorted(load_stack(s).config.serving.deployments)]


@dataclass
class Served:
    stack: StackConfig
    deployment: str
    rendered: RenderedRepository
    server: TritonServer

    @property
    def models(self) -> list[str]:
        return self.stack.config.serving.deployments[self.deployment].models

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        request = urllib.request.Request(f"http://{self.server.http_url}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def post(self, path: str, headers: dict[str, str] | None = None) -> int:
        request = urllib.request.Request(
            f"http://{self.server.http_url}{path}", data=b"{}", headers=headers or {}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as err:
            return err.code

    def metric(self, name: str, model: str) -> float:
        with urllib.request.urlopen(self.server.metrics_url, timeout=10) as response:
            text = response.read().decode()
        values = [
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name + "{") and f'model="{model}"' in line
        ]
        assert values, f"{name} for {model} missing from /metrics"
        return sum(values)


@pytest.fixture(scope="module", params=CASES, ids=[f"{s}-{d}" for s, d in CASES])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    stack_name, deployment = request.param
    stack = load_stack(stack_name)
    repo = read_repository(DEFAULT_MODEL_REPO)
    rendered = render_stack(stack_name, stack.config.serving, stack.config.models, repo)
    out = tmp_path_factory.mktemp(f"{stack_name}-{deployment}")
    models = stack.config.serving.deployments[deployment].models
    write_model_repository(rendered, out, models)
    ports = free_ports()
    args = tritonserver_args(
        stack_name,
        models,
        source=stack.config.serving.model_repository.source,
        exit_timeout_seconds=stack.config.serving.drain.exit_timeout_seconds,
        model_repository=str(out),
        ports=ports,
        admin_key=ADMIN_KEY,
    )
    with TritonServer(args, ports) as server:
        yield Served(stack, deployment, rendered, server)


def expected_versions(rendered: RenderedRepository, model: str) -> list[int]:
    config = rendered.models[model].config
    versions = list(rendered.models[model].versions)
    policy = config.version_policy
    if policy.HasField("specific"):
        return sorted(policy.specific.versions)
    if policy.HasField("all"):
        return versions
    return versions[-(policy.latest.num_versions or 1) :]


@pytest.mark.real_tools
def test_the_server_the_tests_run_is_the_default_images_release(served: Served) -> None:
    status, body = served.get("/v2")
    assert status == 200
    assert json.loads(body)["version"] == DEFAULT_TRITON_VERSION
    assert DEFAULT_IMAGE == "nvcr.io/nvidia/tritonserver:24.10-py3"  # 24.10 ships Triton 2.51.0


@pytest.mark.real_tools
def test_every_selected_model_version_is_ready(served: Served) -> None:
    for model in served.models:
        selected = expected_versions(served.rendered, model)
        for version in served.rendered.models[model].versions:
            status, _ = served.get(f"/v2/models/{model}/versions/{version}/ready")
            assert (status == 200) == (version in selected), (model, version, status, selected)


@pytest.mark.real_tools
def test_triton_loaded_the_stacks_config(served: Served) -> None:
    # With dynamic model control the model-config API is restricted to holders of the admin key.
    headers = (
        {ADMIN_KEY_HEADER: ADMIN_KEY}
        if dynamic_model_control(served.stack.config.serving.model_repository.source)
        else {}
    )
    for model in served.models:
        status, body = served.get(f"/v2/models/{model}/config", headers)
        assert status == 200
        loaded = json.loads(body)
        rendered = served.rendered.models[model].config
        assert loaded["max_batch_size"] == rendered.max_batch_size
        if rendered.HasField("dynamic_batching"):
            batching = loaded["dynamic_batching"]
            assert (
                int(batching["max_queue_delay_microseconds"]) == rendered.dynamic_batching.max_queue_delay_microseconds
            )
            # Triton leaves out a policy the config does not set (dev): then no bound either side.
            queue = batching.get("default_queue_policy", {})
            assert int(queue.get("max_queue_size", 0)) == rendered.dynamic_batching.default_queue_policy.max_queue_size
        if rendered.instance_group:
            assert [g["count"] for g in loaded["instance_group"]] == [g.count for g in rendered.instance_group]
        assert len(loaded.get("model_warmup", [])) == len(rendered.model_warmup)


@pytest.mark.real_tools
def test_every_model_version_answers_correctly(served: Served) -> None:
    client = triton_http.InferenceServerClient(served.server.http_url)
    rng = np.random.default_rng(7)
    for model in served.models:
        for version in expected_versions(served.rendered, model):
            high = 255.0 if INPUTS[model] == "raw" else 1.0
            data = rng.uniform(0, high, (3, WIDTH[model])).astype(np.float32)
            tensor = triton_http.InferInput(INPUTS[model], list(data.shape), "FP32")
            tensor.set_data_from_numpy(data)
            result = client.infer(model, [tensor], model_version=str(version))
            np.testing.assert_allclose(
                result.as_numpy(OUTPUTS[model]), expected_output(model, version, data), rtol=1e-4, atol=1e-6
            )


def burst(served: Served, model: str, count: int) -> list[str]:
    """`count` single-item requests sent without waiting (gRPC pipelines them); returns the errors."""
    version = expected_versions(served.rendered, model)[-1]
    client = triton_grpc.InferenceServerClient(served.server.grpc_url)
    answered = threading.Semaphore(0)
    errors: list[str] = []

    def done(result: object, error: object) -> None:  # tritonclient passes both by keyword
        if error is not None:
            errors.append(str(error))
        answered.release()

    for _ in range(count):
        tensor = triton_grpc.InferInput(INPUTS[model], [1, WIDTH[model]], "FP32")
        tensor.set_data_from_numpy(np.ones((1, WIDTH[model]), np.float32))
        client.async_infer(model, [tensor], done, model_version=str(version))
    for _ in range(count):
        assert answered.acquire(timeout=60)
    client.close()
    return errors


def settled(served: Served, name: str, model: str, at_least: float) -> float:
    """A counter once it reaches `at_least`: /metrics refreshes on Triton's 2 s metrics interval."""
    deadline = time.monotonic() + 15
    while (value := served.metric(name, model)) < at_least and time.monotonic() < deadline:
        time.sleep(0.25)
    return value


def batching_model(served: Served) -> str:
    return next(m for m in served.models if served.rendered.models[m].config.HasField("dynamic_batching"))


POLICY_REJECTIONS = ("Request timeout expired", "Exceeds maximum queue size")
"""What the stack's queue policy may answer on a slow machine: a bounded queue and timeout at work."""


@pytest.mark.real_tools
def test_dynamic_batching_batches_under_concurrent_load(served: Served) -> None:
    model = batching_model(served)
    bound = served.rendered.models[model].config.dynamic_batching.default_queue_policy.max_queue_size
    wave = min(64, bound or 64)  # within the queue bound
    assert burst(served, model, 1) == []  # first request pays any lazy initialisation
    time.sleep(2.5)  # one metrics interval: the baseline below includes every earlier request
    success0 = settled(served, "nv_inference_request_success", model, 1)
    exec0 = served.metric("nv_inference_exec_count", model)
    errors = [e for _ in range(4) for e in burst(served, model, wave)]
    assert all(e.endswith(POLICY_REJECTIONS) for e in errors), errors[:3]
    served_ok = 4 * wave - len(errors)
    assert served_ok >= wave, f"only {served_ok} of {4 * wave} requests succeeded: {errors[:3]}"
    success = settled(served, "nv_inference_request_success", model, success0 + served_ok) - success0
    executions = served.metric("nv_inference_exec_count", model) - exec0
    assert success >= served_ok
    assert executions < success, f"{model}: {executions} executions for {success} requests: nothing batched"


@pytest.mark.real_tools
def test_operator_apis_need_the_admin_key(served: Served) -> None:
    key = {ADMIN_KEY_HEADER: ADMIN_KEY}
    assert served.post("/v2/repository/index") == 403
    assert served.post("/v2/repository/index", key) == 200
    assert served.get("/v2/logging")[0] == 403
    assert served.get("/v2/logging", key)[0] == 200
    config_status = served.get(f"/v2/models/{served.models[0]}/config")[0]
    assert config_status == (403 if dynamic_model_control(served.stack.config.serving.model_repository.source) else 200)
    # Inference and health stay open to the clients the NetworkPolicy admits.
    assert served.get("/v2/health/ready")[0] == 200


@pytest.mark.real_tools
def test_grpc_callers_send_the_key_with_the_protocol_prefix(served: Served) -> None:
    client = triton_grpc.InferenceServerClient(served.server.grpc_url)
    with pytest.raises(InferenceServerException, match="restricted"):
        client.get_model_repository_index()
    index = client.get_model_repository_index(headers={f"triton-grpc-protocol-{ADMIN_KEY_HEADER}": ADMIN_KEY})
    assert {m.name for m in index.models} == set(served.models)
    client.close()


def test_the_pod_assembly_script_builds_the_published_repository(tmp_path: Path) -> None:
    """What the init container assembles from a store (PVC or bundled files) equals `stackctl model-repo`."""
    for stack_name in STACKS:
        stack = load_stack(stack_name)
        if dynamic_model_control(stack.config.serving.model_repository.source):
            continue
        rendered = render_stack(
            stack_name, stack.config.serving, stack.config.models, read_repository(DEFAULT_MODEL_REPO)
        )
        for deployment, config in stack.config.serving.deployments.items():
            published = tmp_path / f"{stack_name}-{deployment}-published"
            write_model_repository(rendered, published, config.models)
            configs, assembled = (
                tmp_path / f"{stack_name}-{deployment}-rendered",
                tmp_path / f"{stack_name}-{deployment}",
            )
            configs.mkdir()
            assembled.mkdir()
            for model in config.models:
                (configs / f"{model}.pbtxt").write_text(rendered.models[model].text)
            env = {"STACK": stack_name, "MODELS_DIR": str(assembled), "STORE_DIR": str(DEFAULT_MODEL_REPO)}
            subprocess.run(
                ["/bin/sh", "-c", assemble_script(config.models)],
                env={**env, "RENDERED_DIR": str(configs), "PATH": "/usr/bin:/bin"},
                check=True,
            )
            assert _tree(assembled) == _tree(published)


@pytest.mark.real_tools
def test_triton_serves_a_repository_assembled_from_a_config_map_volume(tmp_path: Path) -> None:
    """Bundled files arrive as a ConfigMap volume: items behind `..data` symlinks, as the kubelet lays them out."""
    stack = load_stack("dev")
    config = stack.config.serving.deployments["general"]
    rendered = render_stack("dev", stack.config.serving, stack.config.models, read_repository(DEFAULT_MODEL_REPO))
    store, configs, assembled = tmp_path / "store", tmp_path / "rendered", tmp_path / "models"
    timestamped = store / "..2026_11_30_00_00_00.000000001"
    write_model_repository(rendered, timestamped, config.models)
    (store / "..data").symlink_to(timestamped.name)
    for model in config.models:
        (store / model).symlink_to(f"..data/{model}")
    configs.mkdir()
    for model in config.models:
        (configs / f"{model}.pbtxt").write_text(rendered.models[model].text)
    env = {"STACK": "dev", "MODELS_DIR": str(assembled), "STORE_DIR": str(store), "RENDERED_DIR": str(configs)}
    subprocess.run(["/bin/sh", "-c", assemble_script(config.models)], env={**env, "PATH": "/usr/bin:/bin"}, check=True)
    ports = free_ports()
    args = tritonserver_args(
        "dev",
        config.models,
        source=stack.config.serving.model_repository.source,
        exit_timeout_seconds=stack.config.serving.drain.exit_timeout_seconds,
        model_repository=str(assembled),
        ports=ports,
    )
    with TritonServer(args, ports) as server:
        for model in config.models:
            with urllib.request.urlopen(f"http://{server.http_url}/v2/models/{model}/ready", timeout=10) as response:
                assert response.status == 200


def test_the_assembly_script_fails_loudly_without_versions(tmp_path: Path) -> None:
    (tmp_path / "store" / "classifier").mkdir(parents=True)
    (tmp_path / "rendered").mkdir()
    (tmp_path / "rendered" / "classifier.pbtxt").write_text("")
    run = subprocess.run(
        ["/bin/sh", "-c", assemble_script(["classifier"])],
        env={
            "STACK": "dev",
            "MODELS_DIR": str(tmp_path / "models"),
            "STORE_DIR": str(tmp_path / "store"),
            "RENDERED_DIR": str(tmp_path / "rendered"),
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1
    assert run.stderr == f"no version folder for model classifier under {tmp_path / 'store'}\n"


def _tree(root: Path) -> dict[str, bytes]:
    """Every file below root, following symlinks, except the marker of `stackctl model-repo`."""
    files = {}
    for folder, _dirs, names in os.walk(root, followlinks=True):
        for name in names:
            path = Path(folder) / name
            if not name.startswith(".stackctl") and "__pycache__" not in path.parts:
                files[str(path.relative_to(root))] = path.read_bytes()
    return files
