"""Imports flow one way (pyproject.toml [tool.importlinter]): down the layers (command line, tools, simulator,
offline library, program, stack schema, components), the component package alone and without a cycle, no library
importing a test. import-linter holds the tree to it, and fails on a reverse import or a cycle added on purpose."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
ROOT_PACKAGES = (
    *("program", "platform_config", "stackctl", "offline", "policy", "simulator", "planner", "model_publishing"),
    *("manifest_scan", "bench", "tests"),
)


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the project laid out at `root`, with the project's own contracts."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{root}:{root / 'components'}"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the project's Python packages and contracts, to break on purpose."""
    for package in ROOT_PACKAGES:
        shutil.copytree(PROJECT_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns(".venv", "golden"))
    shutil.copytree(PROJECT_ROOT / "components" / "triton_platform", tmp_path / "components" / "triton_platform")
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_tree_keeps_every_import_contract() -> None:
    result = lint_imports(PROJECT_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 5 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "added", "contracts", "edge"),
    [
        (
            "components/triton_platform/namespace.py",
            "from platform_config.types import DNS_LABEL",
            (
                "imports nothing of the stack schema, the program, the tools or the tests BROKEN",
                "Imports flow down the layers: the command line, the tools, the simulator, the offline library, the "
                "program, the stack schema, the components BROKEN",
            ),
            "triton_platform.namespace -> platform_config.types",
        ),
        (
            "planner/report.py",
            "from stackctl import main",
            (
                "Imports flow down the layers: the command line, the tools, the simulator, the offline library, the "
                "program, the stack schema, the components BROKEN",
            ),
            "planner.report -> stackctl.main",
        ),
        (
            # The cycle there was: the stack schema read the simulator's section from the simulator's package.
            "platform_config/scaling.py",
            "from simulator.engine import simulate",
            (
                "Imports flow down the layers: the command line, the tools, the simulator, the offline library, the "
                "program, the stack schema, the components BROKEN",
            ),
            "platform_config.scaling -> simulator.engine",
        ),
        (
            "simulator/hpa.py",
            "from tests.test_import_contracts import lint_imports",
            ("No library imports the benchmarks or the tests BROKEN",),
            "simulator.hpa -> tests.test_import_contracts",
        ),
    ],
    ids=[
        "reverse-import-into-the-schema",
        "library-imports-the-command-line",
        "schema-imports-the-simulator",
        "library-imports-a-test",
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tree: Path, module: str, added: str, contracts: tuple[str, ...], edge: str
) -> None:
    path = tree / module
    path.write_text(path.read_text() + f"\n{added}  # noqa\n")
    line = len(path.read_text().splitlines())
    result = lint_imports(tree)
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    for contract in contracts:
        assert contract in out
    assert f"{edge} (l.{line})" in out
    assert f"Contracts: {5 - len(contracts)} kept, {len(contracts)} broken." in out


def test_a_cycle_hidden_behind_type_checking_breaks_the_acyclic_contract(tree: Path) -> None:
    # serving_context is one of the modules Monitoring imports: importing Monitoring back closes a cycle.
    context = tree / "components" / "triton_platform" / "serving_context.py"
    context.write_text(
        context.read_text()
        + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from triton_platform.monitoring import Monitoring\n"
    )
    result = lint_imports(tree)
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    assert "modules import each other without a cycle BROKEN" in out
    assert "It could be made acyclic by removing 1 dependency: - .serving_context -> .monitoring (1 import)" in out
