"""The scaling loop closed for real: Triton's busy instances, Prometheus, KEDA's operator and metrics adapter, and
kube-controller-manager's HPA scaling the stack's own Deployment through the stack's own ScaledObject.

A real tritonserver (CPU) serves staging's `general` deployment outside the cluster and a real Prometheus
scrapes it with the labels the ServiceMonitor gives; the stack is deployed to the local control plane with
its Prometheus address pointed there. Only the scale-down window and policy period are shortened, and the
busy-ratio target lowered (BUSY_TARGET), in the test's copy of the stack, so the test takes minutes. The time from the load step to the HPA's first new
desired count is measured and set beside `stackctl simulate`'s for the same settings (printed, and written
to the test's folder as reaction.json; docs/testing.md quotes a run). Then Prometheus stops: KEDA holds its
fallback; and starts again on the same storage, as production's Prometheus does on its volume: a series written
before the restart answers as it did.
"""

from __future__ import annotations

import csv
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from platform_config.loader import load_stack
from tests.support.local_cluster import (
    LocalCluster,
    deployment_replicas,
    desired_replicas,
    wait_until,
)
from tests.support.scaling_loop import Loop, deployed_loop
from tests.support.triton_prometheus import Served, load, query
from triton_platform.serving.serving_context import deployment_object_name

pytestmark = pytest.mark.real_tools  # the local control plane, KEDA and the Pulumi CLI

STACK, DEPLOYMENT = "staging", "general"
CONFIG = load_stack(STACK).config
NAMESPACE = CONFIG.kubernetes.namespace
TARGET = deployment_object_name(DEPLOYMENT)
REPLICAS = CONFIG.serving.deployments[DEPLOYMENT].replicas
FALLBACK = CONFIG.scaling.fallback
SCALE_DOWN_WINDOW, POLICY_PERIOD = 20, 15
# The test's copy scales at a 1% busy ratio: the CPU tritonserver answers the Python client's few hundred
# requests a second in batches of about 14 taking about 1.2 ms, so its instances are busy about 3% of the
# time (measured: 0.028). That client cannot saturate it, and the loop, not the target, is under test.
BUSY_TARGET = 0.01
CONCURRENCY = 96  # far more requests in flight than the batcher takes at once: the instances never idle


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    def shorter_windows(config: dict[str, Any], served: Served) -> None:
        scaling = config["triton-platform:scaling"]
        scaling["prometheusAddress"] = served.prometheus_url
        scaling["scaleDown"].update(stabilizationSeconds=SCALE_DOWN_WINDOW, periodSeconds=POLICY_PERIOD)
        scaling["scaleUp"].update(periodSeconds=POLICY_PERIOD)
        scaling["busyRatioTarget"] = BUSY_TARGET

    with deployed_loop(tmp_path_factory.mktemp("scaling-loop"), STACK, CONFIG, DEPLOYMENT, shorter_windows) as loop:
        yield loop


def replicas(cluster: LocalCluster) -> int:
    return deployment_replicas(cluster, NAMESPACE, TARGET)


def desired(cluster: LocalCluster) -> int:
    return desired_replicas(cluster, NAMESPACE, TARGET)


def condition(cluster: LocalCluster, kind: str) -> str:
    scaled = cluster.get("scaledobject", TARGET, "-n", NAMESPACE)
    found = [c for c in scaled["status"].get("conditions", []) if c["type"] == kind]
    return str(found[0]["status"]) if found else "Unknown"


def simulated_reaction(loop: Loop, rps: float) -> float | None:
    """`stackctl simulate` of the same stack copy under the same step: seconds until desired replicas rise."""
    trace = loop.work / "step.csv"
    step_at = 120
    trace.write_text(f"t_seconds,rps\n0,0\n{step_at},{rps:.1f}\n{step_at + 600},{rps:.1f}\n")
    out = loop.work / "simulation"
    run = loop.project.stackctl(
        "simulate",
        "--config",
        str(loop.project.root / "stacks" / f"Pulumi.{STACK}.yaml"),
        "--trace",
        str(trace),
        "--deployment",
        DEPLOYMENT,
        "--out",
        str(out),
        "--no-plot",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    with (out / "timeline.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    before = int(rows[step_at - 1]["desired_replicas"])
    rises = [int(r["t"]) for r in rows[step_at:] if int(r["desired_replicas"]) > before]
    return float(rises[0] - step_at) if rises else None


def test_load_scales_out_and_back_in_and_fallback_holds_without_metrics(loop: Loop) -> None:
    cluster = loop.cluster
    wait_until("KEDA's HPA", lambda: desired(cluster) == REPLICAS.min, timeout=180)
    assert replicas(cluster) == REPLICAS.min

    # A load step: the instances get busy, Prometheus scrapes it, KEDA reports it, the HPA scales out.
    stop = threading.Event()

    def keep_loading() -> None:
        while not stop.is_set():
            load(loop.served.triton, 5, model="classifier", concurrency=CONCURRENCY)

    loader = threading.Thread(target=keep_loading, daemon=True)
    started = time.monotonic()
    loader.start()
    signal_query = loop.served.queries[DEPLOYMENT]
    over: list[float] = []

    def decided() -> bool:
        """Also notes when Prometheus first shows the signal over its target (1.1x: the HPA's tolerance)."""
        if not over:
            sample = query(loop.served.prometheus_url, signal_query)
            if sample and float(sample[0]["value"][1]) > 1.1 * BUSY_TARGET * REPLICAS.min:
                over.append(time.monotonic())
        return desired(cluster) > REPLICAS.min

    try:
        wait_until("a scale-out decision", decided, timeout=240)
        reaction = time.monotonic() - started
        loop_seconds = time.monotonic() - (over[0] if over else started)
        # The Deployment follows the HPA's decision. How far it goes depends on how deep this machine's
        # load keeps the instances busy, so the test asks for the step out, not for a count a slow runner may not reach.
        wait_until("the deployment to scale out", lambda: replicas(cluster) > REPLICAS.min, timeout=240)
        [rate] = query(loop.served.prometheus_url, 'sum(rate(nv_inference_request_success{model="classifier"}[30s]))')
        rps = float(rate["value"][1])
    finally:
        stop.set()
        loader.join(timeout=60)
    assert replicas(cluster) <= REPLICAS.max

    # Load gone: after the (shortened) down window the count falls back to the floor.
    wait_until("the scale-in", lambda: replicas(cluster) == REPLICAS.min, timeout=300, interval=2)

    simulated = simulated_reaction(loop, rps)
    measured = {
        "load_step_to_new_desired_seconds": round(reaction, 1),
        "signal_over_target_to_new_desired_seconds": round(loop_seconds, 1),
        "simulated_load_step_to_new_desired_seconds": simulated,
        "classifier_rps": round(rps),
    }
    (loop.work / "reaction.json").write_text(json.dumps(measured, indent=2))
    print(f"scaling loop: {measured}")

    prometheus_outage_and_restart(loop)


def prometheus_outage_and_restart(loop: Loop) -> None:
    """Prometheus stopped, then started again on the same storage."""
    cluster = loop.cluster
    # Prometheus gone: KEDA's fallback holds what the stack promises, never the floor of 1.
    assert FALLBACK is not None
    written = f'sum(nv_inference_request_success{{namespace="{NAMESPACE}", model="classifier"}})'
    stopped_at = time.time()
    [before_restart] = query(loop.served.prometheus_url, written, at=stopped_at)
    loop.served.prometheus.terminate()
    loop.served.prometheus.wait(timeout=30)
    wait_until("KEDA's fallback", lambda: condition(cluster, "Fallback") == "True", timeout=240, interval=2)
    wait_until("the fallback replicas", lambda: replicas(cluster) >= FALLBACK.replicas, timeout=120)
    held_until = time.monotonic() + 45
    while time.monotonic() < held_until:
        assert replicas(cluster) >= FALLBACK.replicas, "replicas fell below the fallback while metrics were down"
        time.sleep(3)

    # Prometheus back on the same storage, as production's pods come back on their volumes (Monitoring's
    # `storage`): the series written before the restart answers as it did, and KEDA leaves its fallback.
    loop.served.restart_prometheus()
    [after_restart] = query(loop.served.prometheus_url, written, at=stopped_at)
    assert float(before_restart["value"][1]) > 0
    assert after_restart["value"] == before_restart["value"]
    wait_until("KEDA reading Prometheus again", lambda: condition(cluster, "Fallback") != "True", timeout=240)
