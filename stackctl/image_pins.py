"""Production's images run by digest: `stackctl validate` names every one that would run by tag.

The check is the policy pack's `production-image-digests` rule, over the objects the program
builds, so the exceptions the stack grants (`triton-platform:policyExceptions`) apply here too.
"""

from __future__ import annotations

from offline.synth import KUBERNETES_PREFIX, SynthResult
from platform_config.errors import ConfigIssue
from platform_config.schema import section_key
from policy.rules import RULES, Resource, violations

RULE = next(rule for rule in RULES if rule.name == "production-image-digests")


def granted(result: SynthResult) -> dict[tuple[str, str], dict[str, str]]:
    """The stack's policy exceptions by object: (kind, name) -> {policy: reason}."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for exception in result.stack.config.policy_exceptions:
        out.setdefault((exception.kind, exception.name), {})[exception.policy] = exception.reason
    return out


def unpinned_images(result: SynthResult) -> list[ConfigIssue]:
    """One issue per container that would run by tag without a granted exception."""
    exceptions = granted(result)
    issues = []
    for registered in result.resources:
        if not registered.type.startswith(KUBERNETES_PREFIX):
            continue
        found = Resource(registered.type, registered.inputs, registered.protect)
        resource = Resource(found.type, found.props, found.protect, exceptions.get((found.kind, found.name), {}))
        messages, _ = violations(RULE, resource)
        issues += [
            ConfigIssue(section_key("image_digests"), f"{resource.kind} {resource.name}: {message}")
            for message in messages
        ]
    return issues
