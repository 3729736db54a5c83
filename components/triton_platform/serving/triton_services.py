"""How a Triton deployment is reached: its Services (the ClusterIP Service of its pods and, for a deployment woken
on request, the ExternalName Service to the KEDA HTTP add-on's interceptor) and its NetworkPolicy, which admits
only Prometheus, the configured clients, the ingress controller and the interceptor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from triton_platform.http_add_on import INTERCEPTOR_LABELS, wake_service_address
from triton_platform.kube.namespace import DNS_EGRESS
from triton_platform.serving.object_store_access import store_egress
from triton_platform.serving.serving_context import ServingContext, deployment_object_name, selector_labels
from triton_platform.serving.triton_server_args import dynamic_model_control
from triton_platform.triton_ports import GRPC_PORT, HTTP_PORT, METRICS_PORT


def service_manifest(ctx: ServingContext, name: str, service_name: str | None = None) -> dict[str, Any]:
    """The Service of a deployment's pods: the one clients call (`triton-<name>`), or, for a deployment woken on
    request, the interceptor's target (`service_name`)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(service_name or deployment_object_name(name), name),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(name),
            "ports": [
                {"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP", "appProtocol": "http"},
                {
                    "name": "grpc",
                    "port": GRPC_PORT,
                    "targetPort": "grpc",
                    "protocol": "TCP",
                    "appProtocol": "kubernetes.io/h2c",
                },
                {
                    "name": "metrics",
                    "port": METRICS_PORT,
                    "targetPort": "metrics",
                    "protocol": "TCP",
                    "appProtocol": "http",
                },
            ],
        },
    }


def wake_service_manifest(ctx: ServingContext, name: str) -> dict[str, Any]:
    """The Service clients call a deployment woken on request by: an ExternalName to the add-on's wake Service,
    which the interceptor's pods behind it serve on the same ports (triton_platform/http_add_on.py)."""
    address = wake_service_address(ctx.namespace, ctx.args["interceptor_namespace"], ctx.args["cluster_domain"])
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(deployment_object_name(name), name),
        "spec": {
            "type": "ExternalName",
            "externalName": address,
            # Informational for an ExternalName (the client's port is kept): what the wake Service listens on.
            "ports": [
                {"name": "http", "port": HTTP_PORT, "protocol": "TCP", "appProtocol": "http"},
                {"name": "grpc", "port": GRPC_PORT, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"},
            ],
        },
    }


def _peer(namespace: pulumi.Input[str], pod_labels: Mapping[str, str]) -> dict[str, Any]:
    peer: dict[str, Any] = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
    if pod_labels:
        peer["podSelector"] = {"matchLabels": dict(pod_labels)}
    return peer


def network_policy_manifest(ctx: ServingContext, name: str, woken: bool = False) -> dict[str, Any]:
    """Metrics only from Prometheus; inference only from the configured clients and the ingress controller, and,
    for a deployment woken on request (`woken`), the KEDA HTTP add-on's interceptor, which forwards their requests.

    Egress: DNS, and the object store when Triton reads it itself (s3, gcs); the namespace denies the rest.
    """
    rules: list[dict[str, Any]] = [
        {
            "from": [_peer(ctx.args["metrics_namespace"], ctx.args["metrics_pod_labels"])],
            "ports": [{"protocol": "TCP", "port": METRICS_PORT}],
        }
    ]
    clients = [_peer(c["namespace"], c["pod_labels"]) for c in ctx.args["inference_clients"]]
    ingress = ctx.args["ingress"]
    if ingress["enabled"]:
        clients.append(_peer(ingress["controller_namespace"], {}))
    if woken:
        clients.append(_peer(ctx.args["interceptor_namespace"], INTERCEPTOR_LABELS))
    if clients:
        ports = [{"protocol": "TCP", "port": HTTP_PORT}, {"protocol": "TCP", "port": GRPC_PORT}]
        rules.append({"from": clients, "ports": ports})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": ctx.metadata(deployment_object_name(name), name),
        "spec": {
            "podSelector": {"matchLabels": selector_labels(name)},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": rules,
            "egress": store_egress(ctx) if dynamic_model_control(ctx.source) else [DNS_EGRESS],
        },
    }
