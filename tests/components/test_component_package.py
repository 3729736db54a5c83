"""The components as a Pulumi component package (components/), through Pulumi's own language hosts.

- Its schema, as `pulumi package get-schema` infers it from the components' type annotations, is the
  committed components/schema.json: a change to the public interface is a reviewed diff.
- examples/yaml, a Pulumi YAML program that uses the package, previews, deploys in render mode and previews
  clean a second time; what it renders passes the project's policy rules.
- The TypeScript SDK `pulumi package gen-sdk` writes for it compiles with tsc (its npm dependencies from
  the registry).
- `pip install ./components` into a fresh virtualenv gives `triton_platform`, with no path edits.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT
from tests.support.package_schema import SCHEMA, package_copy, schema_text
from tests.support.policy_check import pack_violations
from tests.support.pulumi_cli import Project, generate_sdk, package_env, package_schema, rendered_objects

pytestmark = pytest.mark.real_tools  # the Pulumi CLI and its language hosts

COMPONENTS = ("GpuNodePool", "KedaScaling", "Monitoring", "TritonServing")


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package (as `package_copy` lays it), the YAML example and the model repository, side by side as in
    the repository, so the example's relative paths hold."""
    root = tmp_path_factory.mktemp("package")
    package_copy(root)
    shutil.copytree(PROJECT_ROOT / "examples" / "yaml", root / "examples" / "yaml")
    shutil.copytree(PROJECT_ROOT / "model_repo", root / "model_repo")
    return root


def test_the_inferred_schema_is_the_committed_public_interface(layout: Path, tmp_path: Path) -> None:
    schema = package_schema(layout / "components", tmp_path)
    assert schema["name"] == "triton-platform"
    for component in COMPONENTS:
        resource = schema["resources"][f"triton-platform:index:{component}"]
        assert resource["isComponent"] is True
        assert resource["inputProperties"], f"{component} has no inputs in the schema"
    assert schema_text(schema) == SCHEMA.read_text(), (
        "components/schema.json differs from the inferred schema: if the change to the public interface is "
        "meant, run `.venv/bin/python -m tests.support.package_schema` and commit components/schema.json"
    )


def test_the_yaml_example_previews_deploys_and_stays_clean(layout: Path, tmp_path: Path) -> None:
    example = layout / "examples" / "yaml"
    project = Project(example, package_env(tmp_path))

    def pulumi(*args: str) -> str:
        result = project.pulumi(*args, "--stack", "example")
        assert result.returncode == 0, f"pulumi {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    pulumi("stack", "init")
    preview = pulumi("preview")
    for component in COMPONENTS:
        assert f"triton-platform:index:{component}" in preview
    pulumi("up", "--yes", "--skip-preview")
    outputs = json.loads(pulumi("stack", "output", "--json"))
    assert outputs == {"services": {"general": "triton-general"}}
    pulumi("preview", "--expect-no-changes")

    objects = rendered_objects(example / "rendered")
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    for expected in [
        ("DaemonSet", "nvidia-device-plugin"),
        ("Deployment", "triton-general"),
        ("ScaledObject", "triton-general"),
        ("PrometheusRule", "triton-platform"),
        ("ServiceMonitor", "triton"),
    ]:
        assert expected in kinds
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"triton-platform/gpu-pool": "inference"}
    assert pack_violations(objects) == []


def test_the_generated_typescript_sdk_compiles(layout: Path, tmp_path: Path) -> None:
    sdk = generate_sdk(layout / "components", "typescript", tmp_path / "sdk", tmp_path / "cli")
    package = json.loads((sdk / "package.json").read_text())
    assert package["name"] == "@pulumi/triton-platform"
    for component in ("gpuNodePool", "kedaScaling", "monitoring", "tritonServing"):
        assert (sdk / f"{component}.ts").is_file()
    npm = shutil.which("npm")
    assert npm, "npm is needed to compile the TypeScript SDK: install Node.js 20 (Debian: apt-get install nodejs npm)"
    for command in ([npm, "install", "--no-audit", "--no-fund", "--loglevel=error"], [npm, "run", "build"]):
        run = subprocess.run(command, cwd=sdk, capture_output=True, text=True, check=False)
        assert run.returncode == 0, f"{' '.join(command)} failed:\n{run.stdout}\n{run.stderr}"
    assert (sdk / "bin" / "index.js").is_file()
    assert "class TritonServing" in (sdk / "bin" / "tritonServing.d.ts").read_text()


def test_pip_installs_the_package_into_a_fresh_virtualenv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    install = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(PROJECT_ROOT / "components")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    # From outside the checkout: the import comes from the installed package, not from a path.
    imported = subprocess.run(
        [
            python,
            "-c",
            "import triton_platform as t; from triton_platform import GpuNodePool, KedaScaling, Monitoring, "
            "TritonServing; print(t.__file__)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith(str(venv)), imported.stdout
