"""The `time-to-first-token` trigger scaling a streaming Deployment for real: Prometheus, KEDA's operator and
metrics adapter, and kube-controller-manager's HPA scaling staging's `general` Deployment, which serves the
decoupled `tokens` model with a TTFT objective, through the stack's own ScaledObject.

Set up as tests/cluster/test_cluster_scaling.py is (a real CPU tritonserver and Prometheus outside the cluster, the
stack's copy deployed to the local control plane). The first-response histogram comes from a static target with the
pod's labels, named and labelled as Triton 2.52 (core r24.11 src/metric_model_reporter.cc) exports it: the
tritonserver this machine runs, 2.51, exports none (tests/cluster/test_streaming_real.py), so the series are
synthetic and the query, the trigger, KEDA and the HPA real. First every first token comes within 100 ms (p95 95
ms, a fifth of the 500 ms objective): the count stays at one. Then they take between 0.5 and 2 s (p95 1,925 ms):
the trigger's ratio rises towards 3.85 as the rate window fills with them (a run read 3.711 at the scale-out)
against its 0.8 target, and the HPA scales out on it, the load and GPU-memory triggers staying far below theirs.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from platform_config.paths import DEFAULT_MODEL_REPO, PROJECT_ROOT
from tests.conftest import SCALING, validate
from tests.support.local_cluster import LocalCluster, desired_replicas, keda_hpa, wait_until
from tests.support.scaling_loop import Loop, deployed_loop
from tests.support.triton_prometheus import Served, query
from triton_platform.args.kubernetes_values import quantity_value
from triton_platform.model_packaging.source import ModelRepository, read_repository
from triton_platform.serving.serving_context import deployment_object_name
from triton_platform.token_signal import FIRST_RESPONSE_BUCKETS, TTFT_TRIGGER

pytestmark = pytest.mark.real_tools  # the local control plane, KEDA, tritonserver, Prometheus and the Pulumi CLI

STACK, DEPLOYMENT, MODEL = "staging", "general", "tokens"
SERVING = "triton-platform:serving"
MODELS = PROJECT_ROOT / "tests" / "fixtures" / "streaming_repo"
OBJECTIVE_MS = 500
SCALE_DOWN_WINDOW, POLICY_PERIOD = 20, 15


def streaming(config: dict[str, Any]) -> None:
    """staging's copy serving `tokens` beside its models, with a TTFT objective (Triton 24.11 exports the
    histogram the objective is read from)."""
    config[SERVING]["image"] = "nvcr.io/nvidia/tritonserver:24.11-py3"
    config[SERVING]["deployments"][DEPLOYMENT]["models"].append(MODEL)
    config[SERVING]["tokenObjectives"] = {MODEL: {"timeToFirstTokenP95Ms": OBJECTIVE_MS}}
    scaling = config[SCALING]
    scaling["scaleDown"].update(stabilizationSeconds=SCALE_DOWN_WINDOW, periodSeconds=POLICY_PERIOD)
    scaling["scaleUp"].update(periodSeconds=POLICY_PERIOD)


def repository_with_tokens() -> ModelRepository:
    """The project's models and the streaming one, as the copy the test deploys holds them."""
    folder = Path(tempfile.mkdtemp(prefix="tokens-repo-"))
    shutil.copytree(DEFAULT_MODEL_REPO, folder, dirs_exist_ok=True)
    shutil.copytree(MODELS, folder, dirs_exist_ok=True)
    return read_repository(folder)


CONFIG = validate(STACK, streaming, repo=repository_with_tokens())
SERVED = validate(STACK)
"""What the tritonserver outside the cluster serves: staging's own models (the one that streams has no series on
2.51 to add)."""
NAMESPACE = CONFIG.kubernetes.namespace
TARGET = deployment_object_name(DEPLOYMENT)
REPLICAS = CONFIG.serving.deployments[DEPLOYMENT].replicas


class FirstResponses:
    """A first-response histogram whose counts grow at `per_second`, each observation in the bucket `slow` or
    not picks: Prometheus' exposition of Triton's histogram family."""

    BOUNDS = ("100", "500", "2000", "5000", "+Inf")

    def __init__(self, per_second: float = 20) -> None:
        self.per_second, self.slow = per_second, False
        self.counts = dict.fromkeys(self.BOUNDS, 0.0)
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def text(self) -> str:
        with self.lock:
            now = time.monotonic()
            added, self.last = self.per_second * (now - self.last), now
            # Cumulative buckets: under 100 ms, or between 500 ms and 2 s.
            for bound in self.BOUNDS[2 if self.slow else 0 :]:
                self.counts[bound] += added
            labels = f'model="{MODEL}", version="1"'
            lines = [f"# TYPE {FIRST_RESPONSE_BUCKETS.removesuffix('_bucket')} histogram"]
            lines += [f'{FIRST_RESPONSE_BUCKETS}{{{labels}, le="{le}"}} {n:.3f}' for le, n in self.counts.items()]
            return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def histogram() -> FirstResponses:
    return FirstResponses()


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory, histogram: FirstResponses) -> Iterator[Loop]:
    def here(config: dict[str, Any], served: Served) -> None:
        streaming(config)
        config[SCALING]["prometheusAddress"] = served.prometheus_url

    with deployed_loop(
        tmp_path_factory.mktemp("tokens-loop"),
        STACK,
        SERVED,
        DEPLOYMENT,
        here,
        more_metrics=histogram.text,
        models=MODELS,
    ) as loop:
        yield loop


def ratio_now(served: Served, trigger_query: str) -> float:
    [sample] = query(served.prometheus_url, trigger_query)
    return float(sample["value"][1])


def value_metrics(hpa: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The HPA's `Value` external metrics by name: (current value, target value); -1 while not read."""
    current = {
        m["external"]["metric"]["name"]: quantity_value(m["external"]["current"]["value"])
        for m in hpa["status"].get("currentMetrics") or []
        if m["type"] == "External" and "value" in m["external"]["current"]
    }
    return {
        m["external"]["metric"]["name"]: (
            current.get(m["external"]["metric"]["name"], -1.0),
            quantity_value(m["external"]["target"]["value"]),
        )
        for m in hpa["spec"]["metrics"]
        if m["type"] == "External" and m["external"]["target"]["type"] == "Value"
    }


def hpa_reads_its_metrics(cluster: LocalCluster) -> bool:
    return bool(((keda_hpa(cluster, NAMESPACE, TARGET) or {}).get("status") or {}).get("currentMetrics"))


def test_a_slow_first_token_scales_the_streaming_deployment_out(loop: Loop, histogram: FirstResponses) -> None:
    cluster: LocalCluster = loop.cluster
    scaled = cluster.get("scaledobject", TARGET, "-n", NAMESPACE)
    triggers = {t["name"]: t for t in scaled["spec"]["triggers"]}
    ttft = triggers[TTFT_TRIGGER]
    assert ttft["metricType"] == "Value"
    assert float(ttft["metadata"]["threshold"]) == CONFIG.scaling.time_to_first_token_target == 0.8
    assert f'model="{MODEL}"' in ttft["metadata"]["query"]

    # Fast first tokens: p95 95 ms over the 500 ms objective, 0.19; the HPA keeps the one replica.
    fast = lambda: 0 < ratio_now(loop.served, ttft["metadata"]["query"]) < 0.3  # noqa: E731
    wait_until("the TTFT ratio to read fast first tokens", fast, 120)
    wait_until("the HPA to read its triggers", lambda: hpa_reads_its_metrics(cluster), 180)
    assert desired_replicas(cluster, NAMESPACE, TARGET) == REPLICAS.min

    # Slow first tokens: p95 1,925 ms, a ratio of 3.85 once the rate window holds only them.
    histogram.slow = True
    started = time.monotonic()
    out = lambda: desired_replicas(cluster, NAMESPACE, TARGET) > REPLICAS.min  # noqa: E731
    wait_until("the HPA to scale out on the TTFT trigger", out, 300)
    reaction = time.monotonic() - started
    hpa = keda_hpa(cluster, NAMESPACE, TARGET)
    [(current, target)] = value_metrics(hpa).values()
    assert target == 0.8
    assert current > target * 1.1, hpa["status"]  # above the HPA's tolerance: the scale-out is this trigger's
    load = ratio_now(loop.served, loop.served.queries[DEPLOYMENT])
    print(f"TTFT trigger: scaled out {reaction:.0f} s after the first tokens slowed; ratio {current:g}, load {load:g}")
    assert load < CONFIG.scaling.signal_target()  # the idle server's busy ratio: not why it scaled
