"""KEDA autoscaling: every ScaledObject field for every stack, and the scaling rules' failing cases."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from offline.synth import SynthResult
from platform_config.paths import PROJECT_ROOT
from tests.conftest import SCALING, SERVING, STACKS, errors_of, removing, setting, synth_mutated, synth_stack, validate
from tests.support.crd_schemas import MODULES

CASES = [(s, d) for s in STACKS for d in sorted(synth_stack(s).stack.config.serving.deployments)]
IDS = [f"{s}-{d}" for s, d in CASES]


def scaled_objects(result: SynthResult) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in result.manifests() if m["kind"] == "ScaledObject"}


@pytest.mark.parametrize(("stack", "deployment"), CASES, ids=IDS)
def test_scaled_object_fields(stack: str, deployment: str) -> None:
    result = synth_stack(stack)
    config = result.stack.config
    scaling, dep = config.scaling, config.serving.deployments[deployment]
    spec = scaled_objects(result)[f"triton-{deployment}"]["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"triton-{deployment}"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (dep.replicas.min, dep.replicas.max)
    assert spec["pollingInterval"] == scaling.polling_interval_seconds
    # KEDA's default (false: replicas stay where they are when the ScaledObject goes), left unset on purpose.
    assert "restoreToOriginalReplicaCount" not in spec["advanced"]
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    up, down = behavior["scaleUp"], behavior["scaleDown"]
    assert up["stabilizationWindowSeconds"] == scaling.scale_up.stabilization_seconds
    assert up["selectPolicy"] == "Max"
    assert {
        "type": "Percent",
        "value": scaling.scale_up.percent,
        "periodSeconds": scaling.scale_up.period_seconds,
    } in up["policies"]
    pods = {"type": "Pods", "value": scaling.scale_up.pods, "periodSeconds": scaling.scale_up.period_seconds}
    # A Pods policy only where the stack sets one (production's demand scales by percent alone).
    assert (pods in up["policies"]) == (scaling.scale_up.pods is not None)
    assert len(up["policies"]) == (1 if scaling.scale_up.pods is None else 2)
    assert down["stabilizationWindowSeconds"] == scaling.scale_down.stabilization_seconds
    assert scaling.fallback is not None
    assert spec["fallback"] == {
        "failureThreshold": scaling.fallback.failure_threshold,
        "replicas": scaling.fallback.replicas,
        "behavior": scaling.fallback.behavior,
    }
    queue, gpu, *wake = spec["triggers"]
    # A deployment woken on request has no series at zero: there a missing one is no load, not an error.
    null_values = "false" if dep.wake is None else "true"
    for trigger in (queue, gpu):
        assert trigger["type"] == "prometheus"
        assert trigger["metricType"] == "AverageValue"
        assert trigger["metadata"]["ignoreNullValues"] == null_values
        # No stack sets `scaling.prometheusAddress`: the operator's Service in `monitoring.prometheus.namespace`.
        assert trigger["metadata"]["serverAddress"] == "http://prometheus-operated.monitoring.svc:9090"
    assert queue["name"] == scaling.signal
    # A busy ratio takes each pod's busiest model; a demand adds each pod's models' shares.
    per_pod = "max" if scaling.signal == "busy-ratio" else "sum"
    assert queue["metadata"]["query"].startswith(f"sum({per_pod} by (namespace, deployment, pod) (")
    assert f'deployment="triton-{deployment}"' in queue["metadata"]["query"]
    assert queue["metadata"]["threshold"] == f"{scaling.signal_target():g}"
    assert queue["metadata"]["activationThreshold"] == "0"
    assert gpu["name"] == "gpu-memory"
    sel = f'namespace="triton-{stack}", deployment="triton-{deployment}"'
    assert gpu["metadata"]["query"] == (
        f"sum(sum by (pod) (nv_gpu_memory_used_bytes{{{sel}}}) / sum by (pod) (nv_gpu_memory_total_bytes{{{sel}}}))"
    )
    assert gpu["metadata"]["activationThreshold"] == "0"
    assert gpu["metadata"]["threshold"] == f"{scaling.gpu_memory_ratio_target:g}"
    assert [t["type"] for t in wake] == ([] if dep.wake is None else ["external-push", "external-push"])
    assert ("cooldownPeriod" in spec) == (dep.replicas.min == 0)
    deployment_spec = next(
        m for m in result.manifests() if m["kind"] == "Deployment" and m["metadata"]["name"] == f"triton-{deployment}"
    )["spec"]
    assert "replicas" not in deployment_spec


def test_the_environments_scale_differently() -> None:
    specs = [scaled_objects(synth_stack(s))["triton-general"]["spec"] for s in STACKS]
    for key in ("pollingInterval", "fallback", "advanced", "maxReplicaCount"):
        assert len({repr(spec[key]) for spec in specs}) == len(STACKS), key


def test_pausing_sets_the_keda_annotations() -> None:
    result = synth_mutated(
        "staging", setting(SCALING, "paused", value=True), setting(SCALING, "pausedReplicas", value=2)
    )
    annotations = scaled_objects(result)["triton-general"]["metadata"]["annotations"]
    assert annotations == {"autoscaling.keda.sh/paused": "true", "autoscaling.keda.sh/paused-replicas": "2"}
    assert "annotations" not in scaled_objects(synth_stack("staging"))["triton-general"]["metadata"]


def test_prometheus_auth_goes_through_a_trigger_authentication() -> None:
    result = synth_mutated(
        "dev", setting(SCALING, "prometheusAuth", value={"mode": "bearer", "secretName": "prom-token"})
    )
    [auth] = [m for m in result.manifests() if m["kind"] == "TriggerAuthentication"]
    assert auth["spec"] == {
        "secretTargetRef": [{"parameter": "bearerToken", "name": "prom-token", "key": "bearerToken"}]
    }
    trigger = scaled_objects(result)["triton-general"]["spec"]["triggers"][0]
    assert trigger["authenticationRef"] == {"name": "triton-prometheus"}
    assert trigger["metadata"]["authModes"] == "bearer"


def test_a_configured_prometheus_address_is_what_keda_queries() -> None:
    result = synth_mutated("dev", setting(SCALING, "prometheusAddress", value="https://prometheus.example.com:9443"))
    triggers = scaled_objects(result)["triton-general"]["spec"]["triggers"]
    addresses = [t["metadata"]["serverAddress"] for t in triggers if t["type"] == "prometheus"]
    assert addresses == ["https://prometheus.example.com:9443"] * 2


def test_disabled_scaling_creates_no_scaled_object_and_sets_replicas() -> None:
    result = synth_mutated(
        "dev",
        setting(SCALING, "enabled", value=False),
        setting(SERVING, "deployments", "general", "replicas", value={"min": 2, "max": 2}),
        removing(SERVING, "deployments", "general", "wake"),
    )
    assert scaled_objects(result) == {}
    assert not any(r.type == "triton-platform:index:KedaScaling" for r in result.resources)
    [deployment] = [m for m in result.manifests() if m["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 2


def test_keda_is_installed_before_the_scaled_objects_in_production() -> None:
    result = synth_stack("production")
    # The chart's objects: a ConfigGroup under the InstalledChart (their CRDs come first inside it). Waiting on
    # the chart waits on them: the SDK expands a component named in depends_on into the resources under it.
    chart = result.find("triton-platform:helm:InstalledChart", "production-scaling-keda")
    assert result.find("kubernetes:yaml/v2:ConfigGroup", "production-scaling-keda-objects").parent == chart.urn
    for name in ("general", "ranker"):
        scaled = result.find("kubernetes:keda.sh/v1alpha1:ScaledObject", f"production-scaling-{name}-scaled-object")
        assert chart.urn in scaled.dependencies
        # It waits for its Deployment through its input: scaleTargetRef.name is the Deployment's name output.
        deployment = result.find("kubernetes:apps/v1:Deployment", f"production-serving-{name}-deployment")
        target = scaled.inputs["spec"]["scaleTargetRef"]["name"]
        assert target == deployment.inputs["metadata"]["name"] == f"triton-{name}"
    pinned = result.stack.config.scaling.keda.chart
    # The chart release whose operator the local cluster runs (scripts/local-cluster KEDA_VERSION).
    assert (pinned.repository, pinned.version, pinned.path) == ("https://kedacore.github.io/charts", "2.20.2", None)
    script = (PROJECT_ROOT / "scripts" / "local-cluster").read_text()
    assert f"KEDA_VERSION=v{pinned.version}" in script
    # One KEDA version: the tests' CRDs are that release's (tests/support/crd_schemas.py), and the chart runs it.
    assert MODULES["keda.sh"][1] == "v2.20.2"
    chart = yaml.safe_load((PROJECT_ROOT.parent / "shared" / "charts" / "keda" / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == ("2.20.2", "2.20.2")
    assert not any(r.type == "kubernetes:yaml/v2:ConfigGroup" for r in synth_stack("dev").resources)


# --- validation ---------------------------------------------------------------


def test_production_needs_a_fallback() -> None:
    def drop(values: dict[str, Any]) -> None:
        del values[SCALING]["fallback"]

    [error] = errors_of("production", drop)
    assert error.startswith(
        "triton-platform:scaling.fallback: required key is missing: production must say what KEDA holds"
    )
    assert validate("staging", drop)


def test_scaling_to_zero_without_wake_is_rejected_with_autoscaling() -> None:
    [error] = errors_of(
        "staging",
        setting(SERVING, "deployments", "general", "replicas", "min", value=0),
        setting(SCALING, "fallback", "replicas", value=1),
    )
    assert error.startswith(
        "triton-platform:serving.deployments.general.replicas.min: 0 without wake: at zero Triton exports no series"
    )


def test_fallback_replicas_must_fit_every_deployment() -> None:
    [error] = errors_of("production", setting(SCALING, "fallback", "replicas", value=5))
    assert error == "triton-platform:scaling.fallback.replicas: 5 is outside deployment 'ranker''s replicas range 2-4"
    assert validate("production", setting(SCALING, "fallback", "replicas", value=3))


def test_policy_periods_stay_within_the_hpa_api_bounds() -> None:
    [error] = errors_of("dev", setting(SCALING, "scaleDown", "periodSeconds", value=3600))
    assert (
        error == "triton-platform:scaling.scaleDown.periodSeconds: Input should be less than or equal to 1800; got 3600"
    )
    [error] = errors_of("dev", setting(SCALING, "scaleUp", "stabilizationSeconds", value=7200))
    assert (
        error
        == "triton-platform:scaling.scaleUp.stabilizationSeconds: Input should be less than or equal to 3600; got 7200"
    )


def test_thresholds_must_be_positive() -> None:
    [error] = errors_of("dev", setting(SCALING, "queueDepthTarget", value=-1))
    assert error == "triton-platform:scaling.queueDepthTarget: Input should be greater than 0; got -1"


# Instances per pod of each non-ensemble model, read off the stack files and model_repo's config.pbtxt by hand:
# a GPU group's count is per GPU, and each of these deployments has one GPU per pod.
BUSY_DIVISORS = {
    ("staging", "general"): {"classifier": 2, "preprocess": 2, "ranker": 2},
}


@pytest.mark.parametrize(("stack", "deployment"), sorted(BUSY_DIVISORS), ids=str)
def test_the_busy_ratio_divides_each_model_by_its_instances_per_pod(stack: str, deployment: str) -> None:
    query = scaled_objects(synth_stack(stack))[f"triton-{deployment}"]["spec"]["triggers"][0]["metadata"]["query"]
    terms = query.removeprefix("sum(max by (namespace, deployment, pod) (").removesuffix("))").split(" or ")
    assert len(terms) == len(BUSY_DIVISORS[stack, deployment])
    for term, (model, instances) in zip(terms, sorted(BUSY_DIVISORS[stack, deployment].items()), strict=True):
        sel = f'namespace="triton-{stack}", deployment="triton-{deployment}", model="{model}"'
        by = "sum by (namespace, deployment, pod, model)"
        assert term == (
            f"({by} (rate(nv_inference_compute_input_duration_us{{{sel}}}[1m]))"
            f" + {by} (rate(nv_inference_compute_infer_duration_us{{{sel}}}[1m]))"
            f" + {by} (rate(nv_inference_compute_output_duration_us{{{sel}}}[1m])))"
            f" * sum by (namespace, deployment, pod, model) (rate(nv_inference_exec_count{{{sel}}}[1m]))"
            f" / clamp_min(sum by (namespace, deployment, pod, model) (rate(nv_inference_count{{{sel}}}[1m])), 1e-9)"
            f" / {instances * 1_000_000}"
        )


DEMAND_DIVISORS = {
    ("production", "general"): {"classifier": "13554.054330712024", "preprocess": "13558.490913210078"},
    ("production", "ranker"): {"ranker": "20127.484043298107"},
}
"""Each model's capacity per pod, from its pinned profile: 3 instances x 32 / tau(32)."""


@pytest.mark.parametrize(("stack", "deployment"), sorted(DEMAND_DIVISORS), ids=str)
def test_the_demand_divides_each_model_by_its_capacity_per_pod(stack: str, deployment: str) -> None:
    trigger = scaled_objects(synth_stack(stack))[f"triton-{deployment}"]["spec"]["triggers"][0]
    assert (trigger["name"], trigger["metadata"]["threshold"]) == ("demand", "0.82")
    query = trigger["metadata"]["query"]
    terms = query.removeprefix("sum(sum by (namespace, deployment, pod) (").removesuffix("))").split(" or ")
    assert len(terms) == len(DEMAND_DIVISORS[stack, deployment])
    for term, (model, capacity) in zip(terms, sorted(DEMAND_DIVISORS[stack, deployment].items()), strict=True):
        sel = f'namespace="triton-{stack}", deployment="triton-{deployment}", model="{model}"'
        by = "sum by (namespace, deployment, pod, model)"
        assert term == (
            f"({by} (rate(nv_inference_request_success{{{sel}}}[1m]))"
            f" + {by} (rate(nv_inference_request_failure{{{sel}}}[1m]))) / {capacity}"
        )


def test_the_queue_depth_signal_reads_the_pending_gauge() -> None:
    result = synth_mutated(
        "dev",
        setting(SCALING, "signal", value="queue-depth"),
        setting(SCALING, "queueDepthTarget", value=20),
        setting(SCALING, "activationQueueDepth", value=1),
        removing(SCALING, "busyRatioTarget"),
    )
    trigger = scaled_objects(result)["triton-general"]["spec"]["triggers"][0]
    assert trigger["name"] == "queue-depth"
    assert trigger["metadata"]["query"] == (
        'sum(nv_inference_pending_request_count{namespace="triton-dev", deployment="triton-general"})'
    )
    assert trigger["metadata"]["threshold"] == "20"
    assert trigger["metadata"]["activationThreshold"] == "1"


def test_an_unknown_signal_is_refused_with_the_known_ones() -> None:
    [error] = errors_of("dev", setting(SCALING, "signal", value="queue-time"))
    assert error == (
        "triton-platform:scaling.signal: Input should be 'busy-ratio', 'queue-depth' or 'demand'; got 'queue-time'"
    )


def test_a_busy_ratio_target_above_one_is_refused() -> None:
    [error] = errors_of("dev", setting(SCALING, "busyRatioTarget", value=1.5))
    assert error == "triton-platform:scaling.busyRatioTarget: Input should be less than or equal to 1; got 1.5"


def test_a_target_the_signal_does_not_read_is_refused() -> None:
    [error] = errors_of("dev", setting(SCALING, "queueDepthTarget", value=20))
    assert error == (
        "triton-platform:scaling: queueDepthTarget is only read by another signal; signal 'busy-ratio' reads "
        "busyRatioTarget: remove queueDepthTarget or set signal"
    )
    [error] = errors_of("dev", setting(SCALING, "signal", value="queue-depth"))
    assert error == (
        "triton-platform:scaling: busyRatioTarget is only read by another signal; signal 'queue-depth' reads "
        "queueDepthTarget: remove busyRatioTarget or set signal"
    )
