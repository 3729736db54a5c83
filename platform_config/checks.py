"""Contradictions between config sections and the model repository.

Each check runs when the sections it reads parsed cleanly, so one bad section
never hides the errors of another.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel

from platform_config.capacity import demand_capacities
from platform_config.cluster import ClusterConfig
from platform_config.errors import ConfigIssue
from platform_config.gpu_pool import GpuPoolConfig
from platform_config.kubernetes import KubernetesConfig
from platform_config.model_settings import component_settings, render_stack, served_models
from platform_config.monitoring import MonitoringConfig
from platform_config.node_provisioning import pool_node_provisioning
from platform_config.paths import display_path
from platform_config.scaling import ScalingConfig
from platform_config.schema import section_key
from platform_config.serving import ModelSettings, ServingConfig
from platform_config.wake import kept_gpu, wake_estimate
from triton_platform.gpu_pool.gpu_system import SYSTEM_NAMESPACE as GPU_SYSTEM_NAMESPACE
from triton_platform.http_add_on import wake_service_problem
from triton_platform.model_packaging.bundle import bundle_problems
from triton_platform.model_packaging.digest import version_paths
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import effective_settings
from triton_platform.model_packaging.source import ModelRepository
from triton_platform.serving.model_fit import SettingNames, fit_problems, unserved_steps
from triton_platform.serving.triton_serving_spec import unknown_model

Sections = dict[str, Any]
"""Parsed sections by schema field name; a section that failed to parse is absent."""

SERVING = section_key("serving")
MODELS = section_key("models")
POOL = section_key("gpuPool")
DEFAULTS = f"{SERVING}.modelDefaults"


CLUSTER = section_key("cluster")


def _cluster_gpu_pool(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """What the GPU pool asks of the cluster against what its kind provides (platform_config/cluster.py)."""
    cluster: ClusterConfig = sections["cluster"]
    pool: GpuPoolConfig = sections["gpu_pool"]
    profile, platform, software = cluster.profile, cluster.platform, cluster.gpu_software
    if pool.autoscaler not in profile.autoscalers:
        reason = {
            "generic": f"Karpenter needs a cloud provider's node class: set {CLUSTER}.platform to eks (EC2NodeClass) "
            "or aks (AKSNodeClass)",
            "gke": "GKE scales GPU node pools itself (node-pool autoscaling or a ComputeClass)",
            "aks": "AKS runs its own cluster autoscaler on node pools (or node auto-provisioning: karpenter)",
        }.get(platform, "")
        yield ConfigIssue(
            f"{POOL}.autoscaler",
            f"{pool.autoscaler!r} is not available on a {platform} cluster ({reason}); use one of "
            f"{', '.join(profile.autoscalers)}",
        )
    if software != "pool":
        provider = "the GPU Operator" if software == "gpu-operator" else "GKE"
        if "device_plugin" in pool.model_fields_set:
            yield ConfigIssue(
                f"{POOL}.devicePlugin",
                f"{provider} runs the device plugin on this cluster, so the platform installs none: remove "
                "devicePlugin (configure the plugin through " + ("the operator" if provider != "GKE" else "GKE") + ")",
            )
        if pool.dcgm_exporter:
            yield ConfigIssue(
                f"{POOL}.dcgmExporter",
                "true, but the GPU Operator runs the DCGM exporter and the platform scrapes it; set false"
                if software == "gpu-operator"
                else "true, but GKE runs the GPU nodes' software and the platform's DCGM exporter is not made for "
                "its nodes; set false (GKE exports DCGM metrics to Cloud Monitoring)",
            )
    if profile.gpu_taint is not None:
        key, value, effect = profile.gpu_taint
        if not any((t.key, t.value, t.effect) == profile.gpu_taint for t in pool.taints):
            yield ConfigIssue(
                f"{POOL}.taints",
                f"{platform} taints every GPU node {key}={value}:{effect} itself; list that taint so Triton's pods "
                "tolerate it",
            )
    autoscaler = pool.cluster_autoscaler
    if (
        autoscaler is not None
        and pool.autoscaler in profile.autoscalers
        and profile.cloud_provider not in (None, autoscaler.cloud_provider)
    ):
        # It scales the node groups through the API of the cloud the cluster runs in, and nothing else.
        yield ConfigIssue(
            f"{POOL}.clusterAutoscaler.cloudProvider",
            f"{autoscaler.cloud_provider!r}, but {CLUSTER}.platform is {platform!r}: the cluster-autoscaler of a "
            f"{platform} cluster scales its node groups through {profile.cloud_provider!r}; set cloudProvider: "
            f"{profile.cloud_provider}",
        )
    autoscaler_identity = cluster.workload_identity.node_autoscaler
    if autoscaler_identity is not None and pool.autoscaler != "cluster-autoscaler":
        yield ConfigIssue(
            f"{CLUSTER}.workloadIdentity.nodeAutoscaler",
            f"applies only to gpuPool.autoscaler 'cluster-autoscaler', not {pool.autoscaler!r}",
        )
    elif pool.cluster_autoscaler is not None:
        yield from _identity_given_twice(
            cluster,
            ("nodeAutoscaler", autoscaler_identity),
            f"{POOL}.clusterAutoscaler.serviceAccountAnnotations",
            pool.cluster_autoscaler.service_account_annotations,
        )


def _identity_given_twice(
    cluster: ClusterConfig, role: tuple[str, str | None], key: str, annotations: dict[str, str]
) -> Iterator[ConfigIssue]:
    """A ServiceAccount annotation set by hand that names another identity than `workloadIdentity.<role>`.

    `role`: the role's key under `workloadIdentity` and the identity given there."""
    name, identity = role
    annotation = cluster.profile.identity_annotation
    given = annotations.get(annotation or "")
    if identity is not None and given is not None and given != identity:
        yield ConfigIssue(
            key, f"{annotation} is also given by {CLUSTER}.workloadIdentity.{name}, with another value; keep one"
        )


def _cluster_serving(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """The model store's identity and claim against what the cluster's kind provides."""
    cluster: ClusterConfig = sections["cluster"]
    serving: ServingConfig = sections["serving"]
    profile = cluster.profile
    yield from _identity_given_twice(
        cluster,
        ("models", cluster.workload_identity.models),
        f"{SERVING}.serviceAccountAnnotations",
        serving.service_account_annotations,
    )
    pvc = serving.model_repository.pvc
    if (
        pvc is not None
        and pvc.create
        and pvc.access_mode != "ReadWriteOnce"
        and pvc.storage_class_name is None
        and profile.rwx_storage is not None
    ):
        yield ConfigIssue(
            f"{SERVING}.modelRepository.pvc.storageClassName",
            f"unset, but the default StorageClass of a {cluster.platform} cluster is a block disk that offers no "
            f"{pvc.access_mode} claim (it would stay Pending); set the class of {profile.rwx_storage}",
        )


def _production_deploys(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    kubernetes: KubernetesConfig = sections["kubernetes"]
    if sections["environment"] == "production" and kubernetes.mode == "render":
        yield ConfigIssue(
            f"{section_key('kubernetes')}.mode",
            "'render' is not allowed for a production stack: production must deploy to a "
            "cluster (set mode: deploy and context), never fall back to writing files",
        )


def _deployment_models_exist(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    for dep_name, dep in serving.deployments.items():
        for i, model in enumerate(dep.models):
            unknown = unknown_model(repo, model, display_path(repo.path))
            if unknown is not None:
                yield ConfigIssue(f"{SERVING}.deployments.{dep_name}.models[{i}]", unknown)
            else:
                yield from (ConfigIssue(display_path(p.file), p.message) for p in repo.problems.get(model, []))


def _known(repo: ModelRepository) -> str:
    return repo.describe(display_path(repo.path))


def _model_settings_exist(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    models: dict[str, ModelSettings] = sections["models"]
    for model in models:
        if model not in repo.names:
            yield ConfigIssue(
                f"{MODELS}.{model}",
                f"settings for model {model!r}, which is not in the model repository; known models: {_known(repo)}",
            )


def _model_settings_served(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    served = served_models(sections["serving"])
    models: dict[str, ModelSettings] = sections["models"]
    for model in models:
        if model in repo.names and model not in served:
            yield ConfigIssue(
                f"{MODELS}.{model}",
                f"settings for model {model!r}, which no deployment serves; add it to a "
                f"deployment's `models` under {SERVING}.deployments or remove these settings",
            )


def _camel(key: str) -> str:
    return ".".join(to_camel(part) for part in key.split("."))


STACK_NAMES = SettingNames(models=MODELS, defaults=DEFAULTS, key=_camel, file=display_path)
"""The component's model-fit checks (triton_platform/serving/model_fit.py) in the stack file's keys."""


def _layers(sections: Sections) -> tuple[ModelSettingsArgs, dict[str, ModelSettingsArgs]]:
    """The defaults and each model's own settings as the component takes them."""
    serving: ServingConfig = sections["serving"]
    models: dict[str, ModelSettings] = sections["models"]
    return component_settings(serving.model_defaults), {name: component_settings(s) for name, s in models.items()}


def _model_fit(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """Each served model's effective settings against what the model is and what it has."""
    serving: ServingConfig = sections["serving"]
    defaults, models = _layers(sections)
    served = {name: dep.models for name, dep in serving.deployments.items()}
    for where, message in fit_problems(repo, served, defaults, models, STACK_NAMES):
        yield ConfigIssue(where, message)


def _base_delay_within_slo(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A queue delay or timeout the stack leaves to the base config.pbtxt still counts against the SLO."""
    serving: ServingConfig = sections["serving"]
    defaults, models = _layers(sections)
    slo_us = serving.p95_latency_slo_ms * 1000
    for name in served_models(serving):
        model = repo.models.get(name)
        if model is None or model.is_ensemble:
            continue
        batching = effective_settings(model, defaults, models.get(name)).get("dynamic_batching")
        base, base_path = model.config.dynamic_batching, STACK_NAMES.base(model)
        if batching is None and not model.config.HasField("dynamic_batching"):
            continue
        batching = batching or {}
        if "max_queue_delay_microseconds" not in batching and base.max_queue_delay_microseconds > slo_us:
            yield ConfigIssue(
                f"max_queue_delay_microseconds in {base_path}",
                f"queue delay {base.max_queue_delay_microseconds} us of model {name!r} is above the p95 latency "
                f"SLO ({SERVING}.p95LatencySloMs = {slo_us} us); set dynamicBatching.maxQueueDelayMicroseconds "
                "for this stack",
            )
        policy = batching.get("default_queue_policy", {})
        timeout = base.default_queue_policy.default_timeout_microseconds
        if "default_timeout_microseconds" not in policy and timeout > slo_us:
            yield ConfigIssue(
                f"default_queue_policy.default_timeout_microseconds in {base_path}",
                f"queue timeout {timeout} us of model {name!r} is above the p95 latency SLO "
                f"({SERVING}.p95LatencySloMs = {slo_us} us); set "
                "dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds for this stack",
            )


def _delay_within_slo(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    models: dict[str, ModelSettings] = sections["models"]
    slo_us = serving.p95_latency_slo_ms * 1000
    layers = [(DEFAULTS, serving.model_defaults)] + [(f"{MODELS}.{n}", s) for n, s in sorted(models.items())]
    for path, settings in layers:
        batching = settings.dynamic_batching
        delay = batching.max_queue_delay_microseconds if batching else None
        if delay is not None and delay > slo_us:
            yield ConfigIssue(
                f"{path}.dynamicBatching.maxQueueDelayMicroseconds",
                f"queue delay {delay} us is above the p95 latency SLO of "
                f"{serving.p95_latency_slo_ms} ms ({SERVING}.p95LatencySloMs = {slo_us} us); "
                f"the batcher alone would break the SLO, so the delay must be <= {slo_us}",
            )
        policy = batching.default_queue_policy if batching else None
        timeout = policy.default_timeout_microseconds if policy else None
        # 0 is Triton's "no timeout", a choice of its own rather than a long one.
        if timeout and timeout > slo_us:
            yield ConfigIssue(
                f"{path}.dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds",
                f"queue timeout {timeout} us is above the p95 latency SLO of "
                f"{serving.p95_latency_slo_ms} ms ({SERVING}.p95LatencySloMs = {slo_us} us); a request queued "
                f"that long has already missed the SLO, so the timeout must be <= {slo_us}",
            )


def _ensembles_complete(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    served = {name: dep.models for name, dep in sorted(serving.deployments.items())}
    for deployment, message in unserved_steps(repo, served):
        yield ConfigIssue(f"{SERVING}.deployments.{deployment}.models", message)


def _gpu_capacity(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    pool: GpuPoolConfig = sections["gpu_pool"]
    for name, dep in sorted(serving.deployments.items()):
        if dep.gpus_per_pod > pool.gpus_per_node:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.gpusPerPod",
                f"{dep.gpus_per_pod} GPUs per pod can never be scheduled on nodes with "
                f"{pool.gpus_per_node} ({POOL}.gpusPerNode); gpusPerPod must be <= gpusPerNode",
            )
    needed = sum(dep.replicas.max * dep.gpus_per_pod for dep in serving.deployments.values())
    if needed > pool.max_gpus:
        parts = " + ".join(
            f"{name}: {dep.replicas.max} x {dep.gpus_per_pod}" for name, dep in sorted(serving.deployments.items())
        )
        yield ConfigIssue(
            f"{SERVING}.deployments",
            f"at maximum scale the deployments need {needed} GPUs (replicas.max x gpusPerPod: {parts}) "
            f"but the GPU pool has at most {pool.max_gpus} ({POOL}.maxNodes "
            f"{pool.max_nodes} x gpusPerNode {pool.gpus_per_node}); lower replicas.max or raise maxNodes",
        )


DRAIN_FLOOR = 2
"""A Triton PodDisruptionBudget lets a drain evict one pod at a time (maxUnavailable 1): with two, one stays ready."""


def _production_drain_floor(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    if sections["environment"] != "production":
        return
    serving: ServingConfig = sections["serving"]
    for name, dep in sorted(serving.deployments.items()):
        # A deployment allowed to idle at zero has accepted that its next request waits for a wake
        # (`wake.allowInProduction`): a drain of its last pod is one more such wait, held by the interceptor.
        if dep.wake is not None and dep.wake.allow_in_production:
            continue
        if dep.replicas.min < DRAIN_FLOOR:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.replicas.min",
                f"{dep.replicas.min} in production: a node drain or upgrade evicts one pod at a time "
                f"(PodDisruptionBudget maxUnavailable 1), so with fewer than {DRAIN_FLOOR} replicas it takes "
                f"the last ready pod and the deployment serves nothing until a new one loads its models; "
                f"use min >= {DRAIN_FLOOR}",
            )


def _production_scaling_path(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """What production installs on the scaling path outlives a restart and a drain: KEDA reads Prometheus."""
    if sections["environment"] != "production":
        return
    monitoring: MonitoringConfig = sections["monitoring"]
    scaling: ScalingConfig = sections["scaling"]
    key = section_key("monitoring")
    if monitoring.mode == "install":
        if monitoring.storage is None:
            yield ConfigIssue(
                f"{key}.storage",
                "required key is missing: production's Prometheus keeps its history and Alertmanager its silences "
                "in an emptyDir without it, lost on every restart or reschedule; give storage: {storageClassName: "
                "<a ReadWriteOnce class>}",
            )
        if monitoring.replicas < DRAIN_FLOOR:
            yield ConfigIssue(
                f"{key}.replicas",
                f"{monitoring.replicas} in production: KEDA scales on this Prometheus' answers, and one replica "
                f"stops every scale-up while it restarts or is drained; use replicas >= {DRAIN_FLOOR}",
            )
    if scaling.enabled and scaling.keda.mode == "install" and scaling.keda.replicas < DRAIN_FLOOR:
        yield ConfigIssue(
            f"{section_key('scaling')}.keda.replicas",
            f"{scaling.keda.replicas} in production: one KEDA operator and metrics server leave the HPA blind while "
            f"it restarts or is drained; use replicas >= {DRAIN_FLOOR}",
        )


def _wake(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A deployment woken on request starts at zero, is scaled, and in production is at zero only when the stack
    says so."""
    serving: ServingConfig = sections["serving"]
    scaling: ScalingConfig = sections["scaling"]
    for name, dep in sorted(serving.deployments.items()):
        if dep.wake is None:
            continue
        path = f"{SERVING}.deployments.{name}.wake"
        if dep.replicas.min != 0:
            yield ConfigIssue(
                path,
                f"is set but replicas.min is {dep.replicas.min}: a deployment wakes on a request only from zero; "
                "set replicas.min 0 or remove wake",
            )
        if not scaling.enabled:
            yield ConfigIssue(
                path,
                f"is set but {section_key('scaling')}.enabled is false: KEDA scales a deployment up from zero",
            )
        problem = wake_service_problem(sections["kubernetes"].namespace) if "kubernetes" in sections else None
        if problem is not None:
            yield ConfigIssue(path, f"is set but the namespace {problem}")
        if sections["environment"] == "production" and not dep.wake.allow_in_production:
            yield ConfigIssue(
                f"{path}.allowInProduction",
                "required to be true for a production deployment at zero: its first request after an idle period "
                "waits for the whole wake (node, image pull, model load); say so explicitly, or keep replicas.min >= 1",
            )


def _wake_path_open(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """The add-on's interceptor takes every request to a deployment at zero: it may not run where the platform's
    own NetworkPolicies deny what no other policy admits (the serving namespace's ingress and egress, the GPU pool's
    egress), or no client reaches it and it reaches no pod, so a deployment at zero is never woken."""
    serving: ServingConfig = sections["serving"]
    if not any(dep.wake is not None for dep in serving.deployments.values()):
        return
    add_on = sections["scaling"].http_add_on.namespace
    closed = {GPU_SYSTEM_NAMESPACE: "the GPU pool's namespace, whose policy denies its pods' egress"}
    if "kubernetes" in sections:
        closed[sections["kubernetes"].namespace] = (
            f"the serving namespace ({section_key('kubernetes')}.namespace), whose policies deny its pods' ingress "
            "and egress"
        )
    if add_on in closed:
        yield ConfigIssue(
            f"{section_key('scaling')}.httpAddOn.namespace",
            f"{add_on!r} is {closed[add_on]} that no policy admits for the add-on: its interceptor would take no "
            "request and reach no pod, so a deployment at zero would never wake; give the add-on a namespace of its "
            "own (default 'keda')",
        )


def _wake_budget(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A wake budget at least the stack's estimate of the wake (platform_config/wake.py)."""
    serving: ServingConfig = sections["serving"]
    scaling: ScalingConfig = sections["scaling"]
    node = pool_node_provisioning(sections["cluster"], sections["gpu_pool"], scaling.simulation)
    for name, dep in sorted(serving.deployments.items()):
        if dep.wake is None:
            continue
        kept = kept_gpu(sections["gpu_pool"], serving, name)
        estimate = wake_estimate(node, scaling.simulation, repo, dep.models, kept)
        if dep.wake.budget_seconds < estimate.seconds:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.wake.budgetSeconds",
                f"{dep.wake.budget_seconds} is below the wake's estimate of {math.ceil(estimate.seconds)} s: "
                f"{estimate.describe()}; raise the budget to at least {math.ceil(estimate.seconds)}, or give measured "
                "figures for the parts",
            )


def _node_provisioning(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A node time only where the pool provisions nodes."""
    scaling: ScalingConfig = sections["scaling"]
    pool: GpuPoolConfig = sections["gpu_pool"]
    given = scaling.simulation.node_provision_seconds
    if given is not None and pool.autoscaler == "static":
        yield ConfigIssue(
            f"{section_key('scaling')}.simulation.nodeProvisionSeconds",
            f"{given}, but {POOL}.autoscaler is static: its nodes stay up and none is provisioned, so nothing reads "
            "it; remove it",
        )


def _pool_at_zero(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """When every deployment idles at zero, the GPU pool may too: no placeholder pod holds a node for nothing."""
    serving: ServingConfig = sections["serving"]
    pool: GpuPoolConfig = sections["gpu_pool"]
    deployments = serving.deployments.values()
    if pool.overprovisioning_replicas and deployments and all(d.wake is not None for d in deployments):
        yield ConfigIssue(
            f"{POOL}.overprovisioningReplicas",
            f"{pool.overprovisioning_replicas} placeholder pod(s) would hold GPU nodes while every deployment idles "
            "at zero (wake), so the pool never drops to zero; set 0 (the wake then includes a node), or keep a "
            "deployment's replicas.min >= 1",
        )


def _static_replicas(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    scaling: ScalingConfig = sections["scaling"]
    if scaling.enabled:
        return
    serving: ServingConfig = sections["serving"]
    for name, dep in serving.deployments.items():
        if dep.replicas.min != dep.replicas.max:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.replicas.max",
                f"max ({dep.replicas.max}) differs from min ({dep.replicas.min}) but "
                f"{section_key('scaling')}.enabled is false, so nothing would scale between them; "
                "set max equal to min, or enable scaling",
            )


def _model_delivery(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    source = serving.model_repository
    path = f"{SERVING}.modelRepository"
    if source.source == "bundled":
        if sections["environment"] == "production":
            yield ConfigIssue(
                f"{path}.source",
                "'bundled' is for small dev models and is not allowed in production; use pvc, s3 or gcs",
            )
        found: dict[tuple[Path, str], None] = {}  # a file two deployments bundle is named once
        for _, dep in sorted(serving.deployments.items()):
            files = version_paths(repo, [m for m in dep.models if m in repo.models])
            found |= dict.fromkeys(bundle_problems(files, display_path))
        yield from (ConfigIssue(display_path(file), problem) for file, problem in found)


def _scaling_bounds(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    scaling: ScalingConfig = sections["scaling"]
    if not scaling.enabled:
        return
    serving: ServingConfig = sections["serving"]
    key = section_key("scaling")
    if scaling.fallback is None and sections["environment"] == "production":
        yield ConfigIssue(
            f"{key}.fallback",
            "required key is missing: production must say what KEDA holds when it cannot read its metrics "
            "(fallback: {replicas: N}); without it a Prometheus outage leaves scaling unattended",
        )
    for name, dep in sorted(serving.deployments.items()):
        if dep.replicas.min == 0 and dep.wake is None:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.replicas.min",
                "0 without wake: at zero Triton exports no series, so nothing would scale the deployment up again; "
                "add wake: {budgetSeconds: N} (the KEDA HTTP add-on then holds the first request and wakes it), or "
                "use min >= 1",
            )
        for field, value in (
            ("fallback.replicas", scaling.fallback.replicas if scaling.fallback else None),
            ("pausedReplicas", scaling.paused_replicas),
        ):
            if value is not None and not dep.replicas.min <= value <= dep.replicas.max:
                yield ConfigIssue(
                    f"{key}.{field}",
                    f"{value} is outside deployment {name!r}'s replicas range {dep.replicas.min}-{dep.replicas.max}",
                )


def _simulation_shares(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """`scaling.simulation.shares`: each a model a deployment serves, one deployment's summing to 1 (`stackctl
    simulate` splits a one-column load by them, docs/simulation.md)."""
    scaling: ScalingConfig = sections["scaling"]
    serving: ServingConfig = sections["serving"]
    shares = scaling.simulation.shares or {}
    key = f"{section_key('scaling')}.simulation.shares"
    served = {m for spec in serving.deployments.values() for m in spec.models}
    for model in shares:
        if model not in served:
            yield ConfigIssue(
                f"{key}.{model}",
                f"no deployment serves model {model!r}; the deployments serve {', '.join(sorted(served))}",
            )
    for name, spec in sorted(serving.deployments.items()):
        mine = {m: shares[m] for m in spec.models if m in shares}
        total = sum(mine.values())
        if mine and not math.isclose(total, 1.0, abs_tol=1e-6):
            listed = ", ".join(f"{m}: {f:g}" for m, f in mine.items())
            yield ConfigIssue(
                key,
                f"the shares of deployment {name!r}'s models ({listed}) sum to {total:g}; expected 1, each a "
                "fraction of the deployment's load",
            )


def _demand_capacity(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """The `demand` signal's capacity per pod of each model, from the latency profiles the stack pins, measured on the
    config it renders (platform_config/capacity.py)."""
    scaling: ScalingConfig = sections["scaling"]
    if scaling.signal != "demand":
        return
    serving: ServingConfig = sections["serving"]
    try:
        rendered = render_stack("validate", serving, sections["models"], repo)
    except ValueError:
        return  # the models' own checks name why they do not render
    yield from demand_capacities(serving, scaling, {m: r.config for m, r in rendered.models.items()})[1]


def _demand_queue_bound(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """With the `demand` signal, no model bounds its queue by count: Triton answers a request to a full queue at once
    and counts it nowhere (core src/dynamic_batch_scheduler.cc returns the error from Enqueue, before the request
    reaches the statistics, in the 2.51 of the default image; measured in tests/cluster/test_demand_real.py; newer cores
    stage requests and finish a full queue's as REJECTED), so the demand would miss the overflow it sheds. A request
    rejected at its queue timeout is counted (nv_inference_request_failure, reason REJECTED)."""
    scaling: ScalingConfig = sections["scaling"]
    if scaling.signal != "demand":
        return
    serving: ServingConfig = sections["serving"]
    defaults, models = _layers(sections)
    for name in served_models(serving):
        model = repo.models.get(name)
        if model is None or model.is_ensemble:
            continue
        own = models.get(name)
        batching = effective_settings(model, defaults, own).get("dynamic_batching", {})
        size = batching.get("default_queue_policy", {}).get("max_queue_size")
        if size is None:
            size, where = model.config.dynamic_batching.default_queue_policy.max_queue_size, None
        else:
            where = STACK_NAMES.setting(own, name, "dynamic_batching.default_queue_policy.max_queue_size")
        if size > 0:
            yield ConfigIssue(
                where or f"default_queue_policy.max_queue_size in {STACK_NAMES.base(model)}",
                f"{size} bounds model {name!r}'s queue by count, but {section_key('scaling')}.signal is demand: "
                "Triton (2.51, the default image) refuses a request to a full queue before it counts it (neither a "
                "success nor a failure), "
                "so the demand would not see the overflow; bound the queue by time instead: maxQueueSize 0 and "
                "defaultQueuePolicy.defaultTimeoutMicroseconds (a request rejected at its timeout is counted)",
            )


def _daily_floor(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A daily floor belongs to a deployment KEDA scales from one replica up: at zero, KEDA's own loop and the
    wake decide, which neither `stackctl simulate` nor `plan` models with a floor."""
    serving: ServingConfig = sections["serving"]
    scaling: ScalingConfig = sections["scaling"]
    for name in sorted(scaling.daily_floor):
        path = f"{section_key('scaling')}.dailyFloor.{name}"
        deployment = serving.deployments.get(name)
        if deployment is None:
            yield ConfigIssue(
                path,
                f"names no deployment; {SERVING}.deployments has {', '.join(sorted(serving.deployments)) or 'none'}",
            )
        elif not scaling.enabled:
            yield ConfigIssue(path, f"is set but {section_key('scaling')}.enabled is false: KEDA holds the floor")
        elif deployment.replicas.min == 0:
            yield ConfigIssue(
                path,
                f"is set but {SERVING}.deployments.{name}.replicas.min is 0: a floor for a deployment that idles "
                "at zero is not supported (the simulator and planner model it from one replica up); set "
                "replicas.min 1 or remove the floor",
            )


def _priority_classes_apart(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """The PriorityClasses the platform creates are cluster-wide objects of one name each: the inference class
    (`<namespace>-inference`, serving_context), Monitoring's and KEDA's where they install with one."""
    monitoring, scaling = sections["monitoring"], sections["scaling"]
    created: dict[str, str] = {f"{sections['kubernetes'].namespace}-inference": "the inference class"}
    for path, name, installs in (
        (f"{section_key('monitoring')}.priorityClassName", monitoring.priority_class_name, monitoring.mode),
        (f"{section_key('scaling')}.keda.priorityClassName", scaling.keda.priority_class_name, scaling.keda.mode),
    ):
        if name is None or installs != "install":
            continue
        if name in created:
            yield ConfigIssue(
                path,
                f"{name!r} is the name of {created[name]} the platform also creates; each PriorityClass is one "
                "cluster-wide object: give this one another name",
            )
        else:
            created[name] = f"the class {path} names"


Check = Callable[[Sections, ModelRepository], Iterator[ConfigIssue]]

CHECKS: list[tuple[tuple[str, ...], Check]] = [
    (("environment", "kubernetes"), _production_deploys),
    (("cluster", "gpu_pool"), _cluster_gpu_pool),
    (("cluster", "serving"), _cluster_serving),
    (("serving",), _deployment_models_exist),
    (("models",), _model_settings_exist),
    (("serving", "models"), _model_settings_served),
    (("serving", "models"), _model_fit),
    (("serving", "models"), _delay_within_slo),
    (("serving", "models"), _ensembles_complete),
    (("serving", "models"), _base_delay_within_slo),
    (("serving", "gpu_pool"), _gpu_capacity),
    (("environment", "serving"), _model_delivery),
    (("environment", "serving", "scaling"), _scaling_bounds),
    (("serving", "scaling"), _static_replicas),
    (("environment", "serving", "scaling"), _wake),
    (("serving", "scaling"), _wake_path_open),
    (("cluster", "serving", "scaling", "gpu_pool"), _wake_budget),
    (("scaling", "gpu_pool"), _node_provisioning),
    (("serving", "gpu_pool"), _pool_at_zero),
    (("serving", "scaling"), _simulation_shares),
    (("serving", "models", "scaling"), _demand_capacity),
    (("serving", "models", "scaling"), _demand_queue_bound),
    (("serving", "scaling"), _daily_floor),
    (("kubernetes", "monitoring", "scaling"), _priority_classes_apart),
    (("environment", "serving"), _production_drain_floor),
    (("environment", "monitoring", "scaling"), _production_scaling_path),
]
"""Each check with the sections it needs."""


def cross_section_issues(sections: Sections, repo: ModelRepository) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for needs, check in CHECKS:
        if all(name in sections for name in needs):
            issues.extend(check(sections, repo))
    return issues
