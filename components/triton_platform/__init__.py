"""triton-platform's Pulumi components: a GPU node pool, Triton serving, KEDA autoscaling and monitoring.

Each takes plain typed Args (TypedDicts of `pulumi.Input[...]`, every key documented with its default), so
the same classes serve Python programs directly and any Pulumi language through the package's provider
(`components/__main__.py`, `PulumiPlugin.yaml`).
"""

from triton_platform.gpu_node_pool import GpuNodePool
from triton_platform.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool_contract import PoolPlacement
from triton_platform.helm_chart import ChartSource
from triton_platform.keda_scaling import KedaScaling
from triton_platform.keda_scaling_args import KedaScalingArgs
from triton_platform.monitoring import Monitoring
from triton_platform.monitoring_args import MonitoringArgs
from triton_platform.triton_serving import TritonServing
from triton_platform.triton_serving_args import TritonServingArgs

__version__ = "0.1.0"
"""The package's version: the provider's, and the git tag `pulumi package add <repo>@v<version>` resolves."""

COMPONENTS = (GpuNodePool, TritonServing, KedaScaling, Monitoring)
"""What the package's provider serves, in the schema's order."""

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
