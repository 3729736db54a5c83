"""Where the project's files are, and how paths appear in messages."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def display_path(path: Path) -> str:
    """A path as a user should read it: relative to the project when inside it."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)
