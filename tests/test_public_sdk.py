"""The project uses the Pulumi SDK's public API only: no `_`-prefixed name, no module `pulumi.runtime` does not export.

What `pulumi.runtime` exports (its `__all__`) is public; a `_` name (of `pulumi` or a `pulumi_*` provider SDK)
or a module path such as `pulumi.runtime.config` read directly is the SDK's internals, which change without
notice. tests/ is not scanned: component tests read registrations back through the `MockMonitor` that
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
    if dotted.startswith(RUNTIME + ".") and parts[2] not in EXPORTED:
        return f"{dotted}: pulumi.runtime does not export {parts[2]!r}; use the names it exports (its __all__)"
    return None


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
