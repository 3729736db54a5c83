"""Which secrets provider a stack uses, and the one it must not use when it deploys."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from platform_config.paths import display_path

LOCAL_PASSPHRASE = "local-only-not-secret"
"""scripts/pulumi-env's default passphrase: for local render-mode stacks only (dev's committed salt is for it)."""


def uses_passphrase(stack_file: Path) -> bool:
    """True when the stack's secrets are encrypted with a passphrase.

    The stack settings file records `encryptionsalt` for the passphrase provider only, and
    `secretsprovider` names any other (https://www.pulumi.com/docs/iac/concepts/projects/stack-settings-file/).
    """
    try:
        document = yaml.safe_load(stack_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False  # the config loader reports an unreadable file
    if not isinstance(document, dict):
        return False
    provider = str(document.get("secretsprovider") or "")
    return provider.startswith("passphrase") or (not provider and "encryptionsalt" in document)


def passphrase(environ: Mapping[str, str]) -> str | None:
    """The passphrase the CLI was given: PULUMI_CONFIG_PASSPHRASE, else the PULUMI_CONFIG_PASSPHRASE_FILE contents."""
    if "PULUMI_CONFIG_PASSPHRASE" in environ:
        return environ["PULUMI_CONFIG_PASSPHRASE"]
    path = environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\n")
    except (OSError, UnicodeDecodeError):
        return None  # the CLI itself reports a passphrase file it cannot read


def default_passphrase_problem(stack: str, stack_file: Path, environ: Mapping[str, str]) -> str | None:
    """Why a deploying stack must not go on with the local-only default passphrase; None when it may."""
    if not uses_passphrase(stack_file) or passphrase(environ) != LOCAL_PASSPHRASE:
        return None
    return (
        f"{display_path(stack_file)}: stack {stack} deploys to a cluster, but its secrets are encrypted with "
        f"the local-only default passphrase {LOCAL_PASSPHRASE!r}, which protects nothing; set "
        "PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) from your secret store before "
        f"`pulumi stack init {stack}`, or move the stack to a KMS: "
        f"pulumi stack change-secrets-provider --stack {stack} 'awskms://alias/<key>' (or gcpkms://, azurekeyvault://, hashivault://)"
    )
