"""The root of the program: one TritonPlatform per stack, which owns every other component."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from platform_config.cluster import identity_annotations
from platform_config.kubernetes import render_override
from platform_config.loader import StackConfig, stack_file
from platform_config.scaling import ScalePolicy as SchemaScalePolicy
from platform_config.schema import PlatformConfig
from platform_config.secrets_provider import default_passphrase_problem
from triton_platform.gpu_node_pool import GpuNodePool
from triton_platform.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool_contract import PoolPlacement
from triton_platform.keda_scaling import KedaScaling
from triton_platform.keda_scaling_args import KedaScalingArgs, LoadTrigger, ScalePolicy
from triton_platform.kubernetes_objects import create_object
from triton_platform.kubernetes_provider import check_reachable, create_provider, kubernetes_target, provider_options
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.monitoring import Monitoring
from triton_platform.monitoring_args import DASHBOARD_TAGS, DeploymentSignal, MonitoringArgs
from triton_platform.namespace import namespace_manifests, platform_labels
from triton_platform.scaling_signal import BUSY_RATIO_SIGNAL
from triton_platform.served_deployments import deployment_instances, deployment_names, served_models
from triton_platform.triton_serving import TritonServing, TritonServingArgs

TYPE_TOKEN = "triton-platform:index:TritonPlatform"


@dataclass(frozen=True)
class Workload:
    """A Deployment KEDA scales: its name and namespace."""

    name: pulumi.Input[str]
    namespace: pulumi.Input[str]


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


@dataclass(frozen=True)
class Served:
    """One deployment as TritonServing serves it, what Monitoring watches: TritonServing's outputs in the program,
    the same facts as plain values where no component runs (`stackctl validate`, `stackctl rules`)."""

    object_name: pulumi.Input[str]
    models: pulumi.Input[list[str]]
    instances_per_pod: pulumi.Input[dict[str, int]]


def served_by(serving: TritonServing, keys: Iterable[str]) -> dict[str, Served]:
    """Each deployment as TritonServing outputs it."""
    return {
        key: Served(serving.deployment_names[key], serving.models[key], serving.instances_per_pod[key]) for key in keys
    }


def served_plainly(config: PlatformConfig, rendered: RenderedRepository) -> dict[str, Served]:
    """Each deployment as TritonServing would output it, by the functions it outputs them with
    (triton_platform/served_deployments.py)."""
    deployments = {key: deployment.args() for key, deployment in config.serving.deployments.items()}
    names, models = deployment_names(deployments), served_models(deployments)
    instances = deployment_instances(deployments, rendered)
    return {key: Served(names[key], models[key], instances[key]) for key in deployments}


def deployment_signal(config: PlatformConfig, served: Served) -> DeploymentSignal:
    """What a deployment scales on (`scaling.signal`): for a busy ratio, with the instances per pod it divides by."""
    scaling = config.scaling
    if scaling.signal == BUSY_RATIO_SIGNAL:
        return {
            "kind": scaling.signal,
            "target": scaling.busy_ratio_target,
            "instances_per_pod": served.instances_per_pod,
        }
    return {"kind": scaling.signal, "target": scaling.queue_depth_target}


def load_trigger(config: PlatformConfig, query: pulumi.Input[str]) -> LoadTrigger:
    """KEDA's trigger for a deployment: `query`, Monitoring's load query for it (what its recording rule reads)."""
    scaling = config.scaling
    busy = scaling.signal == BUSY_RATIO_SIGNAL
    # A busy ratio has no activation step of its own; `activationQueueDepth` is the pending count's.
    return {
        "name": scaling.signal,
        "query": query,
        "threshold": scaling.busy_ratio_target if busy else scaling.queue_depth_target,
        "activation_threshold": 0 if busy else scaling.activation_queue_depth,
    }


def dcgm_metrics(config: PlatformConfig) -> bool:
    """Whether a DCGM exporter's metrics reach this stack's Prometheus, so its GPU health rules and panels render:
    the pool's own exporter or the GPU Operator's (which the pool's ServiceMonitor scrapes), in the stack that
    manages the pool (one per cluster: the rules, which are about GPUs and not a namespace, render once)."""
    pool = config.gpu_pool
    return pool.manage and (pool.dcgm_exporter or config.cluster.gpu_operator is not None)


def monitoring_args(
    config: PlatformConfig, served: Mapping[str, Served], kube_version: str | None = None
) -> MonitoringArgs:
    """The stack's monitoring of the deployments `served`; `stackctl rules` writes the same, so the files it checks
    are the rules deployed."""
    monitoring = config.monitoring
    args: MonitoringArgs = {
        "namespace": config.kubernetes.namespace,
        "latency_slo_ms": config.serving.p95_latency_slo_ms,
        "deployments": {
            key: {
                "object_name": served[key].object_name,
                "max_replicas": deployment.replicas.max,
                "models": served[key].models,
                "signal": deployment_signal(config, served[key]),
            }
            for key, deployment in config.serving.deployments.items()
        },
        "mode": monitoring.mode,
        "chart": monitoring.chart.source(),
        "prometheus_namespace": monitoring.prometheus.namespace,
        "prometheus_pod_labels": monitoring.prometheus.pod_labels,
        "selector_labels": monitoring.selector_labels,
        "receivers": {name: receiver.args() for name, receiver in monitoring.receivers.items()},
        "routes": {severity: receiver for severity, receiver in monitoring.routes.items()},
        "runbook_base_url": monitoring.runbook_base_url,
        "grafana_folder": monitoring.grafana_folder,
        "scrape_interval": monitoring.scrape_interval,
        "alerts": monitoring.alerts.args(),
        "labels": platform_labels(config.environment),
        "scaling_enabled": config.scaling.enabled,
        "dcgm_metrics": dcgm_metrics(config),
        "dashboard_tags": [*DASHBOARD_TAGS, config.environment],
    }
    if kube_version is not None:
        args["kube_version"] = kube_version
    return args


def gpu_pool_args(config: PlatformConfig) -> GpuNodePoolArgs:
    """The stack's GPU pool."""
    pool = config.gpu_pool
    plugin = pool.device_plugin
    args: GpuNodePoolArgs = {
        "workload_namespace": config.kubernetes.namespace,
        "max_nodes": pool.max_nodes,
        "gpus_per_node": pool.gpus_per_node,
        "min_nodes": pool.min_nodes,
        "manage": pool.manage,
        "resource_name": pool.resource_name,
        "node_labels": dict(pool.node_labels),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints],
        "autoscaler": pool.autoscaler,
        "static_nodes": list(pool.static_nodes),
        "overprovisioning_replicas": pool.overprovisioning_replicas,
        "overprovisioning_image": pool.overprovisioning_image,
        "labels": platform_labels(config.environment),
        "image_digests": config.image_digests,
        "metrics_namespace": config.monitoring.prometheus.namespace,
        "metrics_selector_labels": config.monitoring.selector_labels,
    }
    cluster = config.cluster
    if cluster.gpu_software == "pool":
        args["device_plugin"] = {
            "image": plugin.image,
            "sharing": plugin.sharing,
            "time_slicing_replicas": plugin.time_slicing_replicas,
            "mig_strategy": plugin.mig_strategy,
        }
        args["dcgm_exporter"] = pool.dcgm_exporter
        args["dcgm_exporter_image"] = pool.dcgm_exporter_image
    else:
        args["gpu_software"] = cluster.gpu_software
    if cluster.gpu_operator is not None:
        args["gpu_operator_namespace"] = cluster.gpu_operator.namespace
    if pool.karpenter is not None:
        karpenter = pool.karpenter
        args["karpenter"] = {
            "instance_families": list(karpenter.instance_families),
            "gpu_names": list(karpenter.gpu_names),
            "capacity_types": list(karpenter.capacity_types),
            "node_class": karpenter.node_class,
            "consolidate_after": karpenter.consolidate_after,
            "expire_after": karpenter.expire_after,
        }
        if cluster.profile.node_class_kind is not None:
            args["karpenter"]["node_class_kind"] = cluster.profile.node_class_kind
    if pool.cluster_autoscaler is not None:
        autoscaler = pool.cluster_autoscaler
        args["cluster_autoscaler"] = {
            "cloud_provider": autoscaler.cloud_provider,
            "node_groups": list(autoscaler.node_groups),
            "image": autoscaler.image,
            "scale_down_delay_after_add": autoscaler.scale_down_delay_after_add,
            "scale_down_delay_after_delete": autoscaler.scale_down_delay_after_delete,
            "scale_down_unneeded_time": autoscaler.scale_down_unneeded_time,
            "service_account_annotations": {
                **autoscaler.service_account_annotations,
                **identity_annotations(cluster.platform, cluster.workload_identity.node_autoscaler),
            },
        }
    if config.monitoring.scrape_interval is not None:
        args["scrape_interval"] = config.monitoring.scrape_interval
    return args


def serving_args(
    config: PlatformConfig,
    rendered: RenderedRepository,
    placement: PoolPlacement,
) -> TritonServingArgs:
    """The stack's serving, its models read from the repository its validation rendered (and under the same name);
    `placement`: the GPU pool's."""
    serving = config.serving
    platform, identity = config.cluster.platform, config.cluster.workload_identity.models
    return {
        "namespace": config.kubernetes.namespace,
        "image": serving.image,
        "deployments": {key: deployment.args() for key, deployment in serving.deployments.items()},
        "model_repository": serving.model_repository.args(str(rendered.source.path.absolute())),
        "config_name": rendered.config_name,
        "model_defaults": serving.model_defaults.args(),
        "models": {model: settings.args() for model, settings in config.models.items()},
        "inference_clients": [client.args() for client in serving.inference_clients],
        "ingress": serving.ingress.args(),
        "startup_timeout_seconds": serving.startup_timeout_seconds,
        "drain": serving.drain.args(),
        "shm_size_limit": serving.shm_size_limit,
        "tmp_size_limit": serving.tmp_size_limit,
        "service_account_annotations": {
            **serving.service_account_annotations,
            **identity_annotations(platform, identity),
        },
        "pod_labels": dict(config.cluster.profile.identity_pod_labels) if identity is not None else {},
        "pool": placement,
        "metrics_namespace": config.monitoring.prometheus.namespace,
        "metrics_pod_labels": dict(config.monitoring.prometheus.pod_labels),
        "labels": platform_labels(config.environment),
        "autoscaled": config.scaling.enabled,
        "image_digests": dict(config.image_digests),
        "protect_model_claim": protects_model_data(config),
    }


def scaling_args(
    config: PlatformConfig,
    workloads: Mapping[str, Workload],
    load_queries: Mapping[str, pulumi.Input[str]],
    prometheus_url: pulumi.Input[str],
    kube_version: str | None,
) -> KedaScalingArgs:
    """The stack's scaling: `workloads`, each deployment's name and namespace (TritonServing's Deployments in the
    program, so each ScaledObject waits for its Deployment); `load_queries` and `prometheus_url`, Monitoring's
    (the URL unless `scaling.prometheusAddress` names another)."""
    scaling = config.scaling

    def policy(schema: SchemaScalePolicy) -> ScalePolicy:
        out: ScalePolicy = {
            "stabilization_seconds": schema.stabilization_seconds,
            "percent": schema.percent,
            "period_seconds": schema.period_seconds,
        }
        if schema.pods is not None:
            out["pods"] = schema.pods
        return out

    args: KedaScalingArgs = {
        "targets": {
            key: {
                "deployment_name": workloads[key].name,
                "namespace": workloads[key].namespace,
                "min_replicas": deployment.replicas.min,
                "max_replicas": deployment.replicas.max,
                "trigger": load_trigger(config, load_queries[key]),
            }
            for key, deployment in config.serving.deployments.items()
        },
        "prometheus_url": scaling.prometheus_address or prometheus_url,
        "polling_interval_seconds": scaling.polling_interval_seconds,
        "scale_up": policy(scaling.scale_up),
        "scale_down": policy(scaling.scale_down),
        "gpu_memory_ratio_target": scaling.gpu_memory_ratio_target,
        "paused": scaling.paused,
        "keda": {"mode": scaling.keda.mode, "namespace": scaling.keda.namespace, "chart": scaling.keda.chart.source()},
        "labels": platform_labels(config.environment),
    }
    if scaling.fallback is not None:
        fallback = scaling.fallback
        args["fallback"] = {
            "replicas": fallback.replicas,
            "failure_threshold": fallback.failure_threshold,
            "behavior": fallback.behavior,
        }
    if scaling.paused_replicas is not None:
        args["paused_replicas"] = scaling.paused_replicas
    if scaling.prometheus_auth is not None:
        args["prometheus_auth"] = {
            "mode": scaling.prometheus_auth.mode,
            "secret_name": scaling.prometheus_auth.secret_name,
        }
    if kube_version is not None:
        args["kube_version"] = kube_version
    return args


class TritonPlatform(pulumi.ComponentResource):
    """The namespace, then the GPU pool, Triton serving, monitoring and KEDA scaling.

    The one place a stack's config becomes component Args (the `*_args` functions above); facts two
    components share come from their owner: the metrics namespace from the stack (`monitoring.prometheus`),
    the pool contract from `GpuNodePool`, what each deployment is and serves from `TritonServing`, the
    Prometheus URL and each deployment's load query from `Monitoring`.
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
        # The Prometheus Operator's CRDs come with Monitoring's chart in install mode, and the pool's ServiceMonitor
        # needs them in the same `pulumi up`. Monitoring watches what TritonServing outputs, and TritonServing runs
        # where the pool places it, so the pool is declared first and waits for the chart once Monitoring exists.
        operator: asyncio.Future[list[pulumi.Resource]] = asyncio.get_running_loop().create_future()
        after_operator = pulumi.ResourceOptions.merge(
            in_namespace, pulumi.ResourceOptions(depends_on=pulumi.Output.from_input(operator))
        )
        monitoring: Monitoring | None = None
        try:
            self.gpu_pool = GpuNodePool(f"{name}-gpu-pool", gpu_pool_args(config), after_operator)
            self.serving = TritonServing(
                f"{name}-serving", serving_args(config, args.rendered, self.gpu_pool.placement), in_namespace
            )
            served = served_by(self.serving, config.serving.deployments)
            monitoring = Monitoring(
                f"{name}-monitoring", monitoring_args(config, served, args.kube_version), in_namespace
            )
        finally:
            # Resolved even when a component refused its Args, so nothing waits forever in a failed program.
            operator.set_result([] if monitoring is None else monitoring.operator)
        self.monitoring = monitoring
        if config.scaling.enabled:
            # Outputs of each Deployment: its ScaledObject waits for it.
            workloads = {
                key: Workload(deployment.metadata.name, deployment.metadata.namespace)
                for key, deployment in self.serving.deployments.items()
            }
            queries = {key: self.monitoring.load_queries[key] for key in config.serving.deployments}
            KedaScaling(
                f"{name}-scaling",
                scaling_args(config, workloads, queries, self.monitoring.prometheus_url, args.kube_version),
                after_operator,
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
