"""The whole Pulumi program under mocks, for every stack: component tree, provider, namespace."""

from __future__ import annotations

import pulumi
import pytest

from components.kubernetes_provider import provider_args
from components.kubernetes_provider_config import KubernetesConfig
from platform_config.loader import pulumi_config_from_stack_file, stack_file
from stackctl.mock_runtime import EchoMocks, RecordingMonitor, run_program
from stackctl.synth import SynthResult
from tests.conftest import synth_stack

PLATFORM = "triton-platform:index:TritonPlatform"
PROVIDER = "pulumi:providers:kubernetes"
NAMESPACE = "kubernetes:core/v1:Namespace"
SERVING = "triton-platform:serving:TritonServing"
MONITORING = "triton-platform:monitoring:Monitoring"
SCALING = "triton-platform:scaling:KedaScaling"
GPU_POOL = "triton-platform:gpu:GpuNodePool"
CHART = "triton-platform:helm:InstalledChart"
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"


def test_component_tree(synth: SynthResult) -> None:
    stack = synth.stack.stack
    parents = {r.name: r.parent.rsplit("::", 1)[-1] for r in synth.resources}
    components = {(r.type, r.name) for r in synth.resources if not r.custom}
    charts = {
        (kind, f"{stack}-{owner}{suffix}")
        for owner in ("monitoring-kube-prometheus-stack", "scaling-keda")
        for kind, suffix in ((CHART, ""), (CONFIG_GROUP, "-objects"))
    }
    assert components == {
        (PLATFORM, stack),
        (SERVING, f"{stack}-serving"),
        (MONITORING, f"{stack}-monitoring"),
        (SCALING, f"{stack}-scaling"),
        (GPU_POOL, f"{stack}-gpu-pool"),
    } | (charts if stack == "production" else set())
    gpu_children = {r.name for r in synth.resources if parents[r.name] == f"{stack}-gpu-pool"}
    assert {f"{stack}-gpu-pool-device-plugin", f"{stack}-gpu-pool-system-namespace"} <= gpu_children
    assert parents[f"{stack}-scaling"] == stack
    scaling_children = {r.name for r in synth.resources if parents[r.name] == f"{stack}-scaling"}
    assert {
        f"{stack}-scaling-{name}-scaled-object" for name in synth.stack.config.serving.deployments
    } <= scaling_children
    assert parents[f"{stack}-monitoring"] == stack
    monitoring_children = {r.name for r in synth.resources if parents[r.name] == f"{stack}-monitoring"}
    assert {
        f"{stack}-monitoring-service-monitor",
        f"{stack}-monitoring-rules",
        f"{stack}-monitoring-alert-routing",
    } <= monitoring_children
    assert parents[f"{stack}-kubernetes"] == parents[stack] == f"triton-platform-{stack}"
    for child in ("namespace", "default-deny", "default-deny-egress", "serving"):
        assert parents[f"{stack}-{child}"] == stack
    serving_children = {r.name for r in synth.resources if parents[r.name] == f"{stack}-serving"}
    deployments = synth.stack.config.serving.deployments
    for name in deployments:
        assert {f"{stack}-serving-{name}-deployment", f"{stack}-serving-{name}-service"} <= serving_children
    assert {f"{stack}-serving-service-account", f"{stack}-serving-priority-class"} <= serving_children
    custom = [r for r in synth.resources if r.custom]
    chart_names = {name for _, name in charts}
    assert {r.name for r in custom} == (
        {f"{stack}-kubernetes", f"{stack}-namespace", f"{stack}-default-deny", f"{stack}-default-deny-egress"}
        | serving_children
        | monitoring_children
        | scaling_children
        | gpu_children
    ) - chart_names


def test_every_kubernetes_object_uses_the_stack_provider(synth: SynthResult) -> None:
    provider = synth.find(PROVIDER, f"{synth.stack.stack}-kubernetes")
    objects = [r for r in synth.resources if r.type.startswith("kubernetes:")]
    assert objects
    assert {r.provider.split("::")[-2] for r in objects} == {provider.name}


def test_dev_renders_and_others_deploy_to_their_named_context() -> None:
    assert synth_stack("dev").find(PROVIDER, "dev-kubernetes").inputs == {
        "renderYamlToDirectory": "rendered/dev",
    }
    for stack in ("staging", "production"):
        assert synth_stack(stack).find(PROVIDER, f"{stack}-kubernetes").inputs == {"context": stack}


def test_provider_takes_an_explicit_kubeconfig_and_render_dir() -> None:
    deploy = KubernetesConfig.model_validate(
        {"mode": "deploy", "context": "prod-eu", "kubeconfig": "/etc/kube/prod", "namespace": "t"}
    )
    assert provider_args(deploy, "production") == {
        "context": "prod-eu",
        "kubeconfig": "/etc/kube/prod",
    }
    render = KubernetesConfig.model_validate({"mode": "render", "renderDir": "out/dev", "namespace": "t"})
    assert provider_args(render, "dev") == {"render_yaml_to_directory": "out/dev"}


# Kinds without a namespace; everything else must name one, since the provider sets no default.
CLUSTER_SCOPED = {"Namespace", "PriorityClass", "ClusterRole", "ClusterRoleBinding", "NodePool"}


def test_every_namespaced_object_names_its_namespace(synth: SynthResult) -> None:
    unnamed = {(m["kind"], m["metadata"]["name"]) for m in synth.manifests() if not m["metadata"].get("namespace")}
    assert unnamed
    assert {kind for kind, _ in unnamed} <= CLUSTER_SCOPED, unnamed
    namespaced = [m for m in synth.manifests() if m["kind"] not in CLUSTER_SCOPED]
    assert all(m["metadata"]["namespace"] for m in namespaced)


def test_the_render_override_sends_every_stack_to_files(monkeypatch: pytest.MonkeyPatch) -> None:
    deploy = KubernetesConfig.model_validate({"mode": "deploy", "context": "production", "namespace": "t"})
    monkeypatch.setenv("TRITON_PLATFORM_RENDER_DIR", "/tmp/review")
    assert provider_args(deploy, "production") == {"render_yaml_to_directory": "/tmp/review/production"}
    monkeypatch.delenv("TRITON_PLATFORM_RENDER_DIR")
    assert provider_args(deploy, "production") == {"context": "production"}


def test_namespace_enforces_restricted_pod_security(synth: SynthResult) -> None:
    config = synth.stack.config
    namespace = synth.find(NAMESPACE, f"{synth.stack.stack}-namespace").inputs
    assert namespace["metadata"]["name"] == config.kubernetes.namespace
    labels = namespace["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    assert labels["triton-platform/environment"] == config.environment


def test_a_config_error_stops_the_program_with_the_full_report() -> None:
    flat, secret_keys = pulumi_config_from_stack_file(stack_file("dev"))
    flat["triton-platform:gpuPool"] = '{"maxNodes": 0, "gpusPerNode": 1}'
    flat["triton-platform:environment"] = "qa"
    monitor = RecordingMonitor(EchoMocks())
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", flat, secret_keys, monitor)
    assert monitor.registered == [], "nothing may be registered before the config is valid"
    assert str(caught.value).splitlines() == [
        "stacks/Pulumi.dev.yaml: 2 config errors",
        "stacks/Pulumi.dev.yaml: triton-platform:environment: Input should be 'dev', 'staging' or 'production'; got 'qa'",
        "stacks/Pulumi.dev.yaml: triton-platform:gpuPool.maxNodes: Input should be greater than or equal to 1; got 0",
    ]


def test_production_installs_both_charts_before_what_needs_their_crds() -> None:
    """KEDA's chart after the Prometheus Operator's (it brings a ServiceMonitor); ScaledObjects after KEDA's chart."""
    synth = synth_stack("production")
    charts = {r.name: r for r in synth.of_type(CHART)}
    assert sorted(charts) == ["production-monitoring-kube-prometheus-stack", "production-scaling-keda"]
    groups = {r.parent: r for r in synth.of_type(CONFIG_GROUP)}
    assert {charts[n].urn for n in charts} == set(groups)
    objects = {name: groups[chart.urn].urn for name, chart in charts.items()}
    # The SDK expands a component in depends_on into the resources under it.
    scaling = synth.find(SCALING, "production-scaling")
    assert objects["production-monitoring-kube-prometheus-stack"] in scaling.dependencies
    scaled = synth.find("kubernetes:keda.sh/v1alpha1:ScaledObject", "production-scaling-general-scaled-object")
    assert objects["production-scaling-keda"] in scaled.dependencies


def test_stacks_without_install_mode_template_no_chart() -> None:
    for stack in ("dev", "staging"):
        assert synth_stack(stack).of_type(CHART) == []
