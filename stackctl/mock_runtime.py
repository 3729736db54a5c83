"""Run the real Pulumi program under Pulumi's mocks and record every resource it registers.

Nothing here knows about our components: it executes `__main__.py` exactly as the
language host does, with config injected the way the CLI injects it.
"""

from __future__ import annotations

import runpy
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.settings import ROOT
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.namespace import PROJECT
from platform_config.paths import PROJECT_ROOT

PROGRAM = PROJECT_ROOT / "__main__.py"
REDACTED = "[generated secret]"
HELM_TEMPLATE = "kubernetes:helm:template"


@dataclass(frozen=True)
class Registered:
    """One resource as the engine saw it: its inputs are what a provider would receive."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    provider: str
    """Provider reference (`urn::id`); empty for components and the default provider."""
    protect: bool
    retain_on_delete: bool
    dependencies: tuple[str, ...]
    """URNs the resource explicitly depends on (`depends_on`)."""
    inputs: dict[str, Any]


def _object_id(args: pulumi_mocks.MockResourceArgs) -> str:
    """The id the Kubernetes provider gives an object: `namespace/name`, or `name` when cluster-scoped."""
    metadata = args.inputs.get("metadata") or {}
    name = metadata.get("name") or args.name
    namespace = metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


class EchoMocks(pulumi.runtime.Mocks):
    """A provider that accepts every input as the resource's state, as a successful apply would."""

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ.startswith("random:"):
            # Generated values are secrets: never a real-looking one in synth output.
            return f"{args.name}-id", {**args.inputs, "result": REDACTED}
        return _object_id(args), dict(args.inputs)

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        if args.token == HELM_TEMPLATE:
            # Templating a chart needs Helm and the chart itself: the chart's objects appear in render
            # mode and in `pulumi preview` (components/helm_chart.py), not under mocks.
            return {"result": []}, []
        raise NotImplementedError(f"the program made an unexpected provider call: {args.token}")


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The mock engine, keeping every registration with its parent (MockResourceArgs has none)."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registered: list[Registered] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - the gRPC method name
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            # Secrets unwrapped: in a mock run they are placeholders, never decrypted values.
            inputs, _ = rpc.deserialize_properties_unwrap_secrets(request.object)
            self.registered.append(
                Registered(
                    response.urn,
                    request.type,
                    request.name,
                    request.parent,
                    request.custom,
                    request.provider,
                    request.protect,
                    request.retainOnDelete,
                    tuple(request.dependencies),
                    inputs,
                )
            )
        return response


def run_program(
    stack: str, flat_config: dict[str, str], secret_keys: list[str], monitor: RecordingMonitor | None = None
) -> list[Registered]:
    """Execute `__main__.py` for `stack` under mocks; return every resource it registered, in order."""
    monitor = monitor or RecordingMonitor(EchoMocks())
    ROOT.set(None)  # a fresh root stack resource for every run in this process
    pulumi.runtime.set_all_config(dict(flat_config), secret_keys)
    pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)

    def program() -> None:
        runpy.run_path(str(PROGRAM), run_name="__main__")

    _sync_await(run_pulumi_func(program))
    return monitor.registered
