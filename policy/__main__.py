"""The policy pack: every rule of rules.py as a mandatory pulumi-policy policy.

Run with `pulumi preview --policy-pack policy`. An object may break a rule only with a
reason on record: in the stack's `triton-platform:policyExceptions`, or in the
object's `policy.triton-platform.io/exceptions` annotation (set by the program for
node agents that need the host). Each exception is printed by the advisory
`policy-exceptions` policy on every preview.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import yaml
from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

# The project root, so the rules import the same way in this pack's virtualenv as in the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from policy.resource import Resource
from policy.rules import RULES, Rule, granted_exceptions, unknown_exception_targets, violations

STACKS = Path(__file__).resolve().parent.parent / "stacks"


@functools.cache
def stack_config(stack: str) -> dict[str, Any]:
    path = STACKS / f"Pulumi.{stack}.yaml"
    document: dict[str, Any] = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    return document.get("config") or {}


def stack_exceptions(stack: str) -> dict[tuple[str, str], dict[str, str]]:
    return granted_exceptions(stack_config(stack))


def resource(type_: str, props: Any, urn: str, protect: bool) -> Resource:
    plain = dict(props or {})
    found = Resource(type_, plain, protect)
    stack = urn.split(":")[2] if urn.startswith("urn:pulumi:") else ""
    environment = stack_config(stack).get("triton-platform:environment")
    granted = stack_exceptions(stack).get((found.kind, found.name), {})
    return Resource(type_, plain, protect, granted, str(environment) if environment else None)


def resource_policy(rule: Rule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        found, _ = violations(rule, resource(args.resource_type, args.props, args.urn, args.opts.protect))
        for message in found:
            report_violation(message, None)

    return ResourceValidationPolicy(
        rule.name, f"{rule.description} Source: {rule.source}.", validate, EnforcementLevel.MANDATORY
    )


def stack_policy(rule: Rule) -> StackValidationPolicy:
    check = rule.stack_check
    assert check is not None

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        pairs = [(resource(r.resource_type, r.props, r.urn, r.opts.protect), r.urn) for r in args.resources]
        urn_of = {id(built): urn for built, urn in pairs}
        for found, message in check([built for built, _ in pairs]):
            if not found.exception(rule.name):
                report_violation(message, urn_of[id(found)])

    return StackValidationPolicy(
        rule.name, f"{rule.description} Source: {rule.source}.", validate, EnforcementLevel.MANDATORY
    )


def exceptions_name_objects(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stacks = {r.urn.split(":")[2] for r in args.resources if r.urn.startswith("urn:pulumi:")}
    built = [resource(r.resource_type, r.props, r.urn, r.opts.protect) for r in args.resources]
    for stack in sorted(stacks):
        for message in unknown_exception_targets(stack_exceptions(stack), built):
            report_violation(message, None)


def report_exceptions(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    found = resource(args.resource_type, args.props, args.urn, args.opts.protect)
    for rule in RULES:
        reason = found.exception(rule.name)
        if reason and (not rule.check or violations(rule, found)[1]):
            report_violation(f"exception to {rule.name}: {reason}", None)


PolicyPack(
    name="triton-platform",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        *(resource_policy(rule) if rule.check else stack_policy(rule) for rule in RULES),
        StackValidationPolicy(
            "policy-exceptions-name-objects",
            "Every exception the stack's config grants names an object of the stack.",
            exceptions_name_objects,
            EnforcementLevel.MANDATORY,
        ),
        ResourceValidationPolicy(
            "policy-exceptions",
            "Lists every exception granted, with its reason, so none passes unseen.",
            report_exceptions,
            EnforcementLevel.ADVISORY,
        ),
    ],
)
