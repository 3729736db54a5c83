"""The platform's namespace, with Pod Security Standards `restricted` enforced."""

from __future__ import annotations

from typing import Any

from platform_config.schema import PROJECT


def platform_labels(environment: str) -> dict[str, str]:
    """Labels every object of the platform carries (never used in selectors)."""
    return {
        "app.kubernetes.io/part-of": PROJECT,
        "app.kubernetes.io/managed-by": "pulumi",
        f"{PROJECT}/environment": environment,
    }


def namespace_manifests(name: str, environment: str) -> dict[str, dict[str, Any]]:
    """The namespace, and a NetworkPolicy that denies all ingress not admitted by another policy."""
    # The admission controller, not only our defaults, rejects pods that weaken the
    # restricted profile, whoever creates them.
    pss = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
    labels = platform_labels(environment)
    return {
        "namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {**labels, **pss}}},
        "default-deny": {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny-ingress", "namespace": name, "labels": labels},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        },
    }
