"""The GPU node pool for each autoscaler mode and stack, the contract it hands Triton, and its rules."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from offline.synth import SynthResult
from tests.conftest import POOL, STACKS, errors_of, removing, setting, synth_mutated, synth_stack, validate

# Every stack keeps the pool's default node labels and taint.
POOL_NODE_LABELS = {"triton-platform/gpu-pool": "inference"}
POOL_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}


def objects(result: SynthResult, kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in result.manifests() if m["kind"] == kind}


@pytest.mark.parametrize(
    ("stack", "deployments"),
    [("dev", ["triton-general"]), ("staging", ["triton-general"]), ("production", ["triton-general", "triton-ranker"])],
)
def test_the_pool_contract_reaches_every_triton_pod(stack: str, deployments: list[str]) -> None:
    triton = {k: d for k, d in objects(synth_stack(stack), "Deployment").items() if k.startswith("triton-")}
    assert sorted(triton) == deployments
    for deployment in triton.values():
        spec = deployment["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == POOL_NODE_LABELS
        assert spec["tolerations"] == [POOL_TOLERATION], "the pool's one taint is tolerated"


@pytest.mark.parametrize("stack", STACKS)
def test_device_plugin_runs_on_the_pool_with_its_sharing_config(stack: str) -> None:
    result = synth_stack(stack)
    plugin = objects(result, "DaemonSet")["nvidia-device-plugin"]["spec"]["template"]["spec"]
    assert plugin["nodeSelector"] == POOL_NODE_LABELS
    assert plugin["tolerations"] == [POOL_TOLERATION, {"key": "CriticalAddonsOnly", "operator": "Exists"}]
    # Production runs it by the digest its stack lists for the tag; the other tiers by the tag.
    assert (
        plugin["containers"][0]["image"].removesuffix(
            "@sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312" if stack == "production" else ""
        )
        == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    )
    assert plugin["containers"][0]["resources"]["limits"] == {
        "cpu": "100m",
        "memory": "128Mi",
        "ephemeral-storage": "256Mi",
    }
    config = yaml.safe_load(objects(result, "ConfigMap")["nvidia-device-plugin"]["data"]["config.yaml"])
    if stack == "dev":  # the one stack that shares GPUs by time-slicing
        assert config["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    else:
        assert "sharing" not in config
    assert config["flags"]["migStrategy"] == "none"


def test_mig_strategy_reaches_the_plugin_with_the_capability_it_needs() -> None:
    result = synth_mutated("production", setting(POOL, "devicePlugin", value={"sharing": "mig"}))
    config = yaml.safe_load(objects(result, "ConfigMap")["nvidia-device-plugin"]["data"]["config.yaml"])
    assert config == {"version": "v1", "flags": {"migStrategy": "single"}}
    container = objects(result, "DaemonSet")["nvidia-device-plugin"]["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    plain = objects(synth_stack("production"), "DaemonSet")["nvidia-device-plugin"]["spec"]["template"]["spec"]
    assert plain["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_a_plugin_config_change_rolls_the_plugin() -> None:
    def checksum(result: SynthResult) -> str:
        template = objects(result, "DaemonSet")["nvidia-device-plugin"]["spec"]["template"]
        return str(template["metadata"]["annotations"]["triton-platform/config-sha256"])

    changed = synth_mutated("dev", setting(POOL, "devicePlugin", "timeSlicingReplicas", value=8))
    assert checksum(synth_stack("dev")) != checksum(changed)


def test_karpenter_node_pool_in_production() -> None:
    result = synth_stack("production")
    [node_pool] = [m for m in result.manifests() if m["kind"] == "NodePool"]
    spec = node_pool["spec"]
    assert spec["limits"] == {"nvidia.com/gpu": "14"}
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "10m",
        "budgets": [{"nodes": "1"}],
    }
    assert spec["template"]["spec"]["expireAfter"] == "720h"
    assert {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]} in spec["template"][
        "spec"
    ]["requirements"]
    shared = synth_mutated(
        "production", setting(POOL, "devicePlugin", value={"sharing": "time-slicing", "timeSlicingReplicas": 3})
    )
    [shared_pool] = [m for m in shared.manifests() if m["kind"] == "NodePool"]
    assert shared_pool["spec"]["limits"] == {"nvidia.com/gpu": "42"}, "Karpenter counts advertised GPUs"
    template = spec["template"]
    assert template["metadata"]["labels"] == POOL_NODE_LABELS
    assert template["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]} in template["spec"][
        "requirements"
    ]


def test_cluster_autoscaler_in_staging() -> None:
    result = synth_stack("staging")
    autoscaler = objects(result, "Deployment")["cluster-autoscaler"]["spec"]["template"]["spec"]
    assert autoscaler["serviceAccountName"] == "cluster-autoscaler"
    assert autoscaler["containers"][0]["args"] == [
        "--cloud-provider=aws",
        "--namespace=gpu-system",
        "--nodes=1:4:triton-staging-gpu",
        "--scale-down-delay-after-add=10m",
        "--scale-down-delay-after-delete=2m",
        "--scale-down-unneeded-time=10m",
        "--balance-similar-node-groups=true",
        "--expander=least-waste",
    ]
    binding = objects(result, "ClusterRoleBinding")["triton-staging-cluster-autoscaler"]
    assert binding["roleRef"]["name"] in objects(result, "ClusterRole")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "cluster-autoscaler", "namespace": "gpu-system"}]
    cluster_rules = objects(result, "ClusterRole")["triton-staging-cluster-autoscaler"]["rules"]
    assert not any("configmaps" in r["resources"] or "leases" in r["resources"] for r in cluster_rules)
    local = objects(result, "Role")["cluster-autoscaler"]
    assert local["metadata"]["namespace"] == "gpu-system"
    assert all("resourceNames" in r or set(r["verbs"]) <= {"create", "list", "watch"} for r in local["rules"])


def test_static_pool_patches_the_named_nodes() -> None:
    result = synth_mutated("dev", setting(POOL, "staticNodes", value=["gpu-node-1", "gpu-node-2"]))
    patches = [r for r in result.resources if r.type == "kubernetes:core/v1:NodePatch"]
    assert sorted(p.inputs["metadata"]["name"] for p in patches) == ["gpu-node-1", "gpu-node-2"]
    assert patches[0].inputs["metadata"]["labels"] == {"triton-platform/gpu-pool": "inference"}
    assert patches[0].inputs["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]
    assert not [r for r in synth_stack("dev").resources if r.type == "kubernetes:core/v1:NodePatch"]


def test_priorities_and_overprovisioning() -> None:
    result = synth_stack("production")
    classes = objects(result, "PriorityClass")
    # Inference (serving's) above batch above the placeholders, which evict nothing.
    assert {name: (c["value"], c["preemptionPolicy"]) for name, c in classes.items()} == {
        "triton-production-inference": (100_000, "PreemptLowerPriority"),
        "triton-production-batch": (1_000, "PreemptLowerPriority"),
        "triton-production-overprovisioning": (-10, "Never"),
        # The scaling path above serving: Prometheus and Alertmanager, and KEDA (priority_classes.py).
        "triton-production-monitoring": (200_000, "PreemptLowerPriority"),
        "triton-production-keda": (200_000, "PreemptLowerPriority"),
    }
    placeholder = objects(result, "Deployment")["gpu-overprovisioning"]["spec"]
    assert placeholder["replicas"] == 1
    pod = placeholder["template"]["spec"]
    assert pod["priorityClassName"] == "triton-production-overprovisioning"
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "gpu-overprovisioning" not in objects(synth_stack("dev"), "Deployment")


def test_dcgm_exporter_is_optional() -> None:
    production = synth_stack("production")
    dcgm = objects(production, "DaemonSet")["dcgm-exporter"]["spec"]["template"]["spec"]
    assert dcgm["containers"][0]["volumeMounts"] == [
        {"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources", "readOnly": True},
        {"name": "counters", "mountPath": "/etc/dcgm-exporter/triton-platform", "readOnly": True},
    ]
    assert "dcgm-exporter" in objects(production, "ServiceMonitor")
    assert "dcgm-exporter" not in objects(synth_stack("dev"), "DaemonSet")


# --- validation ---------------------------------------------------------------


def test_karpenter_needs_a_gpu_family_or_model() -> None:
    [error] = errors_of("production", setting(POOL, "karpenter", value={"capacityTypes": ["on-demand"]}))
    assert error == (
        "triton-platform:gpuPool.karpenter: set instanceFamilies or gpuNames: without one Karpenter may launch "
        "nodes without GPUs"
    )
    assert validate("production", setting(POOL, "karpenter", value={"gpuNames": ["l4"]}))


def test_autoscaler_settings_must_match_the_mode() -> None:
    [error] = errors_of("production", removing(POOL, "karpenter"))
    assert error == "triton-platform:gpuPool.karpenter: missing (required): autoscaler 'karpenter' needs its settings"
    # Every rule of the component's that fails, in one run: staging also sets minNodes 1 of 4.
    assert errors_of("staging", setting(POOL, "autoscaler", value="static")) == [
        "triton-platform:gpuPool.clusterAutoscaler: applies only to autoscaler 'cluster-autoscaler', not 'static'",
        "triton-platform:gpuPool.minNodes: 1, but a static pool has a fixed size; set minNodes = maxNodes (4)",
    ]
    [error] = errors_of("staging", setting(POOL, "staticNodes", value=["n1"]))
    assert error == "triton-platform:gpuPool.staticNodes: applies only to autoscaler 'static', not 'cluster-autoscaler'"


def test_an_unknown_autoscaler_mode_is_rejected() -> None:
    [error] = errors_of("dev", setting(POOL, "autoscaler", value="gke-autopilot"))
    assert error == (
        "triton-platform:gpuPool.autoscaler: Input should be 'static', 'karpenter', 'cluster-autoscaler' or 'external'; got 'gke-autopilot'"
    )


def test_cluster_autoscaler_needs_node_groups() -> None:
    [error] = errors_of("staging", setting(POOL, "clusterAutoscaler", "nodeGroups", value=[]))
    assert error.startswith("triton-platform:gpuPool.clusterAutoscaler.nodeGroups: List should have at least 1 item")


def test_time_slicing_needs_at_least_two_replicas() -> None:
    [error] = errors_of("dev", setting(POOL, "devicePlugin", "timeSlicingReplicas", value=1))
    assert (
        error
        == "triton-platform:gpuPool.devicePlugin.timeSlicingReplicas: Input should be greater than or equal to 2; got 1"
    )


def test_a_stack_sharing_a_cluster_leaves_the_cluster_level_objects_alone() -> None:
    result = synth_mutated("staging", setting(POOL, "manage", value=False))
    kinds = {(m["kind"], m["metadata"]["name"]) for m in result.manifests()}
    assert ("Namespace", "gpu-system") not in kinds
    assert ("DaemonSet", "nvidia-device-plugin") not in kinds
    assert ("Deployment", "cluster-autoscaler") not in kinds
    assert ("PriorityClass", "triton-staging-batch") in kinds


def test_karpenter_pools_have_no_node_minimum() -> None:
    [error] = errors_of("production", setting(POOL, "minNodes", value=3))
    assert error.startswith("triton-platform:gpuPool.minNodes: 3, but a Karpenter NodePool has no node minimum")


def test_a_static_pool_has_a_fixed_size() -> None:
    [error] = errors_of("dev", setting(POOL, "minNodes", value=1))
    assert (
        error == "triton-platform:gpuPool.minNodes: 1, but a static pool has a fixed size; set minNodes = maxNodes (2)"
    )


def test_dcgm_exporter_is_probed_and_keeps_only_sys_admin() -> None:
    dcgm = objects(synth_stack("production"), "DaemonSet")["dcgm-exporter"]["spec"]["template"]["spec"]
    [container] = dcgm["containers"]
    health = {"httpGet": {"path": "/health", "port": "metrics"}, "initialDelaySeconds": 45}
    assert container["livenessProbe"] == {**health, "periodSeconds": 5}
    assert container["readinessProbe"] == health
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]},
    }
    assert dcgm["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}


def test_node_agents_have_no_egress_and_the_autoscaler_reaches_only_apis() -> None:
    policies = [m for m in synth_stack("staging").manifests() if m["kind"] == "NetworkPolicy"]
    in_system = {m["metadata"]["name"]: m["spec"] for m in policies if m["metadata"]["namespace"] == "gpu-system"}
    assert in_system["default-deny-egress"] == {"podSelector": {}, "policyTypes": ["Egress"]}
    autoscaler = in_system["cluster-autoscaler"]
    assert autoscaler["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in autoscaler
    [container] = next(
        m
        for m in synth_stack("staging").manifests()
        if m["kind"] == "Deployment" and m["metadata"]["name"] == "cluster-autoscaler"
    )["spec"]["template"]["spec"]["containers"]
    # Live while its loop reports healthy (the upstream chart's probe); ready once it serves on its port.
    assert container["livenessProbe"] == {"httpGet": {"path": "/health-check", "port": "metrics"}}
    assert container["readinessProbe"] == {"tcpSocket": {"port": "metrics"}}
    assert autoscaler["egress"] == [
        {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        {"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]},
    ]


def test_the_dcgm_service_monitor_waits_for_the_operator_the_stack_installs() -> None:
    # The root gives the pool `depends_on` the operator's chart (its CRDs), as an Output resolved once Monitoring
    # exists (it is declared after the pool); the pool hands it to its ServiceMonitor.
    result = synth_stack("production")
    operator = result.find("triton-platform:helm:InstalledChart", "production-monitoring-kube-prometheus-stack")
    monitor = result.find(
        "kubernetes:monitoring.coreos.com/v1:ServiceMonitor", "production-gpu-pool-dcgm-service-monitor"
    )
    assert operator.urn in monitor.dependencies
    plugin = result.find("kubernetes:apps/v1:DaemonSet", "production-gpu-pool-device-plugin")
    assert operator.urn not in plugin.dependencies, "nothing else of the pool waits for Prometheus"
