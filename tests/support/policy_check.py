"""The policy pack's rules (policy/rules.py) over plain rendered manifests, as the pack sees a preview."""

from __future__ import annotations

from typing import Any

from policy.resource import Resource
from policy.rules import RULES, violations


def pack_violations(objects: list[dict[str, Any]]) -> list[str]:
    """Every violation the pack's rules find in `objects`, resource rules and stack rules alike."""
    resources = [Resource(f"kubernetes:{o['apiVersion']}:{o['kind']}", o) for o in objects]
    found = []
    for rule in RULES:
        for resource in resources:
            messages, _ = violations(rule, resource)
            found += [f"{rule.name}: {resource.kind} {resource.name}: {m}" for m in messages]
        if rule.stack_check:
            found += [f"{rule.name}: {r.kind} {r.name}: {m}" for r, m in rule.stack_check(resources)]
    return found
