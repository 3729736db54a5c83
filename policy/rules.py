"""The policy pack's rules, as plain functions over resource inputs (no pulumi-policy import): the registry of
every rule (`RULES`), the exceptions a stack grants, and how a rule's violations turn into a note where an exception
is on record. The rules themselves: resource_rules.py (one resource) and stack_rules.py (all of a stack's).

Each rule takes a resource's Pulumi type and its input properties (camelCase, as the
engine passes them) and returns the violations it finds, one message each. Stack
rules take every resource at once. `__main__.py` wires them into pulumi-policy, and
the tests call them directly.

Sources: Kubernetes Pod Security Standards "restricted" (PSS), kube-linter and
Polaris checks, NVIDIA Triton's deploy guide and `command_line_parser.cc`, KEDA's
ScaledObject docs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policy.resource import Resource
from policy.resource_rules import (
    ephemeral_storage,
    host_access,
    image_digests,
    keda_safety,
    load_balancer,
    plaintext_secrets,
    pod_security,
    read_only_root,
    resources_and_images,
    stateful_data,
    triton_api_surface,
    triton_health,
)
from policy.stack_rules import (
    availability,
    drains,
    namespace_egress_policy,
    namespace_network_policy,
    scaled_without_replicas,
)


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    source: str
    check: Callable[[Resource], list[str]] | None = None
    stack_check: Callable[[list[Resource]], list[tuple[Resource, str]]] | None = None


RULES = (
    Rule(
        "pod-security-restricted",
        "PSS restricted: non-root, no privilege escalation, drop ALL, RuntimeDefault seccomp.",
        "PSS restricted",
        check=pod_security,
    ),
    Rule(
        "no-host-access",
        "No hostPath volumes, hostNetwork, hostPID, hostIPC or hostPort.",
        "PSS baseline/restricted, kube-linter",
        check=host_access,
    ),
    Rule(
        "read-only-root-filesystem",
        "Read-only root filesystem; writable paths are explicit emptyDirs.",
        "kube-linter, Polaris",
        check=read_only_root,
    ),
    Rule(
        "resources-and-pinned-images",
        "CPU and memory requests and limits on every container; image tags pinned, never latest.",
        "kube-linter, Polaris",
        check=resources_and_images,
    ),
    Rule(
        "ephemeral-storage",
        "Every container of the platform requests and limits ephemeral-storage; every emptyDir has a sizeLimit.",
        "kube-score container-ephemeral-storage-request-and-limit, kubelet disk-pressure eviction",
        check=ephemeral_storage,
    ),
    Rule(
        "production-image-digests",
        "Production runs every image by digest, the charts' included (`triton-platform:imageDigests`).",
        "checkov CKV_K8S_43",
        check=image_digests,
    ),
    Rule(
        "triton-health",
        "Triton has an nvidia.com/gpu limit and startup, readiness and liveness probes.",
        "Triton deploy guide, Polaris",
        check=triton_health,
    ),
    Rule(
        "triton-api-surface",
        "Model control none, or dynamic control with model-repository and model-config restricted; "
        "only known tritonserver flags.",
        "Triton deploy guide, command_line_parser.cc",
        check=triton_api_surface,
    ),
    Rule(
        "no-load-balancer",
        "No Service of type LoadBalancer unless an exception allows it.",
        "kube-linter (exposed services)",
        check=load_balancer,
    ),
    Rule(
        "keda-scaling-safety",
        "ignoreNullValues false on Prometheus triggers (but at zero, woken by the KEDA HTTP add-on); a fallback in "
        "production where Prometheus is read.",
        "KEDA docs",
        check=keda_safety,
    ),
    Rule(
        "no-plaintext-secrets",
        "No secret-looking values in ConfigMaps or plain env values.",
        "kube-linter (env-var-secret), Checkov",
        check=plaintext_secrets,
    ),
    Rule(
        "protected-model-storage",
        "Production PersistentVolumeClaims are protected.",
        "this platform's data rule",
        check=stateful_data,
    ),
    Rule(
        "triton-availability",
        "Triton Deployments that can exceed one replica (all in production) have a PDB and anti-affinity or spread.",
        "PSS-adjacent guidance, kube-linter, Polaris",
        stack_check=availability,
    ),
    Rule(
        "triton-drain",
        "A Triton PDB lets drains evict unready pods (unhealthyPodEvictionPolicy AlwaysAllow); in production a "
        "Triton Deployment runs at least 2 replicas, so a drain leaves one ready.",
        "Kubernetes docs, Specifying a Disruption Budget: unhealthy pod eviction policy",
        stack_check=drains,
    ),
    Rule(
        "namespace-network-policy",
        "Every namespace the stack creates has a NetworkPolicy.",
        "kube-linter, Polaris",
        stack_check=namespace_network_policy,
    ),
    Rule(
        "namespace-egress-policy",
        "Every namespace where the program runs pods denies egress by default; each workload's own policy admits "
        "what it needs.",
        "kube-score pod-networkpolicy; Kubernetes docs, Network Policies: default deny all egress traffic",
        stack_check=namespace_egress_policy,
    ),
    Rule(
        "keda-no-static-replicas",
        "A Deployment scaled by KEDA sets no spec.replicas.",
        "KEDA docs",
        stack_check=scaled_without_replicas,
    ),
)
POLICY_NAMES = tuple(rule.name for rule in RULES)


def granted_exceptions(config: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    """`triton-platform:policyExceptions` of a stack file's config: (kind, name) -> {policy: reason}."""
    granted: dict[tuple[str, str], dict[str, str]] = {}
    for item in config.get("triton-platform:policyExceptions") or []:
        granted.setdefault((item["kind"], item["name"]), {})[item["policy"]] = item["reason"]
    return granted


def unknown_exception_targets(
    granted: Mapping[tuple[str, str], Mapping[str, str]], resources: Iterable[Resource]
) -> list[str]:
    """Exceptions the stack's config grants to an object it does not create: a typo would otherwise pass unseen.

    Only the preview sees every object, charts' included, so the pack checks this, not `stackctl validate`.
    """
    present = {(r.kind, r.name) for r in resources}
    out = []
    for (kind, name), policies in sorted(granted.items()):
        if (kind, name) in present:
            continue
        close = difflib.get_close_matches(name, sorted(n for k, n in present if k == kind), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        out.append(
            f"triton-platform:policyExceptions grants {', '.join(sorted(policies))} to {kind} {name!r}, which is no "
            f"object of this stack; {hint}an exception names an object by kind and metadata.name"
        )
    return out


def violations(rule: Rule, resource: Resource) -> tuple[list[str], str | None]:
    """(violations, exception reason): an object's declared exception turns its violations into a note."""
    found = rule.check(resource) if rule.check else []
    reason = resource.exception(rule.name)
    return ([], reason) if found and reason else (found, None)
