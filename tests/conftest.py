"""Shared fixtures: the whole program run under mocks per stack, and stack configs to mutate; the real-tools guard."""

from __future__ import annotations

import copy
import functools
import json
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from offline.chart_template import PROJECT_HELM, HelmTemplater
from offline.synth import SynthResult, run_synth, synthesize
from platform_config.errors import ConfigError
from platform_config.loader import StackConfig, parse_config
from platform_config.paths import PROJECT_ROOT, stack_file
from platform_config.schema import PlatformConfig
from platform_config.stack_document import pulumi_config_from_stack_file
from tests.support.local_cluster import SHARED_CHARTS, edit_stack, use_offline_charts
from tests.support.pulumi_cli import TOOLCHAIN_HOME, TOOLS_BIN
from triton_platform.model_packaging.source import ModelRepository

RCLONE_FOLDER = PROJECT_ROOT / ".tools" / "rclone"
"""scripts/rclone-release's rclone, the loader image's release: first on PATH for every test and what it starts, so the
publishing and loader tests run the rclone the loader runs (tests/support/model_store.py `require_rclone` checks its version)."""
os.environ["PATH"] = f"{RCLONE_FOLDER}{os.pathsep}{os.environ.get('PATH', '')}"

# The files whose tests each take minutes (production's charts, a local cluster each), and the preview-diff file,
# whose fixture repository takes as long: collected first, so that `make test`'s pytest-xdist workers start them
# first while the short tests fill the other workers.
LONGEST = ("test_cluster_deploy.py", "test_pulumi_e2e.py", "test_no_churn.py", "test_preview_diff.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--shuffle",
        type=int,
        metavar="SEED",
        help="run the tests in an order shuffled by SEED (and said in the header), to find tests that depend on "
        "what ran before them",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = config.getoption("--shuffle")
    if seed is not None:
        random.Random(seed).shuffle(items)
        return
    # Production's runs are the longest of each file (its charts). Then by file name, across folders: collected
    # folder by folder, tests/cluster/'s real-tool files would sit together, and --dist load would leave most of
    # them to one worker's tail while the others idle (docs/testing.md, "How long make test takes").
    items.sort(
        key=lambda item: (
            LONGEST.index(item.path.name) if item.path.name in LONGEST else len(LONGEST),
            item.path.name in LONGEST and "[production]" not in item.name,
            item.path.name,
        )
    )


def pytest_report_header(config: pytest.Config) -> str:
    # This machine reaches no Pulumi download: every test that runs the CLI runs the offline toolchain.
    seed = config.getoption("--shuffle")
    return (f"order: shuffled by --shuffle {seed}\n" if seed is not None else "") + (
        f"pulumi: the offline toolchain ({TOOLS_BIN / 'pulumi'}, plugins in {TOOLCHAIN_HOME}, "
        "TRITON_PULUMI_TOOLCHAIN=offline; no automatic log: tests/support/pulumi_cli.py, pulumi_home); users get the stock CLI "
        "and upstream plugins (tests/offline/test_toolchain_selection.py)"
    )


# --- the fast set starts no real tool -----------------------------------------------------------------------

REAL_TOOLS = frozenset(
    {
        "tritonserver",
        "prometheus",
        "promtool",
        "amtool",
        "pulumi",
        "kubectl",
        "rclone",
        "fake-gcs-server",
        "moto_server",
        "checkov",
        "kube-score",
        "crane",
        "go",
        # The project's scripts that build or start the tools above.
        "local-cluster",
        "pulumi-toolchain",
        "install-tools",
        "preview-diff",
    }
)
"""Programs only a test marked `real_tools` may start, by file name."""
TOOL_FOLDERS = (PROJECT_ROOT / ".tools", PROJECT_ROOT / "manifest_scan" / ".venv", PROJECT_ROOT / "policy" / ".venv")
"""Where `make tools` puts everything else it builds: anything started from here is a real tool too."""


def real_tool(args: Any, kwargs: Mapping[str, Any]) -> str | None:
    """The real tool `subprocess.Popen(args, **kwargs)` would start, or None.

    Only the program started itself is seen, not what it starts in turn: a test that runs a tool
    through a shell script of its own must be marked by whoever writes it.
    """
    first = args if isinstance(args, str | bytes | os.PathLike) else next(iter(args), "")
    program = os.fsdecode(kwargs.get("executable") or first)
    if kwargs.get("shell") and not kwargs.get("executable"):
        program = next(iter(program.split()), "")
    if os.sep in program:
        path = Path(os.path.abspath(Path(kwargs.get("cwd") or ".") / program))
    else:
        found = shutil.which(program, path=(kwargs.get("env") or os.environ).get("PATH"))
        path = Path(found) if found else Path(program)
    if path.name in REAL_TOOLS or path.name.startswith("kube-score-"):
        return program
    return program if any(path.is_relative_to(folder) for folder in TOOL_FOLDERS) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """A test not marked `real_tools` (setup, call and teardown) fails the moment it starts a real tool.

    `make test-fast` runs `-m "not real_tools"`: a mark forgotten would otherwise make it slow or
    failing on a machine without `make tools`, silently.
    """
    if item.get_closest_marker("real_tools"):
        return (yield)
    start = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        tool = real_tool(args, kwargs)
        if tool is not None:
            pytest.fail(
                f"{item.nodeid} starts the real tool {tool} but is not marked real_tools: add "
                "@pytest.mark.real_tools to it (or `pytestmark = pytest.mark.real_tools` to its module), "
                "so that `make test-fast` leaves it out",
                pytrace=False,
            )
        start(self, args, *rest, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", guarded)
        return (yield)


# --- Hypothesis: every example in `make test`, a few in `make test-fast` ---------------------------------------

FAST_EXAMPLES = 10
settings.register_profile("fast", max_examples=FAST_EXAMPLES)
"""`make test-fast` runs `--hypothesis-profile=fast`; `make test` keeps the default profile."""


def example_count(full: int) -> int:
    """A property test's `max_examples`: `full`, or at most FAST_EXAMPLES under the fast profile.

    Each test sets its own count, which no profile overrides: the test asks here instead.
    """
    return min(full, FAST_EXAMPLES) if settings.default is settings.get_profile("fast") else full


STACKS = ("dev", "staging", "production")
_SYNTH_CACHE: dict[str, SynthResult] = {}


# Config keys of the stack sections the tests edit.
K8S = "triton-platform:kubernetes"
POOL = "triton-platform:gpuPool"
SERVING = "triton-platform:serving"
MODELS = "triton-platform:models"
SCALING = "triton-platform:scaling"
MONITORING = "triton-platform:monitoring"
CLUSTER = "triton-platform:cluster"


def synth_stack(stack: str) -> SynthResult:
    """The program's own resources for a stack, its charts' objects left out; one mock run per stack per session."""
    if stack not in _SYNTH_CACHE:
        _SYNTH_CACHE[stack] = synthesize(stack_file(stack), stack)
    return _SYNTH_CACHE[stack]


_CHART_SYNTH_CACHE: dict[str, SynthResult] = {}


def synth_with_charts(stack: str) -> SynthResult:
    """A stack's resources as `stackctl synth` lists them, its charts templated by the Helm `make tools` builds
    (real_tools), from the offline chart folders; once per stack per session."""
    if stack not in _CHART_SYNTH_CACHE:
        charts = HelmTemplater(str(PROJECT_HELM), SHARED_CHARTS)
        _CHART_SYNTH_CACHE[stack] = synthesize(stack_file(stack), stack, charts)
    return _CHART_SYNTH_CACHE[stack]


def production_at_zero(config: dict[str, Any]) -> None:
    """Production with `general` idling at zero (docs/scale-to-zero.md), the KEDA HTTP add-on installed; every
    chart from its offline folder, as an air-gapped user sets `chart.path`."""
    general = config[SERVING]["deployments"]["general"]
    general["replicas"]["min"] = 0
    general["wake"] = {"budgetSeconds": 900, "allowInProduction": True}
    config[SCALING]["httpAddOn"] = {"mode": "install"}
    use_offline_charts(config)


@functools.cache
def synth_production_at_zero() -> SynthResult:
    """`production_at_zero` as `stackctl synth` lists it, its charts templated (real_tools); once per session."""
    folder = Path(tempfile.mkdtemp(prefix="production-at-zero-"))
    stack = folder / "Pulumi.production.yaml"
    shutil.copy(stack_file("production"), stack)
    edit_stack(stack, production_at_zero)
    return synthesize(stack, "production", HelmTemplater(str(PROJECT_HELM), SHARED_CHARTS))


@pytest.fixture(params=STACKS)
def synth(request: pytest.FixtureRequest) -> SynthResult:
    return synth_stack(request.param)


def stack_values(stack: str) -> dict[str, Any]:
    """A stack file's config, decoded: key -> structured value, as a user edits it."""
    flat, _ = pulumi_config_from_stack_file(stack_file(stack))
    values: dict[str, Any] = {}
    for key, raw in flat.items():
        try:
            values[key] = json.loads(raw)
        except json.JSONDecodeError:
            values[key] = raw
    return values


def encode(values: dict[str, Any]) -> dict[str, str]:
    """Decoded values back to the flat strings the Pulumi CLI passes."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}


Mutation = Callable[[dict[str, Any]], None]


def validate(stack: str, *mutations: Mutation, repo: ModelRepository | None = None) -> PlatformConfig:
    values = copy.deepcopy(stack_values(stack))
    for mutate in mutations:
        mutate(values)
    return parse_config(encode(values), f"stacks/Pulumi.{stack}.yaml", repo)


def synth_mutated(stack: str, *mutations: Mutation) -> SynthResult:
    """The program's resources for a stack config changed by `mutations` (validated first)."""
    values = copy.deepcopy(stack_values(stack))
    for mutate in mutations:
        mutate(values)
    flat, source = encode(values), f"stacks/Pulumi.{stack}.yaml"
    loaded = StackConfig(stack, source, parse_config(flat, source))
    return SynthResult(loaded, run_synth(stack, flat, []))


def errors_of(stack: str, *mutations: Mutation, repo: ModelRepository | None = None) -> list[str]:
    """`path: message` of every issue; fails the test when the config is accepted."""
    with pytest.raises(ConfigError) as caught:
        validate(stack, *mutations, repo=repo)
    return [f"{i.path}: {i.message}" for i in caught.value.issues]


def setting(key: str, *path: str | int, value: Any) -> Mutation:
    """Set `value` at `path` inside config key `key`, creating mappings on the way."""

    def mutate(values: dict[str, Any]) -> None:
        # A copy: a later mutation must never reach into this one's value, which other tests share.
        fresh = copy.deepcopy(value)
        if not path:
            values[key] = fresh
            return
        node = values.setdefault(key, {})
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        node[path[-1]] = fresh

    return mutate


def removing(key: str, *path: str) -> Mutation:
    def mutate(values: dict[str, Any]) -> None:
        if not path:
            del values[key]
            return
        node = values[key]
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return mutate


def model_folder(root: Path, name: str, config: str, versions: bool = True) -> None:
    """A one-model repository folder: config.pbtxt (named after the folder) and, unless told not to, version 1."""
    (root / name / "1" if versions else root / name).mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(f'name: "{name}"\n{config}')
    if versions:
        (root / name / "1" / "model.onnx").write_bytes(b"")  # a served version folder is never empty


def serving_only(model: str) -> tuple[Mutation, Mutation]:
    """dev serving just `model`, with no per-model settings: for tests over a repository of their own."""
    return removing("triton-platform:models"), setting(
        "triton-platform:serving", "deployments", "general", "models", value=[model]
    )
