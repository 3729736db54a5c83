"""Where the project's files are, and how paths appear in messages."""

from __future__ import annotations

import os
from pathlib import Path

from triton_platform.args.input_files import InputKind

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STACKS_DIR = PROJECT_ROOT / "stacks"
"""Where `Pulumi.<stack>.yaml` files live (Pulumi.yaml's `stackConfigDir`)."""


def stack_file(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


DEFAULT_MODEL_REPO = Path(os.environ.get("TRITON_PLATFORM_MODEL_REPO", PROJECT_ROOT / "model_repo"))
"""The project's model_repo/, or the folder TRITON_PLATFORM_MODEL_REPO names (benchmarks, CI of another repo)."""
STACK_FILE = InputKind("stack file", 256 * 1024)
"""The largest committed stack (production, two deployments and four models, every section written out) is 12 KB:
256 KiB is twenty times that, more than any real stack writes. The YAML reader is pure Python (yaml12.py): on a
busy machine it took about 20 s for 1 MiB, and a 50 MB file took 94 s before this bound."""


def display_path(path: Path) -> str:
    """A path as a user should read it: relative to the project when inside it."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)
    except (RuntimeError, OSError):
        # A symlink loop: Python 3.11's resolve() raises RuntimeError (3.13's OSError); the reader names the loop.
        return str(path)
