"""Stack files that take config from Pulumi ESC `environment:` imports: validated as far as the file goes."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackctl.main import main

HEAD = "environment:\n  - myorg/triton-production\n"
FILE_PART = (
    "config:\n  triton-platform:environment: production\n"
    "  triton-platform:kubernetes: {mode: deploy, namespace: triton, context: prod}\n"
)
DEFERRED = (
    "pulumi:disable-default-providers, triton-platform:cluster, triton-platform:gpuPool, triton-platform:serving, "
    "triton-platform:models, "
    "triton-platform:scaling, triton-platform:monitoring, triton-platform:imageDigests, "
    "triton-platform:policyExceptions"
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(text)
    return path


def test_validate_checks_the_file_and_names_what_it_deferred(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, HEAD + FILE_PART)
    assert main(["validate", "--config", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: OK: stack prod (production, deploy)",
        f"{path}: deferred to the Pulumi CLI: {DEFERRED} (not in the file; ESC environment(s) "
        "myorg/triton-production may supply them, and `pulumi preview --stack prod` validates them with the rest)",
    ]


def test_what_the_file_holds_is_still_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, HEAD + FILE_PART.replace("mode: deploy", "mode: render"))
    assert main(["validate", "--config", str(path)]) == 1
    assert (
        f"{path}:5:32: triton-platform:kubernetes.mode: 'render' is not allowed for a production stack: production must "
        "deploy to a cluster (set mode: deploy and context), never fall back to writing files"
    ) in capsys.readouterr().err.splitlines()


def test_an_import_list_of_the_definition_form_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "environment:\n  imports: [myorg/common, myorg/prod]\n")
    assert main(["validate", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}: OK: stack prod (environment from ESC, mode from ESC)" in out
    assert "ESC environment(s) myorg/common, myorg/prod may supply them" in out


def test_a_malformed_environment_key_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "environment: myorg\nconfig: {}\n")
    assert main(["validate", "--config", str(path)]) == 1
    assert capsys.readouterr().err.splitlines()[1] == (
        f"{path}:1:1: environment: expected a list of ESC environment names such as [myorg/triton-production]; got 'myorg'"
    )


def test_commands_that_need_the_whole_config_say_what_esc_may_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, HEAD + FILE_PART)
    # A stack synth cannot read whole is an input error (2), reported as the loader words it.
    assert main(["synth", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"{path}: 9 config errors"
    assert err[-1] == (
        f"{path}: triton-platform:serving: not in the stack file, so it may come from ESC environment(s) "
        "myorg/triton-production, which only the Pulumi CLI opens; this command reads the file alone: set the key "
        "in the file, or check the stack with `pulumi preview --stack prod`"
    )
    assert not (tmp_path / "out").exists()


def test_without_esc_a_missing_section_is_still_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, FILE_PART)
    assert main(["validate", "--config", str(path)]) == 1
    # Reported where the key is missing: the `config:` mapping, line 1.
    assert f"{path}:1:1: triton-platform:serving: required key is missing" in capsys.readouterr().err
