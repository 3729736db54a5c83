"""What the model repository on disk offers: the names that stack config may refer to."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL_REPO = PROJECT_ROOT / "model_repo"


def model_names(repo: Path) -> set[str]:
    """Models in a Triton model repository: folders that hold a config.pbtxt."""
    if not repo.is_dir():
        return set()
    return {entry.name for entry in repo.iterdir() if (entry / "config.pbtxt").is_file()}
