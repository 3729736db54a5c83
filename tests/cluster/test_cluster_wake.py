"""Scale to zero and wake on the first request, for real (issue 41): KEDA and the KEDA HTTP add-on (v0.15.0, built
from its source: interceptor, scaler, operator) on the local control plane, a real CPU tritonserver behind the pod.

The dev stack, whose `general` deployment idles at zero and wakes on request (`wake`), deployed to the local
control plane with the Pulumi CLI: its Deployment, its pods' Service, its two InterceptorRoutes, the ExternalName
Service clients call and its ScaledObject (min 0, the add-on's `external-push` triggers beside the Prometheus
ones), as the stack renders them. Only the cooldown is shortened, and the Prometheus address pointed at a real,
empty Prometheus on loopback (at zero there are no series; KEDA reads none as no load). KEDA scales the Deployment
to zero; then one HTTP and one gRPC inference go to the interceptor, with the Service's name as their host, as a
client calling the Service reaches it through the wake Service. Both are held while the Deployment is at zero;
KEDA scales it to one on the add-on's push, kwok runs the pod on the node wake-0, and the stand-in kubelet
(tests/support/wake_cluster.py) starts tritonserver for it and marks it Ready once `/v2/health/ready` answers. Both must
then be served, after the pod is Ready and within the deployment's `wake.budgetSeconds`. Each part of the wake
is measured and written to wake.json in the test's folder (docs/scale-to-zero-measured.md quotes a run).
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as triton_grpc
import yaml

from model_publishing.publish import write_model_repository
from platform_config.loader import load_stack
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO
from tests.support.local_cluster import LocalCluster, edit_stack, point_stack_at, start_cluster, wait_until
from tests.support.local_triton.server import free_ports
from tests.support.pulumi_cli import make_project
from tests.support.triton_prometheus import wait_http
from tests.support.wake_cluster import AddressedTriton, KubeApi, WakeKubelet, relative
from triton_platform.http_add_on import pods_service_name
from triton_platform.model_packaging.source import read_repository
from triton_platform.serving.serving_context import deployment_object_name
from triton_platform.serving.triton_server_args import tritonserver_args
from triton_platform.triton_ports import GRPC_PORT, HTTP_PORT

pytestmark = pytest.mark.real_tools  # the local control plane, KEDA, the HTTP add-on, Pulumi and tritonserver

STACK, DEPLOYMENT = "dev", "general"
CONFIG = load_stack(STACK).config
NAMESPACE = CONFIG.kubernetes.namespace
TARGET = deployment_object_name(DEPLOYMENT)
PODS_SERVICE = pods_service_name(TARGET)
SERVED = CONFIG.serving.deployments[DEPLOYMENT]
MODELS = SERVED.models
MODEL = "classifier"
assert SERVED.wake is not None, f"{STACK}'s {DEPLOYMENT} no longer wakes on request: this test needs one that does"
assert SERVED.replicas.min == 0, f"{STACK}'s {DEPLOYMENT} no longer idles at zero"
BUDGET_SECONDS = SERVED.wake.budget_seconds
WAKES = 3  # from zero, one after another: the figures' spread
COOLDOWN_SECONDS = 10  # the stack's 600, shortened: the Deployment reaches zero in seconds
SELECTOR = f"app.kubernetes.io/instance={TARGET},app.kubernetes.io/name=triton-inference-server"
ORDER = ("scaled", "pod_created", "pod_running", "triton_ready", "marked_ready", "endpoint_ready")


@contextmanager
def empty_prometheus(work: Path) -> Iterator[str]:
    """A real Prometheus on loopback that scrapes nothing: KEDA's Prometheus triggers read no series, as at zero."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus is not on PATH: `make tools` installs it (scripts/install-tools)"
    work.mkdir(parents=True)
    (work / "prometheus.yml").write_text(yaml.safe_dump({"global": {"scrape_interval": "15s"}}))
    url = f"http://127.0.0.1:{free_ports()[0]}"
    command = [
        binary,
        f"--config.file={work / 'prometheus.yml'}",
        f"--storage.tsdb.path={work / 'data'}",
        f"--web.listen-address={url.removeprefix('http://')}",
    ]
    with (work / "prometheus.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_http(f"{url}/-/ready", 60)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@dataclass
class Wake:
    cluster: LocalCluster
    api: KubeApi
    kubelet: WakeKubelet
    work: Path


@pytest.fixture(scope="module")
def wake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wake]:
    work = tmp_path_factory.mktemp("wake")
    repo = work / "repo"
    rendered = render_stack(STACK, CONFIG.serving, CONFIG.models, read_repository(DEFAULT_MODEL_REPO))
    write_model_repository(rendered, repo, MODELS)
    cluster = start_cluster(work / "cluster", wake=True)
    kubelet: WakeKubelet | None = None
    try:
        address = cluster.wake_host(f"{PODS_SERVICE}.{NAMESPACE}")
        ports = (HTTP_PORT, GRPC_PORT, free_ports()[2])
        args = tritonserver_args(
            STACK,
            MODELS,
            source=CONFIG.serving.model_repository.source,
            exit_timeout_seconds=CONFIG.serving.drain.exit_timeout_seconds,
            model_repository=str(repo),
            ports=ports,
            admin_key="k",
        )
        api = KubeApi(cluster.kubeconfig)
        kubelet = WakeKubelet(api, NAMESPACE, TARGET, SELECTOR, lambda: AddressedTriton(args, ports, address=address))
        kubelet.endpoint_service = PODS_SERVICE
        kubelet.serving.set()
        kubelet.start()
        with empty_prometheus(work / "prometheus") as prometheus_url:
            project = make_project(work / "pulumi", deploys=True)
            stack_file = project.root / "stacks" / f"Pulumi.{STACK}.yaml"
            point_stack_at(stack_file, cluster)

            def shorter_cooldown(config: dict[str, Any]) -> None:
                scaling = config["triton-platform:scaling"]
                scaling["prometheusAddress"] = prometheus_url
                scaling["cooldownSeconds"] = COOLDOWN_SECONDS

            edit_stack(stack_file, shorter_cooldown)
            project.ok("stack", "init", STACK)
            project.ok("up", "--yes", "--skip-preview", stack=STACK)
            yield Wake(cluster, api, kubelet, work)
    finally:
        if kubelet is not None:
            kubelet.stop()
        cluster.stop()


@dataclass
class Answer:
    sent: float
    answered: float | None = None
    outcome: str = ""
    error: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def infer_http(port: int, answer: Answer) -> None:
    """POST /v2/models/classifier/infer to the interceptor, as a client calling the Service by name sends it."""
    body = json.dumps(
        {"inputs": [{"name": "input_tensor", "shape": [1, 128], "datatype": "FP32", "data": [0.5] * 128}]}
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=BUDGET_SECONDS + 60)
    try:
        connection.request(
            "POST",
            f"/v2/models/{MODEL}/infer",
            body,
            {"Host": f"{TARGET}.{NAMESPACE}:{HTTP_PORT}", "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        text = response.read().decode(errors="replace")
        answer.answered = time.monotonic()
        answer.outcome = str(response.status)
        answer.details = {"cold_start": response.getheader("X-KEDA-HTTP-Cold-Start"), "body": text[:300]}
    except Exception as err:
        answer.answered = time.monotonic()
        answer.error = repr(err)
    finally:
        connection.close()


def infer_grpc(port: int, answer: Answer) -> None:
    """ModelInfer over gRPC (h2c) to the interceptor, with the Service's name as the authority."""
    client = triton_grpc.InferenceServerClient(
        f"127.0.0.1:{port}", channel_args=[("grpc.default_authority", f"{TARGET}.{NAMESPACE}:{GRPC_PORT}")]
    )
    try:
        tensor = triton_grpc.InferInput("input_tensor", [1, 128], "FP32")
        tensor.set_data_from_numpy(np.full((1, 128), 0.5, np.float32))
        result = client.infer(MODEL, [tensor], client_timeout=BUDGET_SECONDS + 60)
        answer.answered = time.monotonic()
        answer.outcome = "OK"
        response = result.get_response()
        answer.details = {"outputs": [o.name for o in response.outputs], "model": response.model_name}
    except Exception as err:
        answer.answered = time.monotonic()
        answer.error = repr(err)
    finally:
        client.close()


def held_metrics(url: str) -> list[str]:
    """The interceptor's own series for the routes, as Prometheus would scrape them (its OpenTelemetry exporter)."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return [line for line in text.splitlines() if not line.startswith("#") and TARGET in line]


def wake_once(wake: Wake, scrape: bool) -> dict[str, Any]:
    """From zero: KEDA has scaled the Deployment down and its pod is gone. One HTTP and one gRPC request, both
    checked served and held; what was measured, returned."""
    kubelet = wake.kubelet
    # No requests: KEDA scales the Deployment to zero after the cooldown; its pod and its server go.
    wait_until(
        "KEDA to scale the Deployment to zero",
        lambda: kubelet.replicas() == 0 and not wake.api.pods(NAMESPACE, SELECTOR) and not kubelet.running(),
        timeout=180,
    )
    assert not kubelet.errors, kubelet.errors
    scaled_object = wake.api.get(f"/apis/keda.sh/v1alpha1/namespaces/{NAMESPACE}/scaledobjects/{TARGET}")
    active = [c["status"] for c in scaled_object["status"]["conditions"] if c["type"] == "Active"]
    assert active != ["True"], scaled_object["status"]
    time.sleep(2)

    kubelet.reset()
    port = wake.cluster.interceptor_proxy_port
    start = time.monotonic()
    http_answer, grpc_answer = Answer(start), Answer(start)
    threads = [
        threading.Thread(target=infer_http, args=(port, http_answer), daemon=True),
        threading.Thread(target=infer_grpc, args=(port, grpc_answer), daemon=True),
    ]
    for thread in threads:
        thread.start()
    series: list[str] = []
    held = True
    if scrape:  # while both are held: KEDA cannot have scaled yet (the scaler pings the interceptor every 0.5 s)
        time.sleep(0.2)
        series = held_metrics(wake.cluster.interceptor_metrics_url)
        held = http_answer.answered is None and grpc_answer.answered is None
    for thread in threads:
        thread.join(timeout=BUDGET_SECONDS + 90)
    assert not kubelet.errors, kubelet.errors
    times = dict(kubelet.times)
    measured: dict[str, Any] = {
        "seconds_after_the_requests": relative(times, start, ORDER),
        "http": {
            "status": http_answer.outcome,
            "error": http_answer.error,
            "answered": round((http_answer.answered or start) - start, 2),
            **http_answer.details,
        },
        "grpc": {
            "status": grpc_answer.outcome,
            "error": grpc_answer.error,
            "answered": round((grpc_answer.answered or start) - start, 2),
            **grpc_answer.details,
        },
    }
    if scrape:
        measured["interceptor_series_while_held"] = series
    print(f"wake from zero: {json.dumps(measured)}")

    # Served: 200 and an inference result, over HTTP and over gRPC.
    assert http_answer.outcome == "200", measured["http"]
    assert '"outputs"' in http_answer.details["body"], measured["http"]
    assert http_answer.details["cold_start"] == "true", measured["http"]
    assert grpc_answer.outcome == "OK", measured["grpc"]
    assert grpc_answer.details["outputs"], measured["grpc"]
    # Held: the Deployment was at zero, KEDA scaled it on the requests, and neither was answered before its pod
    # was Ready (nothing could have answered: tritonserver did not run until the wake started it).
    for step in ("scaled", "pod_created", "pod_running", "triton_ready", "marked_ready"):
        assert step in times, f"no {step} seen: {measured}"
    for answer in (http_answer, grpc_answer):
        assert answer.answered is not None, measured
        assert answer.answered > times["marked_ready"], measured
        # Within the budget.
        assert answer.answered - start < BUDGET_SECONDS, measured
    if scrape:
        assert held, measured
        # The interceptor counts both as in flight on their routes (what the platform's wake alert reads).
        in_flight = [line for line in series if line.startswith("interceptor_request_concurrency")]
        assert any(f'route_name="{TARGET}-http"' in line for line in in_flight), series
        assert any(f'route_name="{TARGET}-grpc"' in line for line in in_flight), series
    return measured


def test_http_and_grpc_requests_wake_a_deployment_at_zero(wake: Wake) -> None:
    # Each wake is checked held and served where it happens (wake_once); here, that every one was, within the budget.
    wakes = [wake_once(wake, scrape=index == 0) for index in range(WAKES)]
    assert [(w["http"]["status"], w["grpc"]["status"]) for w in wakes] == [("200", "OK")] * WAKES, wakes
    assert all(w[p]["answered"] < BUDGET_SECONDS for w in wakes for p in ("http", "grpc")), wakes
    summary = {
        "wakes": wakes,
        "budget_seconds": BUDGET_SECONDS,
        "cooldown_seconds": COOLDOWN_SECONDS,
    }
    (wake.work / "wake.json").write_text(json.dumps(summary, indent=2))
    print(f"wake.json: {wake.work / 'wake.json'}")
