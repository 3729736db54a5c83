"""Cluster profiles (`triton-platform:cluster`): the example stacks, what each kind of cluster gets, and every
contradiction refused with the key that causes it (platform_config/cluster.py, platform_config/cluster_checks.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from offline.synth import SynthResult, run_synth
from platform_config.loader import load_stack_file
from platform_config.paths import PROJECT_ROOT
from platform_config.stack_document import pulumi_config_from_stack_file
from stackctl.main import main
from tests.conftest import CLUSTER, POOL, SERVING, errors_of, validate
from triton_platform.args.excerpts import excerpt

EXAMPLES = PROJECT_ROOT / "stacks" / "examples"
PROFILES = ("eks", "gke", "aks", "gpu-operator")


def example(name: str) -> Path:
    return EXAMPLES / f"Pulumi.{name}.yaml"


def synth_example(name: str, edit: dict[str, Any] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    """An example stack's objects by (kind, name), the program's own only."""
    loaded = load_stack_file(example(name))
    flat, secret_keys = pulumi_config_from_stack_file(example(name))
    result = SynthResult(loaded, run_synth(loaded.stack, {**flat, **(edit or {})}, secret_keys))
    return {(m["kind"], m["metadata"]["name"]): m for m in result.manifests()}


@pytest.mark.parametrize("name", PROFILES)
def test_each_example_stack_validates(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--config", str(example(name))]) == 0
    assert capsys.readouterr().out.startswith(f"stacks/examples/Pulumi.{name}.yaml: OK: stack {name} (staging, deploy)")


def test_eks_reads_the_model_store_with_irsa_and_launches_nodes_from_its_ec2_node_class() -> None:
    objects = synth_example("eks")
    account = objects[("ServiceAccount", "triton-server")]
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/triton-models"
    }
    node_class = objects[("NodePool", "triton-eks-gpu")]["spec"]["template"]["spec"]["nodeClassRef"]
    assert node_class == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}
    assert ("DaemonSet", "nvidia-device-plugin") in objects


def test_gke_installs_no_node_software_and_no_node_autoscaling() -> None:
    objects = synth_example("gke")
    assert objects[("ServiceAccount", "triton-server")]["metadata"]["annotations"] == {
        "iam.gke.io/gcp-service-account": "triton-models@example-project.iam.gserviceaccount.com"
    }
    kinds = {kind for kind, _ in objects}
    assert not kinds & {"DaemonSet", "NodePool"}
    assert ("Namespace", "gpu-system") not in objects
    pod = objects[("Deployment", "triton-general")]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]


def test_aks_uses_its_node_class_and_azure_workload_identity_labels_the_pods() -> None:
    client_id = "0b1f5d63-7c1a-4f5e-9d2b-3a4c5e6f7a8b"
    objects = synth_example(
        "aks", {CLUSTER: json.dumps({"platform": "aks", "workloadIdentity": {"models": client_id}})}
    )
    node_class = objects[("NodePool", "triton-aks-gpu")]["spec"]["template"]["spec"]["nodeClassRef"]
    assert node_class == {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"}
    assert objects[("ServiceAccount", "triton-server")]["metadata"]["annotations"] == {
        "azure.workload.identity/client-id": client_id
    }
    labels = objects[("Deployment", "triton-general")]["spec"]["template"]["metadata"]["labels"]
    assert labels["azure.workload.identity/use"] == "true"
    selector = objects[("Deployment", "triton-general")]["spec"]["selector"]["matchLabels"]
    assert "azure.workload.identity/use" not in selector


def test_a_gpu_operator_cluster_gets_no_node_software_and_its_exporter_scraped() -> None:
    objects = synth_example("gpu-operator")
    assert ("DaemonSet", "nvidia-device-plugin") not in objects
    assert ("DaemonSet", "dcgm-exporter") not in objects
    monitor = objects[("ServiceMonitor", "gpu-operator-dcgm-exporter")]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["gpu-operator"]}
    assert monitor["spec"]["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}


def _cluster(**settings: Any) -> Any:
    def edit(values: dict[str, Any]) -> None:
        values[CLUSTER] = settings

    return edit


def _pool(**changes: Any) -> Any:
    def edit(values: dict[str, Any]) -> None:
        for key, value in changes.items():
            if value is None:
                values[POOL].pop(key, None)
            else:
                values[POOL][key] = value

    return edit


def _serving(**changes: Any) -> Any:
    def edit(values: dict[str, Any]) -> None:
        values[SERVING].update(changes)

    return edit


KARPENTER_POOL = _pool(autoscaler="karpenter", karpenter={"gpuNames": ["l4"]}, minNodes=0, clusterAutoscaler=None)
GKE_POOL = _pool(autoscaler="external", minNodes=0, clusterAutoscaler=None)
ROLE = "arn:aws:iam::111122223333:role/triton-models"
LONG_ROLE = f"arn:aws:iam::111122223333:role/{'r' * 65}"


@pytest.mark.parametrize(
    ("mutations", "expected"),
    [
        (
            (_cluster(platform="generic"), KARPENTER_POOL),
            f"{POOL}.autoscaler: 'karpenter' is not available on a generic cluster (Karpenter needs a cloud provider's "
            f"node class: set {CLUSTER}.platform to eks (EC2NodeClass) or aks (AKSNodeClass)); use one of static, "
            "cluster-autoscaler, external",
        ),
        (
            (_cluster(platform="gke"), KARPENTER_POOL),
            f"{POOL}.autoscaler: 'karpenter' is not available on a gke cluster (GKE scales GPU node pools itself "
            "(node-pool autoscaling or a ComputeClass)); use one of external, static",
        ),
        (
            (_cluster(platform="aks"),),
            f"{POOL}.autoscaler: 'cluster-autoscaler' is not available on a aks cluster (AKS runs its own cluster "
            "autoscaler on node pools (or node auto-provisioning: karpenter)); use one of karpenter, external, static",
        ),
        (
            (_cluster(gpuOperator={}), _pool(devicePlugin={"sharing": "time-slicing"})),
            f"{POOL}.devicePlugin: the GPU Operator runs the device plugin on this cluster, so the platform installs "
            "none: remove devicePlugin (configure the plugin through the operator)",
        ),
        (
            (_cluster(gpuOperator={"namespace": "nvidia"}), _pool(dcgmExporter=True)),
            f"{POOL}.dcgmExporter: true, but the GPU Operator runs the DCGM exporter and the platform scrapes it; set "
            "false",
        ),
        (
            (_cluster(platform="gke"), GKE_POOL, _pool(dcgmExporter=True)),
            f"{POOL}.dcgmExporter: true, but GKE runs the GPU nodes' software and the platform's DCGM exporter is not "
            "made for its nodes; set false (GKE exports DCGM metrics to Cloud Monitoring)",
        ),
        (
            (_cluster(platform="gke"), GKE_POOL, _pool(taints=[])),
            f"{POOL}.taints: gke taints every GPU node nvidia.com/gpu=present:NoSchedule itself; list that taint so "
            "Triton's pods tolerate it",
        ),
        (
            (_cluster(workloadIdentity={"models": ROLE}),),
            f"{CLUSTER}.workloadIdentity.models: a workload identity needs a cloud platform (eks, gke or aks); on "
            "a generic cluster give the model store's credentials as serving.modelRepository.credentialsSecret",
        ),
        (
            (_cluster(platform="eks", workloadIdentity={"models": "triton-models@p.iam.gserviceaccount.com"}),),
            f"{CLUSTER}.workloadIdentity.models: not a workload identity on eks: must be an IAM role ARN, "
            "arn:<partition>:iam::<12-digit account>:role/[<path>/]<name>; got 'triton-models@p.iam.gserviceaccount.com'",
        ),
        (
            (_cluster(platform="gke", workloadIdentity={"models": ROLE}), GKE_POOL),
            f"{CLUSTER}.workloadIdentity.models: not a workload identity on gke: must be a Google service account "
            f"email, <name>@<project>.iam.gserviceaccount.com; got '{ROLE}'",
        ),
        (
            (_cluster(platform="aks", workloadIdentity={"nodeAutoscaler": "NOT-A-UUID"}), KARPENTER_POOL),
            f"{CLUSTER}.workloadIdentity.nodeAutoscaler: not a workload identity on aks: must be a managed identity's "
            "client ID, a UUID such as 0b1f5d63-7c1a-4f5e-9d2b-3a4c5e6f7a8b; got 'NOT-A-UUID'",
        ),
        (
            (_cluster(platform="eks", workloadIdentity={"nodeAutoscaler": ROLE}), KARPENTER_POOL),
            f"{CLUSTER}.workloadIdentity.nodeAutoscaler: applies only to gpuPool.autoscaler 'cluster-autoscaler', "
            "not 'karpenter'",
        ),
        (
            (
                _cluster(platform="eks", workloadIdentity={"models": ROLE}),
                _serving(serviceAccountAnnotations={"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/x"}),
            ),
            f"{SERVING}.serviceAccountAnnotations: eks.amazonaws.com/role-arn is also given by "
            f"{CLUSTER}.workloadIdentity.models, with another value; keep one",
        ),
        (
            (
                _cluster(platform="eks", workloadIdentity={"nodeAutoscaler": ROLE}),
                _pool(
                    clusterAutoscaler={
                        "cloudProvider": "aws",
                        "nodeGroups": ["gpu"],
                        "serviceAccountAnnotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/y"},
                    }
                ),
            ),
            f"{POOL}.clusterAutoscaler.serviceAccountAnnotations: eks.amazonaws.com/role-arn is also given by "
            f"{CLUSTER}.workloadIdentity.nodeAutoscaler, with another value; keep one",
        ),
        (
            (_cluster(platform="eks", workloadIdentity={"models": "arn:aws:iam::111122223333:role/"}),),
            f"{CLUSTER}.workloadIdentity.models: not a workload identity on eks: 'arn:aws:iam::111122223333:role/' "
            "names no role: give the role's name after role/ (and its path, if any, before it)",
        ),
        (
            (_cluster(platform="eks", workloadIdentity={"models": "arn:aws:iam::111122223333:role/ml/"}),),
            f"{CLUSTER}.workloadIdentity.models: not a workload identity on eks: 'arn:aws:iam::111122223333:role/ml/' "
            "names no role: give the role's name after role/ (and its path, if any, before it)",
        ),
        (
            (_cluster(platform="eks", workloadIdentity={"models": LONG_ROLE}),),
            f"{CLUSTER}.workloadIdentity.models: not a workload identity on eks: "
            f"{excerpt(LONG_ROLE)} has a role name of 65 characters; IAM allows "
            "at most 64",
        ),
        (
            (_cluster(platform="eks", workloadIdentity={"models": "arn:aws-mars:iam::111122223333:role/triton"}),),
            f"{CLUSTER}.workloadIdentity.models: not a workload identity on eks: "
            "'arn:aws-mars:iam::111122223333:role/triton' has partition 'aws-mars', which AWS does not have; use one "
            "of aws, aws-cn, aws-us-gov, aws-eusc, aws-iso, aws-iso-b, aws-iso-e, aws-iso-f",
        ),
        (
            (_cluster(platform="eks", workloadIdentity={"models": "arn:aws:iam::1111-2222-3333:role/triton"}),),
            f"{CLUSTER}.workloadIdentity.models: not a workload identity on eks: "
            "'arn:aws:iam::1111-2222-3333:role/triton' has account '1111-2222-3333'; an AWS account ID is 12 digits",
        ),
        (
            (_serving(serviceAccountAnnotations={"eks.amazonaws.com/role-arn": "triton-models"}),),
            f'{SERVING}.serviceAccountAnnotations["eks.amazonaws.com/role-arn"]: must be an IAM role ARN, '
            "arn:<partition>:iam::<12-digit account>:role/[<path>/]<name>; got 'triton-models'",
        ),
        (
            (_serving(serviceAccountAnnotations={"azure.workload.identity/client-id": "triton-models"}),),
            f'{SERVING}.serviceAccountAnnotations["azure.workload.identity/client-id"]: must be a managed '
            "identity's client ID, a UUID such as 0b1f5d63-7c1a-4f5e-9d2b-3a4c5e6f7a8b; got 'triton-models'",
        ),
        (
            (
                _pool(
                    clusterAutoscaler={
                        "cloudProvider": "gce",
                        "nodeGroups": ["gpu"],
                        "serviceAccountAnnotations": {"eks.amazonaws.com/role-arn": ROLE},
                    }
                ),
            ),
            f'{POOL}.clusterAutoscaler.serviceAccountAnnotations["eks.amazonaws.com/role-arn"]: is an identity of '
            "cloud provider 'aws', but cloudProvider is 'gce'; give the identity of the cloud whose node groups it "
            "scales, or remove it",
        ),
        (
            (_cluster(platform="eks"), _pool(clusterAutoscaler={"cloudProvider": "gce", "nodeGroups": ["gpu"]})),
            f"{POOL}.clusterAutoscaler.cloudProvider: 'gce', but {CLUSTER}.platform is 'eks': the cluster-autoscaler "
            "of a eks cluster scales its node groups through 'aws'; set cloudProvider: aws",
        ),
    ],
    ids=[
        "karpenter-on-generic",
        "karpenter-on-gke",
        "cluster-autoscaler-on-aks",
        "operator-and-device-plugin",
        "operator-and-dcgm-exporter",
        "gke-and-dcgm-exporter",
        "gke-taint",
        "identity-on-generic",
        "eks-identity-form",
        "gke-identity-form",
        "aks-identity-form",
        "autoscaler-identity-without-autoscaler",
        "identity-twice",
        "autoscaler-identity-twice",
        "role-arn-without-a-name",
        "role-arn-with-a-path-and-no-name",
        "role-name-too-long",
        "invented-partition",
        "account-not-12-digits",
        "role-arn-annotation-by-hand",
        "client-id-annotation-by-hand",
        "autoscaler-identity-of-another-cloud",
        "autoscaler-cloud-against-platform",
    ],
)
def test_each_contradiction_names_its_key(mutations: tuple[Any, ...], expected: str) -> None:
    assert expected in errors_of("staging", *mutations)


def test_a_shared_claim_without_a_class_is_refused_on_a_cloud() -> None:
    claim = {
        "source": "pvc",
        "pvc": {"claimName": "models", "create": True, "accessMode": "ReadWriteMany", "origin": "s3://bucket/repo"},
    }
    errors = errors_of("staging", _cluster(platform="eks"), _serving(modelRepository=claim))
    assert (
        f"{SERVING}.modelRepository.pvc.storageClassName: unset, but the default StorageClass of a eks cluster is a "
        "block disk that offers no ReadWriteMany claim (it would stay Pending); set the class of Amazon EFS: a "
        "StorageClass of provisioner efs.csi.aws.com (the EFS CSI driver add-on)"
    ) in errors
    claim["pvc"]["storageClassName"] = "efs-sc"  # type: ignore[index]
    assert validate("staging", _cluster(platform="eks"), _serving(modelRepository=claim)).cluster.platform == "eks"


@pytest.mark.parametrize(
    ("settings", "mutations"),
    [
        (
            {"platform": "aks", "workloadIdentity": {"models": "0B1F5D63-7C1A-4F5E-9D2B-3A4C5E6F7A8B"}},
            (KARPENTER_POOL,),
        ),
        (
            {
                "platform": "eks",
                "workloadIdentity": {"models": "arn:aws-us-gov:iam::111122223333:role/ml/serving/triton-models"},
            },
            (),
        ),
        ({"platform": "eks", "workloadIdentity": {"models": f"arn:aws-eusc:iam::111122223333:role/{'r' * 64}"}}, ()),
        (
            {"platform": "eks"},
            (_pool(clusterAutoscaler={"cloudProvider": "aws", "nodeGroups": ["gpu"]}),),
        ),
        ({"platform": "generic"}, (_pool(clusterAutoscaler={"cloudProvider": "gce", "nodeGroups": ["gpu"]}),)),
    ],
    ids=["upper-case-client-id", "govcloud-role-with-a-path", "longest-role-name", "aws-autoscaler-on-eks", "generic"],
)
def test_identities_and_autoscalers_the_clouds_take_are_taken(settings: dict[str, Any], mutations: tuple[Any]) -> None:
    assert validate("staging", _cluster(**settings), *mutations).cluster.platform == settings["platform"]


def test_a_client_id_annotated_by_hand_labels_the_pods_as_azure_workload_identity_needs() -> None:
    """The webhook mutates only pods labelled azure.workload.identity/use: "true": a ServiceAccount annotated by
    hand gets the label on its pods as one annotated through cluster.workloadIdentity does."""
    client_id = "0b1f5d63-7c1a-4f5e-9d2b-3a4c5e6f7a8b"
    flat, _ = pulumi_config_from_stack_file(example("aks"))
    serving = json.loads(flat[SERVING])
    serving["serviceAccountAnnotations"] = {"azure.workload.identity/client-id": client_id}
    objects = synth_example("aks", {SERVING: json.dumps(serving)})
    assert objects[("ServiceAccount", "triton-server")]["metadata"]["annotations"] == {
        "azure.workload.identity/client-id": client_id
    }
    labels = objects[("Deployment", "triton-general")]["spec"]["template"]["metadata"]["labels"]
    assert labels["azure.workload.identity/use"] == "true"
