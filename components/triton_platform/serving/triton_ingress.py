"""A Triton deployment's Ingresses, one per protocol (HTTP and gRPC) through ingress-nginx, and the hosts they
answer on.
"""

from __future__ import annotations

from typing import Any

from triton_platform.serving.serving_context import ServingContext, deployment_object_name


def ingress_hosts(name: str, base_domain: str) -> dict[str, str]:
    """The host of each protocol's Ingress of a deployment, by protocol."""
    return {"http": f"{name}.{base_domain}", "grpc": f"{name}-grpc.{base_domain}"}


STREAM_IDLE_SECONDS = 3600
"""How long a stream through ingress-nginx may go between two reads or writes: its `proxy-read-timeout` and
`proxy-send-timeout` (60 s by default), which with `backend-protocol: GRPC` set `grpc_read_timeout` and
`grpc_send_timeout` too (ingress-nginx docs, annotations). A token stream or a long-lived gRPC stream idles between
tokens or requests longer than a request waits for its one answer."""


def streaming_annotations(ctx: ServingContext, name: str) -> dict[str, str]:
    """For a deployment serving a decoupled model: responses passed on as they come (server-sent events and gRPC
    streams), never buffered whole, whatever the controller's ConfigMap says, and streams kept open between tokens."""
    if not ctx.streams(ctx.args["deployments"][name]["models"]):
        return {}
    return {
        "nginx.ingress.kubernetes.io/proxy-buffering": "off",
        "nginx.ingress.kubernetes.io/proxy-read-timeout": str(STREAM_IDLE_SECONDS),
        "nginx.ingress.kubernetes.io/proxy-send-timeout": str(STREAM_IDLE_SECONDS),
    }


def ingress_manifests(ctx: ServingContext, name: str) -> list[dict[str, Any]]:
    """One Ingress per protocol: ingress-nginx's backend-protocol annotation applies to a whole Ingress."""
    ingress = ctx.args["ingress"]
    out = []
    body = {
        "nginx.ingress.kubernetes.io/proxy-body-size": ingress["max_request_body"],
        **streaming_annotations(ctx, name),
    }
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
