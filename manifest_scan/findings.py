"""One scanner finding about one object (and, where the scanner says, one of its containers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scanner = Literal["checkov", "kube-score"]
SCANNERS: tuple[Scanner, ...] = ("checkov", "kube-score")

Severity = Literal["failed", "critical", "warning"]
"""checkov's checks pass or fail; kube-score grades a finding critical or warning."""


@dataclass(frozen=True, order=True)
class Finding:
    stack: str
    scanner: Scanner
    check: str
    """The scanner's id: `CKV_K8S_15`, `container-image-pull-policy`."""
    check_name: str
    kind: str
    namespace: str | None
    """None for cluster-scoped objects."""
    name: str
    container: str | None
    """None when the scanner names no container, or the finding is about the whole object."""
    severity: Severity
    message: str

    def line(self) -> str:
        """`<stack>: <scanner> <check> <Kind>/<namespace>/<name>[ container <c>]: <message>`."""
        where = f"{self.kind}/{self.namespace or '_'}/{self.name}"
        if self.container:
            where += f" container {self.container}"
        return f"{self.stack}: {self.scanner} {self.check} {where}: {self.message}"
