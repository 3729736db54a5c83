"""What one `pulumi preview` reported, read from its engine event log.

Why the event log and not `pulumi preview --json`: the JSON digest drops every policy
event ("At this point in time, we don't handle policy events in JSON serialization",
pulumi/pulumi pkg/backend/display/json.go, ShowPreviewDigest), and `--json` replaces the
`--diff` text the comment also shows. `--event-log FILE` writes the engine events as JSON
lines (apitype.EngineEvent, sdk/go/common/apitype/events.go) while the `--diff` display
goes to stdout, in one run. The flag is registered only when PULUMI_DEBUG_COMMANDS is set
(pkg/cmd/pulumi/operations/preview.go), which is how the Automation API runs it too
(sdk/go/auto/local_workspace.go sets PULUMI_DEBUG_COMMANDS=true; sdk/go/auto/stack.go
passes `--event-log`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OPS = ("create", "update", "replace", "delete")
# Steps the engine reports for a replacement, folded into "replace".
REPLACE_OPS = {"replace", "create-replacement", "delete-replaced"}
# Kinds whose loss loses data: model storage, and the namespace that holds it.
STATEFUL_TYPES = {
    "kubernetes:core/v1:PersistentVolumeClaim": "model storage",
    "kubernetes:core/v1:PersistentVolume": "model storage",
    "kubernetes:core/v1:Namespace": "deleting a namespace deletes every claim in it",
    "random:index/randomPassword:RandomPassword": "a new value rotates a credential",
}
# How a secret value is serialized in events when secrets are not shown: the blinding
# crypter's "[secret]" under this signature key (sdk/go/common/resource/sig: Secret).
SECRET_SIG = "4dabf18193072939515e22adb298388d"
MASK = "[secret]"
# A Secret's payload is never shown, even where a program forgot to mark it secret.
SECRET_PAYLOAD = {"kubernetes:core/v1:Secret": ("data", "stringData")}
# Diagnostic severities kept for the reader (the engine's others: debug, info, infoerr).
KEPT_SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class PropertyChange:
    path: str
    old: Any
    """The value before (masked where secret); ABSENT when the property is added."""
    new: Any


class Absent:
    """A property one side of a change does not have (added or removed)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent()


@dataclass(frozen=True)
class Change:
    op: str
    type: str
    name: str
    reasons: tuple[str, ...]
    danger: str | None
    """Why this change can lose data or access; None when it cannot."""
    properties: tuple[PropertyChange, ...] = ()


@dataclass(frozen=True)
class PolicyResult:
    level: str
    """The enforcement level the pack reported: advisory, mandatory, remediate or disabled."""
    policy: str
    pack: str
    resource: str
    """`type name` of the object, or "" for a stack policy result without one."""
    message: str


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    resource: str
    message: str


@dataclass
class PreviewEvents:
    changes: list[Change] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    policy_violations: list[PolicyResult] = field(default_factory=list)
    policies_passed: list[str] = field(default_factory=list)
    policies_failed: list[str] = field(default_factory=list)
    policy_packs: dict[str, str] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        return [d.message for d in self.diagnostics if d.severity == "error"]


def urn_parts(urn: str) -> tuple[str, str]:
    """(type, name) of a URN; the type is the last of a parent chain."""
    _, _, types, name = urn.split("::", 3)
    return types.split("$")[-1], name


# One element of a property path: `.name`, `["key"]` or `[index]` (pulumi/pulumi
# sdk/go/common/resource/property_path.go, ParsePropertyPath).
PATH_ELEMENT = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|\[(\d+)\]|\.?([^.\[]+)')


def path_elements(path: str) -> list[str | int]:
    elements: list[str | int] = []
    for match in PATH_ELEMENT.finditer(path):
        key, index, name = match.groups()
        elements.append(json.loads(f'"{key}"') if key is not None else int(index) if index is not None else name)
    return elements


def masked(value: Any) -> Any:
    """`value` with every secret replaced by MASK."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return MASK
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def lookup(value: Any, elements: list[str | int]) -> Any:
    for element in elements:
        if isinstance(value, dict) and SECRET_SIG in value:
            return MASK
        indexable = isinstance(value, list) if isinstance(element, int) else isinstance(value, dict)
        if not indexable or element not in (range(len(value)) if isinstance(value, list) else value):
            return ABSENT
        value = value[element]
    return masked(value)


def property_changes(metadata: Mapping[str, Any]) -> tuple[PropertyChange, ...]:
    """Old and new value of every changed property, as `pulumi preview --diff` takes them.

    Old values come from the step's outputs (its inputs for an input diff), new values
    from its inputs: pulumi/pulumi pkg/engine/detailedDiff.go, TranslateDetailedDiff.
    """
    old_state, new_state = metadata.get("old") or {}, metadata.get("new") or {}
    detailed = metadata.get("detailedDiff")
    paths = detailed if detailed is not None else {key: {} for key in metadata.get("diffs") or []}
    hidden = SECRET_PAYLOAD.get(metadata.get("type", ""), ())
    found = []
    for path in sorted(paths):
        elements = path_elements(path)
        old_source = old_state.get("inputs") if paths[path].get("inputDiff") else old_state.get("outputs")
        old, new = lookup(old_source or {}, elements), lookup(new_state.get("inputs") or {}, elements)
        if elements and elements[0] in hidden:
            old, new = (v if v is ABSENT else MASK for v in (old, new))
        found.append(PropertyChange(path, old, new))
    return tuple(found)


def danger(op: str, metadata: Mapping[str, Any]) -> str | None:
    if op not in ("replace", "delete"):
        return None
    type_, _ = urn_parts(metadata["urn"])
    state = {**(metadata.get("old") or {}), **(metadata.get("new") or {})}
    reasons = []
    if state.get("protect"):
        reasons.append("protected")
    if state.get("retainOnDelete"):
        reasons.append("retained on delete")
    if type_ in STATEFUL_TYPES:
        reasons.append(STATEFUL_TYPES[type_])
    return "; ".join(reasons) or None


def changes(steps: Iterable[Mapping[str, Any]]) -> list[Change]:
    """The steps (resourcePreEvent metadata) that change something, replacements counted once."""
    out: dict[str, Change] = {}
    for step in steps:
        op = "replace" if step["op"] in REPLACE_OPS else step["op"]
        if op not in OPS:
            continue
        type_, name = urn_parts(step["urn"])
        if type_.startswith("pulumi:providers:") and op == "update":
            continue
        detailed = sorted((step.get("detailedDiff") or {}).keys())
        reasons = tuple(step.get("keys") or step.get("diffs") or detailed)
        properties = property_changes(step) if op in ("update", "replace") else ()
        previous = out.get(step["urn"])
        if previous and previous.op == "replace":
            reasons = tuple(dict.fromkeys(previous.reasons + reasons))
            properties = previous.properties or properties
            op = "replace"
        out[step["urn"]] = Change(op, type_, name, reasons, danger(op, step), properties)
    return sorted(out.values(), key=lambda c: (OPS.index(c.op), c.type, c.name))


def resource_label(urn: str | None) -> str:
    if not urn:
        return ""
    type_, name = urn_parts(urn)
    return f"{type_} {name}"


def read_events(lines: Iterable[str]) -> PreviewEvents:
    """The preview's changes, kept diagnostics and policy results, from its event log's lines."""
    result = PreviewEvents()
    steps: list[Mapping[str, Any]] = []
    passed: set[str] = set()
    failed: set[str] = set()
    for line in filter(str.strip, lines):
        event = json.loads(line)
        if pre := event.get("resourcePreEvent"):
            steps.append(pre["metadata"])
        elif (diag := event.get("diagnosticEvent")) and diag.get("severity") in KEPT_SEVERITIES:
            found = Diagnostic(diag["severity"], resource_label(diag.get("urn")), diag["message"].strip())
            if found not in result.diagnostics:
                result.diagnostics.append(found)
        elif policy := event.get("policyEvent"):
            # The message is the policy's description, then what it found (pulumi-policy's format).
            result.policy_violations.append(
                PolicyResult(
                    policy["enforcementLevel"],
                    policy["policyName"],
                    f"{policy['policyPackName']}@{policy['policyPackVersion']}",
                    resource_label(policy.get("resourceUrn")),
                    policy["message"].strip(),
                )
            )
        elif summary := event.get("policyAnalyzeSummaryEvent") or event.get("policyAnalyzeStackSummaryEvent"):
            passed.update(summary.get("passed") or [])
            failed.update(summary.get("failed") or [])
        elif summary := event.get("summaryEvent"):
            result.policy_packs = dict(summary.get("PolicyPacks") or {})
    result.changes = changes(steps)
    result.policies_failed = sorted(failed | {v.policy for v in result.policy_violations})
    result.policies_passed = sorted(passed - set(result.policies_failed))
    return result


def read_event_log(path: Path) -> PreviewEvents:
    return read_events(path.read_text(encoding="utf-8").splitlines() if path.exists() else [])
