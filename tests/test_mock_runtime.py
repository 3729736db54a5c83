"""The mock run behind `stackctl synth`: config through the environment, resources recorded by public means."""

from __future__ import annotations

import os

import pulumi
import pulumi_kubernetes as k8s
import pytest

from offline.mock_runtime import Declarations, depends_on_resources
from offline.synth import run_synth
from platform_config.loader import pulumi_config_from_stack_file, stack_file
from tests.components.mocks import install, pulumi_test

CONFIG_VARIABLES = ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS", "TRITON_PLATFORM_RENDER_DIR")


def test_the_run_leaves_the_environment_as_it_found_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CONFIG_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_PLATFORM_RENDER_DIR", "/tmp/mine")
    flat, secret_keys = pulumi_config_from_stack_file(stack_file("dev"))
    assert run_synth("dev", flat, secret_keys)
    assert {name: os.environ.get(name) for name in CONFIG_VARIABLES} == {
        "PULUMI_CONFIG": None,
        "PULUMI_CONFIG_SECRET_KEYS": None,
        "TRITON_PLATFORM_RENDER_DIR": "/tmp/mine",
    }


def test_depends_on_is_recorded_as_the_resources_it_names_however_given() -> None:
    """None, one resource, a list of them or an Output of a list (the root's GPU pool waits for Monitoring's
    chart that way, program/platform.py): the same resources once known."""
    install()
    seen: list[list[list[pulumi.Resource]]] = []

    @pulumi_test
    def run() -> pulumi.Output[None]:
        ns = k8s.core.v1.Namespace("ns", metadata={"name": "a"})
        given = [None, ns, [ns], pulumi.Output.from_input([ns])]
        return pulumi.Output.all(*(depends_on_resources(g) for g in given)).apply(seen.append)

    run()
    [resolved] = seen
    assert [[type(r).__name__ for r in resources] for resources in resolved] == [
        [],
        ["Namespace"],
        ["Namespace"],
        ["Namespace"],
    ]


def test_two_resources_of_one_type_and_name_are_refused() -> None:
    install()
    declarations = Declarations()

    @pulumi_test
    def run() -> None:
        pulumi.runtime.register_stack_transformation(declarations)
        first = k8s.core.v1.Namespace("ns", metadata={"name": "a"})
        with pytest.raises(ValueError, match=r"^two resources ") as caught:
            k8s.core.v1.Namespace("ns", metadata={"name": "b"}, opts=pulumi.ResourceOptions(parent=first))
        assert str(caught.value) == (
            "two resources of type kubernetes:core/v1:Namespace are named ns: stackctl tells them apart by both"
        )
        declarations.open = False

    run()
    assert [(d.type, d.name) for d in declarations.declared] == [("kubernetes:core/v1:Namespace", "ns")]
