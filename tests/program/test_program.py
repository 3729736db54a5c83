"""The whole Pulumi program under mocks, for every stack: component tree, provider, namespace."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pytest

from offline.mock_runtime import EchoMocks, run_program
from offline.synth import SYNTH_RENDER_DIR, SynthResult
from platform_config.kubernetes import KubernetesConfig, render_override
from platform_config.loader import load_stack_file
from platform_config.paths import stack_file
from platform_config.stack_document import pulumi_config_from_stack_file
from tests.conftest import STACKS, synth_stack

PLATFORM = "triton-platform:index:TritonPlatform"
PROVIDER = "pulumi:providers:kubernetes"
NAMESPACE = "kubernetes:core/v1:Namespace"
SERVING = "triton-platform:index:TritonServing"
MONITORING = "triton-platform:index:Monitoring"
SCALING = "triton-platform:index:KedaScaling"
GPU_POOL = "triton-platform:index:GpuNodePool"
CHART = "triton-platform:helm:InstalledChart"
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"


def test_component_tree(synth: SynthResult) -> None:
    stack = synth.stack.stack
    parents = {r.name: r.parent.rsplit("::", 1)[-1] for r in synth.resources}
    components = {(r.type, r.name) for r in synth.resources if not r.custom}
    charts = {
        (kind, f"{stack}-{owner}{suffix}")
        for owner in ("monitoring-kube-prometheus-stack", "scaling-keda")
        for kind, suffix in ((CHART, ""), (CONFIG_GROUP, "-crds"), (CONFIG_GROUP, "-objects"))
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
    args = {stack: load_stack_file(stack_file(stack)).config.kubernetes.provider_args(stack) for stack in STACKS}
    assert args == {
        "dev": {"render_dir": "rendered/dev"},
        "staging": {"context": "staging"},
        "production": {"context": "production"},
    }


def test_synth_renders_every_stack_and_says_so_through_the_provider(synth: SynthResult) -> None:
    """Mocks reach no cluster: synth sets the render override, so no stack deploys and none checks its cluster."""
    stack = synth.stack.stack
    assert synth.find(PROVIDER, f"{stack}-kubernetes").inputs == {
        "renderYamlToDirectory": f"{SYNTH_RENDER_DIR}/{stack}"
    }


def test_a_deploy_stack_checks_its_cluster_before_anything_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run without the render override, staging deploys, under mocks too: nothing in the program detects them."""
    monkeypatch.delenv("TRITON_PLATFORM_RENDER_DIR", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    flat, secret_keys = pulumi_config_from_stack_file(stack_file("staging"))
    mocks = EchoMocks()
    with pytest.raises(pulumi.RunError) as caught:
        run_program("staging", flat, secret_keys, mocks=mocks)
    assert str(caught.value) == (
        f"stack staging: kubeconfig context 'staging' is not defined in {tmp_path / 'absent'} (contexts there: none)"
    )
    assert mocks.received == {}


def test_provider_takes_an_explicit_kubeconfig_and_render_dir() -> None:
    deploy = KubernetesConfig.model_validate(
        {"mode": "deploy", "context": "prod-eu", "kubeconfig": "/etc/kube/prod", "namespace": "t"}
    )
    assert deploy.provider_args("production") == {"context": "prod-eu", "kubeconfig": "/etc/kube/prod"}
    render = KubernetesConfig.model_validate({"mode": "render", "renderDir": "out/dev", "namespace": "t"})
    assert render.provider_args("dev") == {"render_dir": "out/dev"}


# Kinds without a namespace; everything else must name one, since the provider sets no default.
CLUSTER_SCOPED = {"Namespace", "PriorityClass", "ClusterRole", "ClusterRoleBinding", "NodePool"}


def test_every_namespaced_object_names_its_namespace(synth: SynthResult) -> None:
    unnamed = {(m["kind"], m["metadata"]["name"]) for m in synth.manifests() if not m["metadata"].get("namespace")}
    assert unnamed
    assert {kind for kind, _ in unnamed} <= CLUSTER_SCOPED, unnamed
    namespaced = [m for m in synth.manifests() if m["kind"] not in CLUSTER_SCOPED]
    assert all(m["metadata"]["namespace"] for m in namespaced)


def test_the_render_override_sends_every_stack_to_files_and_says_so_for_a_deploy_stack() -> None:
    deploy = KubernetesConfig.model_validate({"mode": "deploy", "context": "production", "namespace": "t"})
    assert deploy.provider_args("production", "/tmp/review") == {"render_dir": "/tmp/review/production"}
    assert deploy.override_notice("production", "/tmp/review") == (
        "TRITON_PLATFORM_RENDER_DIR is set: this deploy stack renders to /tmp/review/production instead of "
        "deploying to context 'production'"
    )
    assert deploy.provider_args("production", None) == {"context": "production"}
    assert deploy.override_notice("production", None) is None
    render = KubernetesConfig.model_validate({"mode": "render", "namespace": "t"})
    assert render.provider_args("dev", "/tmp/review") == {"render_dir": "/tmp/review/dev"}
    assert render.override_notice("dev", "/tmp/review") is None


def test_the_render_override_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_PLATFORM_RENDER_DIR", "/tmp/review")
    assert render_override() == "/tmp/review"
    monkeypatch.setenv("TRITON_PLATFORM_RENDER_DIR", "")
    assert render_override() is None


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
    mocks = EchoMocks()
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", flat, secret_keys, mocks=mocks)
    assert mocks.received == {}, "nothing may be registered before the config is valid"
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
    # Each chart's objects are one ConfigGroup under it: the SDK expands a component named in depends_on
    # into the resources under it, so waiting on the chart waits on its objects.
    groups = {r.parent: r for r in synth.of_type(CONFIG_GROUP)}
    assert {charts[n].urn for n in charts} == set(groups)
    scaling = synth.find(SCALING, "production-scaling")
    assert charts["production-monitoring-kube-prometheus-stack"].urn in scaling.dependencies
    scaled = synth.find("kubernetes:keda.sh/v1alpha1:ScaledObject", "production-scaling-general-scaled-object")
    assert charts["production-scaling-keda"].urn in scaled.dependencies


def test_stacks_without_install_mode_template_no_chart() -> None:
    for stack in ("dev", "staging"):
        assert synth_stack(stack).of_type(CHART) == []
