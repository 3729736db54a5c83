"""The root of the program: one TritonPlatform per stack, which owns every other component."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from components.keda_scaling import KedaScaling, KedaScalingArgs
from components.kubernetes_objects import create_object
from components.kubernetes_provider import check_reachable, create_provider, deploys, provider_options, render_dir
from components.monitoring import Monitoring, MonitoringArgs
from components.namespace import namespace_manifests
from components.scaling_signal import scaling_signals
from components.triton_serving import TritonServing, TritonServingArgs
from model_repository.render import render_repository
from model_repository.source import DEFAULT_MODEL_REPO, read_repository
from platform_config.loader import StackConfig, stack_file
from platform_config.schema import PlatformConfig
from platform_config.secrets_provider import default_passphrase_problem

TYPE_TOKEN = "triton-platform:index:TritonPlatform"


@dataclass(frozen=True)
class TritonPlatformArgs:
    stack: str
    """Stack name."""

    config: PlatformConfig
    """The stack's validated configuration."""

    kube_version: str | None = None
    """Kubernetes version charts are templated for when rendering; None when deploying (the API server's)."""


class TritonPlatform(pulumi.ComponentResource):
    """Namespace and, as they land, the GPU pool, Triton serving, KEDA scaling and monitoring."""

    namespace: pulumi.Output[str]
    """Name of the namespace every namespaced object lives in."""

    gpu_pool: GpuNodePool
    """The GPU node pool Triton runs on."""

    serving: TritonServing
    """The Triton deployments."""

    monitoring: Monitoring
    """Scraping, rules, alert routing and dashboards."""

    def __init__(self, name: str, args: TritonPlatformArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        config = args.config
        objects = namespace_manifests(config.kubernetes.namespace, config.environment)
        # Deleting a namespace deletes the claims in it: keep it wherever the stack owns model storage.
        owns_claim = config.serving.model_repository.pvc is not None and config.serving.model_repository.pvc.create
        keep = pulumi.ResourceOptions(
            retain_on_delete=owns_claim, protect=owns_claim and config.environment == "production"
        )
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=objects["namespace"]["metadata"],
            opts=pulumi.ResourceOptions.merge(child, keep),
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        create_object(f"{name}-default-deny", objects["default-deny"], in_namespace)
        create_object(f"{name}-default-deny-egress", objects["default-deny-egress"], in_namespace)
        # First: in install mode it brings the Prometheus Operator's CRDs, which the GPU pool's and
        # KEDA's ServiceMonitors need in the same `pulumi up`.
        rendered = render_repository(args.stack, config, read_repository(DEFAULT_MODEL_REPO))
        signals = scaling_signals(config, rendered)
        self.monitoring = Monitoring(
            f"{name}-monitoring", MonitoringArgs(config, signals, args.kube_version), in_namespace
        )
        operator = self.monitoring.operator
        self.gpu_pool = GpuNodePool(f"{name}-gpu-pool", GpuNodePoolArgs(config, operator), in_namespace)
        self.serving = TritonServing(
            f"{name}-serving",
            TritonServingArgs(args.stack, config, rendered, self.gpu_pool.contract),
            in_namespace,
        )
        if config.scaling.enabled:
            KedaScaling(
                f"{name}-scaling",
                KedaScalingArgs(config, self.serving.deployments, signals, args.kube_version),
                # KEDA's chart brings a ServiceMonitor too.
                pulumi.ResourceOptions.merge(in_namespace, pulumi.ResourceOptions(depends_on=operator)),
            )
        self.namespace = namespace.metadata.name
        self.register_outputs({"namespace": self.namespace, "services": self.serving.services})


def build_platform(stack: StackConfig) -> TritonPlatform:
    """Everything the stack deploys. `__main__.py` and `stackctl synth` both call this, nothing else."""
    config = stack.config
    if deploys(config.kubernetes, stack.stack):
        problem = default_passphrase_problem(stack.stack, stack_file(stack.stack), os.environ)
        if problem:
            raise pulumi.RunError(problem)
        check_reachable(config.kubernetes, stack.stack)
    provider = create_provider(stack.stack, config.kubernetes)
    renders = render_dir(config.kubernetes, stack.stack) is not None
    kube_version = config.kubernetes.kube_version if renders else None
    platform = TritonPlatform(
        stack.stack, TritonPlatformArgs(stack.stack, config, kube_version), provider_options(provider)
    )
    pulumi.export("environment", config.environment)
    pulumi.export("kubernetesMode", config.kubernetes.mode)
    pulumi.export("renderDir", render_dir(config.kubernetes, stack.stack))
    pulumi.export("namespace", platform.namespace)
    pulumi.export("tritonServices", platform.serving.services)
    return platform
