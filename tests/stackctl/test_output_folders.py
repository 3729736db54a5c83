"""Every command that takes --out writes only into a new or empty folder, or one it wrote itself.

synth, model-repo, rules and simulate share offline/out_folder.py: a manifest of what a command wrote marks
the folder, a rerun removes exactly those files, and anything else there is refused and left byte for byte.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offline.out_folder import MANIFEST, OutputFolder, OutputFolderError, claim, manifest_name
from platform_config.paths import PROJECT_ROOT
from stackctl.main import main, parser
from tests.support.profile_warnings import without_profile_warnings
from triton_platform.model_packaging.layout import MANIFEST as MODEL_REPO_MANIFEST

COMMANDS = {
    "synth": ["synth", "--stack", "dev"],
    "model-repo": ["model-repo", "--stack", "dev"],
    "rules": ["rules", "--stack", "dev"],
    # Three simulated minutes of a load the replica floor holds (exit 0): the folder rules are what is tested.
    "simulate": ["simulate", "--stack", "dev", "--profile", "step", "--hours", "0.05", "--peak-rps", "20", "--no-plot"],
}
NOT_HERE = {"plan": "minutes a run; tests/planner/test_planner.py holds its folder to the same rules"}


def test_every_command_with_an_out_folder_is_held_to_its_rules() -> None:
    """Derived from the parser: a new command with --out fails here until it is covered."""
    subcommands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    with_out = {name for name, sub in subcommands.choices.items() if "--out" in sub._option_string_actions}
    assert sorted([*COMMANDS, *NOT_HERE]) == sorted(with_out)


A_FILE_OF_EACH = {
    "synth": "resources.json",
    "model-repo": "classifier/configs/dev.pbtxt",
    "rules": "dashboards/triton-general.json",
    "simulate": "summary.json",
}
USER_BYTES = b"mine \x00\xff not yours\n"


def allowed(command: str) -> str:
    return f"use a new or empty folder, or one stackctl {command} wrote"


def run(command: str, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([*COMMANDS[command], "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out, without_profile_warnings(captured.err)


def snapshot(root: Path) -> dict[str, object]:
    """Every entry below root, symlinks not followed: file bytes, link targets, folders."""
    entries: dict[str, object] = {}
    for folder, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(folder) / name
            relative = str(path.relative_to(root))
            if path.is_symlink():
                entries[relative] = ("symlink", os.readlink(path))
            elif path.is_dir():
                entries[relative] = "folder"
            else:
                entries[relative] = path.read_bytes()
    return entries


def listed_files(out: Path, command: str) -> list[str]:
    data = json.loads((out / manifest_name(command)).read_text())
    return sorted(data["files"])


def list_an_older_file(out: Path, command: str, relative: str) -> None:
    """Stand for a file an earlier run wrote and this run will not: created, and listed in the manifest."""
    (out / relative).parent.mkdir(parents=True, exist_ok=True)
    (out / relative).write_bytes(b"from an earlier run\n")
    path = out / manifest_name(command)
    data = json.loads(path.read_text())
    if isinstance(data["files"], dict):  # model-repo's manifest: path -> sha256
        data["files"][relative] = hashlib.sha256(b"from an earlier run\n").hexdigest()
    else:
        data["files"].append(relative)
    path.write_text(json.dumps(data))


@pytest.fixture
def written(request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A folder the command (the test's `command` parameter) has written once."""
    out = tmp_path / "out"
    code, _, err = run(request.node.callspec.params["command"], out, capsys)
    assert code == 0, err
    return out


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["new/nested", "empty"])
def test_a_new_or_empty_folder_gets_the_files_and_a_manifest_of_them(
    command: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / where
    if where == "empty":
        out.mkdir()
    code, _, err = run(command, out, capsys)
    assert (code, err) == (0, "")
    files = {k for k, v in snapshot(out).items() if isinstance(v, bytes)}
    assert A_FILE_OF_EACH[command] in files
    assert listed_files(out, command) == sorted(files - {manifest_name(command)})
    if command != "model-repo":
        assert json.loads((out / MANIFEST).read_text())["command"] == command


def test_model_repo_keeps_its_published_manifest_as_the_mark() -> None:
    """The repository publish-models uploads gains no file: its own manifest marks the folder."""
    assert manifest_name("model-repo") == MODEL_REPO_MANIFEST == ".stackctl-manifest.json"
    assert {manifest_name(c) for c in COMMANDS if c != "model-repo"} == {".stackctl-output.json"}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_rerun_replaces_only_its_own_files(written: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    first = snapshot(written)
    list_an_older_file(written, command, "gone/old.txt")
    code, _, err = run(command, written, capsys)
    assert (code, err) == (0, "")
    # The listed file and the folder it leaves empty are gone; everything else is as the first run wrote it.
    assert snapshot(written) == first


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("user_file", ["notes.txt", "deeper/notes.txt"])
def test_a_user_file_among_ours_is_refused_and_kept(
    written: Path, command: str, user_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (written / user_file).parent.mkdir(exist_ok=True)
    (written / user_file).write_bytes(USER_BYTES)
    before = snapshot(written)
    code, out, err = run(command, written, capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"stackctl {command}: {written} holds files stackctl {command} did not write (unexpected: {user_file}); "
        "move them out, or use a new or empty folder\n"
    )
    assert snapshot(written) == before


@pytest.mark.parametrize("command", ["rules"])
def test_a_users_dashboard_beside_the_generated_ones_is_kept(
    written: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (written / "dashboards" / "mine.json").write_bytes(USER_BYTES)
    before = snapshot(written)
    code, _, err = run(command, written, capsys)
    assert code == 2
    assert "(unexpected: dashboards/mine.json)" in err
    assert snapshot(written) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_a_users_folder_with_resources_json_is_untouched(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The old synth trap: a resources.json was taken for synth's mark, and every *.yaml beside it deleted."""
    (tmp_path / "resources.json").write_bytes(USER_BYTES)
    (tmp_path / "mine.yaml").write_bytes(USER_BYTES)
    (tmp_path / "empty").mkdir()
    before = snapshot(tmp_path)
    code, out, err = run(command, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"stackctl {command}: {tmp_path} is not empty and was not written by stackctl {command} "
        f"(unexpected: empty/, mine.yaml, resources.json); {allowed(command)}\n"
    )
    assert snapshot(tmp_path) == before


def test_only_the_first_few_unexpected_files_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for n in range(8):
        (tmp_path / f"f{n}.yaml").write_bytes(USER_BYTES)
    code, _, err = run("synth", tmp_path, capsys)
    assert code == 2
    assert err == (
        f"stackctl synth: {tmp_path} is not empty and was not written by stackctl synth "
        f"(unexpected: f0.yaml, f1.yaml, f2.yaml, f3.yaml, f4.yaml and 3 more); {allowed('synth')}\n"
    )


@pytest.mark.parametrize(
    ("command", "other"), [("synth", "rules"), ("model-repo", "rules"), ("rules", "model-repo"), ("simulate", "synth")]
)
def test_another_commands_folder_is_refused(
    command: str, other: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(other, tmp_path, capsys)[0] == 0
    before = snapshot(tmp_path)
    code, out, err = run(command, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"stackctl {command}: {tmp_path} was written by stackctl {other}, not stackctl {command}; {allowed(command)}\n"
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_an_out_that_is_a_file_or_inside_one_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "file"
    target.write_bytes(USER_BYTES)
    code, out, err = run(command, target, capsys)
    assert (code, out) == (2, "")
    assert err == f"stackctl {command}: --out {target} is a file; {allowed(command)}\n"
    code, out, err = run(command, target / "sub", capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"stackctl {command}: --out {target / 'sub'} is inside {target}, which is a file; {allowed(command)}\n"
    )
    assert target.read_bytes() == USER_BYTES
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unwritable_out_is_named(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unwritable folder is refused; the permission check answers "no" here, as it would for any user but root."""
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != locked and real_access(path, mode))
    code, out, err = run(command, locked, capsys)
    assert (code, out) == (2, "")
    assert err == f"stackctl {command}: --out {locked} is not writable; {allowed(command)}\n"
    code, out, err = run(command, locked / "new", capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"stackctl {command}: --out {locked / 'new'} cannot be created: {locked} is not writable; {allowed(command)}\n"
    )
    assert list(locked.iterdir()) == []


def test_a_refusal_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(USER_BYTES)
    run_ = subprocess.run(
        [sys.executable, "-m", "stackctl", *COMMANDS["simulate"], "--out", str(tmp_path)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (run_.returncode, run_.stdout) == (2, "")
    assert run_.stderr == (
        f"stackctl simulate: {tmp_path} is not empty and was not written by stackctl simulate "
        f"(unexpected: notes.txt); {allowed('simulate')}\n"
    )


# --- symlinks and folders where our files were ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["rules"])
def test_a_listed_file_now_a_symlink_is_refused_and_its_target_kept(
    written: Path, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "precious.yaml"
    outside.write_bytes(USER_BYTES)
    (written / "rules.yaml").unlink()
    (written / "rules.yaml").symlink_to(outside)
    before = snapshot(written)
    code, _, err = run(command, written, capsys)
    assert code == 2
    assert err == (
        f"stackctl rules: {written / 'rules.yaml'} is now a symlink, not the file stackctl rules wrote; "
        "remove it by hand, or use a new or empty folder\n"
    )
    assert outside.read_bytes() == USER_BYTES
    assert snapshot(written) == before


@pytest.mark.parametrize("command", ["rules"])
def test_a_listed_folder_now_a_symlink_out_of_the_folder_is_never_followed(
    written: Path, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "triton-general.json").write_bytes(USER_BYTES)
    for path in (written / "dashboards").iterdir():
        path.unlink()
    (written / "dashboards").rmdir()
    (written / "dashboards").symlink_to(elsewhere)
    code, _, err = run(command, written, capsys)
    assert code == 2
    assert err == (
        f"stackctl rules: {written / 'dashboards'} is now a symlink, not the folder stackctl rules wrote; "
        "remove it by hand, or use a new or empty folder\n"
    )
    assert snapshot(elsewhere) == {"triton-general.json": USER_BYTES}


@pytest.mark.parametrize("command", ["synth"])
def test_a_listed_file_now_a_folder_is_refused(written: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    (written / "resources.json").unlink()
    (written / "resources.json").mkdir()
    code, _, err = run(command, written, capsys)
    assert code == 2
    assert err == (
        f"stackctl synth: {written / 'resources.json'} is now a folder, not the file stackctl synth wrote; "
        "remove it by hand, or use a new or empty folder\n"
    )
    assert (written / "resources.json").is_dir()


@pytest.mark.parametrize(
    ("manifest", "reason"),
    [
        ("not json", "Expecting value: line 1 column 1 (char 0)"),
        ('{"command": "synth", "files": ["../outside.txt"]}', "'../outside.txt' is not a plain relative path"),
        ('{"command": "synth", "files": ["/etc/passwd"]}', "'/etc/passwd' is not a plain relative path"),
        ('{"command": "synth"}', 'no "command" and "files" list'),
    ],
)
def test_a_manifest_stackctl_did_not_write_is_refused(
    manifest: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text(manifest)
    (tmp_path / "outside.txt").write_bytes(USER_BYTES)
    code, _, err = run("synth", out, capsys)
    assert code == 2
    suffix = " inside the folder" if "plain" in reason else ""
    assert (
        err
        == f"stackctl synth: {out / MANIFEST} is not a manifest stackctl wrote ({reason}{suffix}); {allowed('synth')}\n"
    )
    assert (tmp_path / "outside.txt").read_bytes() == USER_BYTES
    assert (out / MANIFEST).read_text() == manifest


# --- the mechanism itself --------------------------------------------------------------------------------------


def test_a_run_cut_short_leaves_a_folder_the_next_run_clears(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest lists old and new files before any is written, so a crash leaves nothing unaccounted for."""
    out = tmp_path / "out"
    claim(out, "rules").replace({"a.txt": b"1", "sub/b.txt": b"2"})
    real_create = OutputFolder._create

    def full_disk(self: OutputFolder, relative: str, content: bytes) -> Path:
        if relative == "c.txt":
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path / relative))
        return real_create(self, relative, content)

    monkeypatch.setattr(OutputFolder, "_create", full_disk)
    with pytest.raises(OutputFolderError) as raised:
        claim(out, "rules").replace({"new.txt": b"3", "c.txt": b"4"})
    assert raised.value.report() == (
        f"stackctl rules: cannot write {out / 'c.txt'}: No space left on device; {allowed('rules')}"
    )
    assert listed_files(out, "rules") == ["a.txt", "c.txt", "new.txt", "sub/b.txt"]
    monkeypatch.undo()
    claim(out, "rules").replace({"d.txt": b"5"})
    assert snapshot(out) == {
        MANIFEST: json.dumps({"command": "rules", "files": ["d.txt"]}, indent=2).encode() + b"\n",
        "d.txt": b"5",
    }


def test_simulate_compare_md_is_listed_and_a_rerun_without_compare_removes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sim"
    assert main([*COMMANDS["simulate"], "--compare", "HEAD", "--out", str(out)]) == 0, capsys.readouterr().err
    assert listed_files(out, "simulate") == ["compare.md", "summary.json", "timeline.csv"]
    code, _, err = run("simulate", out, capsys)
    assert (code, err) == (0, "")
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "summary.json", "timeline.csv"]
