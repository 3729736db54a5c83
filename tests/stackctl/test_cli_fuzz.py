"""Every stackctl command under random and mutated input: an exit code and a bounded message, never a traceback.

Each example runs the real command line in-process (`stackctl.main.main`) with its output captured. The
properties, for any stack file, trace or option:
- it returns 0, 1 or 2 (argparse's usage error), and raises nothing;
- nothing it prints is a Python traceback, and all of it stays under OUTPUT_LIMIT characters;
- it never writes, deletes or changes a file outside its `--out` folder;
- it finishes: a run still going after HANG_SECONDS is a hang (SIGALRM turns it into a failure).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from platform_config.paths import PROJECT_ROOT
from stackctl.commands import COMMANDS as REGISTERED
from stackctl.main import main
from tests.conftest import STACKS, example_count, stack_values
from tests.platform_config.test_config_fuzz import mutated_configs

OUTPUT_LIMIT = 20_000
"""Characters a run may print in all: errors echo excerpts of bad values, never the values whole."""
HANG_SECONDS = 120
"""Far above any command's run on this input (the slowest, a production synth, takes about 2 s)."""


def fuzz(examples: int) -> settings:
    return settings(max_examples=example_count(examples), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A folder of the example's own (hypothesis runs many examples per test function)."""
    base = Path(tempfile.mkdtemp(prefix="stackctl-fuzz-"))
    try:
        yield base
    finally:
        shutil.rmtree(base)


@dataclass(frozen=True)
class Run:
    code: int
    output: str


class HangError(Exception):
    """A command still running after HANG_SECONDS."""


def _alarm(_signal: int, _frame: FrameType | None) -> None:
    raise HangError(f"no result after {HANG_SECONDS} s")


@pytest.fixture(autouse=True, scope="module")
def no_helm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """In-process runs start no real tool: a synth that reaches a chart reports that Helm is missing (exit 1)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_HELM", str(tmp_path_factory.mktemp("no-helm") / "helm"))
        yield


def run(argv: list[str]) -> Run:
    """`stackctl <argv>` in-process: its exit code and everything it printed."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse's usage errors
                code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return Run(code, out.getvalue() + err.getvalue())


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root`: (size, mtime in ns)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def assert_well_behaved(result: Run, argv: list[str]) -> None:
    assert result.code in (0, 1, 2), (argv, result)
    assert "Traceback (most recent call last)" not in result.output, (argv, result.output[-3000:])
    assert len(result.output) < OUTPUT_LIMIT, (argv, len(result.output), result.output[:500])


@contextlib.contextmanager
def project_unchanged() -> Iterator[None]:
    """The working tree as git sees it (tracked and untracked, ignored outputs aside) is the same afterwards."""

    def status() -> str:
        return subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    before = status()
    yield
    assert status() == before


COMMANDS = {
    "validate": [],
    "kube-context": [],
    "synth": ["--no-charts", "--out", "{out}"],
    "model-repo": ["--out", "{out}"],
    "rules": ["--out", "{out}"],
    "simulate": ["--profile", "step", "--hours", "0.02", "--no-plot", "--out", "{out}"],
    # --check lists what would be resolved: it asks no registry and writes nothing (below it always gets it).
    "pin-images": ["--check"],
}
"""Each command run to the end on mutated stack files, with the options that make it do so."""
NOT_ON_MUTATED_STACKS = {
    "publish-models": "an object store would be reached over the network; below it runs on dev's stack only",
    "plan": "minutes a run; tests/planner/test_planner.py and tests/simulator/test_simulator_inputs.py hold its inputs",
    "profile": "reads a running Triton or a profiler's export, the stack only for its config; tests/simulator/test_profile.py "
    "holds its inputs",
}


def test_every_registered_command_is_fuzzed_or_says_why_not() -> None:
    assert sorted([*COMMANDS, *NOT_ON_MUTATED_STACKS]) == sorted(command.name for command in REGISTERED)


def write_stack(folder: Path, values: dict[str, object], name: str) -> Path:
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": values}, sort_keys=False), encoding="utf-8")
    return path


# Committed stacks as they are too, so every command also runs to the end and writes its folder.
STACK_FILES = mutated_configs() | st.sampled_from(STACKS).map(lambda stack: (stack_values(stack), stack))


@fuzz(60)
@given(case=STACK_FILES, command=st.sampled_from(sorted(COMMANDS)))
def test_every_command_on_a_mutated_stack_file(case: tuple[dict[str, object], str], command: str) -> None:
    values, stack = case
    with scratch() as base:
        path = write_stack(base, values, stack)
        out = base / "out"
        argv = [command, "--config", str(path), *(a.format(out=out) for a in COMMANDS[command])]
        outside = snapshot(base)
        with project_unchanged():
            result = run(argv)
        assert_well_behaved(result, argv)
        assert {k: v for k, v in snapshot(base).items() if not k.startswith("out/")} == outside


TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
NUMBERS = st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e309", "3", "0.5", "1e12", "", "abc", "2:3", "x:1"])
OPTIONS = {
    "--stack": st.sampled_from(["dev", "staging", "production", "prod", "../dev", "", "a" * 300]) | TEXT,
    "--config": st.sampled_from(["/", "/dev/null", "stacks", "missing.yaml", "README.md"]) | TEXT,
    "--out": st.sampled_from(["README.md", "/dev/null", "/proc/x", "", "stacks/Pulumi.dev.yaml/x"]),
    "--trace": st.sampled_from(["/dev/null", "README.md", "missing.csv", "stacks"]) | TEXT,
    "--profile": st.sampled_from(["step", "diurnal", "nope", ""]),
    "--peak-rps": NUMBERS,
    "--hours": NUMBERS,
    "--seed": NUMBERS,
    "--deployment": st.sampled_from(["general", "ranker", "nope", ""]) | TEXT,
    "--model": st.sampled_from(["classifier", "nope", ""]) | TEXT,
    "--metrics-outage": NUMBERS,
    "--compare": st.sampled_from(["HEAD", "HEAD~1", "no-such-ref", "--help", ""]),
    "--model-repo": st.sampled_from(["model_repo", "stacks", "/", "missing"]) | TEXT,
    "--mirror": st.sampled_from(["docker.io=127.0.0.1:5000", "docker.io", "=x", "a=b=c", "q.io=http://x", ""]) | TEXT,
}
FLAGS = ["--dry-run", "--no-plot", "--help"]


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    # Any registered command but plan (minutes a run), and one that does not exist.
    command = draw(st.sampled_from([*(c.name for c in REGISTERED if c.name != "plan"), "nope"]))
    argv = [command]
    for option in draw(st.lists(st.sampled_from([*OPTIONS, *FLAGS]), max_size=5)):
        argv.append(option)
        if option in OPTIONS:
            argv.append(draw(OPTIONS[option]))
    return argv


@fuzz(150)
@given(argv=argvs())
def test_any_options_of_any_command(argv: list[str]) -> None:
    with scratch() as base:
        # A relative --out lands in the scratch folder, never in the project.
        argv = [
            str(base / value) if option == "--out" and value and not value.startswith("/") else value
            for option, value in zip(["", *argv], argv, strict=False)
        ]
        # publish-models of a stack with an object store would reach the network: only dev's, a no-op.
        if argv[0] == "publish-models":
            argv = ["publish-models", "--stack", "dev", *[a for a in argv[1:] if a in FLAGS]]
        # pin-images would ask registries and write the project's stack file: --check asks none and writes nothing.
        if argv[0] == "pin-images":
            argv = [*argv, "--check"]
        with project_unchanged():
            result = run(argv)
        assert_well_behaved(result, argv)


ROW_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.integers(-(10**12), 10**12).map(str),
    st.sampled_from(["", "x", "1,2", " 3 ", "1e400", "-0"]),
)


@st.composite
def plausible_traces(draw: st.DrawFn) -> str:
    """Header right, times increasing: mostly runnable, with the odd bound or row broken."""
    steps = draw(st.lists(st.floats(0.5, 20_000), min_size=1, max_size=6))
    times = [0.0]
    for step in steps:
        times.append(times[-1] + step)
    rates = draw(st.lists(st.floats(0, 5_000) | ROW_VALUES, min_size=len(times), max_size=len(times)))
    return "t_seconds,rps\n" + "".join(f"{t},{r}\n" for t, r in zip(times, rates, strict=True))


@st.composite
def garbled_traces(draw: st.DrawFn) -> str:
    header = draw(st.sampled_from(["t_seconds,rps", "rps,t_seconds", "", "t_seconds", "a,b,c"]))
    rows = draw(st.lists(st.tuples(ROW_VALUES, ROW_VALUES), max_size=8))
    return "\n".join([header, *(f"{t},{r}" for t, r in rows)]) + draw(st.sampled_from(["", "\n", "\n\n", "\x00"]))


@fuzz(100)
@given(trace=garbled_traces() | plausible_traces())
def test_simulate_on_any_trace(trace: str) -> None:
    with scratch() as base:
        path = base / "trace.csv"
        path.write_text(trace, encoding="utf-8")
        argv = ["simulate", "--stack", "dev", "--trace", str(path), "--no-plot", "--out", str(base / "out")]
        with project_unchanged():
            result = run(argv)
        assert_well_behaved(result, argv)
        if result.code == 0:
            # A trace that ran was a real one: the header, then finite times from 0, each in a later whole second.
            times = [float(line.split(",")[0]) for line in trace.splitlines()[1:] if line]
            assert trace.startswith("t_seconds,rps")
            assert all(math.isfinite(t) for t in times)
            assert times == sorted(set(times))
            assert times[0] == 0
            assert len({int(t) for t in times}) == len(times)


# --- file inputs that are no regular file, or too large ------------------------------------------------------

SPECIAL_FILES = ["fifo", "device", "directory", "symlink loop", "dangling symlink", "symlink to a fifo", "huge"]
DEVICES = ["/dev/zero", "/dev/null", "/dev/urandom"]
FILE_INPUTS = ["--config", "--trace", "model file", "model file linked out of the repository"]


def _linked(link: Path, target: Path) -> Path:
    link.symlink_to(target)
    return link


def special_file(kind: str, folder: Path, size: int, device: str) -> Path:
    """A file input of `kind` made in `folder` (a device is the system's `device`); `size` is a huge one's, sparse."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "weights.bin"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink to a fifo":
        # What the link leads to outside `folder`, so that `path` is the one refused (in a version folder, the first).
        os.mkfifo(folder.parent / f"{folder.name}-pipe")
        _linked(path, folder.parent / f"{folder.name}-pipe")
    elif kind == "device":
        return Path(device)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink loop":
        # The loop's other end outside `folder`, as above.
        _linked(path, folder.parent / f"{folder.name}-loop")
        _linked(folder.parent / f"{folder.name}-loop", path)
    elif kind == "dangling symlink":
        _linked(path, folder / "missing")
    else:
        with path.open("wb") as handle:
            handle.truncate(size)
    return path


@fuzz(40)
@given(
    kind=st.sampled_from(SPECIAL_FILES),
    where=st.sampled_from(FILE_INPUTS),
    command=st.sampled_from(sorted(COMMANDS)),
    # Above every kind's bound (a model file's is 2 TiB), below ext4's largest file (16 TiB).
    size=st.integers(2 * 1024**4 + 1, 8 * 1024**4),
    device=st.sampled_from(DEVICES),
)
def test_a_file_input_that_is_no_regular_file_or_too_large_is_named(
    kind: str, where: str, command: str, size: int, device: str
) -> None:
    """Each is refused before it is read, naming the file and what a file of its kind may be; nothing hangs."""
    with scratch() as base:
        if where == "--config":
            path = special_file(kind, base / "inputs", size, device)
            argv = [command, "--config", str(path), *(a.format(out=base / "out") for a in COMMANDS[command])]
        elif where == "--trace":
            path = special_file(kind, base / "inputs", size, device)
            argv = ["simulate", "--stack", "dev", "--trace", str(path), "--no-plot", "--out", str(base / "out")]
        else:
            repo = base / "model_repo"
            shutil.copytree(PROJECT_ROOT / "model_repo", repo)
            version = repo / "ranker" / "2"
            # A folder inside a version folder is no model file but a folder of them: a device is reached by a link.
            assume(kind != "directory")
            if where == "model file" and kind != "device":
                path = special_file(kind, version, size, device)
            else:
                # The link is what the model file is: followed out of the repository, it leads to no regular file.
                path = _linked(version / "linked.bin", special_file(kind, base / "outside", size, device))
            argv = ["model-repo", "--stack", "staging", "--model-repo", str(repo), "--out", str(base / "out")]
        with project_unchanged():
            result = run(argv)
        assert_well_behaved(result, argv)
        assert result.code == 2, (argv, result.output)
        # A link out of the model repository, or a loop of links in it, is the repository's to refuse
        # (source.py), naming the folder and the link; anything else is refused as a file of its kind.
        by_repository = f"{path.parent}: '{path.name}' is " in result.output and (
            "outside the model repository" in result.output or "a loop of symbolic links" in result.output
        )
        by_kind = str(path) in result.output and "is a regular file of at most" in result.output
        assert by_repository or by_kind, (argv, result.output)
