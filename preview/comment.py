"""The Markdown comment body of one stack's preview, kept under GitHub's comment size limit."""

from __future__ import annotations

import difflib
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from preview.events import ABSENT, MASK, OPS, Change, PreviewEvents, PropertyChange

# GitHub refuses comment bodies over 65536 characters. pulumi/actions keeps its preview
# comment to 64_000 ("GitHub limits PR comment characters to 65_535, use lower max to keep
# buffer for variable values", src/libs/pr.ts, MAX_CHARACTER_COMMENT) and trims the
# `<details>` text from the end with a warning (trimOutputByCharacters): so does this, which
# leaves room for the marker preview.yml puts before the body.
MAX_COMMENT = 64_000
# Shares of that for the parts that grow with the change; the full diff gets what is left.
TABLE_BUDGET, VALUES_BUDGET, WARNINGS_BUDGET, POLICY_BUDGET = 10_000, 24_000, 6_000, 8_000
# A value longer than this is shown as a diff block rather than inline.
INLINE_VALUE = 120


@dataclass(frozen=True)
class StackReport:
    stack: str
    mode: str
    """How the preview ran, as one Markdown sentence (live or offline, and against what)."""
    revisions: str
    """Base and head, with their commit SHAs."""
    events: PreviewEvents
    settings: Sequence[tuple[str, Sequence[tuple[str, str, str]]]]
    """(title, rows of key, base, head) for each group of stack settings that changed."""
    notes: Sequence[str]
    full_diff: str
    """`pulumi preview --diff` as printed."""
    appendix: str = ""
    """Further Markdown sections (the simulator's scaling impact)."""


def code(text: str) -> str:
    """`text` as an inline code span, whatever backticks it holds."""
    text = text.replace("\n", "⏎")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def fenced(lines: Sequence[str], lang: str = "") -> list[str]:
    fence = "~~~~" if any("```" in line for line in lines) else "```"
    return [f"{fence}{lang}", *lines, fence]


def shown(value: Any) -> str:
    if value is ABSENT:
        return "(none)"
    if value == MASK:
        return MASK
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def value_lines(prop: PropertyChange) -> list[str]:
    """One property's `old → new`: inline when short, else a diff of its lines."""
    old, new = shown(prop.old), shown(prop.new)
    if max(len(old), len(new)) <= INLINE_VALUE:
        return [f"- {code(prop.path)}: {code(old)} → {code(new)}"]
    if isinstance(prop.old, str) and isinstance(prop.new, str) and "\n" in prop.old + prop.new:
        diff = list(difflib.unified_diff(prop.old.splitlines(), prop.new.splitlines(), n=1, lineterm=""))[2:]
    else:
        diff = [f"-{old}", f"+{new}"]
    return [f"- {code(prop.path)}:", *(f"  {line}" for line in fenced(diff, "diff"))]


def bounded(items: Sequence[str], budget: int, what: str) -> list[str]:
    """As many of `items` as fit in `budget` characters, then how many were left out."""
    kept: list[str] = []
    used = 0
    for item in items:
        used += len(item) + 1
        if used > budget:
            kept.append(f"_… {len(items) - len(kept)} more {what}: see the full diff below._")
            break
        kept.append(item)
    return kept


def table(header: Sequence[str], rows: Sequence[Sequence[str]], budget: int, what: str) -> list[str]:
    lines = [f"| {' | '.join(header)} |", "|" + "---|" * len(header)]
    return [*lines, *bounded([f"| {' | '.join(cell(c) for c in row)} |" for row in rows], budget, what), ""]


def values_section(found: Sequence[Change]) -> list[str]:
    blocks = [
        "\n".join(
            [f"**{c.op}** {code(c.type)} {code(c.name)}", *(line for p in c.properties for line in value_lines(p)), ""]
        )
        for c in found
        if c.properties
    ]
    if not blocks:
        return []
    return ["#### Changed values (old → new)", "", *bounded(blocks, VALUES_BUDGET, "changed objects"), ""]


def policy_section(events: PreviewEvents) -> list[str]:
    if not (events.policy_packs or events.policy_violations or events.policies_passed):
        return []
    # The engine names a local pack `name|local|<path>`: the path is the scratch copy's, noise to a reviewer.
    packs = ", ".join(code(f"{name.split('|')[0]}@{version}") for name, version in sorted(events.policy_packs.items()))
    lines = [f"#### Policy results ({packs or 'policy pack'})", ""]
    items = [
        f"- **{v.level}** {code(v.policy)}"
        + (f" on {code(v.resource)}" if v.resource else "")
        + ": "
        + " — ".join(v.message.splitlines())
        for v in events.policy_violations
    ]
    lines += bounded(items, POLICY_BUDGET, "policy results") or ["No violations."]
    lines.append("")
    if events.policies_failed:
        lines.append(f"Reported: {', '.join(code(p) for p in events.policies_failed)}.  ")
    if events.policies_passed:
        lines.append(f"Passed: {', '.join(code(p) for p in events.policies_passed)}.")
    return [*lines, ""]


def warnings_section(events: PreviewEvents) -> list[str]:
    warnings = [d for d in events.diagnostics if d.severity == "warning"]
    if not warnings:
        return []
    items = [f"- {code(d.resource) + ': ' if d.resource else ''}{' '.join(d.message.splitlines())}" for d in warnings]
    return [f"#### Warnings ({len(warnings)})", "", *bounded(items, WARNINGS_BUDGET, "warnings"), ""]


def full_diff_section(text: str, budget: int) -> list[str]:
    """The whole `pulumi preview --diff` text, collapsed, trimmed from the end to `budget` characters."""
    escaped = html.escape(text.strip("\n"), quote=False)
    trimmed = len(escaped) > budget
    if trimmed:
        # Never leave half an entity (`&lt;`) at the cut.
        escaped = re.sub(r"&[a-z]*$", "", escaped[: max(budget, 0)])
    lines = [
        "<details><summary>Full <code>pulumi preview --diff</code> output</summary>",
        "",
        "<pre>",
        escaped,
        "</pre>",
    ]
    if trimmed:
        lines.append(
            f"\n:warning: The output was too long and was trimmed: {len(escaped)} of "
            f"{len(html.escape(text, quote=False))} characters shown; the whole text is in the job's log and artifact."
        )
    return [*lines, "</details>", ""]


def comment(report: StackReport) -> str:
    events = report.events
    found = events.changes
    counts = {op: sum(c.op == op for c in found) for op in OPS}
    lines = [f"### `pulumi preview` — stack **{report.stack}**", "", report.mode, "", report.revisions, ""]
    if events.errors:
        lines += ["> [!WARNING]", "> **`pulumi preview` fails: this change cannot be deployed as it is.**"]
        lines += [f"> {line}" for error in events.errors for line in error.splitlines()]
        lines.append("")
    dangerous = [c for c in found if c.danger]
    if dangerous:
        lines += ["> [!CAUTION]", "> **Stateful or protected resources are replaced or deleted:**"]
        lines += [f"> - **{c.op}** `{c.type}` `{c.name}`: {c.danger}" for c in dangerous]
        lines.append("")
    lines += [" · ".join(f"{counts[op]} to {op}" for op in OPS) if found else "No changes.", ""]
    if found:
        rows = [
            [c.op + (" ⚠️" if c.danger else ""), code(c.type), code(c.name), ", ".join(code(r) for r in c.reasons)]
            for c in found
        ]
        lines += table(["op", "type", "name", "changed"], rows, TABLE_BUDGET, "changes")
    lines += values_section(found)
    lines += warnings_section(events)
    lines += policy_section(events)
    for title, settings in report.settings:
        if settings:
            shown_rows = [[code(key), code(old), code(new)] for key, old, new in settings]
            lines += [f"#### {title}", "", *table(["setting", "base", "head"], shown_rows, TABLE_BUDGET, "settings")]
    if report.appendix:
        lines += [report.appendix.strip("\n"), ""]
    lines += [f"_{note}_" for note in report.notes]
    lines.append("")
    body = "\n".join(lines)
    wrapper = len("\n".join(full_diff_section("", 0))) + 400
    return body + "\n".join(full_diff_section(report.full_diff, MAX_COMMENT - len(body) - wrapper))
