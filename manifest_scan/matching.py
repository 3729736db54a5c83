"""Which findings an exception covers, and which exceptions covered anything."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from manifest_scan.exceptions import ScanException
from manifest_scan.findings import Finding

Grant = tuple[ScanException, str]
"""One object pattern of one exception: what goes stale when it matches nothing."""


def excepts(exception: ScanException, pattern: str, finding: Finding) -> bool:
    kind, name = pattern.split("/", 1)
    return (
        exception.scanner == finding.scanner
        and exception.check == finding.check
        and (not exception.stacks or finding.stack in exception.stacks)
        and kind == finding.kind
        and fnmatchcase(finding.name, name)
        # Scoped to containers, it never covers a finding that names none.
        and (not exception.containers or finding.container in exception.containers)
    )


def apply(findings: Iterable[Finding], exceptions: Iterable[ScanException]) -> tuple[list[Finding], set[Grant]]:
    """The findings no exception covers, and the (exception, object pattern) pairs that covered one."""
    grants = [(exception, pattern) for exception in exceptions for pattern in exception.objects]
    unexcepted: list[Finding] = []
    used: set[Grant] = set()
    for finding in findings:
        covering = {grant for grant in grants if excepts(*grant, finding)}
        used |= covering
        if not covering:
            unexcepted.append(finding)
    return unexcepted, used


def stale(exceptions: Iterable[ScanException], used: set[Grant]) -> list[Grant]:
    """The object patterns that covered no finding, in file order."""
    return [
        (exception, pattern)
        for exception in exceptions
        for pattern in exception.objects
        if (exception, pattern) not in used
    ]
