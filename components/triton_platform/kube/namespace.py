"""The platform's namespace, with Pod Security Standards `restricted` enforced."""

from __future__ import annotations

from typing import Any

PROJECT = "triton-platform"
"""The platform's name: the value of `app.kubernetes.io/part-of` and the prefix of its own label keys on every
object (the policy pack tells the platform's objects by it), and the stacks' Pulumi project and config namespace."""
ENVIRONMENT_LABEL = f"{PROJECT}/environment"
"""The label that names a stack's environment (dev, staging, production) on every object."""

DNS_EGRESS = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
"""An egress rule for name lookups, to any address: cluster DNS may be a Service or a node-local cache."""


def platform_labels(environment: str) -> dict[str, str]:
    """Labels every object of the platform carries (never used in selectors)."""
    return {
        "app.kubernetes.io/part-of": PROJECT,
        "app.kubernetes.io/managed-by": "pulumi",
        ENVIRONMENT_LABEL: environment,
    }


def namespace_manifests(name: str, environment: str) -> dict[str, dict[str, Any]]:
    """The namespace, and NetworkPolicies that deny all ingress and egress not admitted by another policy."""
    # The admission controller, not only our defaults, rejects pods that weaken the
    # restricted profile, whoever creates them.
    pss = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
    labels = platform_labels(environment)
    return {
        "namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {**labels, **pss}}},
        "default-deny": deny_all(name, "Ingress", labels),
        "default-deny-egress": deny_all(name, "Egress", labels),
    }


def deny_all(namespace: str, direction: str, labels: dict[str, str]) -> dict[str, Any]:
    """A NetworkPolicy that denies all `direction` traffic of the namespace's pods not admitted by another policy."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"default-deny-{direction.lower()}", "namespace": namespace, "labels": labels},
        "spec": {"podSelector": {}, "policyTypes": [direction]},
    }
