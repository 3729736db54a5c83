"""`KedaScaling` alone, on a Deployment of its own, under Pulumi's public mocks (tests/support/mocks.py).

No stack file: each case writes its Args by hand, as a user of the component would, and asserts what
the component registered against literal values. The pure builders have cases of their own at the end.
"""

from __future__ import annotations

import json
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s
import pytest

from tests.support.crd_schemas import validate as validate_crd
from tests.support.mocks import RecordingMocks, install, pulumi_test
from triton_platform.args.arg_problems import ArgProblems, ArgsError
from triton_platform.scaling.keda_scaling import KedaScaling, gpu_memory_query, one_namespace, scaled_object_manifest
from triton_platform.scaling.keda_scaling_args import (
    DEFAULT_SCALE_DOWN,
    DailyFloor,
    KedaScalingArgs,
    LoadTrigger,
    ScaleTarget,
    scaling_of,
)

KEDA = "triton-platform:index:KedaScaling"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
GPU_QUERY = (
    'sum(sum by (pod) (nv_gpu_memory_used_bytes{namespace="ml", deployment="my-model"})'
    ' / sum by (pod) (nv_gpu_memory_total_bytes{namespace="ml", deployment="my-model"}))'
)
"""The GPU-memory trigger's query for Deployment `my-model` in namespace `ml`, written out."""


@pytest.fixture
def mocks() -> RecordingMocks:
    # Set per test: other tests of the same process install mocks of their own.
    return install(project="keda-test", stack="unit")


def my_deployment(name: str = "my-model", namespace: str = "ml") -> k8s.apps.v1.Deployment:
    """A user's own Deployment, without `replicas` (KEDA owns the count)."""
    labels = {"app": name}
    return k8s.apps.v1.Deployment(
        name,
        metadata={"name": name, "namespace": namespace},
        spec={
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "server", "image": "registry.example/server:1.0"}]},
            },
        },
    )


def prometheus_url() -> pulumi.Output[str]:
    """The URL of a Prometheus Service of the user's: another resource's output, not a plain string."""
    service = k8s.core.v1.Service(
        "prom", metadata={"name": "prom", "namespace": "monitoring"}, spec={"ports": [{"port": 9090}]}
    )
    return service.metadata.apply(lambda m: f"http://{m.name}.{m.namespace}.svc:9090")


QUEUE: LoadTrigger = {"name": "queue", "query": "sum(my_queue_depth)", "threshold": 5, "activation_threshold": 1}


def target_of(deployment: k8s.apps.v1.Deployment, min_replicas: int, max_replicas: int) -> ScaleTarget:
    """The Deployment named by its outputs, as a user of the component would: the ScaledObject waits for it."""
    return {
        "deployment_name": deployment.metadata.name,
        "namespace": deployment.metadata.namespace,
        "min_replicas": min_replicas,
        "max_replicas": max_replicas,
        "trigger": QUEUE,
    }


@pulumi_test
def test_the_scaled_object_names_are_an_output_by_target(mocks: RecordingMocks) -> pulumi.Output[None]:
    scaling = KedaScaling(
        "my-scaling",
        {
            "targets": {
                "first": target_of(my_deployment("model-a", "ml"), 1, 2),
                "second": target_of(my_deployment("model-b", "ml"), 1, 3),
            },
            "prometheus_url": "http://prom.monitoring.svc:9090",
        },
    )

    def check(names: dict[str, str]) -> None:
        # KEDA names a ScaledObject after its Deployment: `kubectl get scaledobject <name> -n ml`.
        assert names == {"first": "model-a", "second": "model-b"}

    return scaling.scaled_object_names.apply(check)


@pulumi_test
def test_the_load_query_may_be_another_resources_output(mocks: RecordingMocks) -> pulumi.Output[None]:
    """As Monitoring's `load_queries` gives it: the ScaledObject's trigger carries the query once known."""
    query = my_deployment().metadata.apply(lambda m: f'sum(my_queue_depth{{deployment="{m.name}"}})')
    target: ScaleTarget = {**target_of(my_deployment("model-a"), 1, 2), "trigger": {**QUEUE, "query": query}}
    scaling = KedaScaling("my-scaling", {"targets": {"a": target}, "prometheus_url": "http://prom.monitoring.svc:9090"})

    def check(_: str) -> None:
        [trigger, _gpu] = mocks.inputs["kubernetes:keda.sh/v1alpha1:ScaledObject", "my-scaling-a-scaled-object"][
            "spec"
        ]["triggers"]
        assert trigger["metadata"]["query"] == 'sum(my_queue_depth{deployment="my-model"})'

    return scaling.scaled_objects["a"].urn.apply(check)


@pulumi_test
def test_extra_triggers_follow_the_load_each_with_its_metric_type(mocks: RecordingMocks) -> pulumi.Output[None]:
    """As Monitoring's `token_queries` gives them: queries known later, a latency ratio held as a Value."""
    ratio = my_deployment().metadata.apply(lambda m: f'max(ttft_ratio{{deployment="{m.name}"}}) or vector(0)')
    target: ScaleTarget = {
        **target_of(my_deployment("model-a"), 1, 2),
        "extra_triggers": [
            {"name": "time-to-first-token", "query": ratio, "threshold": 0.8, "metric_type": "Value"},
            {"name": "kv-cache", "query": "sum(kv)", "threshold": 0.75},
        ],
    }
    scaling = KedaScaling("my-scaling", {"targets": {"a": target}, "prometheus_url": "http://prom.monitoring.svc:9090"})

    def check(_: str) -> None:
        spec = mocks.inputs["kubernetes:keda.sh/v1alpha1:ScaledObject", "my-scaling-a-scaled-object"]["spec"]
        assert [(t["name"], t["metricType"], t["metadata"]["threshold"]) for t in spec["triggers"]] == [
            ("queue", "AverageValue", "5"),
            ("time-to-first-token", "Value", "0.8"),
            ("kv-cache", "AverageValue", "0.75"),
            ("gpu-memory", "AverageValue", "0.8"),
        ]
        assert spec["triggers"][1]["metadata"]["query"] == 'max(ttft_ratio{deployment="my-model"}) or vector(0)'
        assert spec["triggers"][1]["metadata"]["ignoreNullValues"] == "false"

    return scaling.scaled_objects["a"].urn.apply(check)


@pulumi_test
def test_a_deployment_of_ones_own_is_scaled_on_its_query(mocks: RecordingMocks) -> pulumi.Output[None]:
    scaling = KedaScaling(
        "my-scaling",
        {
            "targets": {"my-model": target_of(my_deployment(), 1, 4)},
            "prometheus_url": prometheus_url(),
            "polling_interval_seconds": 15,
            "scale_down": {"stabilization_seconds": 120, "percent": 50, "period_seconds": 60},
            "fallback": {"replicas": 2},
            "labels": {"team": "ml"},
        },
    )
    scaled = scaling.scaled_objects["my-model"]

    def check(urn: str) -> None:
        # The ScaledObject is the component's child: its URN's type chain runs through KedaScaling.
        assert urn == (
            "urn:pulumi:unit::keda-test::triton-platform:index:KedaScaling$kubernetes:keda.sh/v1alpha1:ScaledObject"
            "::my-scaling-my-model-scaled-object"
        )
        # The user's two resources, the component and one ScaledObject: no KEDA install, no credentials.
        assert sorted((r.typ, r.name) for r in mocks.resources) == sorted(
            [
                ("kubernetes:apps/v1:Deployment", "my-model"),
                ("kubernetes:core/v1:Service", "prom"),
                (KEDA, "my-scaling"),
                (SCALED_OBJECT, "my-scaling-my-model-scaled-object"),
            ]
        )
        assert mocks.calls == []
        manifest = mocks.registered(SCALED_OBJECT)["my-scaling-my-model-scaled-object"]
        assert manifest["metadata"] == {"name": "my-model", "namespace": "ml", "labels": {"team": "ml"}}
        common = {"serverAddress": "http://prom.monitoring.svc:9090", "ignoreNullValues": "false"}
        assert manifest["spec"] == {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "my-model"},
            "pollingInterval": 15,
            "minReplicaCount": 1,
            "maxReplicaCount": 4,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        # The default scale-up: 100% or 3 pods per 30 s.
                        "scaleUp": {
                            "stabilizationWindowSeconds": 0,
                            "selectPolicy": "Max",
                            "policies": [
                                {"type": "Percent", "value": 100, "periodSeconds": 30},
                                {"type": "Pods", "value": 3, "periodSeconds": 30},
                            ],
                        },
                        "scaleDown": {
                            "stabilizationWindowSeconds": 120,
                            "selectPolicy": "Max",
                            "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
                        },
                    }
                }
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "name": "queue",
                    "metricType": "AverageValue",
                    "metadata": {
                        **common,
                        "query": "sum(my_queue_depth)",
                        "threshold": "5",
                        "activationThreshold": "1",
                    },
                },
                {
                    "type": "prometheus",
                    "name": "gpu-memory",
                    "metricType": "AverageValue",
                    "metadata": {**common, "query": GPU_QUERY, "threshold": "0.8", "activationThreshold": "0"},
                },
            ],
            "fallback": {"failureThreshold": 3, "replicas": 2, "behavior": "currentReplicasIfHigher"},
        }

    return scaled.urn.apply(check)


@pulumi_test
def test_install_mode_installs_keda_into_its_namespace_first(mocks: RecordingMocks) -> pulumi.Output[None]:
    scaling = KedaScaling(
        "my-scaling",
        {
            "targets": {"my-model": target_of(my_deployment(), 1, 2)},
            "prometheus_url": "http://prometheus.example.com:9090",
            "keda": {"mode": "install", "namespace": "keda-system"},
            "labels": {"team": "ml"},
            "kube_version": "v1.34.0",
        },
    )

    def check(_: str) -> None:
        assert sorted((r.typ, r.name) for r in mocks.resources) == sorted(
            [
                ("kubernetes:apps/v1:Deployment", "my-model"),
                (KEDA, "my-scaling"),
                ("kubernetes:core/v1:Namespace", "my-scaling-namespace"),
                ("triton-platform:helm:InstalledChart", "my-scaling-keda"),
                ("kubernetes:yaml/v2:ConfigGroup", "my-scaling-keda-crds"),
                ("kubernetes:yaml/v2:ConfigGroup", "my-scaling-keda-objects"),
                (SCALED_OBJECT, "my-scaling-my-model-scaled-object"),
            ]
        )
        namespace = mocks.registered("kubernetes:core/v1:Namespace")["my-scaling-namespace"]["metadata"]
        assert namespace["name"] == "keda-system"
        assert namespace["labels"] == {"team": "ml", "pod-security.kubernetes.io/enforce": "restricted"}
        [template] = mocks.calls
        assert template.token == "kubernetes:helm:template"
        assert json.loads(template.args["jsonOpts"]) == {
            "release_name": "keda",
            "namespace": "keda-system",
            "values": {
                "prometheus": {"operator": {"enabled": True, "serviceMonitor": {"enabled": True}}},
                "rbac": {"enabledCustomScaledRefKinds": False},
                "permissions": {
                    "operator": {"restrict": {"secret": True}},
                    "metricServer": {"restrict": {"secret": True}},
                },
                "operator": {"replicaCount": 1},
                "metricsServer": {"replicaCount": 1},
            },
            "include_test_hook_resources": False,
            "chart": "keda",
            "fetch_opts": {"repo": "https://kedacore.github.io/charts", "version": "2.20.2"},
            "kube_version": "v1.34.0",
        }

    return scaling.scaled_objects["my-model"].urn.apply(check)


@pulumi_test
def test_replicated_keda_gets_disruption_budgets_and_a_priority_above_tritons(
    mocks: RecordingMocks,
) -> pulumi.Output[None]:
    keda = {"mode": "install", "namespace": "keda", "replicas": 2, "priority_class_name": "scaling-critical"}
    scaling = KedaScaling(
        "my-scaling",
        {
            "targets": {"my-model": target_of(my_deployment(), 1, 2)},
            "prometheus_url": "http://prometheus.example.com:9090",
            "keda": cast(Any, keda),
            "kube_version": "v1.34.0",
        },
    )

    def check(_: str) -> None:
        priority = mocks.registered("kubernetes:scheduling.k8s.io/v1:PriorityClass")["my-scaling-priority-class"]
        assert priority == {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "scaling-critical"},
            "value": 200000,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "KEDA in keda: scaling outranks the Triton serving it scales.",
        }
        [template] = mocks.calls
        values = json.loads(template.args["jsonOpts"])["values"]
        assert (values["operator"]["replicaCount"], values["metricsServer"]["replicaCount"]) == (2, 2)
        assert values["priorityClassName"] == "scaling-critical"
        assert values["metricsServer"]["affinity"] == {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {
                                "matchLabels": {"app.kubernetes.io/name": "keda-operator-metrics-apiserver"}
                            },
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        }
        assert values["podDisruptionBudget"] == {"operator": {"minAvailable": 1}, "metricServer": {"minAvailable": 1}}

    return scaling.scaled_objects["my-model"].urn.apply(check)


@pulumi_test
def test_credentials_go_through_a_trigger_authentication_beside_the_deployment(
    mocks: RecordingMocks,
) -> pulumi.Output[None]:
    scaling = KedaScaling(
        "my-scaling",
        {
            "targets": {"my-model": target_of(my_deployment(), 1, 2)},
            "prometheus_url": "https://prometheus.example.com",
            "gpu_memory_ratio_target": 0,
            "prometheus_auth": {"mode": "basic", "secret_name": "prom-login"},
        },
    )

    def check(_: str) -> None:
        [auth] = mocks.registered("kubernetes:keda.sh/v1alpha1:TriggerAuthentication").items()
        assert auth == (
            "my-scaling-prometheus-auth",
            {
                "apiVersion": "keda.sh/v1alpha1",
                "kind": "TriggerAuthentication",
                "metadata": {"name": "triton-prometheus", "namespace": "ml"},
                "spec": {
                    "secretTargetRef": [
                        {"parameter": "username", "name": "prom-login", "key": "username"},
                        {"parameter": "password", "name": "prom-login", "key": "password"},
                    ]
                },
            },
        )
        # No GPU-memory trigger: the one trigger reads the credentials.
        [trigger] = mocks.registered(SCALED_OBJECT)["my-scaling-my-model-scaled-object"]["spec"]["triggers"]
        assert trigger["authenticationRef"] == {"name": "triton-prometheus"}
        assert trigger["metadata"]["authModes"] == "basic"

    return scaling.scaled_objects["my-model"].urn.apply(check)


def test_credentials_for_targets_in_two_namespaces_are_refused() -> None:
    with pytest.raises(ArgsError) as error:
        one_namespace(["ml", "search", "ml"], ArgProblems("KedaScaling", "my-scaling"))
    assert str(error.value) == (
        "KedaScaling my-scaling: args.prometheus_auth: the TriggerAuthentication goes in the namespace of the "
        "Deployments, but the targets are in ['ml', 'search']; give targets of one namespace, or one KedaScaling "
        "per namespace"
    )
    assert one_namespace(["ml", "ml"], ArgProblems("KedaScaling", "my-scaling")) == "ml"


def test_pausing_annotates_the_scaled_object() -> None:
    args: KedaScalingArgs = {"targets": {}, "prometheus_url": "http://prom:9090", "paused": True, "paused_replicas": 2}
    manifest = scaled_object_manifest(
        namespace="ml",
        deployment="my-model",
        min_replicas=1,
        max_replicas=4,
        trigger={"name": "queue", "query": "sum(my_queue_depth)", "threshold": 5, "activation_threshold": 1},
        prometheus_url="http://prom:9090",
        scaling=scaling_of("my-scaling", args),
    )
    # No labels given: none written.
    assert manifest["metadata"] == {
        "name": "my-model",
        "namespace": "ml",
        "annotations": {"autoscaling.keda.sh/paused": "true", "autoscaling.keda.sh/paused-replicas": "2"},
    }
    assert "fallback" not in manifest["spec"]


@pytest.mark.real_tools  # the CRD schema's validation runs in Go (tests/support/crd_schemas.py)
def test_a_daily_floor_is_a_cron_trigger_per_window_beside_the_load_and_extra_triggers() -> None:
    args: KedaScalingArgs = {"targets": {}, "prometheus_url": "http://prom:9090", "gpu_memory_ratio_target": 0}
    floor: DailyFloor = {
        "time_zone": "Europe/Berlin",
        "windows": [
            {"start": "06:05", "end": "09:30", "replicas": 3},
            {"start": "22:00", "end": "01:00", "replicas": 2},
        ],
    }
    manifest = scaled_object_manifest(
        namespace="ml",
        deployment="my-model",
        min_replicas=1,
        max_replicas=4,
        trigger={"name": "demand", "query": "sum(q)", "threshold": 0.8},
        prometheus_url="http://prom:9090",
        scaling=scaling_of("my-scaling", args),
        floor=floor,
        extra=[{"name": "time-to-first-token", "query": "max(r)", "threshold": 0.8, "metric_type": "Value"}],
    )
    assert manifest["spec"]["triggers"][1]["metricType"] == "Value"
    assert manifest["spec"]["triggers"][2:] == [
        {
            "type": "cron",
            "name": "floor-1",
            "metadata": {
                "timezone": "Europe/Berlin",
                "start": "5 6 * * *",
                "end": "30 9 * * *",
                "desiredReplicas": "3",
            },
        },
        {
            "type": "cron",
            "name": "floor-2",
            "metadata": {
                "timezone": "Europe/Berlin",
                "start": "0 22 * * *",
                "end": "0 1 * * *",
                "desiredReplicas": "2",
            },
        },
    ]
    assert [t["name"] for t in manifest["spec"]["triggers"]] == ["demand", "time-to-first-token", "floor-1", "floor-2"]
    validate_crd(manifest)


@pulumi_test
def test_a_target_with_more_replicas_at_least_than_at_most_is_refused(mocks: RecordingMocks) -> None:
    args: KedaScalingArgs = {"targets": {"my-model": target_of(my_deployment(), 3, 2)}, "prometheus_url": "http://p"}
    with pytest.raises(ArgsError) as error:
        KedaScaling("my-scaling", args)
    assert str(error.value) == (
        "KedaScaling my-scaling: args.targets.my-model.min_replicas: 3 is above max_replicas (2); "
        "it must be at most that"
    )


def test_defaults_and_whole_floats_from_another_language() -> None:
    # As another Pulumi language sends them: whole numbers as floats, the optional keys absent.
    args: Any = {
        "targets": {
            "m": {
                "deployment_name": "m",
                "namespace": "ml",
                "min_replicas": 1.0,
                "max_replicas": 4.0,
                "trigger": {"name": "load", "query": "sum(load)", "threshold": 10},
            }
        },
        "prometheus_url": "http://p",
        "polling_interval_seconds": 15.0,
    }
    scaling = scaling_of("my-scaling", args)
    assert scaling == {
        "targets": {
            "m": {
                "deployment_name": "m",
                "namespace": "ml",
                "min_replicas": 1,
                "max_replicas": 4,
                "trigger": {
                    "name": "load",
                    "query": "sum(load)",
                    "threshold": 10.0,
                    "activation_threshold": 0.0,
                    "metric_type": "AverageValue",
                },
                "extra_triggers": [],
            }
        },
        "prometheus_url": "http://p",
        "polling_interval_seconds": 15,
        "scale_up": {"stabilization_seconds": 0, "percent": 100, "pods": 3, "period_seconds": 30},
        "scale_down": {"stabilization_seconds": 300, "percent": 25, "period_seconds": 60},
        "gpu_memory_ratio_target": 0.8,
        "cooldown_seconds": 300,
        "http_add_on": {
            "mode": "existing",
            "namespace": "keda",
            "chart": {"version": "0.15.0", "repository": "https://kedacore.github.io/charts", "values": {}},
        },
        "paused": False,
        "keda": {
            "mode": "existing",
            "namespace": "keda",
            "chart": {"version": "2.20.2", "repository": "https://kedacore.github.io/charts", "values": {}},
            "replicas": 1,
        },
        "labels": {},
        "image_digests": {},
    }
    assert [type(n) for n in (scaling["polling_interval_seconds"], scaling["targets"]["m"]["max_replicas"])] == [
        int,
        int,
    ]


TARGET: dict[str, Any] = {
    "deployment_name": "m",
    "namespace": "ml",
    "min_replicas": 1,
    "max_replicas": 2,
    "trigger": {"name": "load", "query": "sum(load)", "threshold": 10},
}


def _args(**changes: Any) -> dict[str, Any]:
    """Right Args with `changes`; a None value removes the key."""
    args = {"targets": {"m": TARGET}, "prometheus_url": "http://p", **changes}
    return {key: value for key, value in args.items() if value is not None}


def _target(**changes: Any) -> dict[str, Any]:
    target = {**TARGET, **changes}
    return {key: value for key, value in target.items() if value is not None}


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        pytest.param(
            _args(prometheus_address="http://prometheus:9090"),
            [
                "args.prometheus_address: unknown key; known keys: cooldown_seconds, fallback, gpu_memory_ratio_target, "
                "http_add_on, image_digests, keda, kube_version, labels, paused, paused_replicas, "
                "polling_interval_seconds, prometheus_auth, "
                "prometheus_url, scale_down, scale_up, targets (did you mean 'prometheus_url'?)"
            ],
            id="unknown-key",
        ),
        pytest.param(
            _args(targets=None, prometheus_url=None),
            ["args.targets: missing (required)", "args.prometheus_url: missing (required)"],
            id="required",
        ),
        pytest.param(
            _args(targets={"m": _target(deployment_name=None, namespace=None, trigger=None)}),
            [
                "args.targets.m.deployment_name: missing (required)",
                "args.targets.m.namespace: missing (required)",
                "args.targets.m.trigger: missing (required)",
            ],
            id="target-required",
        ),
        pytest.param(
            _args(targets={"m": _target(min_replicas=-1, max_replicas=0)}),
            [
                "args.targets.m.min_replicas: -1 is below the minimum 0",
                "args.targets.m.max_replicas: 0 is below the minimum 1",
            ],
            id="replica-bounds",
        ),
        pytest.param(
            _args(targets={"m": _target(max_replicas=2.5)}),
            ["args.targets.m.max_replicas: 2.5 is not a whole number"],
            id="whole-replicas",
        ),
        pytest.param(
            _args(targets={"m": _target(trigger={"threshold": 0})}),
            [
                "args.targets.m.trigger.name: missing (required)",
                "args.targets.m.trigger.query: missing (required)",
                "args.targets.m.trigger.threshold: 0 is not above 0",
            ],
            id="trigger",
        ),
        pytest.param(
            _args(
                targets={"m": _target(trigger={**TARGET["trigger"], "threshold": "ten", "activation_threshold": -1})}
            ),
            [
                "args.targets.m.trigger.threshold: 'ten' is not a number",
                "args.targets.m.trigger.activation_threshold: -1 is not at least 0",
            ],
            id="trigger-numbers",
        ),
        pytest.param(
            _args(polling_interval_seconds=0),
            ["args.polling_interval_seconds: 0 is below the minimum 1"],
            id="polling-interval",
        ),
        pytest.param(
            _args(scale_up={"percent": 0, "period_seconds": 3600, "pods": 0}),
            [
                "args.scale_up.stabilization_seconds: missing (required)",
                "args.scale_up.percent: 0 is below the minimum 1",
                "args.scale_up.period_seconds: 3600 is above the maximum 1800",
                "args.scale_up.pods: 0 is below the minimum 1",
            ],
            id="scale-policy",
        ),
        pytest.param(
            _args(scale_down={**DEFAULT_SCALE_DOWN, "stabilization_seconds": 7200}),
            ["args.scale_down.stabilization_seconds: 7200 is above the maximum 3600"],
            id="stabilization",
        ),
        pytest.param(
            _args(fallback={"failure_threshold": 0, "behavior": "zero"}),
            [
                "args.fallback.replicas: missing (required)",
                "args.fallback.failure_threshold: 0 is below the minimum 1",
                "args.fallback.behavior: 'zero' is not one of currentReplicasIfHigher, static, currentReplicas",
            ],
            id="fallback",
        ),
        pytest.param(
            _args(gpu_memory_ratio_target=1.5),
            ["args.gpu_memory_ratio_target: 1.5 is not at least 0 and at most 1"],
            id="gpu-memory-ratio",
        ),
        pytest.param(
            _args(paused_replicas=-2),
            ["args.paused_replicas: -2 is below the minimum 0"],
            id="paused-replicas",
        ),
        pytest.param(
            _args(prometheus_auth={"mode": "oauth"}),
            [
                "args.prometheus_auth.mode: 'oauth' is not one of bearer, basic",
                "args.prometheus_auth.secret_name: missing (required)",
            ],
            id="prometheus-auth",
        ),
        pytest.param(
            _args(
                targets={
                    "m": _target(
                        max_replicas=4,
                        daily_floor={
                            "time_zone": "Europe/Berln",
                            "windows": [
                                {"start": "6:30", "end": "24:00", "replicas": 3},
                                {"start": "07:00", "end": "07:00", "replicas": 3},
                                {"start": "08:00", "end": "20:00", "replicas": 1},
                                {"start": "22:00", "end": "06:00", "replicas": 99},
                            ],
                        },
                    )
                }
            ),
            [
                "args.targets.m.daily_floor.time_zone: 'Europe/Berln' is not an IANA time zone name such as UTC or "
                "Europe/Berlin",
                "args.targets.m.daily_floor.windows[0].start: must be a 24-hour time of day HH:MM such as 06:30; got "
                "'6:30'",
                "args.targets.m.daily_floor.windows[0].end: must be a 24-hour time of day HH:MM such as 06:30; got "
                "'24:00'",
                "args.targets.m.daily_floor.windows[1].end: '07:00' is the window's start; a window must end at "
                "another time",
                "args.targets.m.daily_floor.windows[2].replicas: 1 is not above min_replicas (1): the window would "
                "hold nothing; raise it or remove it",
                "args.targets.m.daily_floor.windows[3].replicas: 99 is above max_replicas (4); it must be at most that",
            ],
            id="daily-floor",
        ),
        pytest.param(
            _args(
                targets={
                    "m": _target(
                        daily_floor={
                            "time_zone": "UTC",
                            "windows": [
                                {"start": f"{h:02d}:00", "end": f"{h:02d}:30", "replicas": 2} for h in range(24)
                            ]
                            + [{"start": "00:30", "end": "00:45", "replicas": 2}] * 2,
                        },
                        trigger={"name": "floor-1", "query": "q", "threshold": 1},
                    )
                }
            ),
            [
                "args.targets.m.daily_floor.windows: has 26 windows; at most 24",
                "args.targets.m.trigger.name: 'floor-1' is a name this component gives a daily floor's trigger; name "
                "yours otherwise",
            ],
            id="daily-floor-windows-and-names",
        ),
        pytest.param(
            _args(
                targets={
                    "m": _target(
                        trigger={"name": "load", "query": "q", "threshold": 1},
                        extra_triggers=[
                            {"name": "load", "query": "q", "threshold": 1, "metric_type": "Value"},
                            {"name": "gpu-memory", "query": "q", "threshold": 1},
                            {"name": "floor-3", "query": "q", "threshold": 1},
                            {"name": "ttft", "query": "q", "threshold": 0, "metric_type": "Utilization"},
                        ],
                    )
                }
            ),
            [
                "args.targets.m.extra_triggers[3].threshold: 0 is not above 0",
                "args.targets.m.extra_triggers[3].metric_type: 'Utilization' is not one of AverageValue, Value",
                "args.targets.m.extra_triggers[0].name: 'load' already names args.targets.m.trigger; KEDA needs each "
                "trigger of a target named apart",
                "args.targets.m.extra_triggers[1].name: 'gpu-memory' is the trigger this component adds for "
                "gpu_memory_ratio_target; name yours otherwise",
                "args.targets.m.extra_triggers[2].name: 'floor-3' is a name this component gives a daily floor's "
                "trigger; name yours otherwise",
            ],
            id="extra-trigger-names-and-values",
        ),
        pytest.param(
            _args(targets={"m": _target(daily_floor={"time_zone": "UTC", "windows": []})}),
            ["args.targets.m.daily_floor.windows: has 0 items; list at least 1"],
            id="daily-floor-empty",
        ),
        pytest.param(
            _args(keda={"mode": "helm"}),
            ["args.keda.mode: 'helm' is not one of existing, install"],
            id="keda-mode",
        ),
        pytest.param(
            _args(keda={"mode": "install", "chart": {"version": "2.20.2"}}),
            ["args.keda.chart: neither repository nor path: say where the chart comes from"],
            id="keda-chart",
        ),
        pytest.param(
            _args(keda={"mode": "install", "replicas": 4, "priority_class_name": "Scaling Critical"}),
            [
                "args.keda.replicas: 4 is above the maximum 3",
                "args.keda.priority_class_name: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and '-', "
                "each starting and ending with a letter or digit, joined by single dots); got 'Scaling Critical'",
            ],
            id="keda-replicas-priority",
        ),
        pytest.param(
            _args(image_digests={"ghcr.io/kedacore/keda": "sha256:" + "0" * 64}),
            [
                "args.image_digests[\"ghcr.io/kedacore/keda\"]: key 'ghcr.io/kedacore/keda' is not an image named by "
                "its tag without a digest, as the images are named where they are set, e.g. "
                "nvcr.io/nvidia/tritonserver:24.10-py3"
            ],
            id="image-digests",
        ),
    ],
)
def test_each_rule_names_the_arg_and_what_is_allowed(args: dict[str, Any], problems: list[str]) -> None:
    with pytest.raises(ArgsError) as error:
        scaling_of("s", cast(KedaScalingArgs, args))
    assert str(error.value).splitlines() == [f"KedaScaling s: {problem}" for problem in problems]


OUTPUT_PROBLEM = (
    "is an Output, but this Arg must be a plain value known when the program runs (the component builds "
    "names, queries or files from it); pass the value itself"
)


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        pytest.param(None, ["args: missing: give KedaScalingArgs, a mapping of its keys"], id="no-args"),
        pytest.param(
            _args(targets=[TARGET]),
            [
                "args.targets: [{'deployment_name': 'm', 'namespace': 'ml', 'min_replicas': 1, 'max_replicas': … "
                "is not a mapping"
            ],
            id="list-for-a-mapping",
        ),
        pytest.param(
            _args(scale_up="fast"),
            ["args.scale_up: 'fast' is not a mapping of ScalePolicy's keys"],
            id="string-for-a-settings-object",
        ),
        pytest.param(
            _args(fallback={"replicas": 1, "behaviour": "static"}),
            [
                "args.fallback.behaviour: unknown key; known keys: behavior, failure_threshold, replicas "
                "(did you mean 'behavior'?)"
            ],
            id="misspelt-nested-key",
        ),
        pytest.param(
            _args(paused="false"),
            ["args.paused: 'false' is a string; write the boolean true or false, unquoted"],
            id="string-false",
        ),
        pytest.param(
            _args(targets={"m": _target(max_replicas=2**31)}),
            ["args.targets.m.max_replicas: 2147483648 is above the maximum 2147483647"],
            id="past-int32",
        ),
        pytest.param(
            _args(targets={"m": _target(trigger={**TARGET["trigger"], "threshold": float("inf")})}),
            ["args.targets.m.trigger.threshold: inf is not a finite number"],
            id="infinite-threshold",
        ),
        pytest.param(
            _args(fallback={"replicas": 3}),
            [
                "args.fallback.replicas: 3 is above targets.m.max_replicas (2); KEDA would hold more replicas "
                "than the target may have"
            ],
            id="fallback-above-max",
        ),
        pytest.param(
            _args(targets={"m": _target(trigger={**TARGET["trigger"], "name": "gpu-memory"})}),
            [
                "args.targets.m.trigger.name: 'gpu-memory' is the trigger this component adds for "
                "gpu_memory_ratio_target; name yours otherwise"
            ],
            id="trigger-named-like-the-components-own",
        ),
        pytest.param(
            _args(targets={"m": _target(namespace="ML Team", deployment_name="My_Model")}),
            [
                "args.targets.m.deployment_name: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and "
                "'-', each starting and ending with a letter or digit, joined by single dots); got 'My_Model'",
                "args.targets.m.namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and "
                "ending with a letter or digit); got 'ML Team'",
            ],
            id="names",
        ),
        pytest.param(
            _args(prometheus_url="prometheus:9090", labels={"team name": "ml"}),
            [
                "args.prometheus_url: must be an http:// or https:// URL; got 'prometheus:9090'",
                'args.labels["team name"]: key must be a Kubernetes label key such as example.com/pool; '
                "got 'team name'",
            ],
            id="url-and-label-key",
        ),
        pytest.param(
            _args(keda={"mode": "install", "namespace": "kube system", "chart": {"version": "latest"}}),
            [
                "args.keda.namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending "
                "with a letter or digit); got 'kube system'",
                "args.keda.chart.version: must be an exact chart version such as 2.20.2; got 'latest'",
                "args.keda.chart: neither repository nor path: say where the chart comes from",
            ],
            id="install",
        ),
    ],
)
def test_args_of_the_wrong_shape_or_format_are_named(args: Any, problems: list[str]) -> None:
    """What a new user gets wrong, from Python or through the schema's types from another language."""
    with pytest.raises(ArgsError) as error:
        scaling_of("s", args)
    assert str(error.value).splitlines() == [f"KedaScaling s: {problem}" for problem in problems]


@pulumi_test
def test_an_output_where_a_plain_value_is_needed_is_refused_by_name(mocks: RecordingMocks) -> None:
    replicas = pulumi.Output.from_input(2)
    with pytest.raises(ArgsError) as error:
        KedaScaling("s", cast(KedaScalingArgs, _args(targets={"m": _target(max_replicas=replicas)})))
    assert str(error.value) == f"KedaScaling s: args.targets.m.max_replicas: {OUTPUT_PROBLEM}"


def test_names_reach_the_gpu_query_as_escaped_promql_strings() -> None:
    """A name known only when the program runs is not checked; it cannot end the literal and rewrite the query."""
    query = gpu_memory_query('ml"} or vector(1) #', "m")
    assert 'namespace="ml\\"} or vector(1) #"' in query
