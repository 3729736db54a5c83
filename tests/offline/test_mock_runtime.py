"""The mock run behind `stackctl synth`: config through the environment, resources recorded by public means."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime.mocks import MockMonitor

from offline.mock_runtime import Declarations, EchoMocks, Registered, depends_on_resources
from offline.synth import run_synth
from platform_config.paths import stack_file
from platform_config.stack_document import pulumi_config_from_stack_file
from tests.support.mocks import RecordingMocks, install, pulumi_test

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


class EngineView(MockMonitor):
    """The SDK's mock monitor, keeping for each resource the `protect` and `retainOnDelete` the SDK sends the engine."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.sent: dict[tuple[str, str], tuple[bool, bool]] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the engine's method, as the monitor names it)
        if request.type != "pulumi:pulumi:Stack":
            self.sent[(request.type, request.name)] = (request.protect, request.retainOnDelete)
        register: Callable[[Any], Any] = super().RegisterResource  # untyped in the SDK
        return register(request)


class Box(pulumi.ComponentResource):
    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("test:index:Box", name, None, opts)


def test_protect_and_retain_on_delete_are_what_the_sdk_sends_the_engine() -> None:
    """The runner applies the SDK's `protect` inheritance itself (a transformation sees the options before the SDK
    does): held here to the engine's request, under a parent that sets it, one that unsets it, and a grandchild."""
    mocks = RecordingMocks()
    engine = EngineView(mocks)
    install(mocks, monitor=engine)
    declarations = Declarations()

    @pulumi_test
    def run() -> None:
        pulumi.runtime.register_stack_transformation(declarations)
        k8s.core.v1.Namespace("plain", metadata={"name": "a"})
        kept = Box("kept", pulumi.ResourceOptions(protect=True))
        inherits = Box("inherits", pulumi.ResourceOptions(parent=kept))
        k8s.core.v1.Namespace(
            "grandchild", metadata={"name": "b"}, opts=pulumi.ResourceOptions(parent=inherits, retain_on_delete=True)
        )
        unset = Box("unset", pulumi.ResourceOptions(parent=kept, protect=False))
        k8s.core.v1.Namespace("under-unset", metadata={"name": "c"}, opts=pulumi.ResourceOptions(parent=unset))
        declarations.open = False

    run()
    recorded = {(d.type, d.name): (d.protect, d.retain_on_delete) for d in declarations.declared}
    assert recorded == engine.sent
    assert recorded == {
        ("kubernetes:core/v1:Namespace", "plain"): (False, False),
        ("test:index:Box", "kept"): (True, False),
        ("test:index:Box", "inherits"): (True, False),
        ("kubernetes:core/v1:Namespace", "grandchild"): (True, True),
        ("test:index:Box", "unset"): (False, False),
        ("kubernetes:core/v1:Namespace", "under-unset"): (False, False),
    }


def test_a_secret_input_is_recorded_as_the_program_gave_it() -> None:
    """The mocks receive a secret in Pulumi's wire form; the record holds its value, nested in a property or not."""
    mocks = EchoMocks()
    pulumi.runtime.set_mocks(mocks, project="unit", stack="test", preview=False)
    declarations = Declarations()
    records: list[Registered] = []

    @pulumi_test
    def run() -> pulumi.Output[None]:
        pulumi.runtime.register_stack_transformation(declarations)
        k8s.core.v1.Secret(
            "credentials",
            metadata={"name": "credentials", "annotations": {"token": pulumi.Output.secret("t")}},
            string_data=pulumi.Output.secret({"url": "u"}),
            type="Opaque",
        )
        declarations.open = False
        return declarations.registered(mocks, records.extend)

    run()
    received = mocks.received[("kubernetes:core/v1:Secret", "credentials")].inputs
    assert received["stringData"] != {"url": "u"}, "the mocks see the wire form"
    [secret] = records
    assert secret.inputs["stringData"] == {"url": "u"}
    assert secret.inputs["metadata"] == {"name": "credentials", "annotations": {"token": "t"}}
    assert secret.inputs["type"] == "Opaque"
