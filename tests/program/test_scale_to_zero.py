"""Scale to zero (docs/scale-to-zero.md): a deployment at `replicas.min` 0 with a `wake` budget is routed through
the KEDA HTTP add-on's interceptor, which holds its first request while KEDA wakes it; the stack refuses what
would leave it asleep, and a budget below the wake's estimate. (The simulator and planner at zero:
tests/simulator/test_simulate_zero.py; a real wake: tests/cluster/test_cluster_wake.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from offline.image_digests import list_images
from offline.synth import SynthResult
from tests.conftest import (
    SCALING,
    SERVING,
    errors_of,
    setting,
    synth_mutated,
    synth_production_at_zero,
    synth_stack,
    validate,
)
from tests.policy.test_policy_rules import built, policy_findings
from triton_platform.args.arg_problems import ArgsError
from triton_platform.http_add_on import interceptor_routes
from triton_platform.scaling.keda_scaling_args import KedaScalingArgs, scaling_of

NAMESPACE = "triton-dev"
SERVICE_HOSTS = [
    "triton-general",
    "triton-general.triton-dev",
    "triton-general.triton-dev.svc",
    "triton-general.triton-dev.svc.cluster.local",
]
INTERCEPTOR = {"app.kubernetes.io/component": "interceptor", "app.kubernetes.io/name": "http-add-on"}


def objects(result: SynthResult, kind: str) -> dict[str, dict[str, Any]]:
    return {
        f"{m['metadata'].get('namespace', '')}/{m['metadata']['name']}": m
        for m in result.manifests()
        if m["kind"] == kind
    }


def test_dev_routes_general_through_the_interceptor() -> None:
    result = synth_stack("dev")
    services = objects(result, "Service")
    # Clients keep `triton-general` and its ports: it now names the add-on's wake Service.
    client = services[f"{NAMESPACE}/triton-general"]["spec"]
    assert client["type"] == "ExternalName"
    assert client["externalName"] == "triton-wake-triton-dev.keda.svc.cluster.local"
    wake = services["keda/triton-wake-triton-dev"]["spec"]
    assert wake["selector"] == INTERCEPTOR
    assert [(p["port"], p["targetPort"], p["appProtocol"]) for p in wake["ports"]] == [
        (8000, "proxy", "http"),
        (8001, "proxy", "kubernetes.io/h2c"),
        (2223, 2223, "http"),  # the interceptor's metrics, for the wake alert
    ]
    # The pods keep a Service of their own: the routes' target, h2c on gRPC so the interceptor speaks HTTP/2.
    pods = services[f"{NAMESPACE}/triton-general-pods"]["spec"]
    assert pods["selector"]["app.kubernetes.io/instance"] == "triton-general"
    assert {p["name"]: p["appProtocol"] for p in pods["ports"]}["grpc"] == "kubernetes.io/h2c"
    routes = objects(result, "InterceptorRoute")
    http, grpc = routes[f"{NAMESPACE}/triton-general-http"]["spec"], routes[f"{NAMESPACE}/triton-general-grpc"]["spec"]
    assert http["target"] == {"service": "triton-general-pods", "portName": "http"}
    assert grpc["target"] == {"service": "triton-general-pods", "portName": "grpc"}
    assert http["rules"] == [{"hosts": SERVICE_HOSTS}]
    assert grpc["rules"] == [
        {
            "hosts": SERVICE_HOSTS,
            "paths": [{"value": "/inference.GRPCInferenceService/"}, {"value": "/grpc.health.v1.Health/"}],
        }
    ]
    assert http["timeouts"] == grpc["timeouts"] == {"readiness": "120s"}
    # The interceptor, and nothing else new, may reach Triton's pods.
    policy = objects(result, "NetworkPolicy")[f"{NAMESPACE}/triton-general"]["spec"]
    inference = next(rule for rule in policy["ingress"] if {"protocol": "TCP", "port": 8000} in rule["ports"])
    assert inference["from"][-1] == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}},
        "podSelector": {"matchLabels": INTERCEPTOR},
    }
    assert len(inference["from"]) == 2  # dev's one inference client, then the interceptor
    # The shared dev cluster runs the add-on beside KEDA (`existing`): no chart.
    assert not [r for r in result.resources if r.type == "triton-platform:helm:InstalledChart"]


def test_install_mode_installs_the_pinned_chart_before_the_routes() -> None:
    result = synth_mutated("dev", setting(SCALING, "httpAddOn", "mode", value="install"))
    chart = result.find("triton-platform:helm:InstalledChart", "dev-scaling-http-add-on")
    for protocol in ("http", "grpc"):
        route = result.find("kubernetes:http.keda.sh/v1beta1:InterceptorRoute", f"dev-scaling-general-{protocol}-route")
        assert chart.urn in route.dependencies
    pinned = result.stack.config.scaling.http_add_on.chart
    assert (pinned.repository, pinned.version) == ("https://kedacore.github.io/charts", "0.15.0")
    budgets = {m["metadata"]["name"]: m["spec"] for m in result.manifests() if m["kind"] == "PodDisruptionBudget"}
    assert budgets["keda-add-ons-http-external-scaler"]["minAvailable"] == 1


@pytest.mark.parametrize("stack", ["staging", "production"])
def test_stacks_that_do_not_opt_in_keep_their_services(stack: str) -> None:
    result = synth_stack(stack)
    assert not objects(result, "InterceptorRoute")
    assert all(s["spec"]["type"] == "ClusterIP" for s in objects(result, "Service").values() if "type" in s["spec"])
    assert not [name for name in objects(result, "Deployment") if "http-add-on" in name]


def test_a_wake_needs_replicas_min_zero() -> None:
    [error] = errors_of("staging", setting(SERVING, "deployments", "general", "wake", value={"budgetSeconds": 600}))
    assert error == (
        "triton-platform:serving.deployments.general.wake: is set but replicas.min is 1: a deployment wakes on a "
        "request only from zero; set replicas.min 0 or remove wake"
    )


def test_a_wake_needs_scaling() -> None:
    errors = errors_of("dev", setting(SCALING, "enabled", value=False))
    assert (
        "triton-platform:serving.deployments.general.wake: is set but triton-platform:scaling.enabled is false: "
        "KEDA scales a deployment up from zero"
    ) in errors


def _production_at_zero(allow: bool) -> list[Any]:
    wake: dict[str, Any] = {"budgetSeconds": 900}
    if allow:
        wake["allowInProduction"] = True
    return [
        setting(SERVING, "deployments", "general", "replicas", "min", value=0),
        setting(SERVING, "deployments", "general", "wake", value=wake),
    ]


def test_production_refuses_zero_unless_the_stack_says_so() -> None:
    # The drain floor (min >= 2) also speaks until the stack accepts a wake in production.
    drain, error = errors_of("production", *_production_at_zero(False))
    assert drain.startswith("triton-platform:serving.deployments.general.replicas.min: 0 in production")
    assert error == (
        "triton-platform:serving.deployments.general.wake.allowInProduction: required to be true for a production "
        "deployment at zero: its first request after an idle period waits for the whole wake (node, image pull, "
        "model load); say so explicitly, or keep replicas.min >= 1"
    )
    assert validate("production", *_production_at_zero(True))


def test_a_budget_below_the_estimate_names_each_part() -> None:
    [error] = errors_of("dev", setting(SERVING, "deployments", "general", "wake", "budgetSeconds", value=10))
    assert error.startswith(
        "triton-platform:serving.deployments.general.wake.budgetSeconds: 10 is below the wake's estimate of 16 s: "
        "node 0 s (the static pool's nodes stay up); image pull 0 s (the static pool's nodes keep the image); "
        "model load 0 s ("
    )
    assert error.endswith(
        "readiness 15 s (the startup probe's 10 s period, then the readiness probe's 5 s); raise the budget to at "
        "least 16, or give measured figures for the parts"
    )


POOL = "triton-platform:gpuPool"
AT_ZERO = (
    setting(SERVING, "deployments", "general", "replicas", "min", value=0),
    setting(SCALING, "fallback", "replicas", value=1),
    # Staging's pool keeps no node while general idles (it keeps one by default: the next test).
    setting(POOL, "minNodes", value=0),
)


def test_a_pool_that_keeps_a_free_gpu_at_zero_wakes_without_a_node() -> None:
    # Staging as it is: the cluster-autoscaler keeps minNodes 1, and general is its only deployment.
    [error] = errors_of(
        "staging",
        *AT_ZERO[:2],
        setting(SERVING, "deployments", "general", "wake", value={"budgetSeconds": 10}),
    )
    assert error.startswith(
        "triton-platform:serving.deployments.general.wake.budgetSeconds: 10 is below the wake's estimate of 16 s: "
        "node 0 s (the pool keeps 1 node(s) at zero (gpuPool.minNodes 1, overprovisioningReplicas 0) with 1 GPU(s) "
        "the other deployments' floors leave free); image pull 0 s (the node kept has the image its last pod "
        "pulled); model load 0 s ("
    )


def test_another_deployment_s_floor_takes_the_kept_gpu() -> None:
    # Production: Karpenter keeps no node of its own, but ranker's floor of 2 and the one placeholder keep three;
    # with general at zero, the placeholder's GPU is general's. Without the placeholder, ranker holds both nodes.
    woken = (
        *_production_at_zero(True)[:1],
        setting(SERVING, "deployments", "general", "wake", value={"budgetSeconds": 10, "allowInProduction": True}),
    )
    [kept] = errors_of("production", *woken)
    assert (
        "node 0 s (the pool keeps 3 node(s) at zero (gpuPool.minNodes 0, overprovisioningReplicas 1) with 1 GPU(s)"
        in kept
    )
    [error] = errors_of("production", *woken, setting(POOL, "overprovisioningReplicas", value=0))
    assert "node 110 s (Karpenter (EC2NodeClass): batch window 10 s" in error


def test_an_autoscaled_pool_adds_a_node_and_the_image_pull() -> None:
    # Staging's cluster-autoscaler pool, keeping no node: a wake brings up a node (the cluster-autoscaler's stated
    # default) and pulls the 16 GB image at 100 MB/s.
    [error] = errors_of(
        "staging", *AT_ZERO, setting(SERVING, "deployments", "general", "wake", value={"budgetSeconds": 300})
    )
    assert error.startswith(
        "triton-platform:serving.deployments.general.wake.budgetSeconds: 300 is below the wake's estimate of 446 s: "
        "node 270 s (the cluster-autoscaler: scale-up decision 30 s (cluster-autoscaler FAQ) + node group to a "
        "schedulable node 240 s (cluster-autoscaler FAQ, on GCE); set scaling.simulation.nodeProvisionSeconds to "
        "yours); image pull 160 s (16.0 GB at 100.0 MB/s: scaling.simulation.imageBytes, imagePullBytesPerSecond);"
    )
    assert validate(
        "staging", *AT_ZERO, setting(SERVING, "deployments", "general", "wake", value={"budgetSeconds": 450})
    )


def test_a_measured_node_time_replaces_the_default() -> None:
    [error] = errors_of(
        "staging",
        *AT_ZERO,
        setting(SERVING, "deployments", "general", "wake", value={"budgetSeconds": 200}),
        setting(SCALING, "simulation", "nodeProvisionSeconds", value=90),
    )
    assert error.startswith(
        "triton-platform:serving.deployments.general.wake.budgetSeconds: 200 is below the wake's estimate of 266 s: "
        "node 90 s (scaling.simulation.nodeProvisionSeconds); image pull 160 s"
    )


def test_karpenter_states_its_own_node_time() -> None:
    [error] = errors_of(
        "production",
        *_production_at_zero(True)[:1],
        setting(SERVING, "deployments", "general", "wake", value={"budgetSeconds": 120, "allowInProduction": True}),
        setting(POOL, "overprovisioningReplicas", value=0),
    )
    assert error.startswith(
        "triton-platform:serving.deployments.general.wake.budgetSeconds: 120 is below the wake's estimate of 286 s: "
        "node 110 s (Karpenter (EC2NodeClass): batch window 10 s (Karpenter --batch-max-duration default) + launch "
        "to a Ready node 40 s (aws/karpenter-provider-aws#6165) + device plugin advertises the GPU 60 s "
        "(cloudpilot-ai/karpenter-provider-gcp#148, on GCP); set scaling.simulation.nodeProvisionSeconds to yours); "
    )


def test_a_node_time_on_a_static_pool_is_refused() -> None:
    [error] = errors_of("dev", setting(SCALING, "simulation", "nodeProvisionSeconds", value=60))
    assert error == (
        "triton-platform:scaling.simulation.nodeProvisionSeconds: 60, but triton-platform:gpuPool.autoscaler is "
        "static: its nodes stay up and none is provisioned, so nothing reads it; remove it"
    )


def test_a_namespace_too_long_for_the_wake_service_is_refused() -> None:
    namespace = "n" * 52
    errors = errors_of("dev", setting("triton-platform:kubernetes", "namespace", value=namespace))
    assert (
        f"triton-platform:serving.deployments.general.wake: is set but the namespace needs the Service "
        f"'triton-wake-{namespace}' in the interceptor's namespace, longer than a Service name's 63 characters; use "
        "a namespace of at most 51 characters"
    ) in errors


@pytest.mark.parametrize(
    ("namespace", "why"),
    [
        (
            NAMESPACE,
            "the serving namespace (triton-platform:kubernetes.namespace), whose policies deny its pods' "
            "ingress and egress",
        ),
        ("gpu-system", "the GPU pool's namespace, whose policy denies its pods' egress"),
    ],
)
def test_the_add_on_is_refused_where_the_platform_s_policies_close_the_wake(namespace: str, why: str) -> None:
    errors = errors_of("dev", setting(SCALING, "httpAddOn", "namespace", value=namespace))
    assert (
        f"triton-platform:scaling.httpAddOn.namespace: {namespace!r} is {why} that no policy admits for the add-on: "
        "its interceptor would take no request and reach no pod, so a deployment at zero would never wake; give the "
        "add-on a namespace of its own (default 'keda')"
    ) in errors
    assert (
        validate("dev", setting(SCALING, "httpAddOn", "namespace", value="wake-path")).scaling.http_add_on.namespace
        == "wake-path"
    )


def test_placeholders_are_refused_when_every_deployment_idles_at_zero() -> None:
    errors = errors_of("dev", setting("triton-platform:gpuPool", "overprovisioningReplicas", value=1))
    assert (
        "triton-platform:gpuPool.overprovisioningReplicas: 1 placeholder pod(s) would hold GPU nodes while every "
        "deployment idles at zero (wake), so the pool never drops to zero; set 0 (the wake then includes a node), "
        "or keep a deployment's replicas.min >= 1"
    ) in errors


def _scaling(min_replicas: int) -> KedaScalingArgs:
    return {
        "targets": {
            "general": {
                "deployment_name": "triton-general",
                "namespace": "serving",
                "min_replicas": min_replicas,
                "max_replicas": 2,
                "trigger": {"name": "busy-ratio", "query": "vector(0)", "threshold": 0.5},
                "wake": {"service": "triton-general", "hosts": ["triton-general"], "budget_seconds": 60},
            }
        },
        "prometheus_url": "http://prometheus:9090",
    }


def test_the_component_refuses_a_wake_above_zero() -> None:
    with pytest.raises(ArgsError) as raised:
        scaling_of("s", _scaling(1))
    assert str(raised.value) == (
        "KedaScaling s: args.targets.general.wake: is set but min_replicas is 1: a Deployment wakes on a request "
        "only from 0; set min_replicas 0 or remove wake"
    )
    assert scaling_of("s", _scaling(0))["targets"]["general"]["wake"]["concurrency_target"] == 100


def test_the_component_refuses_a_budget_out_of_bounds() -> None:
    args = _scaling(0)
    args["targets"]["general"]["wake"]["budget_seconds"] = 0
    with pytest.raises(ArgsError, match=r"args\.targets\.general\.wake\.budget_seconds: 0 is below the minimum 1"):
        scaling_of("s", args)


def test_routes_hold_for_the_budget_on_both_protocols() -> None:
    routes = interceptor_routes(
        deployment="d", namespace="n", service="s", hosts=["s"], budget_seconds=45, concurrency_target=7, labels={}
    )
    assert sorted(routes) == ["grpc", "http"]
    for protocol, route in routes.items():
        assert route["metadata"] == {"name": f"d-{protocol}", "namespace": "n"}
        assert route["spec"]["scalingMetric"] == {"concurrency": {"targetValue": 7}}
        assert route["spec"]["timeouts"] == {"readiness": "45s"}


@pytest.mark.real_tools
def test_production_at_zero_with_the_add_on_passes_the_policy_pack() -> None:
    """The add-on's chart objects as production would install them (tests/conftest.py `production_at_zero`; the
    scanners' side is tests/manifest_scan/test_manifest_scan.py): every policy rule but images by tag, which the deploy
    workflow's `stackctl pin-images` resolves and lists."""
    synth = synth_production_at_zero()
    resources = built(synth)
    interceptor = [r for r in resources if r.kind == "Deployment" and r.name == "keda-add-ons-http-interceptor"]
    assert interceptor, "the add-on's chart was not templated"
    unpinned = {i.name for i in list_images(synth, synth.stack.config.image_digests) if i.state == "unpinned"}
    assert {f"ghcr.io/kedacore/http-add-on-{part}:0.15.0" for part in ("interceptor", "scaler", "operator")} <= unpinned
    assert policy_findings(resources, unpinned) == []
