"""Run the real Pulumi program under Pulumi's mocks and record every resource it registers.

Nothing here knows about our components: it executes `__main__.py` as the language host does, with
the config in the environment variables the host sets for a program. Only the SDK's public API is
used: `pulumi.runtime.set_mocks` and `pulumi.runtime.test` run the program; a stack transformation
(`pulumi.runtime.register_stack_transformation`) sees each resource as the program declares it,
with its parent and options; `Mocks.new_resource` sees its inputs and provider as the engine
receives them.

Why a stack transformation and not a resource transform (`pulumi.runtime.register_resource_transform`): under
mocks nothing runs a resource transform. The SDK's mock monitor hands it to `Mocks.register_transform` and
leaves it to the mocks to call (pulumi/runtime/mocks.py, `Mocks.register_transform`, `RegisterStackTransform`;
pulumi/pulumi#17090), and what the mocks could pass it, `MockResourceArgs`, holds no parent, URN, `protect`,
`retain_on_delete` or `depends_on`. A stack transformation is the only public hook that sees them in a mock run.
"""

from __future__ import annotations

import json
import logging
import os
import runpy
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pulumi

from offline.chart_template import HelmTemplater
from platform_config.paths import PROJECT_ROOT
from triton_platform.kube.namespace import PROJECT

PROGRAM = PROJECT_ROOT / "__main__.py"
REDACTED = "[generated secret]"
HELM_TEMPLATE = "kubernetes:helm:template"

SIGNATURE_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIGNATURE = "1b47061264138c4ac30d75fd1eb44270"
"""Pulumi's property wire format marks a secret as `{SIGNATURE_KEY: SECRET_SIGNATURE, "value": ...}` (Pulumi's
sdk/go/common/resource/sig/sig.go, `Key` and `Secret`). `MockResourceArgs.inputs` arrive in that form: the mock
monitor deserializes the engine's request without unwrapping secrets, and the SDK lifts a nested secret to the
top-level property that holds it."""

PROGRAM_LOG = logging.getLogger("stackctl.program")
"""Where the program's engine log goes under mocks. Only errors: its notes say where objects would go, which a
mock run, sending them nowhere, decides itself."""
PROGRAM_LOG.setLevel(logging.ERROR)

run_test: Callable[[Callable[[], Any]], Callable[[], None]] = pulumi.runtime.test
"""`pulumi.runtime.test`, typed (the SDK leaves it untyped): runs a function in Pulumi's loop, awaits the Output it
returns, then waits for every registration to finish."""


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
    """URNs of the resources named in its `depends_on`, as the program names them (the SDK also waits on the
    descendants of a component named there)."""
    inputs: dict[str, Any]


def revealed(value: Any) -> Any:
    """A top-level input as the program gave it: a secret's value without its wire marker, anything else as is."""
    if isinstance(value, dict) and value.get(SIGNATURE_KEY) == SECRET_SIGNATURE and "value" in value:
        return value["value"]
    return value


def _object_id(args: pulumi.runtime.MockResourceArgs) -> str:
    """The id the Kubernetes provider gives an object: `namespace/name`, or `name` when cluster-scoped."""
    metadata = args.inputs.get("metadata") or {}
    name = metadata.get("name") or args.name
    namespace = metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


class EchoMocks(pulumi.runtime.Mocks):
    """A provider that accepts every input as the resource's state, as a successful apply would.

    It keeps what the engine received for each resource, by type and name. With a `charts` templater it
    answers Helm templating as the provider would (offline/chart_template.py); without one, with no objects,
    so the run holds the program's own objects only and needs no Helm.
    """

    def __init__(self, charts: HelmTemplater | None = None) -> None:
        self.received: dict[tuple[str, str], pulumi.runtime.MockResourceArgs] = {}
        self.charts = charts

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.received[(args.typ, args.name)] = args
        if args.typ.startswith("random:"):
            # Generated values are secrets: never a real-looking one in synth output.
            return f"{args.name}-id", {**args.inputs, "result": REDACTED}
        return _object_id(args), dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        if args.token == HELM_TEMPLATE:
            if self.charts is None:
                return {"result": []}, []
            return {"result": self.charts.template(json.loads(args.args["jsonOpts"]))}, []
        raise NotImplementedError(f"the program made an unexpected provider call: {args.token}")


@dataclass(frozen=True)
class Declared:
    """A resource as the program constructed it: what the engine learns from its options."""

    type: str
    name: str
    resource: pulumi.Resource
    parent: pulumi.Resource
    protect: bool
    retain_on_delete: bool
    depends_on: pulumi.Output[list[pulumi.Resource]]


def depends_on_resources(depends_on: Any) -> pulumi.Output[list[pulumi.Resource]]:
    """`depends_on` as the program gave it: none, one resource, a list of them, or an Output of a list (the SDK's
    `Input[Sequence[Input[Resource]]]`), as the resources it names once known."""
    if depends_on is None:
        return pulumi.Output.from_input([])
    if isinstance(depends_on, pulumi.Resource):
        return pulumi.Output.from_input([depends_on])
    return pulumi.Output.from_input(depends_on).apply(lambda given: list(given or []))


def _urns(resources: list[pulumi.Resource]) -> pulumi.Output[list[str]]:
    return pulumi.Output.all(*(resource.urn for resource in resources))


class Declarations:
    """Every resource the program constructs, in order, seen by a stack transformation while `open`.

    The root stack resource that holds the transformation outlives the run: whatever a later caller
    builds on it in this process is not the program's.
    """

    def __init__(self) -> None:
        self.declared: list[Declared] = []
        self.protected: dict[pulumi.Resource, bool] = {}
        self.names: set[tuple[str, str]] = set()
        self.open = True

    def __call__(self, args: pulumi.ResourceTransformationArgs) -> None:
        if not self.open:
            return
        key = (args.type_, args.name)
        if key in self.names:
            raise ValueError(
                f"two resources of type {args.type_} are named {args.name}: stackctl tells them apart by both"
            )
        self.names.add(key)
        opts = args.opts
        root = pulumi.runtime.get_root_resource()
        assert root is not None, "the mocks create the root stack resource"
        # The SDK's rule (pulumi/resource.py, `Resource.__init__`): an unset `protect` is that of the parent the
        # options name. A transformation runs before the SDK applies it, and the SDK keeps the result only where
        # the public API cannot read it (`Resource._protect`, and the engine's request, which the mock monitor
        # does not pass on), so it is applied here; tests/offline/test_mock_runtime.py holds it to what the SDK sends.
        inherited = self.protected.get(opts.parent, False) if opts.parent is not None else False
        protect = inherited if opts.protect is None else opts.protect
        self.protected[args.resource] = protect
        self.declared.append(
            Declared(
                type=args.type_,
                name=args.name,
                resource=args.resource,
                parent=root if opts.parent is None else opts.parent,
                protect=protect,
                retain_on_delete=bool(opts.retain_on_delete),
                depends_on=depends_on_resources(opts.depends_on),
            )
        )

    def registered(self, mocks: EchoMocks, on_done: Callable[[list[Registered]], None]) -> pulumi.Output[None]:
        """Calls `on_done` with every resource as the engine received it, once every URN is known."""

        def urns(declared: Declared) -> pulumi.Output[list[str]]:
            dependencies: pulumi.Output[list[str]] = declared.depends_on.apply(_urns)
            return pulumi.Output.all(declared.resource.urn, declared.parent.urn, dependencies)

        def record(resolved: list[list[str]]) -> None:
            records = []
            for declared, (urn, parent, dependencies) in zip(self.declared, resolved, strict=True):
                received = mocks.received[(declared.type, declared.name)]
                records.append(
                    Registered(
                        urn=urn,
                        type=declared.type,
                        name=declared.name,
                        parent=parent,
                        custom=bool(received.custom),
                        provider=received.provider or "",
                        protect=declared.protect,
                        retain_on_delete=declared.retain_on_delete,
                        dependencies=tuple(dependencies),
                        # Secrets unwrapped: in a mock run they are placeholders, never decrypted values.
                        inputs={k: revealed(v) for k, v in received.inputs.items()},
                    )
                )
            on_done(records)

        return pulumi.Output.all(*(urns(d) for d in self.declared)).apply(record)


@contextmanager
def program_environment(variables: Mapping[str, str]) -> Iterator[None]:
    """`variables` set in this process's environment while the program runs; the earlier values afterwards."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_program(
    stack: str,
    flat_config: Mapping[str, str],
    secret_keys: Sequence[str],
    environment: Mapping[str, str] | None = None,
    mocks: EchoMocks | None = None,
) -> list[Registered]:
    """Execute `__main__.py` for `stack` under mocks; return every resource it registered, in order.

    The config reaches the program as the language host passes it, in PULUMI_CONFIG and
    PULUMI_CONFIG_SECRET_KEYS; `environment` adds variables of its own for the run.
    """
    mocks = mocks or EchoMocks()
    variables = {
        "PULUMI_CONFIG": json.dumps(dict(flat_config)),
        "PULUMI_CONFIG_SECRET_KEYS": json.dumps(list(secret_keys)),
        **(environment or {}),
    }
    registered: list[Registered] = []
    declarations = Declarations()

    def program() -> pulumi.Output[None]:
        pulumi.runtime.register_stack_transformation(declarations)
        runpy.run_path(str(PROGRAM), run_name="__main__")
        return declarations.registered(mocks, registered.extend)

    with program_environment(variables):
        # As the host's executor does: the config from the environment, then a fresh root stack resource.
        pulumi.runtime.set_all_config(pulumi.runtime.get_config_env(), pulumi.runtime.get_config_secret_keys_env())
        pulumi.runtime.reset_options(project=PROJECT, stack=stack)
        pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, logger=PROGRAM_LOG)
        try:
            run_test(program)()
        finally:
            declarations.open = False
    return registered
