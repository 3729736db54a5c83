"""A real Prometheus scrapes a real tritonserver under load and evaluates the platform's recording rules.

Scraping uses static target labels equal to what the ServiceMonitor's
relabelings produce (namespace, pod, service, deployment). The rules are the
deployed expressions; only the group's evaluation interval is shortened so
the test takes seconds, not minutes.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from platform_config.loader import load_stack
from tests.support.local_cluster import wait_until
from tests.support.local_triton.server import free_ports
from tests.support.triton_prometheus import Served, load, query, serve_with_prometheus, wait_http
from triton_platform.monitoring.monitoring_rules import rule_groups
from triton_platform.recorded_series import (
    DCGM_FRAMEBUFFER_USED,
    DCGM_GPU_UTILIZATION,
    GPU_MEMORY_RATIO_POD,
    GPU_UTILIZATION,
    GPU_UTILIZATION_POD,
)
from triton_platform.scaling.keda_scaling import gpu_memory_query
from triton_platform.serving.serving_context import deployment_object_name

pytestmark = pytest.mark.real_tools  # tritonserver and prometheus

STACK, DEPLOYMENT = "production", "general"
GPU_ONLY = {GPU_UTILIZATION_POD, GPU_UTILIZATION, GPU_MEMORY_RATIO_POD, DCGM_GPU_UTILIZATION, DCGM_FRAMEBUFFER_USED}
"""Recording rules over Triton's GPU gauges, which a CPU-only server does not export, and over the DCGM exporter's,
which needs a GPU (tests/components/triton_platform/monitoring/test_gpu_health_rules.py checks those with promtool)."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_with_prometheus(
        STACK, load_stack(STACK).config, DEPLOYMENT, tmp_path_factory.mktemp("prometheus")
    ) as served:
        yield served


def test_every_recording_rule_returns_a_number(stack: Served) -> None:
    load(stack.triton, 12)
    groups = rule_groups(stack.monitoring)
    records = [r["record"] for g in groups for r in g["rules"] if "record" in r]
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
            value = float(sample["value"][1])
            assert value == value, f"{record} is NaN"  # noqa: PLR0124 - NaN check
            labels = sample["metric"]
            assert labels["namespace"] == stack.config.kubernetes.namespace
            assert labels["deployment"] == deployment_object_name(DEPLOYMENT)


def test_every_keda_query_returns_exactly_one_series_and_sees_the_load(stack: Served) -> None:
    """The ScaledObject's queries, run as KEDA runs them; the GPU one has no data without a GPU.

    Under load production's demand rises above zero and stays far below 1: the Python client sends a few hundred
    requests a second, against the 13,554 a pod serves by its profile (a busy ratio, on another stack, would stay
    at most 1 too, with some slack: compute and execution counters are scraped at slightly different moments)."""
    assert stack.monitoring["deployments"][DEPLOYMENT]["signal"]["kind"] == "demand"
    signal_query = stack.queries[DEPLOYMENT]
    gpu_query = gpu_memory_query(stack.config.kubernetes.namespace, deployment_object_name(DEPLOYMENT))
    assert query(stack.prometheus_url, gpu_query) == []
    seen = 0.0
    loader = threading.Thread(target=lambda: load(stack.triton, 15))
    loader.start()
    try:
        # A Prometheus that has just started has no series until its first scrapes fill the query's rate window
        # (this test may run first in its worker, not after the recording-rule test).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and seen <= 0:
            for sample in query(stack.prometheus_url, signal_query):
                seen = max(seen, float(sample["value"][1]))
            time.sleep(0.5)
    finally:
        loader.join()
    assert 0 < seen <= 1.2, f"the demand query read {seen} under load on the one replica"
    [sample] = query(stack.prometheus_url, signal_query)
    assert sample["metric"] == {}, "an aggregated query: no labels, one series"


LOADED_WINDOW = 62
"""The load queries' rate window (1m), and a scrape more."""


def test_a_second_prometheus_replica_answers_keda_alike_from_its_own_copy(stack: Served, tmp_path: Path) -> None:
    """Production runs Prometheus as an HA pair (`monitoring.replicas: 2`) behind the operator's Service: KEDA's
    query may reach either. Each scrapes every target and evaluates every rule itself, so each answers with one
    series, none counted twice, and the two agree up to their scrape times."""
    port = free_ports()[0]
    command = [
        arg.replace(arg.split("=", 1)[1], str(tmp_path / "data"))
        if arg.startswith("--storage.tsdb.path=")
        else arg.replace(arg.split("=", 1)[1], f"127.0.0.1:{port}")
        if arg.startswith("--web.listen-address=")
        else arg
        for arg in stack.prometheus_command
    ]
    replica = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=(tmp_path / "log").open("wb"))
    try:
        second = f"http://127.0.0.1:{port}"
        wait_http(f"{second}/-/ready", 30)
        signal_query = stack.queries[DEPLOYMENT]
        record = "namespace_deployment_model:nv_inference_request_success:rate1m"
        # A steady load longer than the query's 1m window, read by both at one instant: both windows then hold
        # the same minute of load, scraped by each on its own.
        loader = threading.Thread(target=lambda: load(stack.triton, LOADED_WINDOW + 8))
        loader.start()
        try:
            time.sleep(LOADED_WINDOW + 5)
            at = time.time()
            answers = [query(base, signal_query, at=at) for base in (stack.prometheus_url, second)]
            rates = [query(base, record, at=at) for base in (stack.prometheus_url, second)]
        finally:
            loader.join()
    finally:
        replica.terminate()
        replica.wait(timeout=30)
    for [sample] in answers:
        assert sample["metric"] == {}
    first, other = (float(a[0]["value"][1]) for a in answers)
    assert first > 0
    assert abs(first - other) <= 0.2 * max(first, other), (first, other)
    # One series per model on each replica: no replica label splits or doubles a recorded series.
    models = [sorted(sample["metric"]["model"] for sample in result) for result in rates]
    assert models[0] == models[1]
    assert len(models[0]) == len(set(models[0])) > 0


def test_batching_shows_in_the_recorded_batch_size(stack: Served) -> None:
    load(stack.triton, 6)
    record = 'namespace_deployment_model:nv_inference_batch_size:avg1m{model="classifier"}'
    # The rule records once its group has been evaluated after a scrape of the load (it may run first).
    wait_until("a batch size recorded for classifier", lambda: bool(query(stack.prometheus_url, record)), 60)
    assert float(query(stack.prometheus_url, record)[0]["value"][1]) > 1.0


def loaded_rules(prometheus_url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{prometheus_url}/api/v1/rules", timeout=10) as response:
        groups = json.load(response)["data"]["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_the_alerts_evaluate_without_errors(stack: Served) -> None:
    # A rule not yet evaluated reports health "unknown" (this test may run first).
    wait_until(
        "every rule's first evaluation",
        lambda: all(r.get("health") != "unknown" for r in loaded_rules(stack.prometheus_url)),
        60,
    )
    rules = loaded_rules(stack.prometheus_url)
    assert len(rules) == sum(len(g["rules"]) for g in rule_groups(stack.monitoring))
    assert [r["name"] for r in rules if r.get("health") != "ok"] == []
