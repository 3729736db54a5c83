"""Pulumi's public mocks for the component tests: one recording `Mocks`, a typed `pulumi.runtime.test`, and `install`.

Each test calls `install` (directly or through a fixture) rather than each module once: other tests in the same
pytest process install mocks of their own (offline/mock_runtime.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import pulumi
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs

HELM_TEMPLATE = "kubernetes:helm:template"

Test = TypeVar("Test", bound=Callable[..., Any])
_runtime_test: Callable[[Callable[..., Any]], Callable[..., Any]] = pulumi.runtime.test


def pulumi_test(test: Test) -> Test:
    """`pulumi.runtime.test`, typed (the SDK leaves it untyped): runs in Pulumi's loop, awaits a returned Output."""
    return cast(Test, _runtime_test(test))


class RecordingMocks(pulumi.runtime.Mocks):
    """Echoes each resource's inputs as its state, as a successful create would, and keeps each registration and call.

    `extra_state` adds state by resource type (say a RandomPassword's `result`). A provider call is answered
    as `kubernetes:helm:template` would be for a chart of no objects (templating needs Helm and the chart),
    unless `refuse_calls`: then any call raises, naming its token.
    """

    def __init__(
        self, extra_state: Mapping[str, Mapping[str, Any]] | None = None, *, refuse_calls: bool = False
    ) -> None:
        self.extra_state: dict[str, Mapping[str, Any]] = dict(extra_state or {})
        self.refuse_calls = refuse_calls
        self.resources: list[MockResourceArgs] = []
        self.calls: list[MockCallArgs] = []

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.resources.append(args)
        state = {**args.inputs, **self.extra_state.get(args.typ, {})}
        return (f"{args.name}-id" if args.custom else None), state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        self.calls.append(args)
        if self.refuse_calls:
            raise NotImplementedError(f"no provider call expected; got {args.token}")
        return {"result": []}, []

    @property
    def inputs(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Each registered resource's inputs, by (type, name)."""
        return {(r.typ, r.name): r.inputs for r in self.resources}

    def registered(self, typ: str) -> dict[str, dict[str, Any]]:
        """The inputs of each registered resource of type `typ`, by name."""
        return {r.name: r.inputs for r in self.resources if r.typ == typ}


def install(
    mocks: RecordingMocks | None = None,
    *,
    monitor: MockMonitor | None = None,
    project: str = "unit",
    stack: str = "test",
) -> RecordingMocks:
    """Set `mocks` (fresh ones if none) as Pulumi's, not in preview; returns them.

    `monitor`, a `MockMonitor` wrapping `mocks`, is for a test that reads back its `get_registered_resources()`.
    """
    mocks = RecordingMocks() if mocks is None else mocks
    if monitor is not None and monitor.mocks is not mocks:
        raise ValueError("install: the monitor must wrap the mocks it installs")
    # A program run of its own: a fresh root stack resource, so no test's objects claim another's.
    pulumi.runtime.reset_options(project=project, stack=stack)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    return mocks
