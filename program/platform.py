"""The root of the program: one TritonPlatform per stack, which owns every other component."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Optional, cast

import pulumi
import pulumi_kubernetes as k8s

from platform_config.capacity import demand_capacities
from platform_config.cluster import identity_annotations
from platform_config.component_fields import section_args
from platform_config.kubernetes import render_override
from platform_config.loader import StackConfig
from platform_config.paths import stack_file
from platform_config.schema import PlatformConfig
from platform_config.secrets_provider import default_passphrase_problem
from triton_platform.args.object_claims import claim
from triton_platform.gpu_pool.gpu_node_pool import GpuNodePool
from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.http_add_on import service_hosts
from triton_platform.kube.kubernetes_objects import create_object
from triton_platform.kube.kubernetes_provider import (
    KubeconfigError,
    KubernetesTarget,
    ServerVersionError,
    check_reachable,
    create_provider,
    kubernetes_target,
    provider_options,
    server_version,
    unreachable_reason,
)
from triton_platform.kube.namespace import namespace_manifests, platform_labels
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.monitoring.monitoring import Monitoring
from triton_platform.monitoring.monitoring_args import DASHBOARD_TAGS, INSTALL_ONLY, DeploymentSignal, MonitoringArgs
from triton_platform.monitoring.token_rules import token_metrics
from triton_platform.scaling.keda_scaling import KedaScaling
from triton_platform.scaling.keda_scaling_args import KEDA_INSTALL_ONLY, KedaScalingArgs, LoadTrigger, WakeRoute
from triton_platform.scaling_signal import BUSY_RATIO_SIGNAL, DEMAND_SIGNAL, QUEUE_DEPTH_SIGNAL
from triton_platform.serving.served_deployments import deployment_instances, deployment_names, served_models
from triton_platform.serving.serving_context import deployment_object_name
from triton_platform.serving.triton_ingress import ingress_hosts
from triton_platform.serving.triton_serving import TritonServing, TritonServingArgs
from triton_platform.token_signal import TOKEN_TRIGGER_METRIC_TYPES, token_triggers

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

    cluster_version: str | None = None
    """The cluster's Kubernetes version where known (`cluster_version`): what the pool's cluster-autoscaler
    follows."""


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
    (triton_platform/serving/served_deployments.py)."""
    deployments = section_args(config.serving)["deployments"]
    names, models = deployment_names(deployments), served_models(deployments)
    instances = deployment_instances(deployments, rendered)
    return {key: Served(names[key], models[key], instances[key]) for key in deployments}


def demand_capacity(config: PlatformConfig, rendered: RenderedRepository) -> dict[str, dict[str, float]]:
    """For the `demand` signal, each deployment's capacity per pod of each model (platform_config/capacity.py), from
    the profiles the stack pins; validation has refused any problem with them. Empty for another signal."""
    configs = {model: served.config for model, served in rendered.models.items()}
    capacities, _ = demand_capacities(config.serving, config.scaling, configs)
    return {key: {m: c.requests_per_second for m, c in models.items()} for key, models in capacities.items()}


def deployment_signal(
    config: PlatformConfig, served: Served, capacity: Mapping[str, float] | None = None
) -> DeploymentSignal:
    """What a deployment scales on (`scaling.signal`), with what it divides each model's series by: for a busy
    ratio the instances per pod, for a demand the `capacity` per pod."""
    scaling = config.scaling
    signal: DeploymentSignal = {"kind": scaling.signal, "target": scaling.signal_target()}
    if scaling.signal == BUSY_RATIO_SIGNAL:
        signal["instances_per_pod"] = served.instances_per_pod
    if scaling.signal == DEMAND_SIGNAL:
        signal["capacity_per_pod"] = dict(capacity or {})
    return signal


def load_trigger(config: PlatformConfig, query: pulumi.Input[str]) -> LoadTrigger:
    """KEDA's trigger for a deployment: `query`, Monitoring's load query for it (what its recording rule reads)."""
    scaling = config.scaling
    # Only the pending count has an activation step of its own (`activationQueueDepth`); a deployment at zero
    # wakes through the HTTP add-on.
    return {
        "name": scaling.signal,
        "query": query,
        "threshold": scaling.signal_target(),
        "activation_threshold": scaling.activation_queue_depth if scaling.signal == QUEUE_DEPTH_SIGNAL else 0,
    }


def token_triggers_of(config: PlatformConfig, rendered: RenderedRepository, key: str) -> list[str]:
    """The token triggers of deployment `key`, as Monitoring's `token_queries` picks them (triton_platform/
    token_signal.py), known before its Outputs are."""
    metrics = {model: token_metrics(rendered.source.models[model]) for model in config.serving.token_objectives}
    return token_triggers(metrics, config.serving.deployments[key].models)


def extra_triggers(config: PlatformConfig, queries: Mapping[str, pulumi.Input[str]]) -> list[LoadTrigger]:
    """KEDA's token triggers of a deployment, `queries` by trigger name (Monitoring's `token_queries` for it): each
    aims for its stack target, as the metric type its signal reads (token_signal.py)."""
    return [
        {
            "name": name,
            "query": query,
            "threshold": config.scaling.token_target(name),
            "metric_type": TOKEN_TRIGGER_METRIC_TYPES[name],
        }
        for name, query in queries.items()
    ]


def dcgm_metrics(config: PlatformConfig) -> bool:
    """Whether a DCGM exporter's metrics reach this stack's Prometheus, so its GPU health rules and panels render:
    the pool's own exporter or the GPU Operator's (which the pool's ServiceMonitor scrapes), in the stack that
    manages the pool (one per cluster: the rules, which are about GPUs and not a namespace, render once)."""
    pool = config.gpu_pool
    return pool.manage and (pool.dcgm_exporter or config.cluster.gpu_operator is not None)


def monitoring_args(
    config: PlatformConfig, served: Mapping[str, Served], rendered: RenderedRepository, kube_version: str | None = None
) -> MonitoringArgs:
    """The stack's monitoring of the deployments `served` (their models as `rendered`); `stackctl rules` writes the
    same, so the files it checks are the rules deployed."""
    monitoring = config.monitoring
    capacities = demand_capacity(config, rendered)
    args = cast(
        "MonitoringArgs",
        {
            **section_args(monitoring),
            "namespace": config.kubernetes.namespace,
            "latency_slo_ms": config.serving.p95_latency_slo_ms,
            **(
                {"latency_p99_slo_ms": config.serving.p99_latency_slo_ms}
                if config.serving.p99_latency_slo_ms is not None
                else {}
            ),
            "token_objectives": {
                model: {**section_args(objectives), "metrics": token_metrics(rendered.source.models[model])}
                for model, objectives in config.serving.token_objectives.items()
            },
            "deployments": {
                key: {
                    "object_name": served[key].object_name,
                    "max_replicas": deployment.replicas.max,
                    "models": served[key].models,
                    "signal": deployment_signal(config, served[key], capacities.get(key)),
                    **({} if deployment.wake is None else {"wake_budget_seconds": deployment.wake.budget_seconds}),
                }
                for key, deployment in config.serving.deployments.items()
            },
            "interceptor_namespace": config.scaling.http_add_on.namespace,
            "chart": monitoring.chart.source(),
            "prometheus_namespace": monitoring.prometheus.namespace,
            "prometheus_pod_labels": monitoring.prometheus.pod_labels,
            "labels": platform_labels(config.environment),
            "scaling_enabled": config.scaling.enabled,
            "dcgm_metrics": dcgm_metrics(config),
            "dashboard_tags": [*DASHBOARD_TAGS, config.environment],
            "managed_control_plane": config.cluster.profile.managed_control_plane,
            "image_digests": dict(config.image_digests),
        },
    )
    if kube_version is not None:
        args["kube_version"] = kube_version
    if monitoring.mode != "install":
        # Only what the stack sets reaches the component, which refuses it there: a default would do nothing.
        for key in INSTALL_ONLY:
            if key not in monitoring.model_fields_set:
                args.pop(key, None)  # type: ignore[misc]
    return args


def gpu_pool_args(config: PlatformConfig, kube_version: str | None) -> GpuNodePoolArgs:
    """The stack's GPU pool; `kube_version`, the cluster's where known (the stack's in render mode, the API
    server's when deploying)."""
    pool, cluster = config.gpu_pool, config.cluster
    args = cast(
        "GpuNodePoolArgs",
        {
            **section_args(pool),
            "workload_namespace": config.kubernetes.namespace,
            "labels": platform_labels(config.environment),
            "image_digests": config.image_digests,
            "metrics_namespace": config.monitoring.prometheus.namespace,
            "metrics_selector_labels": config.monitoring.selector_labels,
        },
    )
    if cluster.gpu_software != "pool":
        # The cluster's GPU software brings its own device plugin and exporter.
        for key in ("device_plugin", "dcgm_exporter", "dcgm_exporter_image"):
            args.pop(key, None)  # type: ignore[misc]
        args["gpu_software"] = cluster.gpu_software
    if cluster.gpu_operator is not None:
        args["gpu_operator_namespace"] = cluster.gpu_operator.namespace
    if "karpenter" in args and cluster.profile.node_class_kind is not None:
        args["karpenter"]["node_class_kind"] = cluster.profile.node_class_kind
    if "cluster_autoscaler" in args:
        if pool.cluster_autoscaler is not None and "image" not in pool.cluster_autoscaler.model_fields_set:
            # The component's default follows the cluster's minor; the stack's would pin one.
            args["cluster_autoscaler"].pop("image", None)
        args["cluster_autoscaler"]["service_account_annotations"] = {
            **args["cluster_autoscaler"].get("service_account_annotations", {}),
            **identity_annotations(cluster.platform, cluster.workload_identity.node_autoscaler),
        }
    if config.monitoring.scrape_interval is not None:
        args["scrape_interval"] = config.monitoring.scrape_interval
    if kube_version is not None:
        args["kube_version"] = kube_version
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
    args = section_args(serving)
    deployments = {}
    for key, deployment in args["deployments"].items():
        # The stack's `wake` is KEDA's (scaling_args); serving only routes the Service through the interceptor.
        woken = deployment.pop("wake", None) is not None
        deployments[key] = {**deployment, "wake_on_request": woken}
    return cast(
        "TritonServingArgs",
        {
            **args,
            "deployments": deployments,
            "interceptor_namespace": config.scaling.http_add_on.namespace,
            "namespace": config.kubernetes.namespace,
            "model_repository": {**args["model_repository"], "path": str(rendered.source.path.absolute())},
            "config_name": rendered.config_name,
            "models": {model: section_args(settings) for model, settings in config.models.items()},
            "service_account_annotations": {
                **serving.service_account_annotations,
                **identity_annotations(platform, identity),
            },
            "pool": placement,
            "metrics_namespace": config.monitoring.prometheus.namespace,
            "metrics_pod_labels": dict(config.monitoring.prometheus.pod_labels),
            "labels": platform_labels(config.environment),
            "autoscaled": config.scaling.enabled,
            "image_digests": dict(config.image_digests),
            "protect_model_claim": protects_model_data(config),
        },
    )


def wake_route(config: PlatformConfig, key: str) -> WakeRoute:
    """How KEDA wakes deployment `key` on a request: its Service, by every name a client may send (in the cluster,
    and its Ingress hosts), and the stack's budget for the wait."""
    serving, wake = config.serving, config.serving.deployments[key].wake
    assert wake is not None
    service = deployment_object_name(key)
    hosts = service_hosts(service, config.kubernetes.namespace, serving.cluster_domain)
    if serving.ingress.enabled and serving.ingress.base_domain is not None:
        hosts += ingress_hosts(key, serving.ingress.base_domain).values()
    return {
        "service": service,
        "hosts": hosts,
        "budget_seconds": wake.budget_seconds,
        "concurrency_target": wake.concurrency_target,
    }


def scaling_args(
    config: PlatformConfig,
    workloads: Mapping[str, Workload],
    load_queries: Mapping[str, pulumi.Input[str]],
    prometheus_url: pulumi.Input[str],
    kube_version: str | None,
    *,
    token_queries: Mapping[str, Mapping[str, pulumi.Input[str]]],
) -> KedaScalingArgs:
    """The stack's scaling: `workloads`, each deployment's name and namespace (TritonServing's Deployments in the
    program, so each ScaledObject waits for its Deployment); `load_queries`, `token_queries` (by deployment, then
    trigger) and `prometheus_url`, Monitoring's (the URL unless `scaling.prometheusAddress` names another)."""
    scaling = config.scaling
    args = cast(
        "KedaScalingArgs",
        {
            **section_args(scaling),
            "targets": {
                key: {
                    "deployment_name": workloads[key].name,
                    "namespace": workloads[key].namespace,
                    "min_replicas": deployment.replicas.min,
                    "max_replicas": deployment.replicas.max,
                    "trigger": load_trigger(config, load_queries[key]),
                    **(
                        {"extra_triggers": extra_triggers(config, token_queries[key])} if token_queries.get(key) else {}
                    ),
                    **({} if deployment.wake is None else {"wake": wake_route(config, key)}),
                    **(
                        {}
                        if key not in scaling.daily_floor
                        else {"daily_floor": section_args(scaling.daily_floor[key])}
                    ),
                }
                for key, deployment in config.serving.deployments.items()
            },
            "prometheus_url": scaling.prometheus_address or prometheus_url,
            "labels": platform_labels(config.environment),
        },
    )
    args["keda"]["chart"] = scaling.keda.chart.source()
    if scaling.keda.mode != "install":
        # As for Monitoring: only what the stack sets reaches the component, which refuses it there.
        for key in KEDA_INSTALL_ONLY:
            if key not in scaling.keda.model_fields_set:
                args["keda"].pop(key, None)  # type: ignore[misc]
    args["http_add_on"]["chart"] = scaling.http_add_on.chart.source()
    args["image_digests"] = dict(config.image_digests)
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
        claim(f"TritonPlatform {name}", child, objects.values())
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
            self.gpu_pool = GpuNodePool(f"{name}-gpu-pool", gpu_pool_args(config, args.cluster_version), after_operator)
            self.serving = TritonServing(
                f"{name}-serving", serving_args(config, args.rendered, self.gpu_pool.placement), in_namespace
            )
            served = served_by(self.serving, config.serving.deployments)
            monitoring = Monitoring(
                f"{name}-monitoring", monitoring_args(config, served, args.rendered, args.kube_version), in_namespace
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
            tokens = {
                key: {trigger: self.monitoring.token_queries[key][trigger] for trigger in triggers}
                for key in config.serving.deployments
                if (triggers := token_triggers_of(config, args.rendered, key))
            }
            KedaScaling(
                f"{name}-scaling",
                scaling_args(
                    config, workloads, queries, self.monitoring.prometheus_url, args.kube_version, token_queries=tokens
                ),
                after_operator,
            )
        self.namespace = namespace.metadata.name
        self.register_outputs({"namespace": self.namespace, "services": self.serving.services})


def stack_target(stack: StackConfig) -> KubernetesTarget:
    """Where the stack's provider sends its objects (its render directory under a render override)."""
    # Pinned to the stack, not to the project, so two stacks never share state by accident.
    return kubernetes_target(
        f"{stack.stack}-kubernetes", stack.config.kubernetes.provider_args(stack.stack, render_override())
    )


def cluster_version(stack: StackConfig) -> str | None:
    """The cluster's Kubernetes version where it matters (a pool scaled by cluster-autoscaler) and is known: the
    stack's `kubeVersion` when rendering, the API server's when deploying (a warning where it cannot be read)."""
    if stack.config.gpu_pool.autoscaler != "cluster-autoscaler":
        return None
    target = stack_target(stack)
    if not target.deploys:
        return stack.config.kubernetes.kube_version
    if unreachable_reason(target) is not None:
        return None  # the pre-flight says so, once
    try:
        return server_version(target)
    except (ServerVersionError, KubeconfigError) as err:
        pulumi.log.warn(f"{err}; the GPU pool's cluster-autoscaler image is not checked against the cluster's minor")
        return None


def build_platform(stack: StackConfig, version: str | None = None) -> TritonPlatform:
    """Everything the stack deploys. `__main__.py` and `stackctl synth` both call this, nothing else. `version`:
    the cluster's (`cluster_version`), read once by the caller."""
    config = stack.config
    notice = config.kubernetes.override_notice(stack.stack, render_override())
    if notice:
        pulumi.log.warn(notice)
    target = stack_target(stack)
    if target.deploys:
        problem = default_passphrase_problem(stack.stack, stack_file(stack.stack), os.environ)
        if problem:
            raise pulumi.RunError(problem)
        check_reachable(target, stack.stack)
    provider = create_provider(target)
    kube_version = None if target.deploys else config.kubernetes.kube_version
    assert stack.rendered is not None, "the engine resolves every ESC import before the program runs"
    platform = TritonPlatform(
        stack.stack,
        TritonPlatformArgs(config, stack.rendered, kube_version, version),
        provider_options(provider),
    )
    pulumi.export("environment", config.environment)
    pulumi.export("kubernetesMode", config.kubernetes.mode)
    pulumi.export("renderDir", target.render_dir)
    pulumi.export("namespace", platform.namespace)
    pulumi.export("tritonServices", platform.serving.services)
    return platform
