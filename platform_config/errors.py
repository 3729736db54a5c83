"""Config errors that name the file, the full key path, the bad value and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class ConfigIssue:
    """One problem in a stack's config."""

    path: str
    """Full key path, e.g. ``triton-platform:serving.deployments.general.replicas.min``."""

    message: str
    """What is wrong: the bad value and what is allowed."""


class ConfigError(Exception):
    """Every problem found in one stack's config, reported together."""

    def __init__(self, source: str, issues: list[ConfigIssue]) -> None:
        self.source = source
        self.issues = sorted(set(issues))
        super().__init__(self.report())

    def report(self) -> str:
        count = len(self.issues)
        lines = [f"{self.source}: {count} config error{'s' if count != 1 else ''}"]
        lines += [f"{self.source}: {issue.path}: {issue.message}" for issue in self.issues]
        return "\n".join(lines)
