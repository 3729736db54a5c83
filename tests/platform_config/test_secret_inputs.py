"""Secrets in config: never printed by an error, never taken in clear, never guarded by a passphrase that protects nothing.

Each class has its failing case with the exact message, and each message is checked to hold no part
of the secret: the schema's secret fields (a receiver credential's `value`), keys named for a secret
in chart values, `secure:` text that is no ciphertext, and the passphrase the Pulumi CLI reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from platform_config.errors import ConfigError
from platform_config.loader import load_stack_file, parse_config
from platform_config.monitoring import MonitoringConfig
from platform_config.paths import PROJECT_ROOT
from platform_config.secrets_provider import LOCAL_PASSPHRASE, default_passphrase_problem, passphrase
from platform_config.stack_document import pulumi_config_from_stack_file

STACKS = PROJECT_ROOT / "stacks"
STAGING = "stacks/Pulumi.staging.yaml"
MONITORING = "triton-platform:monitoring"
SLACK = f"{MONITORING}.receivers.staging-chat.slack"
WEBHOOK = "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/SECRETwebhookPART"
SECRET_PARTS = ("SECRETwebhookPART", "hunter2", "s3cr3t-admin", "ghp_")
NOT_SHOWN = "(not shown: the value is secret-bearing)"


def report(flat: dict[str, str], source: str = STAGING) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(flat, source)
    text = caught.value.report()
    assert not [part for part in SECRET_PARTS if part in text], text
    return text


def staging_with_webhook(webhook_url: Any) -> dict[str, str]:
    """Staging's engine config with its Slack receiver's `webhookUrl` set to `webhook_url`."""
    flat, _ = pulumi_config_from_stack_file(STACKS / "Pulumi.staging.yaml")
    monitoring = json.loads(flat[MONITORING])
    monitoring["receivers"]["staging-chat"]["slack"]["webhookUrl"] = webhook_url
    flat[MONITORING] = json.dumps(monitoring)
    return flat


def one_error(path: str, message: str) -> str:
    return f"{STAGING}: 1 config error\n{STAGING}: {path}: {message}"


# --- errors never print a secret-bearing value, whatever the error ------------------------------


@pytest.mark.parametrize(
    ("webhook_url", "path", "message"),
    [
        # The issue's case: the credential as a list.
        ({"value": [WEBHOOK]}, "webhookUrl.value", f"Input should be a valid string; got a list {NOT_SHOWN}"),
        ({"value": {"url": WEBHOOK}}, "webhookUrl.value", f"Input should be a valid string; got a mapping {NOT_SHOWN}"),
        ({"value": 4242}, "webhookUrl.value", f"Input should be a valid string; got a number {NOT_SHOWN}"),
        # The credential given bare, where its mapping belongs: the error is the parent's, the input the secret.
        (WEBHOOK, "webhookUrl", f"expected a mapping with keys secret, value; got a string {NOT_SHOWN}"),
        ([WEBHOOK], "webhookUrl", f"expected a mapping with keys secret, value; got a list {NOT_SHOWN}"),
    ],
)
def test_a_credential_of_the_wrong_type_is_never_echoed(webhook_url: Any, path: str, message: str) -> None:
    assert report(staging_with_webhook(webhook_url)) == one_error(f"{SLACK}.{path}", message)


def test_a_section_holding_a_credential_is_never_echoed_when_it_has_the_wrong_shape() -> None:
    flat = staging_with_webhook({"value": WEBHOOK})
    flat[MONITORING] = json.dumps([json.loads(flat[MONITORING])])
    assert report(flat).endswith(
        f"{MONITORING}: expected a mapping with keys {_monitoring_keys()}; got a list {NOT_SHOWN}"
    )


def _monitoring_keys() -> str:
    return ", ".join(sorted(str(f.alias) for f in MonitoringConfig.model_fields.values()))


def test_a_credential_url_with_a_password_is_refused_without_its_path() -> None:
    """Masking user:password is not enough inside a credential: a Slack webhook's path is its secret."""
    with_password = WEBHOOK.replace("https://", "https://bot:hunter2@")
    path = f"{SLACK}.webhookUrl.value"
    assert report(staging_with_webhook({"value": with_password})) == one_error(
        path,
        f"URL {NOT_SHOWN} holds a password: plain config is stored and deployed in clear; store the value as a "
        f"Pulumi secret (pulumi config set --secret --path '{path}' <value>) or use the field's secret reference "
        "(an existing Secret's key) where it has one",
    )


def test_a_value_that_is_not_secret_bearing_is_still_shown() -> None:
    flat = staging_with_webhook({"secret": {"name": "alertmanager-slack", "key": "webhook-url"}})
    monitoring = json.loads(flat[MONITORING])
    monitoring["receivers"]["staging-chat"]["slack"]["channel"] = ["#ml"]
    flat[MONITORING] = json.dumps(monitoring)
    assert report(flat) == one_error(f"{SLACK}.channel", "Input should be a valid string; got ['#ml']")


# --- `secure:` holds a ciphertext of the shape Pulumi writes --------------------------------------

SYMMETRIC = "v1:<base64 nonce>:<base64 ciphertext>"
VALID_V1 = "v1:UfxlPt7ZpznUyuPE:H2gRqqVIuGcU12I3Lm2Cf3+1WLqmW68BiuZJzyGGx30mrjXJPwLGHw=="


def with_secure_context(tmp_path: Path, stack: str, cipher: str) -> Path:
    text = (STACKS / f"Pulumi.{stack}.yaml").read_text()
    old = {"dev": "    namespace: triton-dev\n", "staging": "    context: staging\n"}[stack]
    assert old in text
    new = f"    namespace: triton-{stack}\n" if stack == "dev" else ""
    text = text.replace(old, f"{new}    context: {{secure: {cipher}}}\n", 1)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(text)
    return path


def secure_report(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        pulumi_config_from_stack_file(path)
    return caught.value.report()


def secure_refusal(path: Path, shapes: str) -> str:
    key = "triton-platform:kubernetes.context"
    return (
        f"{path}: 1 config error\n{path}: {key}: `secure:` holds text that is not a ciphertext Pulumi writes "
        f"({shapes}); it is not shown; set the secret again: pulumi config set --secret --path '{key}' <value>"
    )


@pytest.mark.parametrize(
    "cipher",
    [
        "not-a-ciphertext!!",  # the issue's case
        "hunter2",  # the secret itself, written where its ciphertext belongs
        "v1:UfxlPt7ZpznUyuPE",  # two parts
        "v2:UfxlPt7ZpznUyuPE:H2gRqqVIuGcU12I3Lm2Cf3+1WLqmW68BiuZJzyGGx30mrjXJPwLGHw==",  # a version Pulumi lacks
        "v1:AAAA:H2gRqqVIuGcU12I3Lm2Cf3+1WLqmW68BiuZJzyGGx30mrjXJPwLGHw==",  # a 3-byte nonce, not 12
        "v1:UfxlPt7ZpznUyuPE:AAAA",  # shorter than AES-GCM's 16-byte tag
        "v1:UfxlPt7ZpznUyuPE:H2gRqqVIuGcU12I3Lm2Cf3+1WLqmW68BiuZJzyGGx30mrjXJPwLGHw",  # padding missing
        "SGVsbG8gd29ybGQ=",  # base64, which only Pulumi Cloud's provider writes: dev records a passphrase salt
    ],
)
def test_a_passphrase_stack_refuses_secure_text_that_is_no_ciphertext(tmp_path: Path, cipher: str) -> None:
    path = with_secure_context(tmp_path, "dev", cipher)
    text = secure_report(path)
    assert text == secure_refusal(path, f"{SYMMETRIC}, as the passphrase and cloud KMS providers write it")
    assert cipher not in text


def test_a_stack_file_without_a_provider_takes_either_shape_and_refuses_others(tmp_path: Path) -> None:
    """No salt and no provider: Pulumi Cloud's secrets (base64) or a stack not initialised yet."""
    for cipher in (VALID_V1, "SGVsbG8gd29ybGQ="):
        _, secret_keys = pulumi_config_from_stack_file(with_secure_context(tmp_path, "staging", cipher))
        assert secret_keys == ["triton-platform:kubernetes"]
    path = with_secure_context(tmp_path, "staging", "not-a-ciphertext!!")
    assert secure_report(path) == secure_refusal(
        path, f"{SYMMETRIC} (passphrase or cloud KMS provider), or base64 (Pulumi Cloud's provider)"
    )


def test_a_passphrase_stack_takes_the_ciphertext_pulumi_writes(tmp_path: Path) -> None:
    flat, secret_keys = pulumi_config_from_stack_file(with_secure_context(tmp_path, "dev", VALID_V1))
    assert secret_keys == ["triton-platform:kubernetes"]
    assert json.loads(flat["triton-platform:kubernetes"])["context"] == "[secret]"


# --- chart values never carry a secret in clear -----------------------------------------------

CHART_SECRET = (
    "a secret in chart values ({why}; not shown): chart values pass through as plain inputs, `secure:` or not, "
    "into whatever objects the chart renders them into; keep it in a Kubernetes Secret and give the chart that "
    "Secret's name (its `existingSecret`-style value; Grafana's admin password is generated into one already, "
    "`grafana.admin.existingSecret`)"
)


def dev_with_chart_values(tmp_path: Path, section: str, values: str) -> Path:
    """The dev stack file with `values` (YAML flow text) as the chart values of `section`."""
    text = (STACKS / "Pulumi.dev.yaml").read_text()
    header = {"monitoring": "  triton-platform:monitoring:\n", "scaling": "  triton-platform:scaling:\n"}[section]
    chart = "    chart:\n" if section == "monitoring" else "    keda:\n      chart:\n"
    indent = "      " if section == "monitoring" else "        "
    assert header in text
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text.replace(header, f"{header}{chart}{indent}values: {values}\n", 1))
    return path


def file_report(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    text = caught.value.report()
    assert not [part for part in SECRET_PARTS if part in text], text
    return text


@pytest.mark.parametrize(
    ("section", "values", "where", "why"),
    [
        # The issue's case.
        ("monitoring", "{grafana: {adminPassword: s3cr3t-admin}}", "grafana.adminPassword", "named like one"),
        ("monitoring", "{grafana: {adminPassword: {secure: " + VALID_V1 + "}}}", "grafana.adminPassword", "named like one"),
        ("monitoring", "{grafana: {'grafana.ini': {auth.generic_oauth: {client_secret: hunter2}}}}",
         'grafana["grafana.ini"]["auth.generic_oauth"].client_secret', "named like one"),
        ("scaling", "{webhooks: {apiKey: hunter2}}", "webhooks.apiKey", "named like one"),
        # A well-known token under a key that says nothing.
        ("scaling", "{extraArgs: [ghp_0123456789abcdefghijklmnopqrstuvwxyzAB]}", "extraArgs[0]", "shaped like a token"),
    ],
)  # fmt: skip
def test_a_secret_in_chart_values_is_refused_with_its_path(
    tmp_path: Path, section: str, values: str, where: str, why: str
) -> None:
    path = dev_with_chart_values(tmp_path, section, values)
    chart = "chart.values" if section == "monitoring" else "keda.chart.values"
    assert file_report(path) == (
        f"{path}: 1 config error\n{path}: triton-platform:{section}.{chart}.{where}: {CHART_SECRET.format(why=why)}"
    )


def test_the_engine_door_refuses_a_chart_secret_as_the_file_does() -> None:
    """From the engine a `secure:` value arrives decrypted, the key marked secret: still not for chart values."""
    flat, _ = pulumi_config_from_stack_file(STACKS / "Pulumi.dev.yaml")
    monitoring = json.loads(flat[MONITORING])
    monitoring["chart"] = {"values": {"grafana": {"adminPassword": "s3cr3t-admin"}}}
    flat[MONITORING] = json.dumps(monitoring)
    with pytest.raises(ConfigError) as caught:
        parse_config(flat, "stacks/Pulumi.dev.yaml", secret_keys={MONITORING})
    assert [(i.path, i.message) for i in caught.value.issues] == [
        (f"{MONITORING}.chart.values.grafana.adminPassword", CHART_SECRET.format(why="named like one"))
    ]
    assert "s3cr3t-admin" not in caught.value.report()


def test_chart_values_naming_where_a_secret_is_kept_pass(tmp_path: Path) -> None:
    values = (
        "{grafana: {adminPassword: '', admin: {existingSecret: grafana-admin, passwordKey: admin-password}, "
        "smtp: {existingSecret: smtp, passwordKey: password}}}"
    )
    assert load_stack_file(dev_with_chart_values(tmp_path, "monitoring", values)).config.monitoring.chart.values


# --- the deploy guard reads the passphrase as the Pulumi CLI does ---------------------------------

SALTED = "encryptionsalt: v1:abc=\nconfig: {}\n"
KEEP_SAFE = (
    "which protects nothing; set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) from your secret "
    "store before `pulumi stack init production`, or move the stack to a KMS: pulumi stack change-secrets-provider "
    "--stack production 'awskms://alias/<key>' (or gcpkms://, azurekeyvault://, hashivault://)"
)


def guard(tmp_path: Path, environ: dict[str, str]) -> str | None:
    stack_file = tmp_path / "Pulumi.production.yaml"
    stack_file.write_text(SALTED)
    return default_passphrase_problem("production", stack_file, environ)


def passphrase_file(tmp_path: Path, content: str) -> str:
    path = tmp_path / "passphrase"
    path.write_bytes(content.encode())
    return str(path)


def read(environ: dict[str, str]) -> str | None:
    """The passphrase text the guard reads, as the CLI would."""
    found = passphrase(environ)
    return None if found is None else found.text


def test_an_empty_passphrase_is_refused(tmp_path: Path) -> None:
    """GitHub Actions sets an unset secret to the empty string; the CLI then encrypts with ''."""
    assert guard(tmp_path, {"PULUMI_CONFIG_PASSPHRASE": ""}) == (
        f"{tmp_path}/Pulumi.production.yaml: stack production deploys to a cluster, but the passphrase of its "
        f"secrets is empty (from PULUMI_CONFIG_PASSPHRASE), {KEEP_SAFE}"
    )


def test_an_empty_variable_wins_over_a_passphrase_file_as_in_the_cli(tmp_path: Path) -> None:
    """readPassphrase: os.LookupEnv finds the variable set, so the file is never read."""
    environ = {"PULUMI_CONFIG_PASSPHRASE": "", "PULUMI_CONFIG_PASSPHRASE_FILE": passphrase_file(tmp_path, "good")}
    assert read(environ) == ""
    assert "is empty (from PULUMI_CONFIG_PASSPHRASE)" in (guard(tmp_path, environ) or "")


def test_a_passphrase_file_of_only_whitespace_is_refused(tmp_path: Path) -> None:
    file = passphrase_file(tmp_path, " \t\r\n\u3000\n")
    assert guard(tmp_path, {"PULUMI_CONFIG_PASSPHRASE_FILE": file}) == (
        f"{tmp_path}/Pulumi.production.yaml: stack production deploys to a cluster, but the passphrase of its "
        f"secrets is empty (from PULUMI_CONFIG_PASSPHRASE_FILE ({file}, surrounding whitespace trimmed as the CLI "
        f"does)), {KEEP_SAFE}"
    )


def test_a_blank_passphrase_variable_is_refused(tmp_path: Path) -> None:
    assert "is only whitespace (from PULUMI_CONFIG_PASSPHRASE)" in (
        guard(tmp_path, {"PULUMI_CONFIG_PASSPHRASE": "   "}) or ""
    )


@pytest.mark.parametrize(
    "content", [f"  {LOCAL_PASSPHRASE}  \n", f"\t{LOCAL_PASSPHRASE}\r\n", f"\u00a0{LOCAL_PASSPHRASE}"]
)
def test_the_default_passphrase_padded_in_a_file_is_refused(tmp_path: Path, content: str) -> None:
    problem = guard(tmp_path, {"PULUMI_CONFIG_PASSPHRASE_FILE": passphrase_file(tmp_path, content)})
    assert problem == (
        f"{tmp_path}/Pulumi.production.yaml: stack production deploys to a cluster, but its secrets are encrypted "
        f"with the local-only default passphrase '{LOCAL_PASSPHRASE}', {KEEP_SAFE}"
    )


def test_the_file_is_trimmed_as_go_trims_it(tmp_path: Path) -> None:
    """strings.TrimSpace trims Unicode White_Space (U+3000, U+0085 too) but not U+001C-U+001F, as str.strip() would."""
    assert read({"PULUMI_CONFIG_PASSPHRASE_FILE": passphrase_file(tmp_path, "\u3000\x85 a b \n")}) == "a b"
    kept = read({"PULUMI_CONFIG_PASSPHRASE_FILE": passphrase_file(tmp_path, f"\x1c{LOCAL_PASSPHRASE}\n")})
    assert kept == f"\x1c{LOCAL_PASSPHRASE}"
    # The variable is taken as it is: the CLI trims only the file.
    assert read({"PULUMI_CONFIG_PASSPHRASE": " x "}) == " x "
