"""Every Kubernetes object of the Triton serving stack, as plain manifests.

`serving_manifests` returns all of them for one ServingSpec (TritonServing's Args,
checked, every default applied: the builders read the Args' own types); TritonServing only turns them into
resources. Nothing here talks to Pulumi
except through the values it is handed (the admin key and the namespaces may be
pulumi Outputs, which the manifests carry as they are). This module builds what the deployments share
(ServiceAccount, PriorityClass, model claim, admin key Secret) and puts together each deployment's objects,
which the modules beside it build: triton_deployment (with assembled_repository), triton_services,
triton_disruption_budget, triton_ingress, and model_loader_job for the loader.
"""

from __future__ import annotations

from typing import Any

from triton_platform.http_add_on import pods_service_name
from triton_platform.serving.assembled_repository import bundle_map, config_map
from triton_platform.serving.model_loader_job import loader_job_manifest, loader_network_policy
from triton_platform.serving.serving_context import SERVICE_ACCOUNT, ServingContext, deployment_object_name
from triton_platform.serving.triton_deployment import deployment_manifest
from triton_platform.serving.triton_disruption_budget import pdb_manifest
from triton_platform.serving.triton_ingress import ingress_manifests
from triton_platform.serving.triton_server_args import ADMIN_KEY_SECRET, dynamic_model_control
from triton_platform.serving.triton_services import network_policy_manifest, service_manifest, wake_service_manifest
from triton_platform.serving.triton_serving_args import TritonDeploymentArgs

INFERENCE_PRIORITY = 100_000
"""Above every workload without a class (0); far below system-node-critical (2,000,001,000)."""


Manifests = dict[str, dict[str, Any]]
"""Objects by role (`service-account`, `general-deployment`, ...): the role names the Pulumi resource."""


def shared_manifests(ctx: ServingContext) -> Manifests:
    """Objects every deployment of the stack shares."""
    service_account = ctx.metadata(SERVICE_ACCOUNT)
    if ctx.args["service_account_annotations"]:
        service_account["annotations"] = dict(ctx.args["service_account_annotations"])
    metadata = ctx.metadata(ctx.priority_class())
    del metadata["namespace"]
    out: Manifests = {
        "service-account": {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": service_account,
            "automountServiceAccountToken": False,
        },
        "priority-class": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": metadata,
            "value": INFERENCE_PRIORITY,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": f"Triton inference serving in {ctx.namespace}: outranks batch and dev workloads.",
        },
    }
    pvc = ctx.repository.get("pvc")
    if pvc is not None and pvc["create"]:
        spec: dict[str, Any] = {
            "accessModes": [pvc["access_mode"]],
            "resources": {"requests": {"storage": pvc["size"]}},
        }
        if pvc.get("storage_class_name"):
            spec["storageClassName"] = pvc["storage_class_name"]
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": ctx.metadata(pvc["claim_name"])}
        out["model-repository"] = {**claim, "spec": spec}
    if pvc is not None and "origin" in pvc:
        out["model-loader"] = loader_job_manifest(ctx, pvc)
        out["model-loader-network-policy"] = loader_network_policy(ctx)
    out["admin-key"] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": ctx.metadata(ADMIN_KEY_SECRET),
        "type": "Opaque",
        "stringData": {"key": ctx.admin_key},
    }
    return out


def deployment_manifests(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> Manifests:
    """Every object of one Triton deployment."""
    out: Manifests = {}
    if not dynamic_model_control(ctx.source):
        # Content-named: a change is a new ConfigMap under the same role, so a replace.
        out[f"{name}-config"] = config_map(ctx, name, deployment)
        if ctx.source == "bundled":
            out[f"{name}-models"] = bundle_map(ctx, name, deployment)
    out[f"{name}-deployment"] = deployment_manifest(ctx, name, deployment)
    woken = deployment["wake_on_request"]
    if woken:
        out[f"{name}-pods-service"] = service_manifest(ctx, name, pods_service_name(deployment_object_name(name)))
        out[f"{name}-service"] = wake_service_manifest(ctx, name)
    else:
        out[f"{name}-service"] = service_manifest(ctx, name)
    out[f"{name}-network-policy"] = network_policy_manifest(ctx, name, woken)
    if deployment["replicas"]["max"] > 1:
        out[f"{name}-pdb"] = pdb_manifest(ctx, name)
    if ctx.args["ingress"]["enabled"]:
        http, grpc = ingress_manifests(ctx, name)
        out[f"{name}-ingress-http"], out[f"{name}-ingress-grpc"] = http, grpc
    return out


def serving_manifests(ctx: ServingContext) -> Manifests:
    """All objects of the Triton serving stack."""
    out = shared_manifests(ctx)
    for name, deployment in sorted(ctx.args["deployments"].items()):
        out |= deployment_manifests(ctx, name, deployment)
    return out
