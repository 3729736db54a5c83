"""offline/output_file.py: the single files the commands write (a profile, the stack file plan --apply and pin-images
edit) never go through a link, over a folder, or over a file of another kind without --force, and are replaced whole
or not at all. tests/stackctl/test_output_folders.py holds the `--out` folders to their own rule."""

from __future__ import annotations

import ast
import errno
import os
from pathlib import Path

import pytest

from offline.output_file import OutputFile, OutputFileError
from platform_config.paths import PROJECT_ROOT
from simulator.profiling import is_profile_of
from stackctl.main import main

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "profiles"
IMPORT = ["--import-perf-analyzer", str(FIXTURES / "perf_analyzer_b1.csv")]
STACK_TEXT = "config:\n  triton-platform:environment: dev\n"


def profile(capsys: pytest.CaptureFixture[str], output: Path, *extra: str, model: str = "m") -> tuple[int, str]:
    code = main(["profile", "--model", model, *IMPORT, "--output", str(output), *extra])
    return code, capsys.readouterr().err.strip()


def test_a_profile_goes_to_a_new_file_and_replaces_its_own_models(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "m.json"
    assert profile(capsys, out) == (0, "")
    assert is_profile_of(out.read_bytes(), "m")
    first = out.read_bytes()
    out.chmod(0o640)
    assert profile(capsys, out) == (0, "")
    assert is_profile_of(out.read_bytes(), "m")
    assert len(out.read_bytes()) == len(first)
    assert out.stat().st_mode & 0o777 == 0o640  # the replaced file keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary file left


def test_a_profile_never_replaces_a_stack_file_or_another_models_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(STACK_TEXT)
    code, err = profile(capsys, stack)
    assert (code, err) == (
        2,
        f"stackctl profile: '{stack}' holds something other than a latency profile of model 'm'; stackctl replaces only "
        "its own kind of output there: give another path, or --force to replace it",
    )
    assert stack.read_text() == STACK_TEXT
    other = tmp_path / "other.json"
    assert profile(capsys, other, model="ranker")[0] == 0
    before = other.read_bytes()
    code, err = profile(capsys, other)
    assert code == 2
    assert "holds something other than a latency profile of model 'm'" in err
    assert other.read_bytes() == before
    # Said outright, it is replaced.
    assert profile(capsys, stack, "--force") == (0, "")
    assert is_profile_of(stack.read_bytes(), "m")


def test_a_profile_never_goes_through_a_link_or_over_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(STACK_TEXT)
    link = tmp_path / "m.json"
    link.symlink_to(stack)
    for extra in ((), ("--force",)):
        code, err = profile(capsys, link, *extra)
        assert (code, err) == (
            2,
            f"stackctl profile: '{link}' is a symbolic link (to '{stack}'); stackctl writes no file through a link: "
            "give the path of the file itself",
        )
    assert stack.read_text() == STACK_TEXT
    assert link.is_symlink()
    folder = tmp_path / "folder.json"
    folder.mkdir()
    assert profile(capsys, folder, "--force") == (2, f"stackctl profile: '{folder}' is a folder; give a file's path")
    missing = tmp_path / "nowhere" / "m.json"
    assert profile(capsys, missing) == (
        2,
        f"stackctl profile: '{missing}': its folder '{missing.parent}' does not exist; create it first",
    )


def test_the_output_is_refused_before_anything_is_measured(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(STACK_TEXT)
    # Nothing listens on the port: a measurement would fail naming it; the output is refused first.
    code = main(["profile", "--model", "m", "--url", "http://127.0.0.1:9", "--output", str(stack)])
    assert code == 2
    assert "holds something other than a latency profile" in capsys.readouterr().err


def test_a_failed_write_leaves_the_old_file_and_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "Pulumi.dev.yaml"
    target.write_text(STACK_TEXT)

    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputFileError) as caught:
        OutputFile(target, "the stack file").write(b"config: {}\n")
    assert str(caught.value) == f"'{target}': not written, the disk is full; it is as it was"
    assert target.read_text() == STACK_TEXT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.dev.yaml"]


def test_an_edited_stack_file_is_never_written_through_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    real.write_text(STACK_TEXT)
    link = tmp_path / "Pulumi.dev.yaml"
    link.symlink_to(real)
    with pytest.raises(OutputFileError, match="is a symbolic link"):
        OutputFile(link, "the stack file").write(b"config: {}\n")
    assert real.read_text() == STACK_TEXT
    OutputFile(real, "the stack file").write(b"config: {}\n")
    assert real.read_text() == "config: {}\n"


@pytest.mark.parametrize("command", ["plan", "pin-images"])
def test_the_stack_editing_commands_refuse_a_linked_stack_file_first(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    real = tmp_path / "real.yaml"
    real.write_bytes((PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes())
    link = tmp_path / "Pulumi.dev.yaml"
    link.symlink_to(real)
    extra = ["--apply", "--out", str(tmp_path / "plan"), "--profile", "step", "--hours", "0.25", "--budget", "2"]
    extra = extra if command == "plan" else []
    code = main([command, "--config", str(link), *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"'{link}' is a symbolic link (to '{real}'); stackctl writes no file through a link" in err
    assert real.read_bytes() == (PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes()


WRITERS = {"write_text", "write_bytes"}
RULES = ("offline/out_folder.py", "offline/output_file.py")
"""The two rules' own writes: the --out folders' and the single files'."""
SCRATCH = {
    "offline/chart_template.py": "helm's values file, in the scratch folder the templater makes for each chart",
    "preview/workspace.py": "the passphrase salt, into the head's exported tree in preview-diff's scratch folder",
    "stackctl/run_inputs.py": "the base revision's stack file, in a temporary folder of its own",
}
"""Files the commands write into folders of their own making, never a user's: each with where, and why that is."""


def test_no_command_writes_a_file_around_the_two_rules() -> None:
    """Every write in stackctl/, preview/ and offline/ is one of the two rules' own (an --out folder's claim,
    OutputFile) or into a scratch folder of the command's own (SCRATCH, once each): a new write to a user's path
    fails here."""
    found: dict[str, int] = {}
    for path in sorted(
        p for folder in ("stackctl", "preview", "offline") for p in PROJECT_ROOT.glob(f"{folder}/**/*.py")
    ):
        relative = str(path.relative_to(PROJECT_ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in WRITERS and relative not in RULES:
                found[relative] = found.get(relative, 0) + 1
    assert found == dict.fromkeys(SCRATCH, 1)


def test_preview_diff_writes_only_into_a_folder_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from stackctl import preview_command  # noqa: PLC0415 - the script's module, loaded by this test alone

    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    out = tmp_path / "preview"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    assert preview_command.main(["--repo", str(PROJECT_ROOT), "--base", "HEAD", "--out", str(out), "dev"]) == 2
    assert capsys.readouterr().err == (
        f"stackctl preview-diff: {out} is not empty and was not written by stackctl preview-diff (unexpected: "
        "notes.md); use a new or empty folder, or one stackctl preview-diff wrote\n"
    )
    assert (out / "notes.md").read_text() == "mine"
