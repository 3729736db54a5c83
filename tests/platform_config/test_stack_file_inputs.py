"""Stack files the Pulumi CLI would read differently, or that give a secret away, are refused clearly.

The file is read with YAML 1.2 rules (as the CLI's gopkg.in/yaml.v3 reads it), aliases are
budgeted, `secure:` values and URLs are checked, and no error repeats a long value or a secret.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from platform_config import yaml12
from platform_config.errors import ConfigError, ConfigIssue
from platform_config.loader import load_stack_file, parse_config
from platform_config.paths import PROJECT_ROOT
from platform_config.plaintext_secrets import SECRET_PLACEHOLDER
from platform_config.stack_document import pulumi_config_from_stack_file
from stackctl.main import main
from triton_platform.args import url_credentials
from triton_platform.args.excerpts import excerpt

DEV = (PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
SCALING = "triton-platform:scaling"
USE_A_SECRET = (
    "plain config is stored and deployed in clear; store the value as a Pulumi secret "
    "(pulumi config set --secret --path '{path}' <value>) or use the field's secret reference "
    "(an existing Secret's key) where it has one"
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text)
    return path


def dev_with(old: str, new: str) -> str:
    assert old in DEV, old
    return DEV.replace(old, new, 1)


def issues_of(path: Path) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    return caught.value.issues


def file_issues(path: Path) -> list[ConfigIssue]:
    """Issues found while reading the file itself, before any schema check."""
    with pytest.raises(ConfigError) as caught:
        pulumi_config_from_stack_file(path)
    return caught.value.issues


def config_issues(flat: dict[str, str], secret_keys: set[str] | None = None) -> list[ConfigIssue]:
    """The issues parse_config reports for engine-style flat config (none when it is valid)."""
    try:
        parse_config(flat, "x", secret_keys=secret_keys or set())
    except ConfigError as err:
        return err.issues
    return []


# --- aliases --------------------------------------------------------------------------


def laughs(levels: int, fanout: int) -> str:
    """The 'billion laughs': each anchor lists the previous one `fanout` times."""
    lines = ["config:", f"  other:lol0: &a0 [{', '.join(['lol'] * fanout)}]"]
    lines += [f"  other:lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fanout)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_is_refused_before_anything_expands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 9 levels of 9: 387 million scalars, which walking the document would never finish.
    path = write(tmp_path, laughs(9, 9))
    message = (
        "YAML aliases would expand to 490,329,036 nodes, more than the 10,000 a stack file may produce "
        "through aliases (anchor &a8, line 10, is 435,848,050 nodes by itself); "
        "write the repeated values out or use fewer aliases"
    )
    assert file_issues(path) == [ConfigIssue("(file)", message)]
    # A file the reader refuses holds no findings: an input error.
    assert main(["validate", "--config", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"{path}: 1 config error", f"{path}: (file): {message}"]


def test_aliases_within_the_budget_read_as_their_values(tmp_path: Path) -> None:
    path = write(tmp_path, laughs(3, 9))  # 9 + 81 + 729 nodes through aliases
    flat, _ = pulumi_config_from_stack_file(path)
    assert json.loads(flat["other:lol2"]) == [[["lol"] * 9] * 9] * 9


def test_an_alias_is_read_as_its_anchors_value(tmp_path: Path) -> None:
    """One reason for two exceptions, as a stack file may write it (YAML 1.2 anchors and aliases)."""
    text = (
        "config:\n  triton-platform:policyExceptions:\n"
        "    - {policy: no-load-balancer, kind: Service, name: a, reason: &why The gateway's internal NLB.}\n"
        "    - {policy: no-load-balancer, kind: Service, name: b, reason: *why}\n"
    )
    flat, _ = pulumi_config_from_stack_file(write(tmp_path, text))
    first, second = json.loads(flat["triton-platform:policyExceptions"])
    assert first["reason"] == second["reason"] == "The gateway's internal NLB."


def test_an_anchor_that_holds_itself_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "config:\n  other:x: &loop {inner: *loop}\n")
    assert file_issues(path) == [
        ConfigIssue(
            "(file)",
            "anchor &loop (line 2) holds an alias to itself (*loop); a value cannot contain itself: write it out instead",
        )
    ]


def test_merge_keys_merge_and_own_keys_win() -> None:
    document = yaml12.load("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n")
    assert document["other"] == {"x": 1, "y": 3}


# --- YAML 1.2 scalars, as gopkg.in/yaml.v3 resolves them -------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # YAML 1.1 booleans are strings in 1.2.
        *((word, word) for word in ("yes", "Yes", "YES", "no", "No", "on", "On", "ON", "off", "OFF", "y", "Y", "n")),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("FALSE", False),
        ("tRUE", "tRUE"),
        ("~", None),
        ("null", None),
        ("Null", None),
        ("NULL", None),
        ("", None),
        ("nULL", "nULL"),
        ("42", 42),
        ("-7", -7),
        ("+7", 7),
        ("1_000", 1000),
        ("0x1F", 31),
        ("0o17", 15),  # 1.1 has no 0o: PyYAML made it a string
        ("017", 15),  # yaml.v3 still reads 1.1's octal
        ("0b1010", 10),
        ("-0b11", -3),
        ("1:30", "1:30"),  # no base-60 in 1.2: PyYAML made it 90
        ("1:30.5", "1:30.5"),
        ("1e3", 1000.0),  # PyYAML 1.1 needs a dot: it made this a string
        ("1.5", 1.5),
        (".5", 0.5),
        ("1.", 1.0),
        ("1e400", "1e400"),  # Go's ParseFloat reports ErrRange, so yaml.v3 keeps the string
        ("99999999999999999999", 1e20),  # past uint64: yaml.v3 falls back to a float
        ("=", "="),  # 1.1's value key; a string in 1.2
        ("0x", "0x"),
        ("1.2.3", "1.2.3"),
    ],
)
def test_plain_scalars_read_as_the_pulumi_cli_reads_them(text: str, value: Any) -> None:
    got = yaml12.load(f"v: {text}\n")["v"]
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize(("text", "sign"), [(".inf", 1), ("+.Inf", 1), ("-.INF", -1)])
def test_infinities(text: str, sign: int) -> None:
    assert yaml12.load(f"v: {text}\n")["v"] == sign * math.inf


def test_quoted_and_tagged_scalars(tmp_path: Path) -> None:
    assert yaml12.load("a: 'true'\nb: !!str 1:30\nc: !!float 5\nd: !!int 0o17\n") == {
        "a": "true",
        "b": "1:30",
        "c": 5.0,
        "d": 15,
    }
    text = dev_with("enabled: true", "enabled: !!bool yes")
    # The line the edit landed on, counted here from the text itself (the stack file's layout may move).
    line = text[: text.index("enabled: !!bool yes")].count("\n") + 1
    path = write(tmp_path, text)
    assert file_issues(path) == [
        ConfigIssue(
            "(yaml)",
            "not valid YAML: cannot read 'yes' as !!bool: YAML 1.2, as the Pulumi CLI reads it, makes it !!str",
            line,
            14,
        )
    ]


def test_the_flat_config_holds_what_the_cli_would_pass(tmp_path: Path) -> None:
    path = write(tmp_path, "config:\n  other:flag: on\n  other:list: [yes, no, 0o17, 1:30, True]\n")
    flat, _ = pulumi_config_from_stack_file(path)
    assert flat == {"other:flag": "on", "other:list": '["yes", "no", 15, "1:30", true]'}


@pytest.mark.parametrize("word", ["yes", "No", "ON", "off", "y"])
def test_a_bool_field_given_a_yaml_1_1_word_says_how_the_cli_reads_it(tmp_path: Path, word: str) -> None:
    path = write(tmp_path, dev_with("enabled: true", f"enabled: {word}"))
    assert ConfigIssue(
        f"{SCALING}.enabled",
        f"the Pulumi CLI reads {word} as the string {word!r}, not a boolean (YAML 1.2); write true or false",
    ) in issues_of(path)


def test_a_number_field_given_base_60_says_what_to_write(tmp_path: Path) -> None:
    path = write(tmp_path, dev_with("pollingIntervalSeconds: 30", "pollingIntervalSeconds: 1:30"))
    assert ConfigIssue(
        f"{SCALING}.pollingIntervalSeconds",
        "the Pulumi CLI reads 1:30 as the string '1:30': YAML 1.2 has no base-60 numbers; write 90",
    ) in issues_of(path)


def test_an_unquoted_date_is_refused_with_its_path(tmp_path: Path) -> None:
    path = write(tmp_path, "config:\n  other:when: [2024-01-31]\n")
    assert file_issues(path) == [
        ConfigIssue(
            "other:when[0]",
            "unquoted date or time '2024-01-31'; quote it: the Pulumi CLI reads it as a string, "
            "other YAML readers as a date",
        )
    ]


# --- secrets ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cipher", "shown"),
    [
        ("5", "a number"),
        ("''", "an empty string"),
        ("[a, b]", "a list"),
        ("{a: 1}", "a mapping"),
        ("", "nothing (null)"),
    ],
)
def test_a_secure_value_must_be_a_ciphertext_string(tmp_path: Path, cipher: str, shown: str) -> None:
    path = write(
        tmp_path, dev_with("    namespace: triton-dev", f"    namespace: triton-dev\n    context: {{secure: {cipher}}}")
    )
    path_text = "triton-platform:kubernetes.context"
    assert file_issues(path) == [
        ConfigIssue(
            path_text,
            "`secure:` must hold the ciphertext string that `pulumi config set --secret` writes; "
            f"got {shown}; set the secret again: pulumi config set --secret --path '{path_text}' <value>",
        )
    ]


def test_every_bad_secure_value_is_named_in_one_run(tmp_path: Path) -> None:
    path = write(tmp_path, "config:\n  other:a: {secure: 1}\n  other:b: [{secure: ''}]\n")
    assert [i.path for i in file_issues(path)] == ["other:a", "other:b[0]"]
    assert file_issues(path)[0].message.endswith("pulumi config set --secret other:a <value>")


def test_pulumis_secret_mask_written_as_a_plain_value_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, dev_with("    namespace: triton-dev", "    namespace: '[secret]'"))
    where = "triton-platform:kubernetes.namespace"
    assert file_issues(path) == [
        ConfigIssue(
            where,
            "the text '[secret]' is what Pulumi prints in place of a secret, not a value; "
            f"set the real value as a secret: pulumi config set --secret --path '{where}' <value>",
        )
    ]


def test_the_mask_as_a_receiver_credential_gets_no_free_pass_from_the_engine() -> None:
    flat, _ = pulumi_config_from_stack_file(PROJECT_ROOT / "stacks" / "Pulumi.staging.yaml")
    monitoring = json.loads(flat["triton-platform:monitoring"])
    monitoring["receivers"]["staging-chat"]["slack"]["webhookUrl"] = {"value": SECRET_PLACEHOLDER}
    flat["triton-platform:monitoring"] = json.dumps(monitoring)
    where = "triton-platform:monitoring.receivers.staging-chat.slack.webhookUrl.value"
    assert [i for i in config_issues(flat) if i.path == where] == [
        ConfigIssue(
            where,
            "the text '[secret]' is what Pulumi prints in place of a secret, not a value; "
            f"set the real value as a secret: pulumi config set --secret --path '{where}' <value>",
        )
    ]
    # The engine marked the key secret: its values are decrypted secrets, nothing to refuse.
    secret = config_issues(flat, secret_keys={"triton-platform:monitoring"})
    assert [i for i in secret if i.path.startswith("triton-platform:monitoring")] == []


@pytest.mark.parametrize(
    ("url", "masked", "kinds"),
    [
        ("http://admin:hunter2@prometheus:9090", "http://admin:***@prometheus:9090", "a password"),
        (
            "https://ghp_0123456789abcdefghijklmnopqrstuvwxyz@github.com/o/r",
            "https://***@github.com/o/r",
            "a token as the user name",
        ),
        (
            "https://prom.example/api?token=hunter2&step=1",
            "https://prom.example/api?token=***&step=1",
            "parameter 'token'",
        ),
        ("https://prom.example/?password=hunter2", "https://prom.example/?password=***", "parameter 'password'"),
        ("https://s3.example/?access_key=hunter2", "https://s3.example/?access_key=***", "parameter 'access_key'"),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=hunter2",
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=***",
            "parameter 'X-Amz-Signature'",
        ),
        (
            "s3://https://minio:hunter2@minio.local:9000/bucket/p",
            "s3://https://minio:***@minio.local:9000/bucket/p",
            "a password",
        ),
    ],
)
def test_credentials_in_a_url_are_refused_without_repeating_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, masked: str, kinds: str
) -> None:
    where = f"{SCALING}.prometheusAddress"
    path = write(tmp_path, dev_with("enabled: true", f"enabled: true\n    prometheusAddress: '{url}'"))
    issues = [i for i in issues_of(path) if i.path == where]
    assert issues[0] == ConfigIssue(where, f"URL {excerpt(masked)} holds {kinds}: " + USE_A_SECRET.format(path=where))
    assert main(["validate", "--config", str(path)]) == 1
    out = capsys.readouterr()
    assert "hunter2" not in out.err + out.out
    assert "0123456789abcdef" not in out.err + out.out


def test_urls_anywhere_in_the_config_are_checked(tmp_path: Path) -> None:
    text = dev_with(
        "  triton-platform:models:",
        "  other:hooks:\n    - {name: a, to: 'see https://u:hunter2@h/x and https://h/?token=abc'}\n"
        "  triton-platform:models:",
    )
    where = "other:hooks[0].to"
    issues = [i for i in issues_of(write(tmp_path, text)) if i.path == where]
    assert issues == [
        ConfigIssue(where, f"URL 'https://h/?token=***' holds parameter 'token': {USE_A_SECRET.format(path=where)}"),
        ConfigIssue(where, f"URL 'https://u:***@h/x' holds a password: {USE_A_SECRET.format(path=where)}"),
    ]


@pytest.mark.parametrize(
    "url",
    [
        "https://prometheus-community.github.io/helm-charts",
        "http://prometheus-operated.monitoring.svc:9090",
        "s3://https://minio.local:9000/bucket/prefix",
        "https://user@example.com/",  # a plain user name is no secret
        "https://h/?page=2&q=token",
        "https://h/#section",
    ],
)
def test_urls_without_credentials_pass(url: str) -> None:
    assert url_credentials.find(url) == []
    assert url_credentials.redact(url) == url


def test_an_error_that_echoes_a_url_never_shows_its_password(tmp_path: Path) -> None:
    # The schema's pattern error echoes the value; the report masks it all the same.
    where = f"{SCALING}.prometheusAddress"
    text = dev_with("enabled: true", "enabled: true\n    prometheusAddress: ftp://admin:hunter2@prometheus:9090")
    issues = [i for i in issues_of(write(tmp_path, text)) if i.path == where]
    assert len(issues) == 2
    assert all("hunter2" not in i.message and "'ftp://admin:***@prometheus:9090'" in i.message for i in issues)


# --- echoed values are bounded -------------------------------------------------------------


def test_a_long_value_is_shown_as_a_short_excerpt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    huge = "x" * 100_000  # within the stack file's bound (loader.STACK_FILE), far beyond an excerpt
    path = write(tmp_path, dev_with("triton-platform:environment: dev", f"triton-platform:environment: {huge}"))
    assert issues_of(path) == [
        ConfigIssue(
            "triton-platform:environment",
            f"Input should be 'dev', 'staging' or 'production'; got '{'x' * 79}…",
        )
    ]
    assert main(["validate", "--config", str(path)]) == 1
    assert len(capsys.readouterr().err) < 1000


def test_a_long_key_is_cut_in_the_path_and_the_message(tmp_path: Path) -> None:
    key = "k" * 1000  # YAML caps an implicit key at 1024 characters
    [issue] = issues_of(write(tmp_path, dev_with("    gpusPerNode: 1", f"    gpusPerNode: 1\n    {key}: 1")))
    assert issue.path == f'triton-platform:gpuPool["{"k" * 80}…"]'
    assert issue.message.startswith(f"unknown key '{'k' * 79}…; allowed keys: ")
    assert len(issue.message) < 1000


def test_excerpt_and_the_message_backstop() -> None:
    assert excerpt("short") == "'short'"
    assert excerpt([1] * 100) == repr([1] * 100)[:80] + "…"
    assert excerpt("https://u:hunter2@h") == "'https://u:***@h'"
    # Messages built without `excerpt` are bounded and masked all the same.
    issue = ConfigIssue("p", "got " + "y" * 1_000_000 + " and http://u:hunter2@h")
    assert len(issue.message) < 2100
    assert issue.message.endswith("… (1,000,023 characters in all)")
    assert "hunter2" not in ConfigIssue("p", "got http://u:hunter2@h").message


@pytest.mark.parametrize(
    ("depth", "issue"),
    [
        (60, ConfigIssue("other:x" + "[0]" * 51, "nested more than 50 levels deep")),
        (5000, ConfigIssue("(file)", "nested too deeply to read; config is never more than 50 levels deep")),
    ],
)
def test_deep_nesting_is_a_report_not_a_traceback(tmp_path: Path, depth: int, issue: ConfigIssue) -> None:
    path = write(tmp_path, "config:\n  other:x: " + "[" * depth + "]" * depth + "\n")
    assert file_issues(path) == [issue]
