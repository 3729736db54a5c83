"""`python -m tests.package_schema`: rewrite components/schema.json, the component package's public interface,
from what `pulumi package get-schema` infers (the offline toolchain: `make tools` first).

tests/test_component_package.py fails while the committed file differs, so a change to any component's Args
or outputs is a reviewed diff of this file.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from platform_config.paths import PROJECT_ROOT
from tests.pulumi_cli import component_virtualenv, package_schema

PACKAGE = PROJECT_ROOT / "components"
SCHEMA = PACKAGE / "schema.json"


def package_copy(root: Path) -> Path:
    """A copy of the package whose PulumiPlugin.yaml names a virtualenv of its own that imports the project's
    packages (tests/pulumi_cli.py `component_virtualenv`), with no requirements.txt: that virtualenv already
    has every dependency, and the package itself (the project installs it editable)."""
    package = root / "components"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("venv", "__pycache__", "*.egg-info", "schema.json"))
    (package / "requirements.txt").unlink()
    plugin = yaml.safe_load((package / "PulumiPlugin.yaml").read_text())
    plugin["runtime"]["options"]["virtualenv"] = str(component_virtualenv(root / "venv"))
    (package / "PulumiPlugin.yaml").write_text(yaml.safe_dump(plugin))
    return package


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        SCHEMA.write_text(schema_text(package_schema(package_copy(root), root / "cli")))
    print(f"wrote {SCHEMA.relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()
