"""Which findings an exception covers, and which exceptions covered anything."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from manifest_scan.exceptions import ScanException, names_object
from manifest_scan.findings import Finding

Grant = tuple[ScanException, str, str]
"""One object of one exception in one stack: what goes stale when it matches nothing there."""


def excepts(exception: ScanException, pattern: str, stack: str, finding: Finding) -> bool:
    return (
        exception.scanner == finding.scanner
        and exception.check == finding.check
        and finding.stack == stack
        and names_object(pattern, finding.kind, finding.name)
        # Scoped to containers, it never covers a finding that names none.
        and (not exception.containers or finding.container in exception.containers)
    )


def apply(findings: Iterable[Finding], exceptions: Iterable[ScanException]) -> tuple[list[Finding], set[Grant]]:
    """The findings no exception covers, and the (exception, object, stack) grants that covered one."""
    grants = [
        (exception, pattern, stack)
        for exception in exceptions
        for pattern in exception.objects
        for stack in exception.stacks
    ]
    unexcepted: list[Finding] = []
    used: set[Grant] = set()
    for finding in findings:
        covering = {grant for grant in grants if excepts(*grant, finding)}
        used |= covering
        if not covering:
            unexcepted.append(finding)
    return unexcepted, used


def stale(exceptions: Iterable[ScanException], used: set[Grant], scanned: Collection[str]) -> list[Grant]:
    """The grants in the `scanned` stacks that covered no finding, in file order: an exception names exactly
    the objects and stacks its reason is true for."""
    return [
        (exception, pattern, stack)
        for exception in exceptions
        for pattern in exception.objects
        for stack in exception.stacks
        if stack in scanned and (exception, pattern, stack) not in used
    ]
