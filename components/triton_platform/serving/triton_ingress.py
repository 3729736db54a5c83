"""A Triton deployment's Ingresses, one per protocol (HTTP and gRPC) through ingress-nginx, and the hosts they
answer on.
"""

from __future__ import annotations

from typing import Any

from triton_platform.serving.serving_context import ServingContext, deployment_object_name


def ingress_hosts(name: str, base_domain: str) -> dict[str, str]:
    """The host of each protocol's Ingress of a deployment, by protocol."""
    return {"http": f"{name}.{base_domain}", "grpc": f"{name}-grpc.{base_domain}"}


def ingress_manifests(ctx: ServingContext, name: str) -> list[dict[str, Any]]:
    """One Ingress per protocol: ingress-nginx's backend-protocol annotation applies to a whole Ingress."""
    ingress = ctx.args["ingress"]
    out = []
    body = {"nginx.ingress.kubernetes.io/proxy-body-size": ingress["max_request_body"]}
    hosts = ingress_hosts(name, ingress["base_domain"])
    for protocol, extra in (
        ("http", body),
        ("grpc", {**body, "nginx.ingress.kubernetes.io/backend-protocol": "GRPC"}),
    ):
        host = hosts[protocol]
        backend = {"service": {"name": deployment_object_name(name), "port": {"name": protocol}}}
        out.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": ctx.metadata(f"triton-{name}-{protocol}", name, annotations=extra),
                "spec": {
                    "ingressClassName": ingress["class_name"],
                    "tls": [{"hosts": [host], "secretName": ingress["tls_secret_name"]}],
                    "rules": [
                        {"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}
                    ],
                },
            }
        )
    return out
