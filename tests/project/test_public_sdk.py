"""The project uses the Pulumi SDK's public API only: no `_`-prefixed name, no module `pulumi.runtime` does not export.

What `pulumi.runtime` exports (its `__all__`) is public, but for `pulumi.runtime.rpc`: its `__all__` names that
submodule, yet it is the SDK's wire format, what it and the engine exchange; what a program needs of it
`pulumi.runtime` exports itself. A `_` name (of `pulumi` or a `pulumi_*` provider SDK) or a module path such as
`pulumi.runtime.config` read directly is the SDK's internals, which change without notice. Stack transformations
are refused too: Pulumi deprecates them in favour of transforms (`pulumi.runtime.register_resource_transform`).
tests/ is not scanned: component tests read registrations back through the `MockMonitor` that
`pulumi.runtime.set_mocks` accepts, which only `pulumi.runtime.mocks` names.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterator
from pathlib import PurePosixPath

import pulumi.runtime

from platform_config.paths import PROJECT_ROOT

RUNTIME = "pulumi.runtime"
EXPORTED = frozenset(pulumi.runtime.__all__)
NOT_SCANNED = ("tests", ".venv", ".tools")
PLUGIN_PROTOCOL = "pulumi.runtime.proto"
"""The generated stubs of Pulumi's gRPC plugin protocol: a plugin speaks it, and the SDK is where Pulumi ships them."""
PLUGINS = "toolchain"
"""The offline toolchain's own plugins (toolchain/): the only code that speaks the plugin protocol."""
WIRE_FORMAT = "pulumi.runtime.rpc"
"""The SDK's (de)serialization of properties for the engine (secrets as signature-keyed maps, unknowns, resource
references): exported as a submodule, but the wire format, not an API."""
TRANSFORMATIONS = frozenset(
    {
        "register_stack_transformation",
        "register_stack_transform",
        "ResourceTransformation",
        "ResourceTransformationArgs",
        "ResourceTransformationResult",
    }
)
"""Stack transformations and their types, which Pulumi deprecates in favour of transforms; `register_stack_transform`
is the SDK's deprecated name for `register_resource_transform` (pulumi/runtime/stack.py)."""
STILL_ON_TRANSFORMATIONS = {
    "offline/mock_runtime.py": "under mocks nothing runs a resource transform, and what the mocks are given holds no "
    "parent, URN, protect or depends_on: a stack transformation is the only public hook that sees them",
}
"""The only modules allowed stack transformations, each with its reason (the SDK offers no public alternative)."""


def _is_pulumi(dotted: str) -> bool:
    top = dotted.split(".", 1)[0]
    return top == "pulumi" or top.startswith("pulumi_")


def _problem(path: str, dotted: str) -> str | None:
    """Why `dotted`, a name `path` imports or reads from a Pulumi package, is not public; None when it is."""
    parts = dotted.split(".")
    private = next((p for p in parts if p.startswith("_") and not p.startswith("__")), None)
    if private is not None:
        return f"{dotted}: {private!r} is a `_`-prefixed name, the SDK's internals; use its public API"
    speaks_the_protocol = dotted == PLUGIN_PROTOCOL or dotted.startswith(PLUGIN_PROTOCOL + ".")
    if speaks_the_protocol and PurePosixPath(path).parts[0] == PLUGINS:
        return None
    if dotted == WIRE_FORMAT or dotted.startswith(WIRE_FORMAT + "."):
        return (
            f"{dotted}: pulumi.runtime.rpc is the SDK's wire format, not its API; use the names pulumi.runtime exports"
        )
    transformation = _transformation(dotted)
    if transformation is not None and path not in STILL_ON_TRANSFORMATIONS:
        return (
            f"{dotted}: {transformation!r} is deprecated in favour of transforms; "
            "use pulumi.runtime.register_resource_transform"
        )
    if dotted.startswith(RUNTIME + ".") and parts[2] not in EXPORTED:
        return f"{dotted}: pulumi.runtime does not export {parts[2]!r}; use the names it exports (its __all__)"
    return None


def _transformation(dotted: str) -> str | None:
    """The stack transformations' name that `dotted`, a Pulumi name, reaches; None when it reaches none."""
    return next((part for part in dotted.split(".")[1:] if part in TRANSFORMATIONS), None)


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` for an attribute chain on a plain name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _bound_names(tree: ast.AST) -> dict[str, str]:
    """What each name the module's imports bind stands for: `k8s` -> `pulumi_kubernetes`, `Output` -> `pulumi.Output`."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".", 1)[0]
                bound[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            bound.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
    return bound


def _used_names(tree: ast.AST) -> Iterator[tuple[int, list[str]]]:
    """Each Pulumi name a statement or expression uses, with its line, the widest first: a module before the
    names imported from it, an attribute chain whole and under the name its import gives."""
    bound = _bound_names(tree)
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, [alias.name]) for alias in node.names if _is_pulumi(alias.name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _is_pulumi(node.module):
            names = [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
            yield node.lineno, [node.module, *names]
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            dotted = _dotted(node)
            if dotted is not None:
                first, _, rest = dotted.partition(".")
                resolved = f"{bound.get(first, first)}.{rest}"
                if _is_pulumi(resolved):
                    yield node.lineno, [resolved]


def private_sdk_uses(path: str, source: str) -> list[str]:
    """`path:line: problem` for every non-public Pulumi SDK name the module `path` uses.

    An import from a module that is itself not public is named once, by the module."""
    found: list[tuple[int, str]] = []
    for line, dotted_names in _used_names(ast.parse(source, path)):
        module_problem = _problem(path, dotted_names[0])
        problems = [module_problem] if module_problem else [_problem(path, d) for d in dotted_names[1:]]
        found.extend((line, p) for p in problems if p)
    return [f"{path}:{line}: {problem}" for line, problem in sorted(found)]


def scanned_files() -> list[str]:
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.py"], cwd=PROJECT_ROOT, capture_output=True, check=True, text=True
    ).stdout.split("\0")
    return [p for p in tracked if p and PurePosixPath(p).parts[0] not in NOT_SCANNED]


def test_the_project_uses_only_the_public_sdk() -> None:
    files = scanned_files()
    assert "offline/mock_runtime.py" in files
    problems = [p for f in files for p in private_sdk_uses(f, (PROJECT_ROOT / f).read_text(encoding="utf-8"))]
    assert problems == []


def test_internals_are_named_with_their_line() -> None:
    source = "\n".join(
        [
            "import pulumi",
            "import pulumi.runtime.settings",
            "from pulumi.runtime import config as runtime_config, set_mocks",
            "from pulumi.runtime.sync_await import _sync_await",
            "from pulumi.runtime.proto import provider_pb2",
            "from pulumi.output import Output, _OutputData",
            "flat = pulumi.runtime.config.CONFIG.get()",
            "pulumi.runtime.rpc.unwrap_rpc_secret(flat)",
            "pulumi.Output._from_data(flat)",
            "import pulumi_kubernetes as k8s",
            "k8s._utilities.get_version()",
            "Output._from_data(flat)",
        ]
    )
    assert private_sdk_uses("stackctl/x.py", source) == [
        "stackctl/x.py:2: pulumi.runtime.settings: pulumi.runtime does not export 'settings'; "
        "use the names it exports (its __all__)",
        "stackctl/x.py:3: pulumi.runtime.config: pulumi.runtime does not export 'config'; "
        "use the names it exports (its __all__)",
        "stackctl/x.py:4: pulumi.runtime.sync_await: pulumi.runtime does not export 'sync_await'; "
        "use the names it exports (its __all__)",
        "stackctl/x.py:5: pulumi.runtime.proto: pulumi.runtime does not export 'proto'; "
        "use the names it exports (its __all__)",
        "stackctl/x.py:6: pulumi.output._OutputData: '_OutputData' is a `_`-prefixed name, the SDK's internals; "
        "use its public API",
        "stackctl/x.py:7: pulumi.runtime.config.CONFIG.get: pulumi.runtime does not export 'config'; "
        "use the names it exports (its __all__)",
        "stackctl/x.py:8: pulumi.runtime.rpc.unwrap_rpc_secret: pulumi.runtime.rpc is the SDK's wire format, "
        "not its API; use the names pulumi.runtime exports",
        "stackctl/x.py:9: pulumi.Output._from_data: '_from_data' is a `_`-prefixed name, the SDK's internals; "
        "use its public API",
        "stackctl/x.py:11: pulumi_kubernetes._utilities.get_version: '_utilities' is a `_`-prefixed name, "
        "the SDK's internals; use its public API",
        "stackctl/x.py:12: pulumi.output.Output._from_data: '_from_data' is a `_`-prefixed name, the SDK's "
        "internals; use its public API",
    ]


def test_only_the_toolchain_plugins_speak_the_plugin_protocol() -> None:
    source = "from pulumi.runtime.proto import provider_pb2\n"
    assert private_sdk_uses("toolchain/random_provider.py", source) == []


def test_the_wire_format_is_refused_however_it_is_reached() -> None:
    """`pulumi.runtime` exports `rpc` as a submodule; it is refused imported, bound or read through an attribute."""
    source = "\n".join(
        [
            "import pulumi.runtime.rpc",
            "import pulumi.runtime.rpc as wire",
            "from pulumi.runtime import rpc, set_mocks",
            "from pulumi.runtime.rpc import unwrap_rpc_secret",
            "from pulumi import runtime",
            "runtime.rpc.is_rpc_secret(value)",
            "wire.wrap_rpc_secret(value)",
            "pulumi.runtime.register_resource_module('pkg', 'mod', module)",
        ]
    )
    refused = "pulumi.runtime.rpc is the SDK's wire format, not its API; use the names pulumi.runtime exports"
    assert private_sdk_uses("offline/x.py", source) == [
        f"offline/x.py:1: pulumi.runtime.rpc: {refused}",
        f"offline/x.py:2: pulumi.runtime.rpc: {refused}",
        f"offline/x.py:3: pulumi.runtime.rpc: {refused}",
        f"offline/x.py:4: pulumi.runtime.rpc: {refused}",
        f"offline/x.py:6: pulumi.runtime.rpc.is_rpc_secret: {refused}",
        f"offline/x.py:7: pulumi.runtime.rpc.wrap_rpc_secret: {refused}",
    ]


TRANSFORMATION_SOURCE = "\n".join(
    [
        "import pulumi",
        "from pulumi import ResourceTransformationArgs, ResourceTransformArgs",
        "def record(args: pulumi.ResourceTransformationArgs) -> None: ...",
        "pulumi.runtime.register_stack_transformation(record)",
        "pulumi.runtime.register_stack_transform(record)",
        "pulumi.runtime.register_resource_transform(record)",
    ]
)


def test_stack_transformations_are_refused() -> None:
    assert private_sdk_uses("program/x.py", TRANSFORMATION_SOURCE) == [
        "program/x.py:2: pulumi.ResourceTransformationArgs: 'ResourceTransformationArgs' is deprecated in favour "
        "of transforms; use pulumi.runtime.register_resource_transform",
        "program/x.py:3: pulumi.ResourceTransformationArgs: 'ResourceTransformationArgs' is deprecated in favour "
        "of transforms; use pulumi.runtime.register_resource_transform",
        "program/x.py:4: pulumi.runtime.register_stack_transformation: 'register_stack_transformation' is "
        "deprecated in favour of transforms; use pulumi.runtime.register_resource_transform",
        "program/x.py:5: pulumi.runtime.register_stack_transform: 'register_stack_transform' is deprecated in "
        "favour of transforms; use pulumi.runtime.register_resource_transform",
    ]


def test_only_a_module_named_with_its_reason_uses_stack_transformations() -> None:
    """Each module allowed them still needs them: one that no longer does leaves the list."""
    assert private_sdk_uses(next(iter(STILL_ON_TRANSFORMATIONS)), TRANSFORMATION_SOURCE) == []
    for path in STILL_ON_TRANSFORMATIONS:
        tree = ast.parse((PROJECT_ROOT / path).read_text(encoding="utf-8"), path)
        used = {_transformation(d) for _, names in _used_names(tree) for d in names} - {None}
        assert used, f"{path} uses no stack transformation: take it out of STILL_ON_TRANSFORMATIONS"
