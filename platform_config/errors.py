"""Config errors that name the file, the full key path, the bad value and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass

from triton_platform.args.url_credentials import redact

MESSAGE_CHARS = 2000
"""A backstop for messages built elsewhere that echo a value without `excerpt`."""


def bounded(text: str) -> str:
    """A whole message, URL credentials masked and cut at MESSAGE_CHARS."""
    text = redact(text)
    return text if len(text) <= MESSAGE_CHARS else f"{text[:MESSAGE_CHARS]}… ({len(text):,} characters in all)"


FILE_ISSUE = "(file)"
"""The key of an issue with a stack file itself (missing, not a regular file, too large), not with its content."""
SYNTAX_ISSUE = "(yaml)"
"""The key of a stack file's YAML that does not parse (a tab, a key given twice): a finding at its line and column."""


@dataclass(frozen=True, order=True)
class ConfigIssue:
    """One problem in a stack's config."""

    path: str
    """Full key path, e.g. ``triton-platform:serving.deployments.general.replicas.min``."""

    message: str
    """What is wrong: the bad value and what is allowed."""

    line: int | None = None
    """Where in the file, 1-based, when the issue knows (a YAML syntax error); else found by its key path."""

    column: int | None = None

    def position(self) -> str:
        """`:line:column` where the issue knows it, else nothing."""
        return "" if self.line is None else f":{self.line}:{self.column}"

    def __post_init__(self) -> None:
        # Whoever built the message, a credential in a URL is never repeated and no value floods the output.
        object.__setattr__(self, "path", bounded(self.path))
        object.__setattr__(self, "message", bounded(self.message))


class ConfigError(Exception):
    """Every problem found in one stack's config, reported together."""

    def __init__(self, source: str, issues: list[ConfigIssue]) -> None:
        self.source = source
        self.issues = sorted(set(issues))
        super().__init__(self.report())

    def report(self) -> str:
        count = len(self.issues)
        lines = [f"{self.source}: {count} config error{'s' if count != 1 else ''}"]
        lines += [f"{self.source}{issue.position()}: {issue.path}: {issue.message}" for issue in self.issues]
        return "\n".join(lines)
