"""The guard in conftest.py: a test not marked `real_tools` cannot start a real tool, so `make test-fast` never does."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from platform_config.paths import PROJECT_ROOT
from tests.conftest import real_tool


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        (["promtool", "check", "rules"], {}, "promtool"),
        (["/usr/local/bin/rclone", "copy"], {}, "/usr/local/bin/rclone"),
        ("pulumi preview --stack dev", {"shell": True}, "pulumi"),
        (["scripts/local-cluster", "start"], {"cwd": PROJECT_ROOT}, "scripts/local-cluster"),
        # Built by `make tools`: a real tool whatever its name.
        (
            [str(PROJECT_ROOT / ".tools/bin/kube-score-v1.20.0"), "score"],
            {},
            str(PROJECT_ROOT / ".tools/bin/kube-score-v1.20.0"),
        ),
        (
            [str(PROJECT_ROOT / "manifest_scan/.venv/bin/checkov")],
            {},
            str(PROJECT_ROOT / "manifest_scan/.venv/bin/checkov"),
        ),
        # The project's own CLI, git and the shell are not.
        ([sys.executable, "-m", "stackctl", "synth"], {}, None),
        (["git", "status", "--porcelain"], {}, None),
        (["/bin/sh", "-c", "mkdir -p models"], {}, None),
        ("ls -l", {"shell": True}, None),
    ],
)
def test_real_tools_are_told_apart(args: Any, kwargs: dict[str, Any], expected: str | None) -> None:
    assert real_tool(args, kwargs) == expected


def test_an_unmarked_test_that_starts_a_real_tool_fails_before_it_starts() -> None:
    with pytest.raises(pytest.fail.Exception) as caught:
        subprocess.run(["promtool", "--version"], capture_output=True, check=False)
    assert str(caught.value) == (
        "tests/project/test_real_tools_guard.py::test_an_unmarked_test_that_starts_a_real_tool_fails_before_it_starts "
        "starts the real tool promtool but is not marked real_tools: add @pytest.mark.real_tools to it "
        "(or `pytestmark = pytest.mark.real_tools` to its module), so that `make test-fast` leaves it out"
    )
