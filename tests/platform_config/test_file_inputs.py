"""Every file input is checked for what it is and its size before it is read, and model files are read in chunks.

The classes: a stack file, trace, latency profile, model file, config.pbtxt or passphrase file that is a FIFO, a
device, a directory, a symlink loop or larger than its kind's bound ends in one clear message naming the file, what
it is and what is allowed, without opening it (a FIFO would hang, /dev/zero never ends); hashing and copying a model
file takes memory that does not grow with its size. Commands run through tests.stackctl.test_cli_fuzz.run, whose alarm turns
a hang into a failure. Also here: an --out name the system refuses, output in an encoding that cannot show a path,
and the Pulumi program started without the engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from platform_config.latency_profile import PROFILE_FILE, PROFILE_KEYS
from platform_config.paths import PROJECT_ROOT, STACK_FILE
from platform_config.secrets_provider import PASSPHRASE_FILE, default_passphrase_problem
from simulator.scenario import TRACE_FILE, load_profile
from tests.stackctl.test_cli_fuzz import run
from triton_platform.args.input_files import CHUNK, InputFile, InputFileError, InputKind, size_text
from triton_platform.model_packaging.digest import MODEL_FILE
from triton_platform.model_packaging.layout import MANIFEST
from triton_platform.model_packaging.source import CONFIG_FILE, read_repository

DEV = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
GIB = 1024**3


def fifo(folder: Path) -> Path:
    path = folder / "fifo"
    os.mkfifo(path)
    return path


def loop(folder: Path) -> Path:
    (folder / "loop-a").symlink_to(folder / "loop-b")
    (folder / "loop-b").symlink_to(folder / "loop-a")
    return folder / "loop-a"


def dangling(folder: Path) -> Path:
    (folder / "gone").symlink_to(folder / "missing")
    return folder / "gone"


def sparse(folder: Path, size: int, name: str = "huge") -> Path:
    """A file of `size` bytes that takes no disk: what `truncate -s` makes."""
    path = folder / name
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


# Each kind of non-file, made in a test's folder, and how a message names it.
NOT_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "fifo": (fifo, "a FIFO (named pipe)"),
    "device": (lambda _folder: Path("/dev/zero"), "a character device"),
    "directory": (lambda folder: folder, "a directory"),
    "symlink loop": (loop, "a symlink loop (its links never reach a file)"),
    "dangling symlink": (dangling, "a symlink to {folder}/missing, which does not exist"),
    "huge": (lambda folder: sparse(folder, 12 * GIB + 300 * 1024**2), "12.3 GiB"),
}


def made(kind: str, folder: Path) -> tuple[Path, str]:
    make, what = NOT_FILES[kind]
    return make(folder), what.format(folder=folder)


@pytest.mark.parametrize("kind", sorted(NOT_FILES))
def test_a_stack_file_that_is_no_regular_file_within_its_bound_is_named(tmp_path: Path, kind: str) -> None:
    path, what = made(kind, tmp_path)
    result = run(["validate", "--config", str(path)])
    assert result.code == 2
    assert result.output == (
        f"{path}: 1 config error\n{path}: (file): {what}; a stack file is a regular file of at most 256 KiB\n"
    )


def test_a_stack_file_just_over_its_bound_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    # Valid YAML all through: only the bound stops it (a 50 MB file once took 94 s to parse).
    path = tmp_path / "Pulumi.dev.yaml"
    text = DEV.read_text(encoding="utf-8")
    path.write_text(text + "#" * (STACK_FILE.limit - len(text.encode()) + 1) + "\n", encoding="utf-8")
    result = run(["validate", "--config", str(path)])
    assert result.output.splitlines()[1] == f"{path}: (file): 256.0 KiB; {STACK_FILE.allowed}"


@pytest.mark.parametrize("kind", sorted(NOT_FILES))
def test_a_trace_that_is_no_regular_file_within_its_bound_is_named(tmp_path: Path, kind: str) -> None:
    path, what = made(kind, tmp_path)
    result = run(["simulate", "--stack", "dev", "--trace", str(path), "--no-plot", "--out", str(tmp_path / "o")])
    assert result.code == 2
    assert result.output == f"stackctl simulate: {path}: {what}; a trace is a regular file of at most 16 MiB\n"


@pytest.mark.parametrize("kind", sorted(NOT_FILES))
def test_a_latency_profile_that_is_no_regular_file_within_its_bound_is_named(tmp_path: Path, kind: str) -> None:
    path, what = made(kind, tmp_path)
    expected = f"{path}: {what}; a latency profile is a regular file of at most 1 MiB; {PROFILE_KEYS}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        load_profile(path)


@pytest.mark.parametrize("kind", sorted(NOT_FILES))
def test_a_passphrase_file_that_is_no_regular_file_within_its_bound_stops_a_deploy(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "inputs"
    folder.mkdir()
    path, what = made(kind, folder)
    stack = tmp_path / "Pulumi.production.yaml"
    stack.write_text("encryptionsalt: v1:abc=\nconfig: {}\n", encoding="utf-8")
    problem = default_passphrase_problem("production", stack, {"PULUMI_CONFIG_PASSPHRASE_FILE": str(path)})
    assert problem == (
        f"PULUMI_CONFIG_PASSPHRASE_FILE {path}: {what}; a passphrase file is a regular file of at most 64 KiB; the "
        "deploy guard reads it to refuse the local-only default passphrase: give a regular file, or set "
        "PULUMI_CONFIG_PASSPHRASE"
    )


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "model_repo"
    shutil.copytree(PROJECT_ROOT / "model_repo", copy)
    return copy


@pytest.mark.parametrize("kind", ["fifo", "dangling symlink"])
def test_a_model_file_that_is_no_regular_file_is_named_by_model_repo(
    repo_copy: Path, tmp_path: Path, kind: str
) -> None:
    path, what = made(kind, repo_copy / "ranker" / "2")
    out = tmp_path / "out"
    result = run(["model-repo", "--stack", "staging", "--model-repo", str(repo_copy), "--out", str(out)])
    assert result.code == 2
    assert result.output == f"stackctl model-repo: {path}: {what}; a model file is a regular file of at most 2 TiB\n"
    assert not out.exists()  # refused before anything is written


def test_a_link_out_to_a_device_or_a_link_loop_is_refused_with_the_repository(repo_copy: Path, tmp_path: Path) -> None:
    # Links are the repository's to refuse (tests/components/triton_platform/model_packaging/test_triton_load_checks.py), before any file is read.
    folder = repo_copy / "ranker" / "2"
    (folder / "weights.bin").symlink_to("/dev/zero")
    made("symlink loop", folder)
    out = tmp_path / "out"
    result = run(["model-repo", "--stack", "staging", "--model-repo", str(repo_copy), "--out", str(out)])
    assert result.code == 2
    stack = "stacks/Pulumi.staging.yaml"
    assert result.output.splitlines() == [
        f"{stack}: 3 config errors",
        f"{stack}: {folder}: 'loop-a' is a loop of symbolic links",
        f"{stack}: {folder}: 'loop-b' is a loop of symbolic links",
        f"{stack}: {folder}: 'weights.bin' is a symbolic link to /dev/zero, outside the model repository {repo_copy}; "
        "Triton and the bundled or published copies would read it from there. Put the file itself in the "
        "repository (a link to a path inside it is allowed)",
    ]
    assert not out.exists()


def test_a_config_pbtxt_over_its_bound_is_a_repository_problem(repo_copy: Path) -> None:
    config = repo_copy / "ranker" / "config.pbtxt"
    with config.open("ab") as handle:
        handle.truncate(CONFIG_FILE.limit + 1)
    [problem] = read_repository(repo_copy).problems["ranker"]
    assert (problem.file, problem.message) == (config, f"1.0 MiB; {CONFIG_FILE.allowed}")


def test_bounds_say_what_is_allowed() -> None:
    assert [k.allowed for k in (STACK_FILE, TRACE_FILE, PROFILE_FILE, PASSPHRASE_FILE, MODEL_FILE, CONFIG_FILE)] == [
        "a stack file is a regular file of at most 256 KiB",
        "a trace is a regular file of at most 16 MiB",
        "a latency profile is a regular file of at most 1 MiB",
        "a passphrase file is a regular file of at most 64 KiB",
        "a model file is a regular file of at most 2 TiB",
        "a config.pbtxt is a regular file of at most 1 MiB",
    ]
    assert [size_text(n) for n in (0, 1023, 1024, 1536, 12 * GIB + 300 * 1024**2, 2 * 1024**4)] == [
        "0 bytes",
        "1023 bytes",
        "1 KiB",
        "1.5 KiB",
        "12.3 GiB",
        "2 TiB",
    ]


def test_a_path_swapped_for_a_fifo_after_its_check_is_refused_on_the_open_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the path were a file when checked and a FIFO when opened: the open does not wait for a writer, and the
    # open file is checked again.
    path = fifo(tmp_path)
    monkeypatch.setattr(InputFile, "check", lambda self: os.stat_result((0o100644, 0, 0, 1, 0, 0, 0, 0, 0, 0)))
    with pytest.raises(InputFileError) as raised:
        InputFile(path, STACK_FILE).read_bytes()
    assert str(raised.value) == f"{path}: a FIFO (named pipe); {STACK_FILE.allowed}"


def test_a_file_is_never_read_past_its_bound() -> None:
    # /proc files report size 0 and hold more: as a file growing while it is read.
    kind = InputKind("status file", 16)
    expected = f"/proc/self/status: more than 16 bytes (it grew while it was read); {kind.allowed}"
    for read in (InputFile.read_bytes, InputFile.sha256):
        with pytest.raises(InputFileError) as raised:
            read(InputFile(Path("/proc/self/status"), kind))
        assert str(raised.value) == expected


# --- model files are hashed and copied in chunks --------------------------------------------------------------

BOUNDED = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path

    from model_publishing.publish import write_model_repository
    from platform_config.loader import load_stack
    from triton_platform.model_packaging.digest import repository_digest
    from triton_platform.model_packaging.source import read_repository

    repo, big, out = (Path(arg) for arg in sys.argv[1:])
    rendered = load_stack("staging", read_repository(repo)).rendered
    status = Path("/proc/self/status").read_text()
    size_kib = int(next(line for line in status.splitlines() if line.startswith("VmSize:")).split()[1])
    # From here on the process may map 128 MiB more than it has: far less than the model file.
    limit = (size_kib * 1024) + 128 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        big.read_bytes()
        print("whole read fits")
    except MemoryError:
        print("whole read refused")
    print(repository_digest(rendered))
    write_model_repository(rendered, out)
    print("written")
    """
)


def test_model_files_are_hashed_and_copied_in_memory_that_does_not_grow_with_their_size(
    repo_copy: Path, tmp_path: Path
) -> None:
    """A model file larger than the memory the process may take still hashes and copies: it is read in chunks.

    The same process shows the bound bites: reading the file whole fails under it. The digest and the copy are
    held against references computed here, independently, a chunk at a time."""
    size = 512 * 1024**2
    big = sparse(repo_copy / "ranker" / "2", size, "weights.bin")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": f"{PROJECT_ROOT / 'components'}{os.pathsep}{PROJECT_ROOT}"}
    child = subprocess.run(
        [sys.executable, "-c", BOUNDED, str(repo_copy), str(big), str(out)],
        capture_output=True,
        text=True,
        check=False,
        cwd=PROJECT_ROOT,
        env=env,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    refused, digest, written = child.stdout.splitlines()
    assert refused == "whole read refused"
    assert written == "written"
    zeros, reference = bytes(CHUNK), hashlib.sha256()
    for _ in range(size // CHUNK):
        reference.update(zeros)
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["digest"] == digest
    assert manifest["files"]["ranker/2/weights.bin"] == reference.hexdigest()
    copied = hashlib.sha256()
    with (out / "ranker" / "2" / "weights.bin").open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            copied.update(block)
    assert copied.hexdigest() == reference.hexdigest()


# --- the rest -----------------------------------------------------------------------------------------------


def test_a_symlink_loop_as_config_is_a_user_error_not_a_bug(tmp_path: Path) -> None:
    path = loop(tmp_path)
    result = run(["synth", "--config", str(path), "--out", str(tmp_path / "out")])
    assert result.code == 2
    assert "bug" not in result.output
    assert result.output.splitlines()[1] == f"{path}: (file): a symlink loop (its links never reach a file); " + (
        STACK_FILE.allowed
    )


def test_an_out_name_the_system_refuses_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / ("a" * 300)
    result = run(["rules", "--stack", "dev", "--out", str(out)])
    assert result.code == 2
    assert result.output == (
        f"stackctl rules: --out {out} cannot be used (File name too long); a name in a path is at most 255 bytes "
        "and a whole path 4096 (Linux's NAME_MAX and PATH_MAX); use a new or empty folder, or one stackctl rules "
        "wrote\n"
    )


def test_a_path_the_terminal_cannot_encode_is_escaped_not_fatal(tmp_path: Path) -> None:
    folder = tmp_path / "caf\u00e9"
    folder.mkdir()
    shutil.copy(DEV, folder / DEV.name)
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(PROJECT_ROOT / "components")}
    child = subprocess.run(
        [sys.executable, "-m", "stackctl", "validate", "--config", str(folder / DEV.name)],
        capture_output=True,
        text=True,
        check=False,
        cwd=PROJECT_ROOT,
        env=env,
        timeout=300,
    )
    assert (child.returncode, child.stderr) == (0, "")
    assert child.stdout.startswith(f"{tmp_path}/caf\\xe9/{DEV.name}: OK: stack dev (dev, render)")


def test_the_program_without_the_engine_says_how_it_is_run() -> None:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "components")}
    child = subprocess.run(
        [sys.executable, "__main__.py"],
        capture_output=True,
        text=True,
        check=False,
        cwd=PROJECT_ROOT,
        env=env,
        timeout=300,
    )
    assert (child.returncode, child.stdout) == (1, "")
    assert child.stderr == (
        "__main__.py is the Pulumi program of project 'triton-platform': it runs under the Pulumi engine, which hands "
        "it the stack's config (`pulumi preview --stack <stack>`, `pulumi up --stack <stack>`, or `make up`); started "
        "on its own (as project 'project') it has no stack to read. To check a stack without the engine: "
        "python -m stackctl validate --stack <stack>\n"
    )
    assert "Pulumi.stack.yaml" not in child.stderr
