"""What the scan prints: counts per stack, and the exceptions as docs/policy.md's table."""

from __future__ import annotations

from collections.abc import Iterable

from manifest_scan.exceptions import ScanException
from manifest_scan.findings import Finding, Severity
from manifest_scan.scan import StackScan

COLUMNS: tuple[tuple[str, str, Severity], ...] = (
    ("checkov failed", "checkov", "failed"),
    ("kube-score critical", "kube-score", "critical"),
    ("kube-score warning", "kube-score", "warning"),
)


def _count(findings: Iterable[Finding], scanner: str, severity: Severity) -> int:
    return sum(1 for f in findings if f.scanner == scanner and f.severity == severity)


def count_table(scans: list[StackScan], unexcepted: list[Finding]) -> str:
    """Per stack: checkov's passed checks, and each kind of finding `before → after` exceptions."""
    header = ["stack", "checkov passed", *(title for title, _, _ in COLUMNS)]
    rows = [header]
    for scan in scans:
        left = [f for f in unexcepted if f.stack == scan.stack]
        counts = [
            f"{_count(scan.findings, scanner, severity)} → {_count(left, scanner, severity)}"
            for _, scanner, severity in COLUMNS
        ]
        rows.append([scan.stack, str(scan.checkov_passed), *counts])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(["findings before → after exceptions", *lines]) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def exceptions_table(exceptions: list[ScanException]) -> str:
    """The exceptions as a Markdown table, for docs/policy.md's scanner-exceptions section."""
    lines = ["| scanner | check | objects | stacks | reason |", "| --- | --- | --- | --- | --- |"]
    for exception in exceptions:
        objects = ", ".join(f"`{pattern}`" for pattern in exception.objects)
        if exception.containers:
            objects += f" (containers {', '.join(f'`{c}`' for c in exception.containers)})"
        stacks = ", ".join(exception.stacks)
        lines.append(
            f"| {exception.scanner} | `{exception.check}` | {objects} | {stacks} | {_cell(exception.reason)} |"
        )
    return "\n".join(lines) + "\n"
