"""Production's images run by digest: which of the program's would still run by tag.

The check is the policy pack's `production-image-digests` rule, over the objects the program
builds, so the exceptions the stack grants (`triton-platform:policyExceptions`) apply here too.
`stackctl validate` names them as still to pin; `stackctl pin-images` resolves them, the charts' too.
"""

from __future__ import annotations

from offline.synth import KUBERNETES_PREFIX, SynthResult
from policy.resource import Resource
from policy.resource_rules import running_images
from policy.rules import RULES, violations

RULE = next(rule for rule in RULES if rule.name == "production-image-digests")


def granted(result: SynthResult) -> dict[tuple[str, str], dict[str, str]]:
    """The stack's policy exceptions by object: (kind, name) -> {policy: reason}."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for exception in result.stack.config.policy_exceptions:
        out.setdefault((exception.kind, exception.name), {})[exception.policy] = exception.reason
    return out


def unpinned_images(result: SynthResult) -> list[str]:
    """The images production would run by tag without a granted exception, each once, sorted."""
    exceptions = granted(result)
    found: set[str] = set()
    for registered in result.resources:
        if not registered.type.startswith(KUBERNETES_PREFIX):
            continue
        plain = Resource(registered.type, registered.inputs, registered.protect)
        given = exceptions.get((plain.kind, plain.name), {})
        resource = Resource(plain.type, plain.props, plain.protect, given, result.stack.config.environment)
        if violations(RULE, resource)[0]:
            found.update(image for _, image in running_images(resource) if "@sha256:" not in image)
    return sorted(found)
