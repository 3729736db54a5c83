"""Cloud workload identities as the components' ServiceAccounts carry them: the annotation each cloud's identity
webhook reads, the form of the identity it names, and what the pods under that ServiceAccount need besides.

A component checks such an annotation's value whoever set it (`identity_annotation_rules`), and gives the pods the
labels their identity needs (`identity_pod_labels`), so a ServiceAccount annotated by hand works as one annotated by
the stack's `cluster.workloadIdentity`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from triton_platform.args.arg_problems import ArgPath, ArgProblems
from triton_platform.args.formats import AZURE_CLIENT_ID, GCP_SERVICE_ACCOUNT, IAM_ROLE_ARN, Format


@dataclass(frozen=True)
class IdentityAnnotation:
    """One cloud's workload-identity annotation on a ServiceAccount."""

    cloud: str
    """The cloud, in the cluster-autoscaler's `--cloud-provider` words."""
    form: Format
    """What the annotation's value must be."""
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    """Labels the cloud's webhook needs on a pod before it gives the pod the identity."""


AZURE_USE_LABEL = "azure.workload.identity/use"

IDENTITY_ANNOTATIONS: dict[str, IdentityAnnotation] = {
    # IRSA: the EKS pod identity webhook reads the role's ARN from this annotation
    # (https://github.com/aws/amazon-eks-pod-identity-webhook, README) and hands it to the SDKs as AWS_ROLE_ARN.
    "eks.amazonaws.com/role-arn": IdentityAnnotation("aws", IAM_ROLE_ARN),
    # GKE Workload Identity Federation: the Kubernetes ServiceAccount impersonates this Google service account
    # (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity).
    "iam.gke.io/gcp-service-account": IdentityAnnotation("gce", GCP_SERVICE_ACCOUNT),
    # Azure Workload Identity: the webhook mutates only pods labelled azure.workload.identity/use: "true" (required
    # since v1.0), and takes the client ID from the ServiceAccount's annotation
    # (https://azure.github.io/azure-workload-identity/docs/topics/service-account-labels-and-annotations.html).
    "azure.workload.identity/client-id": IdentityAnnotation("azure", AZURE_CLIENT_ID, {AZURE_USE_LABEL: "true"}),
}
"""Each workload-identity annotation the components know, by its key."""


def identity_annotation_rules(
    problems: ArgProblems, path: ArgPath, annotations: Mapping[str, str], cloud: str | None = None
) -> None:
    """Each identity annotation among `annotations` (the Arg at `path`) holds an identity of its cloud's form, and,
    where the pods call one `cloud` (the cluster-autoscaler's `--cloud-provider`), of that cloud."""
    for key, value in annotations.items():
        identity = IDENTITY_ANNOTATIONS.get(key)
        if identity is None or not isinstance(value, str):
            continue
        where: ArgPath = (*path, key)
        problem = identity.form.problem(value)
        if problem is not None:
            problems.add(where, problem)
        elif cloud is not None and identity.cloud != cloud:
            problems.add(
                where,
                f"is an identity of cloud provider {identity.cloud!r}, but cloud_provider is {cloud!r}; give the "
                f"identity of the cloud whose node groups it scales, or remove it",
            )


def identity_pod_labels(annotations: Mapping[str, str]) -> dict[str, str]:
    """The pod labels the identity annotations among `annotations` need."""
    labels: dict[str, str] = {}
    for key in annotations:
        identity = IDENTITY_ANNOTATIONS.get(key)
        if identity is not None:
            labels |= identity.pod_labels
    return labels


def identity_label_rules(
    problems: ArgProblems, path: ArgPath, annotations: Mapping[str, str], pod_labels: Mapping[str, str]
) -> None:
    """A pod label (the Arg at `path`) that says otherwise than the identity annotation among `annotations` needs."""
    for label, value in identity_pod_labels(annotations).items():
        given = pod_labels.get(label)
        if given is not None and given != value:
            problems.add(
                (*path, label),
                f"{given!r}, but the ServiceAccount's workload-identity annotation needs {label}: {value!r} on its "
                f"pods (the component sets it); remove the label, or the annotation",
            )
