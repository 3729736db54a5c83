"""Secrets given as plain config, refused: a credential in a URL, a receiver credential in clear, and the
`[secret]` mask Pulumi prints copied as a value; each refusal names the command that stores the value as a Pulumi
secret. Which values are secret-bearing is secret_values.py's to say; what `secure:` must hold,
secrets_provider.py's."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from pydantic.alias_generators import to_camel

from platform_config.errors import ConfigIssue
from platform_config.flat_config import decode_value
from platform_config.problem_text import key_path
from platform_config.schema import section_annotation, section_key
from platform_config.secret_values import hides_value
from triton_platform.args import url_credentials
from triton_platform.args.excerpts import excerpt

SECRET_PLACEHOLDER = "[secret]"
"""Stands in for a `secure:` value when no passphrase is at hand (validate, synth).

It is also what `pulumi config` prints in place of a secret, so the same text written as a
plain value is a copy of that output, never a secret: it is refused, not passed over.
"""


def set_secret_command(path: str) -> str:
    """The command that stores `path` as a Pulumi secret (`--path` reaches inside structured keys)."""
    _namespace, _colon, name = path.partition(":")
    if re.search(r"[.\[]", name):
        return f"pulumi config set --secret --path '{path}' <value>"
    return f"pulumi config set --secret {path} <value>"


def placeholder_message(path: str) -> str:
    return (
        f"the text {SECRET_PLACEHOLDER!r} is what Pulumi prints in place of a secret, not a value; "
        f"set the real value as a secret: {set_secret_command(path)}"
    )


def secret_values_in_plain_text(
    flat: Mapping[str, str], secret_keys: Collection[str], from_stack_file: bool
) -> list[ConfigIssue]:
    """Plain values that give a secret away (credentials in a URL) or stand in for one (Pulumi's mask).

    From the engine, a key holding any secret is secret as a whole and is passed over; read from the
    file, secret leaves are already placeholders and literal placeholders were refused by `_plain`
    (stack_document.py).
    """
    issues = []
    for key, raw in flat.items():
        if key in secret_keys and not from_stack_file:
            continue
        # Iterative: the engine's JSON may nest deeper than Python's recursion allows.
        pending: list[tuple[tuple[int | str, ...], Any]] = [((), decode_value(raw))]
        while pending:
            loc, value = pending.pop()
            if isinstance(value, dict):
                pending += [((*loc, k), v) for k, v in value.items()]
            elif isinstance(value, list):
                pending += [((*loc, i), v) for i, v in enumerate(value)]
            elif isinstance(value, str):
                if value == SECRET_PLACEHOLDER and not from_stack_file:
                    issues.append(ConfigIssue(key_path(key, loc), placeholder_message(key_path(key, loc))))
                for url in url_credentials.find(value) if "://" in value else ():
                    path = key_path(key, loc)
                    # Masked, the rest of a secret-bearing URL (a Slack webhook's path) is still the secret.
                    hidden = hides_value(section_annotation(key), loc, value)
                    shown = "(not shown: the value is secret-bearing)" if hidden else excerpt(url.masked)
                    issues.append(
                        ConfigIssue(
                            path,
                            f"URL {shown} holds {' and '.join(url.kinds)}: plain config is stored "
                            "and deployed in clear; store the value as a Pulumi secret "
                            f"({set_secret_command(path)}) or use the field's secret reference "
                            "(an existing Secret's key) "
                            "where it has one",
                        )
                    )
    return issues


def plaintext_credentials(
    sections: dict[str, Any], secret_keys: Collection[str], from_stack_file: bool, reported: Collection[str] = ()
) -> list[ConfigIssue]:
    """Receiver credentials given inline must be Pulumi secrets, never plain text in the stack file.

    Read from the file, each secret leaf is a placeholder, so every credential is checked on its own.
    From the engine, a key holding any secret is secret as a whole: that is all there is to check.
    """
    key = section_key("monitoring")
    monitoring = sections.get("monitoring")
    if monitoring is None or (key in secret_keys and not from_stack_file):
        return []
    issues = []
    for name, receiver in sorted(monitoring.receivers.items()):
        for integration, field in (("slack", "webhook_url"), ("pagerduty", "routing_key"), ("webhook", "url")):
            target = getattr(receiver, integration)
            value = getattr(target, field).value if target is not None else None
            path = f"{key}.receivers.{name}.{integration}.{to_camel(field)}.value"
            # Only a placeholder stack_document put there (from the file) stands for a secret.
            if value is not None and not (from_stack_file and value == SECRET_PLACEHOLDER) and path not in reported:
                issues.append(
                    ConfigIssue(
                        path,
                        "a credential in plain text; store it as a Pulumi secret: "
                        f"pulumi config set --secret --path '{path}' <value> (or reference an existing Secret)",
                    )
                )
    return issues
