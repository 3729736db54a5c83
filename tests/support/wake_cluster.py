"""A wake from zero on the local control plane (`scripts/local-cluster start --wake`): a fast client of its API
server, and a stand-in kubelet that runs a real CPU tritonserver for each pod kwok puts on the node `wake-0`.

kwok-wake runs such a pod (Running, an IP) but leaves it not Ready; `WakeKubelet` starts tritonserver for it on
the cluster's wake address (`LocalCluster.wake_ip`) at the ports the pods' Service names, and marks the pod Ready
only once tritonserver answers `/v2/health/ready`, as a kubelet does on Triton's readiness probe. Every step is
timed (`WakeKubelet.times`), in `time.monotonic()` seconds.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.local_triton.server import TritonServer

WAKE_NODE = "wake-0"
KILL_GRACE_SECONDS = 3
"""tritonserver drains for its --exit-timeout-secs (30 s in dev) after TERM; a deleted pod's server is killed
sooner, so the next pod's server can take the same address and ports."""


class KubeApi:
    """The cluster's API server over HTTPS with its admin token: polls in milliseconds where kubectl takes 100s."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.server = cluster["server"]
        self.token = config["users"][0]["user"]["token"]
        self.context = ssl.create_default_context(cafile=cluster["certificate-authority"])

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as err:
            if err.code == 404 and method == "GET":
                return None
            raise AssertionError(f"{method} {path}: {err.code} {err.read().decode(errors='replace')}") from err

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        query = urllib.parse.quote(selector)
        return list(self.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={query}")["items"])

    def mark_ready(self, namespace: str, pod: str) -> None:
        """What a kubelet reports when the readiness probe passes: the pod and its containers Ready."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conditions = [
            {"type": kind, "status": "True", "lastTransitionTime": now} for kind in ("Ready", "ContainersReady")
        ]
        self.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{pod}/status",
            {"status": {"conditions": conditions}},
            "application/strategic-merge-patch+json",
        )


@dataclass
class AddressedTriton(TritonServer):
    """tritonserver on one loopback address (the cluster's wake address, where its Service's name resolves for
    the interceptor), so it can take the Service's own ports (8000, 8001) beside other tests' servers."""

    address: str = "127.0.0.1"

    @property
    def http_url(self) -> str:
        return f"{self.address}:{self.ports[0]}"

    @property
    def grpc_url(self) -> str:
        return f"{self.address}:{self.ports[1]}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.address}:{self.ports[2]}/metrics"

    def command(self, backend_dir: Path) -> list[str]:
        return [
            *super().command(backend_dir)[:-3],
            f"--http-address={self.address}",
            f"--grpc-address={self.address}",
            f"--metrics-address={self.address}",
        ]


@dataclass
class WakeKubelet:
    """Runs tritonserver (`make_server()`) for each pod of `selector` in `namespace` that kwok-wake runs, marks it
    Ready once tritonserver is ready, and stops the server when the pod goes. Times every step it sees."""

    api: KubeApi
    namespace: str
    deployment: str
    selector: str
    make_server: Callable[[], TritonServer]
    interval: float = 0.05
    times: dict[str, float] = field(default_factory=dict)
    """First time seen: `scaled` (the Deployment's replicas above 0), `pod_created`, `pod_running` (kwok's IP),
    `triton_ready`, `marked_ready`, `endpoint_ready` (the pods' Service's EndpointSlice)."""
    errors: list[str] = field(default_factory=list)
    served_pods: list[str] = field(default_factory=list)
    _servers: dict[str, TritonServer] = field(default_factory=dict)
    serving: threading.Event = field(default_factory=threading.Event)
    """Set: run servers for pods. Until then pods are left Running and not Ready, as while an image pulls.
    Pods on wake-0 of other workloads (the GPU device plugin's) are marked Ready at once."""
    _stopping: set[str] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    endpoint_service: str | None = None

    def note(self, what: str) -> None:
        self.times.setdefault(what, time.monotonic())

    def reset(self) -> None:
        self.times.clear()

    def replicas(self) -> int:
        deployment = self.api.get(f"/apis/apps/v1/namespaces/{self.namespace}/deployments/{self.deployment}")
        return int((deployment or {}).get("spec", {}).get("replicas") or 0)

    def running(self) -> bool:
        """Whether a tritonserver runs (or starts, or stops) for a pod."""
        return bool(self._servers)

    def start(self) -> WakeKubelet:
        self._thread = threading.Thread(target=self._run, name="wake-kubelet", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=30)
        for server in self._servers.values():
            server.stop()
        self._servers.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._step()
            except Exception as err:
                self.errors.append(repr(err))
            self._stop.wait(self.interval)

    def _step(self) -> None:
        if self.replicas() > 0:
            self.note("scaled")
        pods = {p["metadata"]["name"]: p for p in self.api.pods(self.namespace, self.selector)}
        live = {name: p for name, p in pods.items() if not p["metadata"].get("deletionTimestamp")}
        for name in list(self._servers):
            if name not in live and name not in self._stopping:
                # A deleted pod's server goes as a kubelet kills a container: TERM, then KILL after a grace (short
                # here: the pod is gone from the API already). Apart, so the loop keeps timing what it sees.
                self._stopping.add(name)
                threading.Thread(target=self._kill, args=(name,), daemon=True).start()
        for name, pod in live.items():
            self.note("pod_created")
            if pod["spec"].get("nodeName") != WAKE_NODE or not pod.get("status", {}).get("podIP"):
                continue
            self.note("pod_running")
            if not self.serving.is_set() or name in self._servers or name in self.served_pods:
                continue
            self.served_pods.append(name)
            threading.Thread(target=self._serve, args=(name,), daemon=True).start()
        for pod in self.api.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{WAKE_NODE}")["items"]:
            ready = [c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == "Ready"]
            labels = pod["metadata"].get("labels") or {}
            theirs = pod["metadata"]["namespace"] == self.namespace and all(
                labels.get(key) == value for key, value in self._selector.items()
            )
            if not theirs and pod.get("status", {}).get("podIP") and ready and ready[0]["status"] != "True":
                self.api.mark_ready(pod["metadata"]["namespace"], pod["metadata"]["name"])
        if self.endpoint_service and "endpoint_ready" not in self.times:
            query = urllib.parse.quote(f"kubernetes.io/service-name={self.endpoint_service}")
            slices = self.api.get(
                f"/apis/discovery.k8s.io/v1/namespaces/{self.namespace}/endpointslices?labelSelector={query}"
            )
            ready = [
                e for s in slices["items"] for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready")
            ]
            if ready:
                self.note("endpoint_ready")

    @property
    def _selector(self) -> dict[str, str]:
        return dict(term.split("=", 1) for term in self.selector.split(","))

    def _kill(self, pod: str) -> None:
        server = self._servers[pod]
        process = server.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        server.stop()
        self._servers.pop(pod, None)
        self._stopping.discard(pod)

    def _serve(self, pod: str) -> None:
        server = self.make_server()
        self._servers[pod] = server
        try:
            server.start()
            self.note("triton_ready")
            self.api.mark_ready(self.namespace, pod)
            self.note("marked_ready")
        except Exception as err:
            self._servers.pop(pod, None)
            server.stop()
            gone = self.api.get(f"/api/v1/namespaces/{self.namespace}/pods/{pod}") is None
            if not gone:  # a pod scaled away while its server started is no failure
                self.errors.append(f"tritonserver for {pod}: {err}")


def relative(times: dict[str, float], start: float, order: Sequence[str]) -> dict[str, float]:
    """Each named moment, seconds after `start`, in `order` (those seen)."""
    return {name: round(times[name] - start, 2) for name in order if name in times}
