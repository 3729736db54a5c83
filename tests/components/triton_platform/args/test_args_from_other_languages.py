"""Bad Args as Pulumi YAML or TypeScript sends them: camelCase, through the package's component provider
(`ComponentProvider.construct`, what `components/__main__.py` hosts), which maps them by the schema's types
before the component sees them. Each reaches the component's own check and is named by its Arg path."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.provider.experimental.component import ComponentProvider

from tests.support.mocks import install, pulumi_test
from triton_platform import COMPONENTS, __version__
from triton_platform.args.component_types import PACKAGE, type_token

PROVIDER = ComponentProvider(list(COMPONENTS), PACKAGE, version=__version__)
POOL = {
    "nodeSelector": {"triton-platform/gpu-pool": "inference"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "gpuResource": "nvidia.com/gpu",
}
CASES: list[Any] = [
    pytest.param(
        "GpuNodePool",
        {"workloadNamespace": "ML Team", "maxNodes": 2},
        "GpuNodePool yaml: args.workload_namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', "
        "starting and ending with a letter or digit); got 'ML Team'",
        id="pool-namespace-format",
    ),
    pytest.param(
        "GpuNodePool",
        {"workloadNamespace": "ml", "maxNodes": 2, "manage": "false"},
        "GpuNodePool yaml: args.manage: 'false' is a string; write the boolean true or false, unquoted",
        id="pool-string-false",
    ),
    pytest.param(
        "GpuNodePool",
        {"workloadNamespace": "ml", "maxNodes": 2, "staticNodes": "node-1"},
        "GpuNodePool yaml: args.static_nodes: 'node-1' is a string, not a list; a list of one is ['node-1']",
        id="pool-string-for-a-list",
    ),
    pytest.param(
        "TritonServing",
        {
            "namespace": "ml",
            "deployments": {"general": {"models": ["classifier"], "replicas": {"min": 1, "max": 2**31}}},
            "modelRepository": {"path": "/nonexistent", "source": "bundled"},
            "pool": POOL,
            "metricsNamespace": "monitoring",
        },
        "TritonServing yaml: args.deployments.general.replicas.max: 2147483648 is above the maximum 1000",
        id="serving-past-int32",
    ),
    pytest.param(
        "KedaScaling",
        {
            "targets": {
                "m": {
                    "deploymentName": "m",
                    "namespace": "ml",
                    "minReplicas": 1,
                    "maxReplicas": 2,
                    "trigger": {"name": "load", "query": "sum(x)", "threshold": float("inf")},
                }
            },
            "prometheusUrl": "http://prometheus:9090",
        },
        "KedaScaling yaml: args.targets.m.trigger.threshold: inf is not a finite number",
        id="keda-infinite-threshold",
    ),
    pytest.param(
        "Monitoring",
        {"namespace": "ml", "latencySloMs": 200, "dashboardTags": "triton"},
        "Monitoring yaml: args.dashboard_tags: 'triton' is a string, not a list; a list of one is ['triton']",
        id="monitoring-string-for-a-list",
    ),
]


@pytest.mark.parametrize(("component", "inputs", "expected"), CASES)
def test_a_bad_arg_from_another_language_is_named_by_its_path(
    component: str, inputs: dict[str, Any], expected: str
) -> None:
    install()

    @pulumi_test
    def construct() -> None:
        with pytest.raises(Exception) as raised:  # noqa: PT011 - the SDK wraps the component's ArgsError
            PROVIDER.construct("yaml", type_token(component), inputs)
        assert expected in str(raised.value).splitlines()

    construct()
