"""The Prometheus tools the monitoring tests run (promtool, amtool), and promtool's rule unit tests (`promtool test
rules`) over rule groups as the PrometheusRule carries them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

INSTALL_HINT = "run `make tools` (apt-get install prometheus prometheus-alertmanager)"


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not on PATH: {INSTALL_HINT}"
    return path


def promtool_test(
    folder: Path, groups: list[dict[str, Any]], tests: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` of `tests` (each a test group: input series and expectations) against `groups`, in
    `folder`; evaluated every minute."""
    (folder / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    spec = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    (folder / "tests.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return subprocess.run(
        [tool("promtool"), "test", "rules", "tests.yaml"], cwd=folder, capture_output=True, text=True, check=False
    )
