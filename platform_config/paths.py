"""Where the project's files are, and how paths appear in messages."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL_REPO = Path(os.environ.get("TRITON_PLATFORM_MODEL_REPO", PROJECT_ROOT / "model_repo"))
"""The project's model_repo/, or the folder TRITON_PLATFORM_MODEL_REPO names (benchmarks, CI of another repo)."""


def display_path(path: Path) -> str:
    """A path as a user should read it: relative to the project when inside it."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)
