"""`triton-platform:cluster`: the kind of cluster a stack runs on, and what that cluster provides itself.

`PROFILES` is the one place that says, per platform, who runs the GPU node software, which node autoscaling
the pool may use, how a pod gets a cloud identity and which storage offers ReadWriteMany claims; validation
(platform_config/cluster_checks.py) and the root (program/platform.py) both read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import model_validator

from platform_config.types import KeyProblemError, NamespaceName, Strict
from triton_platform.kube.workload_identity import IDENTITY_ANNOTATIONS

Platform = Literal["generic", "eks", "gke", "aks"]


@dataclass(frozen=True)
class Profile:
    """What one kind of cluster provides, and what the platform does on it."""

    gpu_software: Literal["pool", "cloud"]
    """Without the GPU Operator: `pool`, the platform runs NVIDIA's device plugin; `cloud`, the cloud does."""

    autoscalers: tuple[str, ...]
    """The `gpuPool.autoscaler` values the cluster supports."""

    node_class_kind: str | None
    """Karpenter's node class on this cloud; None where Karpenter does not run."""

    gpu_taint: tuple[str, str, str] | None
    """A taint the cloud puts on every GPU node itself (key, value, effect), which Triton pods must tolerate."""

    identity_annotation: str | None
    """The ServiceAccount annotation naming a pod's cloud identity; None where the platform knows of none."""

    cloud_provider: str | None
    """The cluster-autoscaler's `--cloud-provider` on this cloud; None where any may run (a generic cluster)."""

    rwx_storage: str | None = None
    """The storage that offers ReadWriteMany claims, for a model claim's `storageClassName`."""

    managed_control_plane: bool = False
    """Whether the cloud runs the control plane out of every pod's reach (no scraping its scheduler,
    controller manager or etcd)."""


PROFILES: dict[str, Profile] = {
    "generic": Profile("pool", ("static", "cluster-autoscaler", "external"), None, None, None, None),
    # IRSA: the EKS pod identity webhook reads this annotation (triton_platform/kube/workload_identity.py).
    "eks": Profile(
        "pool",
        ("karpenter", "cluster-autoscaler", "external", "static"),
        "EC2NodeClass",
        None,
        "eks.amazonaws.com/role-arn",
        "aws",
        rwx_storage="Amazon EFS: a StorageClass of provisioner efs.csi.aws.com (the EFS CSI driver add-on)",
        managed_control_plane=True,
    ),
    # GKE installs the driver and device plugin on GPU nodes and taints them nvidia.com/gpu=present:NoSchedule
    # (cloud.google.com/kubernetes-engine/docs/how-to/gpus); node pools scale outside the cluster.
    "gke": Profile(
        "cloud",
        ("external", "static"),
        None,
        ("nvidia.com/gpu", "present", "NoSchedule"),
        "iam.gke.io/gcp-service-account",
        "gce",
        rwx_storage="Filestore: the standard-rwx, premium-rwx or enterprise-rwx StorageClass (Filestore CSI driver)",
        managed_control_plane=True,
    ),
    # Azure Workload Identity: the annotation, and the pod label its webhook needs (triton_platform/kube/workload_identity.py).
    "aks": Profile(
        "pool",
        ("karpenter", "external", "static"),
        "AKSNodeClass",
        None,
        "azure.workload.identity/client-id",
        "azure",
        rwx_storage="Azure Files: the azurefile-csi or azurefile-csi-premium StorageClass",
        managed_control_plane=True,
    ),
}


def identity_problem(platform: str, value: str) -> str | None:
    """Why `value` is not a workload identity on `platform`, or None."""
    profile = PROFILES[platform]
    if profile.identity_annotation is None:
        return (
            "a workload identity needs a cloud platform (eks, gke or aks); on a generic cluster give the model "
            "store's credentials as serving.modelRepository.credentialsSecret"
        )
    problem = IDENTITY_ANNOTATIONS[profile.identity_annotation].form.problem(value)
    return None if problem is None else f"not a workload identity on {platform}: {problem}"


def identity_annotations(platform: str, identity: str | None) -> dict[str, str]:
    """The ServiceAccount annotations that give a pod `identity` on `platform`; none without one."""
    annotation = PROFILES[platform].identity_annotation
    return {annotation: identity} if identity is not None and annotation is not None else {}


class GpuOperator(Strict):
    """The NVIDIA GPU Operator, which runs the device plugin and the DCGM exporter on the GPU nodes."""

    namespace: NamespaceName = "gpu-operator"
    """The operator's namespace, where the platform scrapes its DCGM exporter's Service (`nvidia-dcgm-exporter`, label `app: nvidia-dcgm-exporter`, port `gpu-metrics`)."""


class WorkloadIdentity(Strict):
    """Keyless cloud identities for the platform's pods: IAM role ARNs on `eks` (IRSA), Google service account emails on `gke` (GKE Workload Identity), managed-identity client IDs on `aks` (Azure Workload Identity). Unset: no annotation (EKS Pod Identity associations, made outside the stack, need none)."""

    models: str | None = None
    """The identity Triton and the model loader read the model store with (their ServiceAccount `triton-server`). Unset: `serving.modelRepository.credentialsSecret`, or the node's own identity."""

    node_autoscaler: str | None = None
    """The identity of the cluster-autoscaler (`gpuPool.autoscaler: cluster-autoscaler`), which calls the cloud's node-group API."""


class ClusterConfig(Strict):
    """The kind of cluster: who installs the GPU node software, which node autoscaling the pool may use, and how pods get cloud identities."""

    platform: Platform = "generic"
    """`eks` (Karpenter with `EC2NodeClass`, IRSA), `gke` (GKE installs the GPU driver and device plugin and scales node pools itself), `aks` (node auto-provisioning with `AKSNodeClass`, Azure Workload Identity) or `generic` (any conformant cluster: the platform's own device plugin, the cluster-autoscaler or a static pool)."""

    gpu_operator: GpuOperator | None = None
    """Set when the NVIDIA GPU Operator runs on the cluster: the platform installs neither device plugin nor DCGM exporter, and scrapes the operator's exporter. Unset: no operator."""

    workload_identity: WorkloadIdentity = WorkloadIdentity()
    """Cloud identities for the platform's pods, by role."""

    @model_validator(mode="after")
    def _identities(self) -> ClusterConfig:
        for key, value in (
            ("workloadIdentity.models", self.workload_identity.models),
            ("workloadIdentity.nodeAutoscaler", self.workload_identity.node_autoscaler),
        ):
            problem = None if value is None else identity_problem(self.platform, value)
            if problem:
                raise KeyProblemError(key, problem)
        return self

    @property
    def profile(self) -> Profile:
        return PROFILES[self.platform]

    @property
    def gpu_software(self) -> str:
        """Who runs the GPU node software: `gpu-operator`, else the profile's `pool` or `cloud`."""
        return "gpu-operator" if self.gpu_operator is not None else self.profile.gpu_software
