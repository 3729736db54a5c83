"""Imports flow one way (pyproject.toml [tool.importlinter]): the component package stands alone and has no
cycle. import-linter holds the tree to it, and fails on a reverse import or a cycle added on purpose."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
ROOT_PACKAGES = (
    *("program", "platform_config", "stackctl", "offline", "policy", "simulator", "planner", "model_packaging"),
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


def test_a_reverse_import_into_the_stack_schema_breaks_the_package_contract(tree: Path) -> None:
    namespace = tree / "components" / "triton_platform" / "namespace.py"
    namespace.write_text(namespace.read_text() + "\nfrom platform_config.types import DNS_LABEL  # noqa\n")
    line = len(namespace.read_text().splitlines())
    result = lint_imports(tree)
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    assert "imports nothing of the stack schema, the program, the tools or the tests BROKEN" in out
    assert f"triton_platform.namespace -> platform_config.types (l.{line})" in out
    assert "Contracts: 4 kept, 1 broken." in out


def test_a_cycle_hidden_behind_type_checking_breaks_the_acyclic_contract(tree: Path) -> None:
    namespace = tree / "components" / "triton_platform" / "namespace.py"
    namespace.write_text(
        namespace.read_text()
        + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from triton_platform.monitoring import Monitoring\n"
    )
    result = lint_imports(tree)
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    assert "modules import each other without a cycle BROKEN" in out
    assert "It could be made acyclic by removing 1 dependency: - .namespace -> .monitoring (1 import)" in out


def test_a_library_importing_the_command_line_breaks_its_contract(tree: Path) -> None:
    report = tree / "planner" / "report.py"
    report.write_text(report.read_text() + "\nfrom stackctl import main  # noqa\n")
    line = len(report.read_text().splitlines())
    result = lint_imports(tree)
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    assert "stackctl is the command line over the libraries: none of them imports it BROKEN" in out
    assert f"planner.report -> stackctl.main (l.{line})" in out
    assert "Contracts: 4 kept, 1 broken." in out
