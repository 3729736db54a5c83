"""Two component instances that would create the same Kubernetes object in one cluster are refused, naming both
(triton_platform/args/object_claims.py); instances in other namespaces or on other clusters are not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s
import pytest

from tests.components.triton_platform.serving.test_triton_serving import MODEL_REPO, serving_args
from tests.support.mocks import install, pulumi_test
from triton_platform.args.arg_problems import ArgsError
from triton_platform.args.object_claims import identities
from triton_platform.gpu_pool.gpu_node_pool import GpuNodePool
from triton_platform.monitoring.monitoring import Monitoring
from triton_platform.monitoring.monitoring_args import MonitoringArgs
from triton_platform.scaling.keda_scaling import KedaScaling
from triton_platform.scaling.keda_scaling_args import KedaScalingArgs
from triton_platform.serving.triton_serving import TritonServing

HINT = "give this instance a namespace (or names) of its own, or another Kubernetes provider"


def watching(namespace: str) -> MonitoringArgs:
    return {
        "namespace": namespace,
        "latency_slo_ms": 200,
        "deployments": {
            "general": {
                "object_name": "triton-general",
                "max_replicas": 2,
                "models": ["m"],
                "signal": {"kind": "queue-depth", "target": 4},
            }
        },
    }


def run(program: Any) -> None:
    install()
    pulumi_test(program)()


def cluster() -> pulumi.ResourceOptions:
    """A cluster of its own: a Kubernetes provider, as a program gives the components."""
    return pulumi.ResourceOptions(provider=k8s.Provider("cluster", render_yaml_to_directory="rendered"))


def second_refusal(component: Callable[..., object], args: Any) -> list[str]:
    """`component` built as `first` then as `second` with `args` in one cluster: the second's refusal, a line each."""
    opts = cluster()
    component("first", args, opts)
    with pytest.raises(ArgsError) as raised:
        component("second", args, opts)
    return str(raised.value).splitlines()


def created_by_first(component: Callable[..., object], objects: list[tuple[str, str]]) -> list[str]:
    """The refusal naming each of `objects` (kind, namespace/name) as `first`'s."""
    kind_of = component.__name__
    return [
        f"{kind_of} second: {kind} {name} is created by {kind_of} first already, in the same cluster; {HINT}"
        for kind, name in objects
    ]


def test_a_second_monitoring_of_one_namespace_is_refused_naming_each_object_and_its_creator() -> None:
    def program() -> None:
        assert second_refusal(Monitoring, watching("ml")) == created_by_first(
            Monitoring,
            [
                ("monitoring.coreos.com/v1/PrometheusRule", "ml/triton-platform"),
                ("monitoring.coreos.com/v1/ServiceMonitor", "ml/triton"),
                ("monitoring.coreos.com/v1alpha1/AlertmanagerConfig", "ml/triton-platform"),
                ("v1/ConfigMap", "ml/triton-general-dashboard"),
            ],
        )

    run(program)


def test_instances_in_other_namespaces_or_on_other_clusters_are_built() -> None:
    built: list[str] = []

    def program() -> None:
        opts = cluster()
        elsewhere = k8s.Provider("elsewhere", render_yaml_to_directory="elsewhere")
        for name, namespace, options in [
            ("ml", "ml", opts),
            ("other-namespace", "ml-canary", opts),
            ("other-cluster", "ml", pulumi.ResourceOptions(provider=elsewhere)),
            ("other-cluster-too", "ml-canary", pulumi.ResourceOptions(providers=[elsewhere])),
        ]:
            Monitoring(name, watching(namespace), options)  # raises ArgsError on a clash
            built.append(name)

    run(program)
    assert built == ["ml", "other-namespace", "other-cluster", "other-cluster-too"]


def test_instances_under_one_parent_share_its_cluster() -> None:
    def program() -> None:
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        Monitoring("a", watching("ml"), pulumi.ResourceOptions(parent=parent))
        with pytest.raises(
            ArgsError, match=r"^Monitoring b: monitoring\.coreos\.com/v1/PrometheusRule ml/triton-platform "
        ):
            Monitoring("b", watching("ml"), pulumi.ResourceOptions(parent=parent))

    run(program)


def test_instances_given_neither_provider_nor_parent_share_the_default_cluster() -> None:
    """Both deploy through the run's default provider: the second is refused; a later run (a fresh root stack
    resource, as `install` makes) may build the same again."""

    def program() -> None:
        Monitoring("a", watching("ml"))
        with pytest.raises(ArgsError) as raised:
            Monitoring("b", watching("ml"))
        assert str(raised.value).splitlines()[1] == (
            f"Monitoring b: monitoring.coreos.com/v1/ServiceMonitor ml/triton is created by Monitoring a already, in "
            f"the same cluster; {HINT}"
        )

    run(program)
    run(lambda: Monitoring("b", watching("ml")))


def test_two_gpu_pools_in_one_cluster_are_refused() -> None:
    """The pool's node software and its namespace are the cluster's: one pool per cluster."""

    def program() -> None:
        opts = cluster()
        GpuNodePool("gpu", {"workload_namespace": "ml", "max_nodes": 2}, opts)
        with pytest.raises(ArgsError) as raised:
            GpuNodePool("gpu-too", {"workload_namespace": "ml-canary", "max_nodes": 2}, opts)
        assert str(raised.value).splitlines()[0] == (
            f"GpuNodePool gpu-too: apps/v1/DaemonSet gpu-system/nvidia-device-plugin is created by GpuNodePool gpu "
            f"already, in the same cluster; {HINT}"
        )

    run(program)


def test_a_second_serving_in_one_namespace_is_refused_and_one_in_another_is_built() -> None:
    def program() -> None:
        opts = cluster()
        repository: Any = {"path": MODEL_REPO, "source": "bundled"}
        TritonServing("a", serving_args("observability", repository), opts)
        with pytest.raises(ArgsError) as raised:
            TritonServing("b", serving_args("observability", repository), opts)
        assert (
            "TritonServing b: v1/ServiceAccount inference/triton-server is created by TritonServing a already, "
            f"in the same cluster; {HINT}"
        ) in str(raised.value).splitlines()
        TritonServing("c", {**serving_args("observability", repository), "namespace": "inference-canary"}, opts)

    run(program)


def scaling(target: str, **changes: Any) -> KedaScalingArgs:
    """KedaScaling of the Deployment `target` in `ml`, woken on request; KEDA and the add-on installed."""
    return cast(
        KedaScalingArgs,
        {
            "targets": {
                "m": {
                    "deployment_name": target,
                    "namespace": "ml",
                    "min_replicas": 0,
                    "max_replicas": 2,
                    "trigger": {"name": "load", "query": "sum(load)", "threshold": 10},
                    "wake": {"service": target, "hosts": [target], "budget_seconds": 300},
                }
            },
            "prometheus_url": "http://p",
            "keda": {"mode": "install", "priority_class_name": "scaling-critical"},
            "http_add_on": {"mode": "install", "namespace": "wake"},
            **changes,
        },
    )


def test_a_second_keda_scaling_is_refused_naming_each_object_it_would_share() -> None:
    def program() -> None:
        assert second_refusal(KedaScaling, scaling("triton-general")) == created_by_first(
            KedaScaling,
            [
                ("http.keda.sh/v1beta1/InterceptorRoute", "ml/triton-general-grpc"),
                ("http.keda.sh/v1beta1/InterceptorRoute", "ml/triton-general-http"),
                ("keda.sh/v1alpha1/ScaledObject", "ml/triton-general"),
                ("policy/v1/PodDisruptionBudget", "wake/keda-add-ons-http-controller-manager"),
                ("policy/v1/PodDisruptionBudget", "wake/keda-add-ons-http-external-scaler"),
                ("scheduling.k8s.io/v1/PriorityClass", "scaling-critical"),
                ("v1/Namespace", "keda"),
                ("v1/Service", "wake/triton-wake-ml"),
            ],
        )

    run(program)


def test_keda_s_priority_class_and_monitoring_s_of_one_name_are_refused() -> None:
    def program() -> None:
        opts = cluster()
        Monitoring("monitoring", {**watching("ml"), "mode": "install", "priority_class_name": "scaling-critical"}, opts)
        with pytest.raises(ArgsError) as raised:
            KedaScaling("scaling", scaling("triton-general"), opts)
        assert str(raised.value) == (
            "KedaScaling scaling: scheduling.k8s.io/v1/PriorityClass scaling-critical is created by Monitoring "
            f"monitoring already, in the same cluster; {HINT}"
        )

    run(program)


def test_only_objects_named_now_are_identified() -> None:
    known = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "ml"}}
    later: Any = {"apiVersion": "v1", "kind": "Service", "metadata": pulumi.Output.from_input({"name": "b"})}
    odd: list[Any] = [{"kind": "Service", "metadata": {"name": "c"}}, {"apiVersion": "v1", "kind": "Service"}]
    assert identities([known, later, *odd]) == [("v1/Service", "ml", "a")]
