"""`python -m tests.support.package_schema`: rewrite components/schema.json, the component package's public interface.

The schema is what the Python SDK's component provider infers from the components' type annotations. Two
tests hold the committed file to it: `tests/components/test_package_schema.py` in-process (the SDK's own analyzer, no
CLI, so `make test-fast` fails on a stale file), and `tests/components/test_component_package.py` through
`pulumi package get-schema` (the CLI and Python language host a user runs; the offline toolchain).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from pulumi.provider.experimental.component import ComponentProvider

from platform_config.paths import PROJECT_ROOT
from tests.support.pulumi_cli import component_virtualenv
from triton_platform import COMPONENTS, __version__
from triton_platform.args.component_types import PACKAGE as PACKAGE_NAME

PACKAGE = PROJECT_ROOT / "components"
SCHEMA = PACKAGE / "schema.json"


def package_copy(root: Path) -> Path:
    """A copy of the package whose PulumiPlugin.yaml names a virtualenv of its own that imports the project's
    packages (tests/support/pulumi_cli.py `component_virtualenv`), with no requirements.txt: that virtualenv already
    has every dependency, and the package itself (the project installs it editable)."""
    package = root / "components"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("venv", "__pycache__", "*.egg-info", "schema.json"))
    (package / "requirements.txt").unlink()
    plugin = yaml.safe_load((package / "PulumiPlugin.yaml").read_text())
    plugin["runtime"]["options"]["virtualenv"] = str(component_virtualenv(root / "venv"))
    (package / "PulumiPlugin.yaml").write_text(yaml.safe_dump(plugin))
    return package


def _as_the_cli_prints(node: Any, *, type_spec: bool = False) -> Any:
    """`node` as `pulumi package get-schema` prints it: the CLI reads the provider's schema into Go's
    `schema.PackageSpec`, whose `TypeSpec` (an array's `items`, a map's `additionalProperties`) has no
    description (pkg/codegen/schema/schema.go), so the analyzer's copies of the property's description there
    are dropped; an absent `config` becomes `{}`."""
    if isinstance(node, list):
        return [_as_the_cli_prints(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: _as_the_cli_prints(value, type_spec=key in ("items", "additionalProperties"))
        for key, value in node.items()
        if not (type_spec and key == "description")
    }


def inferred_schema() -> dict[str, Any]:
    """The package's schema, inferred in this process by the SDK's component provider from the same classes
    `components/__main__.py` hosts, in the form the CLI prints."""
    provider = ComponentProvider(list(COMPONENTS), PACKAGE_NAME, version=__version__)
    schema: dict[str, Any] = _as_the_cli_prints(json.loads(provider.schema or "{}"))
    schema.setdefault("config", {})
    return schema


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> None:
    SCHEMA.write_text(schema_text(inferred_schema()))
    print(f"wrote {SCHEMA.relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()
