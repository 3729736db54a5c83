"""A real tritonserver serving one deployment of a stack, scraped by a real Prometheus, on loopback.

Scraping uses static target labels equal to what the ServiceMonitor's relabelings produce
(namespace, pod, service, deployment), so the platform's rules and KEDA's queries select it.
"""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as triton_grpc
import yaml

from model_publishing.publish import write_model_repository
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO
from platform_config.schema import PlatformConfig
from program.platform import monitoring_args, served_plainly
from tests.support.local_triton.server import TritonServer, free_ports
from tests.support.promtool import INSTALL_HINT
from triton_platform.model_packaging.source import read_repository
from triton_platform.monitoring.monitoring_args import MonitoringArgs
from triton_platform.monitoring.monitoring_rules import load_queries, rule_groups
from triton_platform.monitoring.monitoring_settings import monitoring_settings
from triton_platform.serving.serving_context import deployment_object_name
from triton_platform.serving.triton_server_args import tritonserver_args


@dataclass
class Served:
    config: PlatformConfig
    monitoring: MonitoringArgs
    """What the stack's Monitoring builds its rules from."""
    queries: dict[str, str]
    """Each deployment's load query, as the stack's ScaledObjects carry it."""
    prometheus_url: str
    triton: TritonServer
    prometheus: subprocess.Popen[bytes]
    prometheus_command: list[str]
    """How Prometheus was started: its storage path and address, the same on every start."""
    prometheus_log: Path

    def restart_prometheus(self) -> None:
        """Prometheus started again on the same storage path and address, as a pod is on its persistent volume
        (Monitoring's `storage`), after the old process has exited."""
        assert self.prometheus.poll() is not None, "stop Prometheus before starting it again"
        self.prometheus = subprocess.Popen(
            self.prometheus_command, stdout=subprocess.DEVNULL, stderr=self.prometheus_log.open("ab")
        )
        wait_http(f"{self.prometheus_url}/-/ready", 60)


def wait_http(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(url)


def query(base: str, expr: str, at: float | None = None) -> list[dict[str, Any]]:
    """An instant query, now or `at` (Unix seconds)."""
    params = {"query": expr, **({"time": f"{at:.3f}"} if at is not None else {})}
    url = f"{base}/api/v1/query?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@contextmanager
def static_metrics(text: str | Callable[[], str]) -> Iterator[int]:
    """An HTTP server on loopback answering every GET with `text` (or what it returns then) in Prometheus' format;
    yields its port."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = (text if isinstance(text, str) else text()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        thread.join(timeout=10)


@contextmanager
def serve_with_prometheus(
    stack: str,
    config: PlatformConfig,
    deployment: str,
    work: Path,
    *,
    rule_interval: str = "2s",
    gpu_memory: tuple[float, float] | None = None,
    more_metrics: Callable[[], str] | None = None,
) -> Iterator[Served]:
    """Triton with the stack's rendered configs for `deployment`, and Prometheus with the stack's rules.

    Only the rule groups' evaluation interval is shortened, so tests take seconds, not minutes.
    `gpu_memory` (used, total bytes) adds the two GPU-memory gauges Triton exports on a GPU node
    (core src/metrics.cc) and a CPU-only server lacks, from a static target with the pod's labels; `more_metrics`
    what else that target answers at each scrape (series a 2.51 server does not export).
    """
    prometheus = shutil.which("prometheus")
    assert prometheus, f"prometheus is not on PATH: {INSTALL_HINT}"
    models = config.serving.deployments[deployment].models
    repo = work / "repo"
    rendered = render_stack(stack, config.serving, config.models, read_repository(DEFAULT_MODEL_REPO))
    write_model_repository(rendered, repo, models)
    ports = free_ports()
    args = tritonserver_args(
        stack,
        models,
        source=config.serving.model_repository.source,
        exit_timeout_seconds=config.serving.drain.exit_timeout_seconds,
        model_repository=str(repo),
        ports=ports,
        admin_key="k",
    )
    target = deployment_object_name(deployment)
    monitoring = monitoring_settings(stack, monitoring_args(config, served_plainly(config, rendered), rendered))
    queries = load_queries(monitoring)
    groups = rule_groups(monitoring)
    for group in groups:
        group["interval"] = rule_interval
    (work / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    gpu = ""
    if gpu_memory is not None:
        used, total = gpu_memory
        gpu = "".join(
            f'{name}{{gpu_uuid="GPU-local"}} {value:.0f}\n'
            for name, value in (("nv_gpu_memory_used_bytes", used), ("nv_gpu_memory_total_bytes", total))
        )

    def static_text() -> str:
        return gpu + (more_metrics() if more_metrics is not None else "")

    with TritonServer(args, ports) as triton, static_metrics(static_text) as static_port:
        labels = {
            "namespace": config.kubernetes.namespace,
            "pod": f"{target}-5d8f7c9b6-abcde",
            "service": target,
            "deployment": target,
        }
        targets = [f"127.0.0.1:{ports[2]}"] + ([f"127.0.0.1:{static_port}"] if gpu or more_metrics else [])
        scrape = {
            "global": {"scrape_interval": "1s", "evaluation_interval": rule_interval},
            "rule_files": [str(work / "rules.yaml")],
            "scrape_configs": [{"job_name": target, "static_configs": [{"targets": targets, "labels": labels}]}],
        }
        (work / "prometheus.yml").write_text(yaml.safe_dump(scrape))
        web = free_ports()[0]
        command = [
            prometheus,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address=127.0.0.1:{web}",
        ]
        log = work / "prometheus.log"
        served = Served(
            config,
            monitoring,
            queries,
            f"http://127.0.0.1:{web}",
            triton,
            subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("wb")),
            command,
            log,
        )
        try:
            wait_http(f"{served.prometheus_url}/-/ready", 30)
            yield served
        finally:
            if served.prometheus.poll() is None:
                served.prometheus.terminate()
                served.prometheus.wait(timeout=30)


def load(triton: TritonServer, seconds: float, *, model: str = "pipeline", concurrency: int = 16) -> None:
    """Closed-loop requests, `concurrency` in flight, to `model` (the ensemble drives every model)."""
    client = triton_grpc.InferenceServerClient(triton.grpc_url)
    stop = time.monotonic() + seconds
    done = threading.Semaphore(0)
    name = "raw" if model == "pipeline" else "input_tensor"

    def answered(result: object, error: object) -> None:  # tritonclient passes both by keyword
        done.release()

    while time.monotonic() < stop:
        for _ in range(concurrency):
            tensor = triton_grpc.InferInput(name, [1, 128], "FP32")
            tensor.set_data_from_numpy(np.full((1, 128), 128, np.float32))
            client.async_infer(model, [tensor], answered)
        for _ in range(concurrency):
            done.acquire(timeout=30)
    client.close()
