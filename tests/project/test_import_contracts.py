"""Imports flow one way (pyproject.toml [tool.importlinter]): down the layers (command line, tools, simulator,
offline library, program, stack schema, components), the component package alone and without a cycle, no library
importing a test. import-linter holds the tree to it, and fails on a reverse import or a cycle added on purpose.
No library imports argparse either: parsing and checking the command line is stackctl's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
ROOT_PACKAGES = (
    *("program", "platform_config", "stackctl", "offline", "policy", "simulator", "planner", "model_publishing"),
    *("manifest_scan", "preview", "bench", "tests"),
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
            "components/triton_platform/kube/namespace.py",
            "from platform_config.types import DNS_LABEL",
            (
                "imports nothing of the stack schema, the program, the tools or the tests BROKEN",
                "Imports flow down the layers: the command line, the tools, the simulator, the offline library, the "
                "program, the stack schema, the components BROKEN",
            ),
            "triton_platform.kube.namespace -> platform_config.types",
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
            "from tests.project.test_import_contracts import lint_imports",
            ("No library imports the benchmarks or the tests BROKEN",),
            "simulator.hpa -> tests.project.test_import_contracts",
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
    # The pool contract is a module TritonServing imports: importing TritonServing back closes a cycle of the
    # subpackages.
    contract = tree / "components" / "triton_platform" / "gpu_pool" / "gpu_pool_contract.py"
    contract.write_text(
        contract.read_text()
        + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from triton_platform.serving.triton_serving import TritonServing\n"
    )
    result = lint_imports(tree)
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    assert "modules import each other without a cycle BROKEN" in out
    assert "It could be made acyclic by removing 1 dependency: - .gpu_pool -> .serving (1 import)" in out


LIBRARIES = {
    **{package: package for package in ("simulator", "planner", "offline", "platform_config", "program", "preview")},
    "model_publishing": "model_publishing",
    "triton_platform": "components/triton_platform",
}
"""The library packages, by the folder each lies in: none may import argparse."""
OWN_SCRIPTS = {
    "model_publishing.examples": "a maintainer's script (python -m model_publishing.examples --check), not stackctl's",
}
"""The library modules that parse a command line of their own, and why."""


ARGPARSE_SCAN = """
import ast, json, sys
from pathlib import Path
root, libraries = Path(sys.argv[1]), json.loads(sys.argv[2])
found = {}
for package, folder in libraries.items():
    for path in sorted((root / folder).rglob("*.py")):
        parts = path.relative_to(root / folder).with_suffix("").parts
        module = ".".join((package, *parts[:-1]) if parts[-1] == "__init__" else (package, *parts))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            if any(name.partition(".")[0] == "argparse" for name in names):
                found[module] = min(found.get(module, node.lineno), node.lineno)
print(json.dumps(found))
"""


def argparse_imports(root: Path) -> dict[str, int]:
    """Each module of LIBRARIES under `root` importing argparse, anywhere in it, and the line of its first import.

    Parsed in a fresh interpreter: in a pytest worker that has run other tests, CPython 3.11's ast.parse can fail
    with "AST constructor recursion depth mismatch" (python/cpython#106905), as it did once in a full run."""
    done = subprocess.run(
        [sys.executable, "-c", ARGPARSE_SCAN, str(root), json.dumps(LIBRARIES)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, int] = json.loads(done.stdout)
    return found


def argparse_problem(root: Path) -> str | None:
    """What names the library modules under `root` that import argparse, but OWN_SCRIPTS; None if there is none."""
    found = [f"{module} (l.{line})" for module, line in argparse_imports(root).items() if module not in OWN_SCRIPTS]
    if not found:
        return None
    return f"argparse is the command line's (stackctl/, stackctl/options.py), no library's: {', '.join(found)}"


def test_no_library_imports_argparse() -> None:
    problem = argparse_problem(PROJECT_ROOT)
    assert problem is None, problem
    # An exception that no longer parses a command line leaves OWN_SCRIPTS.
    assert set(OWN_SCRIPTS) <= set(argparse_imports(PROJECT_ROOT))


ARGPARSE_ADDED = {
    "import": ("planner/report.py", "import argparse", "planner.report"),
    "from-import": ("simulator/shapes.py", "from argparse import ArgumentTypeError", "simulator.shapes"),
    "a-component": (
        "components/triton_platform/kube/namespace.py",
        "import argparse as ap",
        "triton_platform.kube.namespace",
    ),
    "inside-a-function": ("program/__init__.py", "def parse() -> None:\n    import argparse", "program"),
}
"""An import of argparse added to a library module, and the module the check names."""


@pytest.mark.parametrize("case", ARGPARSE_ADDED)
def test_a_library_importing_argparse_is_named(tmp_path: Path, case: str) -> None:
    module, added, named = ARGPARSE_ADDED[case]
    for folder in LIBRARIES.values():
        shutil.copytree(PROJECT_ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    assert argparse_problem(tmp_path) is None
    path = tmp_path / module
    path.write_text(path.read_text() + f"\n{added}  # noqa\n")
    line = len(path.read_text().splitlines())
    assert argparse_problem(tmp_path) == (
        f"argparse is the command line's (stackctl/, stackctl/options.py), no library's: {named} (l.{line})"
    )
