"""The cluster profile against the GPU pool and serving: the pool's software and node provisioning, workload
identity given once, the GPUs a deployment asks for within a node, the pool at zero, PriorityClass names apart.
"""

from __future__ import annotations

from collections.abc import Iterator

from platform_config.cluster import ClusterConfig
from platform_config.errors import ConfigIssue
from platform_config.gpu_pool import GpuPoolConfig
from platform_config.scaling import ScalingConfig
from platform_config.schema import section_key
from platform_config.sections import CLUSTER, POOL, SERVING, Sections
from platform_config.serving import ServingConfig
from triton_platform.model_packaging.source import ModelRepository


def cluster_gpu_pool(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
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
        yield from identity_given_twice(
            cluster,
            ("nodeAutoscaler", autoscaler_identity),
            f"{POOL}.clusterAutoscaler.serviceAccountAnnotations",
            pool.cluster_autoscaler.service_account_annotations,
        )


def identity_given_twice(
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


def cluster_serving(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    """The model store's identity and claim against what the cluster's kind provides."""
    cluster: ClusterConfig = sections["cluster"]
    serving: ServingConfig = sections["serving"]
    profile = cluster.profile
    yield from identity_given_twice(
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


def gpu_capacity(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
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


def node_provisioning(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
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


def pool_at_zero(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
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


def priority_classes_apart(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
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
