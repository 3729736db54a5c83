"""A real Prometheus scrapes a real tritonserver under load and evaluates the platform's recording rules.

Scraping uses static target labels equal to what the ServiceMonitor's
relabelings produce (namespace, pod, service, deployment). The rules are the
deployed expressions; only the group's evaluation interval is shortened so
the test takes seconds, not minutes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
import tritonclient.grpc as triton_grpc
import yaml

from components.keda_scaling import GPU_TRIGGER, QUEUE_TRIGGER, trigger_queries
from components.monitoring_rules import GPU_MEMORY_RATIO_POD, GPU_UTILIZATION, GPU_UTILIZATION_POD, rule_groups
from components.triton_manifests import deployment_object_name, tritonserver_args
from local_triton.server import TritonServer, free_ports
from model_repository.publish import write_model_repository
from model_repository.render import render_repository
from model_repository.source import DEFAULT_MODEL_REPO, read_repository
from platform_config.loader import load_stack
from platform_config.schema import PlatformConfig
from tests.test_monitoring import INSTALL_HINT

STACK, DEPLOYMENT = "production", "general"
GPU_ONLY = {GPU_UTILIZATION_POD, GPU_UTILIZATION, GPU_MEMORY_RATIO_POD}
"""Recording rules over Triton's GPU gauges, which a CPU-only server does not export."""


@dataclass
class Stack:
    config: PlatformConfig
    prometheus_url: str
    triton: TritonServer


def _wait_http(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(url)


def query(base: str, expr: str) -> list[dict[str, object]]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, object]] = body["data"]["result"]
    return result


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    prometheus = shutil.which("prometheus")
    assert prometheus, f"prometheus is not on PATH: {INSTALL_HINT}"
    work = tmp_path_factory.mktemp("prometheus")
    config = load_stack(STACK).config
    models = config.serving.deployments[DEPLOYMENT].models
    repo = work / "repo"
    write_model_repository(render_repository(STACK, config, read_repository(DEFAULT_MODEL_REPO)), repo, models)
    ports = free_ports()
    args = tritonserver_args(STACK, config.serving, models, model_repository=str(repo), ports=ports, admin_key="k")
    target = deployment_object_name(DEPLOYMENT)
    groups = rule_groups(config)
    for group in groups:
        group["interval"] = "2s"
    (work / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    with TritonServer(args, ports) as triton:
        labels = {
            "namespace": config.kubernetes.namespace,
            "pod": f"{target}-5d8f7c9b6-abcde",
            "service": target,
            "deployment": target,
        }
        scrape = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "2s"},
            "rule_files": [str(work / "rules.yaml")],
            "scrape_configs": [
                {"job_name": target, "static_configs": [{"targets": [f"127.0.0.1:{ports[2]}"], "labels": labels}]}
            ],
        }
        (work / "prometheus.yml").write_text(yaml.safe_dump(scrape))
        web = free_ports()[0]
        process = subprocess.Popen(
            [
                prometheus,
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'data'}",
                f"--web.listen-address=127.0.0.1:{web}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=(work / "prometheus.log").open("wb"),
        )
        try:
            base = f"http://127.0.0.1:{web}"
            _wait_http(f"{base}/-/ready", 30)
            yield Stack(config, base, triton)
        finally:
            process.terminate()
            process.wait(timeout=30)


def _load(triton: TritonServer, seconds: float) -> None:
    """Steady concurrent requests to the ensemble, which drives every model of the deployment."""
    client = triton_grpc.InferenceServerClient(triton.grpc_url)
    stop = time.monotonic() + seconds
    done = threading.Semaphore(0)

    def answered(result: object, error: object) -> None:  # tritonclient passes both by keyword
        done.release()

    while time.monotonic() < stop:
        for _ in range(16):
            tensor = triton_grpc.InferInput("raw", [1, 128], "FP32")
            tensor.set_data_from_numpy(np.full((1, 128), 128, np.float32))
            client.async_infer("pipeline", [tensor], answered)
        for _ in range(16):
            done.acquire(timeout=30)
    client.close()


def test_every_recording_rule_returns_a_number(stack: Stack) -> None:
    _load(stack.triton, 12)
    records = [r["record"] for g in rule_groups(stack.config) for r in g["rules"] if "record" in r]
    deadline = time.monotonic() + 30
    missing = records
    while time.monotonic() < deadline:
        missing = [r for r in records if r not in GPU_ONLY and not query(stack.prometheus_url, r)]
        if not missing:
            break
        time.sleep(1)
    assert missing == [], f"no data for {missing}"
    for record in records:
        result = query(stack.prometheus_url, record)
        if record in GPU_ONLY:
            assert result == [], f"{record} has data without a GPU?"
            continue
        for sample in result:
            value = float(sample["value"][1])  # type: ignore[index]
            assert value == value, f"{record} is NaN"  # noqa: PLR0124 - NaN check
            labels = sample["metric"]
            assert labels["namespace"] == stack.config.kubernetes.namespace  # type: ignore[index]
            assert labels["deployment"] == deployment_object_name(DEPLOYMENT)  # type: ignore[index]


def test_every_keda_query_returns_exactly_one_series_and_sees_the_queue(stack: Stack) -> None:
    """The ScaledObject's queries, run as KEDA runs them; the GPU one has no data without a GPU."""
    queries = trigger_queries(stack.config, DEPLOYMENT)
    assert query(stack.prometheus_url, queries[GPU_TRIGGER]) == []
    seen_queue = 0.0
    loader = threading.Thread(target=lambda: _load(stack.triton, 10))
    loader.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and seen_queue <= 0:
            [sample] = query(stack.prometheus_url, queries[QUEUE_TRIGGER])
            seen_queue = max(seen_queue, float(sample["value"][1]))  # type: ignore[index]
            time.sleep(0.5)
    finally:
        loader.join()
    assert seen_queue > 0, "the pending-request query never rose above zero under load"
    [sample] = query(stack.prometheus_url, queries[QUEUE_TRIGGER])
    assert sample["metric"] == {}, "an aggregated query: no labels, one series"


def test_batching_shows_in_the_recorded_batch_size(stack: Stack) -> None:
    _load(stack.triton, 6)
    result = query(stack.prometheus_url, 'namespace_deployment_model:nv_inference_batch_size:avg1m{model="classifier"}')
    assert result, "no batch size recorded for classifier"
    assert float(result[0]["value"][1]) > 1.0  # type: ignore[index]


def test_the_alerts_evaluate_without_errors(stack: Stack) -> None:
    with urllib.request.urlopen(f"{stack.prometheus_url}/api/v1/rules", timeout=10) as response:
        groups = json.load(response)["data"]["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    assert len(rules) == sum(len(g["rules"]) for g in rule_groups(stack.config))
    assert [r["name"] for r in rules if r.get("health") != "ok"] == []
