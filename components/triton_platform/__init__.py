"""triton-platform's Pulumi components: a GPU node pool, Triton serving, KEDA autoscaling and monitoring.

Each takes plain typed Args (TypedDicts of `pulumi.Input[...]`, every key documented with its default), so
the same classes serve Python programs directly and any Pulumi language through the package's provider
(`components/__main__.py`, `PulumiPlugin.yaml`).

The names below are imported on first use: the components load Pulumi's Kubernetes SDK (about a second), which
tools that read only the package's formats, excerpts or model packaging (`stackctl --help`) never need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from triton_platform.gpu_pool.gpu_node_pool import GpuNodePool
    from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs
    from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
    from triton_platform.kube.helm_chart import ChartSource
    from triton_platform.monitoring.monitoring import Monitoring
    from triton_platform.monitoring.monitoring_args import MonitoringArgs
    from triton_platform.scaling.keda_scaling import KedaScaling
    from triton_platform.scaling.keda_scaling_args import KedaScalingArgs
    from triton_platform.serving.triton_serving import TritonServing
    from triton_platform.serving.triton_serving_args import TritonServingArgs

__version__ = "0.1.0"
"""The package's version: the provider's, and the git tag `pulumi package add <repo>@v<version>` resolves."""

_MODULES = {
    "GpuNodePool": "gpu_pool.gpu_node_pool",
    "GpuNodePoolArgs": "gpu_pool.gpu_node_pool_args",
    "PoolPlacement": "gpu_pool.gpu_pool_contract",
    "ChartSource": "kube.helm_chart",
    "KedaScaling": "scaling.keda_scaling",
    "KedaScalingArgs": "scaling.keda_scaling_args",
    "Monitoring": "monitoring.monitoring",
    "MonitoringArgs": "monitoring.monitoring_args",
    "TritonServing": "serving.triton_serving",
    "TritonServingArgs": "serving.triton_serving_args",
}
"""Each exported name's module."""

__all__ = [
    "COMPONENTS",
    "ChartSource",
    "GpuNodePool",
    "GpuNodePoolArgs",
    "KedaScaling",
    "KedaScalingArgs",
    "Monitoring",
    "MonitoringArgs",
    "PoolPlacement",
    "TritonServing",
    "TritonServingArgs",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first use (PEP 562)."""
    if name == "COMPONENTS":
        # What the package's provider serves, in the schema's order.
        value: Any = tuple(__getattr__(n) for n in ("GpuNodePool", "TritonServing", "KedaScaling", "Monitoring"))
    elif name in _MODULES:
        value = getattr(importlib.import_module(f"triton_platform.{_MODULES[name]}"), name)
    else:
        raise AttributeError(f"module 'triton_platform' has no attribute {name!r}")
    globals()[name] = value
    return value
