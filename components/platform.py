"""The root of the program: one TritonPlatform per stack, which owns every other component."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from components.dashboards import DASHBOARD_TAGS
from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from components.keda_scaling import KedaScaling, KedaScalingArgs, LoadTrigger, ScaleTarget, ScalingBehavior
from components.kubernetes_objects import create_object
from components.kubernetes_provider import check_reachable, create_provider, kubernetes_target, provider_options
from components.kubernetes_provider_config import render_override
from components.monitoring import MonitoredDeployment, Monitoring, MonitoringArgs
from components.namespace import namespace_manifests, platform_labels
from components.scaling_signal import ScalingSignal, scaling_signals
from components.triton_manifests import deployment_object_name
from components.triton_serving import TritonServing, TritonServingArgs
from model_packaging.render import RenderedRepository
from platform_config.loader import StackConfig, stack_file
from platform_config.schema import PlatformConfig
from platform_config.secrets_provider import default_passphrase_problem

TYPE_TOKEN = "triton-platform:index:TritonPlatform"


@dataclass(frozen=True)
class TritonPlatformArgs:
    config: PlatformConfig
    """The stack's validated configuration: the only place it is read is this module."""

    rendered: RenderedRepository
    """The served models' configs, rendered once when the stack was validated."""

    kube_version: str | None = None
    """Kubernetes version charts are templated for when rendering; None when deploying (the API server's)."""


def protects_model_data(config: PlatformConfig) -> bool:
    """Model data outlives the stack everywhere; in production Pulumi may not even delete or replace
    what holds it (the model claim, and the namespace it lives in)."""
    return config.environment == "production"


def monitoring_args(
    config: PlatformConfig, signals: Mapping[str, ScalingSignal], kube_version: str | None = None
) -> MonitoringArgs:
    """The stack's monitoring; `stackctl rules` writes the same, so the files it checks are the rules deployed."""
    return MonitoringArgs(
        namespace=config.kubernetes.namespace,
        latency_slo_ms=config.serving.p95_latency_slo_ms,
        deployments={
            key: MonitoredDeployment(
                object_name=deployment_object_name(key),
                max_replicas=deployment.replicas.max,
                models=tuple(deployment.models),
                signal=signals[key],
            )
            for key, deployment in config.serving.deployments.items()
        },
        monitoring=config.monitoring,
        labels=platform_labels(config.environment),
        scaling_enabled=config.scaling.enabled,
        dashboard_tags=(*DASHBOARD_TAGS, config.environment),
        kube_version=kube_version,
    )


def gpu_pool_args(config: PlatformConfig, monitoring: Monitoring) -> GpuNodePoolArgs:
    return GpuNodePoolArgs(
        pool=config.gpu_pool,
        workload_namespace=config.kubernetes.namespace,
        labels=platform_labels(config.environment),
        image_digests=config.image_digests,
        metrics_namespace=monitoring.metrics_namespace,
        metrics_selector_labels=config.monitoring.selector_labels,
        scrape_interval=config.monitoring.scrape_interval,
        metrics_crds=monitoring.operator,
    )


def serving_args(
    config: PlatformConfig, rendered: RenderedRepository, pool: GpuNodePool, monitoring: Monitoring
) -> TritonServingArgs:
    return TritonServingArgs(
        namespace=config.kubernetes.namespace,
        serving=config.serving,
        rendered=rendered,
        pool=pool.placement,
        metrics_namespace=monitoring.metrics_namespace,
        metrics_pod_labels=config.monitoring.prometheus.pod_labels,
        labels=platform_labels(config.environment),
        autoscaled=config.scaling.enabled,
        image_digests=config.image_digests,
        protect_model_claim=protects_model_data(config),
    )


def scaling_args(
    config: PlatformConfig,
    signals: Mapping[str, ScalingSignal],
    serving: TritonServing,
    monitoring: Monitoring,
    kube_version: str | None,
) -> KedaScalingArgs:
    scaling = config.scaling
    return KedaScalingArgs(
        targets={
            key: ScaleTarget(
                serving.deployments[key],
                deployment.replicas.min,
                deployment.replicas.max,
                LoadTrigger(signals[key].name, signals[key].query, signals[key].target, signals[key].activation),
            )
            for key, deployment in config.serving.deployments.items()
        },
        prometheus_url=scaling.prometheus_address or monitoring.prometheus_url,
        behavior=ScalingBehavior(
            polling_interval_seconds=scaling.polling_interval_seconds,
            scale_up=scaling.scale_up,
            scale_down=scaling.scale_down,
            fallback=scaling.fallback,
            gpu_memory_ratio_target=scaling.gpu_memory_ratio_target,
            paused=scaling.paused,
            paused_replicas=scaling.paused_replicas,
        ),
        prometheus_auth=scaling.prometheus_auth,
        keda=scaling.keda,
        labels=platform_labels(config.environment),
        kube_version=kube_version,
    )


class TritonPlatform(pulumi.ComponentResource):
    """The namespace, then monitoring, the GPU pool, Triton serving and KEDA scaling.

    The one place a stack's config becomes component Args (the `*_args` functions above); facts two
    components share come from their owner: the Prometheus URL and metrics namespace from `Monitoring`,
    the pool contract from `GpuNodePool`, the Deployments KEDA scales from `TritonServing`.
    """

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
        keep = pulumi.ResourceOptions(retain_on_delete=owns_claim, protect=owns_claim and protects_model_data(config))
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=objects["namespace"]["metadata"],
            opts=pulumi.ResourceOptions.merge(child, keep),
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        create_object(f"{name}-default-deny", objects["default-deny"], in_namespace)
        create_object(f"{name}-default-deny-egress", objects["default-deny-egress"], in_namespace)
        signals = scaling_signals(config, args.rendered)
        # First: in install mode it brings the Prometheus Operator's CRDs, which the GPU pool's and
        # KEDA's ServiceMonitors need in the same `pulumi up`.
        self.monitoring = Monitoring(
            f"{name}-monitoring", monitoring_args(config, signals, args.kube_version), in_namespace
        )
        self.gpu_pool = GpuNodePool(f"{name}-gpu-pool", gpu_pool_args(config, self.monitoring), in_namespace)
        self.serving = TritonServing(
            f"{name}-serving", serving_args(config, args.rendered, self.gpu_pool, self.monitoring), in_namespace
        )
        if config.scaling.enabled:
            KedaScaling(
                f"{name}-scaling",
                scaling_args(config, signals, self.serving, self.monitoring, args.kube_version),
                # KEDA's chart brings a ServiceMonitor too.
                pulumi.ResourceOptions.merge(in_namespace, pulumi.ResourceOptions(depends_on=self.monitoring.operator)),
            )
        self.namespace = namespace.metadata.name
        self.register_outputs({"namespace": self.namespace, "services": self.serving.services})


def build_platform(stack: StackConfig) -> TritonPlatform:
    """Everything the stack deploys. `__main__.py` and `stackctl synth` both call this, nothing else."""
    config = stack.config
    override = render_override()
    notice = config.kubernetes.override_notice(stack.stack, override)
    if notice:
        pulumi.log.warn(notice)
    # Pinned to the stack, not to the project, so two stacks never share state by accident.
    target = kubernetes_target(f"{stack.stack}-kubernetes", config.kubernetes.provider_args(stack.stack, override))
    if target.deploys:
        problem = default_passphrase_problem(stack.stack, stack_file(stack.stack), os.environ)
        if problem:
            raise pulumi.RunError(problem)
        check_reachable(target, stack.stack)
    provider = create_provider(target)
    kube_version = None if target.deploys else config.kubernetes.kube_version
    assert stack.rendered is not None, "the engine resolves every ESC import before the program runs"
    platform = TritonPlatform(
        stack.stack, TritonPlatformArgs(config, stack.rendered, kube_version), provider_options(provider)
    )
    pulumi.export("environment", config.environment)
    pulumi.export("kubernetesMode", config.kubernetes.mode)
    pulumi.export("renderDir", target.render_dir)
    pulumi.export("namespace", platform.namespace)
    pulumi.export("tritonServices", platform.serving.services)
    return platform
