"""How a pod reaches the object store a model repository is published to: the credentials a container reads it
with (a Secret's keys as its environment, or a GCS credentials file; none under workload identity) and the
egress rules to the store's addresses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triton_platform.kube.namespace import DNS_EGRESS
from triton_platform.serving.serving_context import ServingContext

GCS_CREDENTIALS_DIR = "/var/run/secrets/model-store"


@dataclass(frozen=True)
class StoreAccess:
    """What a container reading the object store needs: credentials by reference only."""

    env: list[dict[str, Any]]
    env_from: list[dict[str, Any]]
    volumes: list[dict[str, Any]]
    mounts: list[dict[str, Any]]


def store_access(ctx: ServingContext) -> StoreAccess:
    """S3: the Secret's keys as the environment; GCS: its credentials.json as a file. Unset: workload identity."""
    secret, store = ctx.repository.get("credentials_secret"), ctx.store
    if store is None or secret is None:
        return StoreAccess([], [], [], [])
    if store.backend == "s3":
        return StoreAccess([], [{"secretRef": {"name": secret}}], [], [])
    return StoreAccess(
        [{"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": f"{GCS_CREDENTIALS_DIR}/credentials.json"}],
        [],
        [{"name": "model-store-credentials", "secret": {"secretName": secret}}],
        [{"name": "model-store-credentials", "mountPath": GCS_CREDENTIALS_DIR, "readOnly": True}],
    )


def store_egress(ctx: ServingContext) -> list[dict[str, Any]]:
    """DNS, and the object store's addresses and ports (`modelRepository.storeEgress`)."""
    return [
        DNS_EGRESS,
        *(
            {
                "to": [{"ipBlock": {"cidr": rule["cidr"]}}],
                "ports": [{"protocol": "TCP", "port": p} for p in rule["ports"]],
            }
            for rule in ctx.spec.egress
        ),
    ]
