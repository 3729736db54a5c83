"""Deploying stacks refuse the local-only default passphrase; local and KMS-backed stacks are left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_config.secrets_provider import LOCAL_PASSPHRASE, default_passphrase_problem
from tests.support.pulumi_cli import make_project

SALTED = "encryptionsalt: v1:abc=\nconfig: {}\n"
REFUSAL = (
    "{file}: stack production deploys to a cluster, but its secrets are encrypted with the local-only "
    "default passphrase 'local-only-not-secret', which protects nothing; set PULUMI_CONFIG_PASSPHRASE "
    "(or PULUMI_CONFIG_PASSPHRASE_FILE) from your secret store before `pulumi stack init production`, "
    "or move the stack to a KMS: pulumi stack change-secrets-provider --stack production 'awskms://alias/<key>' "
    "(or gcpkms://, azurekeyvault://, hashivault://)"
)


def stack_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.production.yaml"
    path.write_text(text)
    return path


def test_the_default_passphrase_is_refused_by_name(tmp_path: Path) -> None:
    path = stack_file(tmp_path, SALTED)
    problem = default_passphrase_problem("production", path, {"PULUMI_CONFIG_PASSPHRASE": LOCAL_PASSPHRASE})
    assert problem == REFUSAL.format(file=path)


def test_the_default_passphrase_in_a_passphrase_file_is_refused(tmp_path: Path) -> None:
    path = stack_file(tmp_path, SALTED)
    secret = tmp_path / "passphrase"
    secret.write_text(LOCAL_PASSPHRASE + "\n")
    assert default_passphrase_problem("production", path, {"PULUMI_CONFIG_PASSPHRASE_FILE": str(secret)}) == (
        REFUSAL.format(file=path)
    )


@pytest.mark.parametrize(
    ("text", "environ"),
    [
        # A passphrase of the stack's own.
        (SALTED, {"PULUMI_CONFIG_PASSPHRASE": "from-the-secret-store"}),
        # A KMS holds the key: the passphrase variable is not used.
        (
            "secretsprovider: awskms://alias/triton\nencryptedkey: abc\nconfig: {}\n",
            {"PULUMI_CONFIG_PASSPHRASE": LOCAL_PASSPHRASE},
        ),
        # No salt and no provider: Pulumi Cloud's own secrets ("service").
        ("config: {}\n", {"PULUMI_CONFIG_PASSPHRASE": LOCAL_PASSPHRASE}),
        # An explicit passphrase provider with its own passphrase file.
        ("secretsprovider: passphrase\nencryptionsalt: v1:abc=\nconfig: {}\n", {"PULUMI_CONFIG_PASSPHRASE": "x"}),
    ],
)
def test_other_secrets_providers_and_passphrases_pass(tmp_path: Path, text: str, environ: dict[str, str]) -> None:
    assert default_passphrase_problem("production", stack_file(tmp_path, text), environ) is None


@pytest.mark.real_tools
def test_pulumi_preview_of_a_deploy_stack_stops_on_the_default_passphrase(tmp_path: Path) -> None:
    """The real CLI: production (deploy mode) initialised with the default passphrase stops before any cluster call."""
    project = make_project(tmp_path, render_override=False)
    assert project.env["PULUMI_CONFIG_PASSPHRASE"] == LOCAL_PASSPHRASE
    project.ok("stack", "init", "production")
    preview = project.pulumi("preview", stack="production")
    output = preview.stdout + preview.stderr
    assert preview.returncode != 0
    assert REFUSAL.format(file="stacks/Pulumi.production.yaml") in output.replace("\n    ", " "), output
    assert "Traceback" not in output
