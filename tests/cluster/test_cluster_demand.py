"""The `demand` signal scaling a Deployment for real, alone: Triton's request counters, Prometheus, KEDA's operator
and metrics adapter, and kube-controller-manager's HPA scaling staging's `general` Deployment through the stack's
own ScaledObject, whose load trigger is the demand (components/triton_platform/scaling_signal.py, `demand_expr`).

Set up as tests/cluster/test_cluster_scaling.py is (a real CPU tritonserver and Prometheus outside the cluster, the stack
deployed to the local control plane), with the test's copy of staging scaling on the demand instead of the busy
ratio: production's pinned capacity profiles, the config they were measured on (max batch size, instance count;
validation refuses another), queues bounded by time, not count (validation refuses a count bound with the demand),
a demand target the Python client's load exceeds (DEMAND_TARGET), and the down window shortened. The live
ScaledObject carries the demand trigger and the GPU-memory one only, the latter on a static gauge far below its
target, so the scale-out is the demand's: Prometheus reads it above target x replicas when the HPA decides, and the
HPA's own status shows its metric above target and the GPU-memory one below. The reaction, the load's rate and the
demand read are printed and written to the test's folder as demand.json (docs/testing.md quotes a run).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO
from program.platform import demand_capacity
from tests.cluster.test_demand_real import capacities_in
from tests.conftest import SCALING, stack_values, validate
from tests.support.local_cluster import (
    LocalCluster,
    deployment_replicas,
    desired_replicas,
    keda_hpa,
    wait_until,
)
from tests.support.scaling_loop import Loop, deployed_loop
from tests.support.triton_prometheus import Served, load, query
from triton_platform.args.kubernetes_values import quantity_value
from triton_platform.model_packaging.source import read_repository
from triton_platform.recorded_series import rate_window
from triton_platform.scaling.keda_scaling import gpu_memory_query
from triton_platform.scaling.keda_scaling_args import GPU_TRIGGER
from triton_platform.scaling_signal import DEMAND_SIGNAL, trigger_query
from triton_platform.serving.serving_context import deployment_object_name

pytestmark = pytest.mark.real_tools  # the local control plane, KEDA, tritonserver, Prometheus and the Pulumi CLI

STACK, DEPLOYMENT = "staging", "general"
SERVING = "triton-platform:serving"
PRODUCTION = stack_values("production")
"""Production scales on the demand: its pinned profiles and the config they were measured on are the test's."""
SCALE_DOWN_WINDOW, POLICY_PERIOD = 20, 15
# The CPU tritonserver answers the Python client's few hundred to a thousand classifier requests a second (a run on
# two cores: 1,122), while the committed profile gives a pod of classifier 13,554 req/s (3 instances x 32 / tau(32),
# at full batches, which this client's load never forms): a demand of 1,122 / 13,554 = 0.083 pods. At 0.005 one pod's target is 0.005 x 13,554 = 68 req/s,
# and the HPA (10% tolerance) scales out past 75 req/s: well below what even a slow runner's client sends.
DEMAND_TARGET = 0.005
CONCURRENCY = 96  # as test_cluster_scaling: far more in flight than the batcher takes at once


def on_demand(config: dict[str, Any]) -> None:
    """staging's copy scaling on the demand; `config` is a stack file's `config`, keys to structured values."""
    scaling = config[SCALING]
    scaling["signal"] = DEMAND_SIGNAL
    del scaling["busyRatioTarget"]  # a target another signal reads is refused
    scaling["demandTarget"] = DEMAND_TARGET
    scaling["capacityProfiles"] = copy.deepcopy(PRODUCTION[SCALING]["capacityProfiles"])
    scaling["scaleDown"].update(stabilizationSeconds=SCALE_DOWN_WINDOW, periodSeconds=POLICY_PERIOD)
    scaling["scaleUp"].update(periodSeconds=POLICY_PERIOD)
    # What the profiles were measured on (their `config`, checked by validation): production's batch size and
    # instance count; the backends are the models' own.
    ours, production = config[SERVING]["modelDefaults"], PRODUCTION[SERVING]["modelDefaults"]
    ours["maxBatchSize"] = production["maxBatchSize"]
    ours["instanceGroup"]["count"] = production["instanceGroup"]["count"]
    # Bounded by time only (staging's 300 ms timeout, REJECT): a request refused for a full queue is counted nowhere.
    ours["dynamicBatching"]["defaultQueuePolicy"]["maxQueueSize"] = 0


CONFIG = validate(STACK, on_demand)
NAMESPACE = CONFIG.kubernetes.namespace
TARGET = deployment_object_name(DEPLOYMENT)
REPLICAS = CONFIG.serving.deployments[DEPLOYMENT].replicas


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    def demand_here(config: dict[str, Any], served: Served) -> None:
        on_demand(config)
        config[SCALING]["prometheusAddress"] = served.prometheus_url

    with deployed_loop(tmp_path_factory.mktemp("demand-loop"), STACK, CONFIG, DEPLOYMENT, demand_here) as loop:
        yield loop


def replicas(cluster: LocalCluster) -> int:
    return deployment_replicas(cluster, NAMESPACE, TARGET)


def demand_now(served: Served) -> float:
    """The demand trigger's query, now: the deployment's pods demanded, summed."""
    [sample] = query(served.prometheus_url, served.queries[DEPLOYMENT])
    return float(sample["value"][1])


def external_metrics(hpa: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """The HPA's external metrics by name: (their current average value, their target average value)."""
    current = {
        m["external"]["metric"]["name"]: quantity_value(m["external"]["current"]["averageValue"])
        for m in hpa["status"].get("currentMetrics") or []
        if m["type"] == "External"
    }
    target = {
        m["external"]["metric"]["name"]: quantity_value(m["external"]["target"]["averageValue"])
        for m in hpa["spec"]["metrics"]
        if m["type"] == "External"
    }
    return current, target


def demand_and_gpu_memory_only(cluster: LocalCluster, served: Served) -> tuple[str, str, dict[str, float]]:
    """What the live ScaledObject has KEDA read: the demand over each model's capacity per pod, from the pinned
    profiles, and the GPU memory; no busy ratio. Returns the HPA's names of the two metrics, and the capacities."""
    scaled = cluster.get("scaledobject", TARGET, "-n", NAMESPACE)
    demand_trigger, gpu_trigger = scaled["spec"]["triggers"]
    assert (demand_trigger["name"], gpu_trigger["name"]) == (DEMAND_SIGNAL, GPU_TRIGGER)
    rendered = render_stack(STACK, CONFIG.serving, CONFIG.models, read_repository(DEFAULT_MODEL_REPO))
    capacities = demand_capacity(CONFIG, rendered)[DEPLOYMENT]
    assert sorted(capacities) == ["classifier", "preprocess", "ranker"]  # the ensemble runs no instances
    window = rate_window(served.monitoring["scrape_interval"])
    demand_query = trigger_query(DEMAND_SIGNAL, NAMESPACE, TARGET, window, capacities)
    assert demand_trigger["metadata"]["query"] == demand_query == served.queries[DEPLOYMENT]
    assert capacities_in(demand_query) == {model: repr(capacity) for model, capacity in capacities.items()}
    assert float(demand_trigger["metadata"]["threshold"]) == DEMAND_TARGET
    assert gpu_trigger["metadata"]["query"] == gpu_memory_query(NAMESPACE, TARGET)
    # KEDA names the HPA's metrics after the triggers' places: s0-..., s1-...
    demand_metric, gpu_metric = scaled["status"]["externalMetricNames"]
    return demand_metric, gpu_metric, capacities


def the_demand_decided(
    cluster: LocalCluster, hpa: dict[str, Any], demand_metric: str, gpu_metric: str
) -> dict[str, float]:
    """The HPA's status at its scale-out shows the demand's metric over its target and the GPU memory's under, and
    KEDA holds no fallback (whose made-up value would read over target too); returns the metrics' values."""
    current, target = external_metrics(hpa)
    assert set(current) == set(target) == {demand_metric, gpu_metric}, hpa
    assert target[demand_metric] == DEMAND_TARGET, target
    assert current[demand_metric] > target[demand_metric], current
    assert current[gpu_metric] < target[gpu_metric], current
    scaled = cluster.get("scaledobject", TARGET, "-n", NAMESPACE)
    fallback = [c for c in scaled["status"].get("conditions", []) if c["type"] == "Fallback"]
    assert not fallback or fallback[0]["status"] != "True", fallback
    return current


def test_the_demand_alone_scales_out_and_back_in(loop: Loop) -> None:
    cluster, served = loop.cluster, loop.served
    wait_until("KEDA's HPA", lambda: desired_replicas(cluster, NAMESPACE, TARGET) == REPLICAS.min, timeout=180)
    assert replicas(cluster) == REPLICAS.min
    demand_metric, gpu_metric, capacities = demand_and_gpu_memory_only(cluster, served)
    idle = demand_now(served)
    assert idle < DEMAND_TARGET * REPLICAS.min, f"the demand reads {idle} before any load"

    # A load step on the classifier: its requests end, Prometheus rates them, KEDA reports them, the HPA scales out.
    stop = threading.Event()

    def keep_loading() -> None:
        while not stop.is_set():
            load(served.triton, 5, model="classifier", concurrency=CONCURRENCY)

    loader = threading.Thread(target=keep_loading, daemon=True)
    started = time.monotonic()
    loader.start()
    seen: list[tuple[float, float]] = []  # (seconds since the step, the demand Prometheus reads)
    decision: list[dict[str, Any]] = []

    def decided() -> bool:
        seen.append((time.monotonic() - started, demand_now(served)))
        hpa = keda_hpa(cluster, NAMESPACE, TARGET)
        if int((hpa.get("status") or {}).get("desiredReplicas") or 0) > REPLICAS.min:
            decision.append(hpa)
        return bool(decision)

    try:
        wait_until("a scale-out decision", decided, timeout=240)
        reaction = time.monotonic() - started
        over = [t for t, value in seen if value > 1.1 * DEMAND_TARGET * REPLICAS.min]  # past the HPA's tolerance
        at_decision = seen[-1][1]
        # The demand moved it: Prometheus reads it over target x replicas, and the HPA's status says so.
        assert at_decision > DEMAND_TARGET * REPLICAS.min, seen
        [hpa] = decision
        current = the_demand_decided(cluster, hpa, demand_metric, gpu_metric)
        # The Deployment follows. How far depends on how much load this machine's client sends; the test asks
        # for the step out, not for a count a slow runner may not reach.
        wait_until("the deployment to scale out", lambda: replicas(cluster) > REPLICAS.min, timeout=240)
        reached = replicas(cluster)
        [rate] = query(served.prometheus_url, 'sum(rate(nv_inference_request_success{model="classifier"}[30s]))')
        rps = float(rate["value"][1])
        under_load = demand_now(served)
    finally:
        stop.set()
        loader.join(timeout=60)
    assert REPLICAS.min < reached <= REPLICAS.max

    # Load gone: the demand falls to 0 over its rate window, and after the (shortened) down window the count
    # falls back to the floor.
    stopped = time.monotonic()
    wait_until("the scale-in", lambda: replicas(cluster) == REPLICAS.min, timeout=360, interval=2)
    scale_in = time.monotonic() - stopped
    assert demand_now(served) < DEMAND_TARGET * REPLICAS.min

    measured = {
        "load_step_to_new_desired_seconds": round(reaction, 1),
        "demand_over_target_to_new_desired_seconds": round(reaction - over[0], 1) if over else None,
        "classifier_rps": round(rps),
        "classifier_capacity_per_pod_rps": round(capacities["classifier"]),
        "demand_target": DEMAND_TARGET,
        "demand_at_decision": round(at_decision, 5),
        "hpa_demand_metric_at_decision": current[demand_metric],
        "hpa_gpu_memory_metric_at_decision": current[gpu_metric],
        "desired_at_decision": hpa["status"]["desiredReplicas"],
        "demand_under_load": round(under_load, 5),
        "replicas_reached": reached,
        "load_end_to_floor_seconds": round(scale_in, 1),
    }
    (loop.work / "demand.json").write_text(json.dumps(measured, indent=2))
    print(f"demand loop: {measured}")
