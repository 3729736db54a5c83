"""Pulumi's own language hosts in the offline toolchain: a Python component package's inferred schema,
a TypeScript SDK generated from it, and a Pulumi YAML program that uses it.

The probe package is the smallest of its kind: one component, one TypedDict Args with one input. Its
PulumiPlugin.yaml names a virtualenv of its own that imports the project's packages (the Python host
would otherwise make and fill `<package>/venv`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.pulumi_cli import Project, component_virtualenv, generate_sdk, package_env, package_schema

pytestmark = pytest.mark.real_tools  # the Pulumi CLI and its language hosts

COMPONENT = '''\
from typing import TypedDict

import pulumi
from pulumi.provider.experimental import component_provider_host


class MyComponentArgs(TypedDict):
    message_text: pulumi.Input[str]
    """What the component says."""


class MyComponent(pulumi.ComponentResource):
    shout: pulumi.Output[str]

    def __init__(self, name: str, args: MyComponentArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("probe:index:MyComponent", name, {}, opts)
        self.shout = pulumi.Output.from_input(args["message_text"]).apply(str.upper)
        self.register_outputs({"shout": self.shout})


if __name__ == "__main__":
    component_provider_host([MyComponent], name="probe", version="0.1.0")
'''


@pytest.fixture(scope="module")
def virtualenv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One for the module: the host's first install step brings its pip, setuptools and wheel up to date."""
    return component_virtualenv(tmp_path_factory.mktemp("probe") / "venv")


@pytest.fixture
def probe(tmp_path: Path, virtualenv: Path) -> Path:
    package = tmp_path / "probe"
    package.mkdir()
    plugin = {"runtime": {"name": "python", "options": {"virtualenv": str(virtualenv)}}}
    (package / "PulumiPlugin.yaml").write_text(yaml.safe_dump(plugin))
    (package / "__main__.py").write_text(COMPONENT)
    return package


def test_the_python_host_serves_a_component_packages_schema(probe: Path, tmp_path: Path) -> None:
    schema = package_schema(probe, tmp_path / "scratch")
    assert schema["name"] == "probe"
    component = schema["resources"]["probe:index:MyComponent"]
    assert component["isComponent"] is True
    assert component["inputProperties"]["messageText"]["type"] == "string"
    assert component["inputProperties"]["messageText"]["description"] == "What the component says."
    assert component["requiredInputs"] == ["messageText"]
    assert component["properties"]["shout"]["type"] == "string"


def test_the_nodejs_host_generates_a_typescript_sdk(probe: Path, tmp_path: Path) -> None:
    sdk = generate_sdk(probe, "typescript", tmp_path / "sdk", tmp_path / "scratch")
    assert json.loads((sdk / "package.json").read_text())["name"] == "@pulumi/probe"
    source = (sdk / "myComponent.ts").read_text()
    assert "export class MyComponent extends pulumi.ComponentResource" in source
    assert "messageText: pulumi.Input<string>;" in source


def test_a_yaml_program_previews_and_deploys_the_component(probe: Path, tmp_path: Path) -> None:
    program = tmp_path / "program"
    program.mkdir()
    project = {
        "name": "probe-yaml",
        "runtime": "yaml",
        # Not `pulumi package add`: the YAML host has no Link (see docs/development.md).
        "packages": {"probe": str(probe)},
        "resources": {"hello": {"type": "probe:index:MyComponent", "properties": {"messageText": "hello"}}},
        "outputs": {"shout": "${hello.shout}"},
    }
    (program / "Pulumi.yaml").write_text(yaml.safe_dump(project))
    cli = Project(program, package_env(tmp_path / "scratch"))
    cli.ok("stack", "init", "probe")
    preview = cli.ok("preview", stack="probe")
    assert "probe:index:MyComponent" in preview
    cli.ok("up", "--yes", "--skip-preview", stack="probe")
    outputs = cli.pulumi("stack", "output", "--json", stack="probe")
    assert json.loads(outputs.stdout) == {"shout": "HELLO"}, outputs.stderr
