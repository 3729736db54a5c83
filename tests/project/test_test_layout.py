"""The tests mirror the source tree (docs/testing.md, "Where a test lives"): a test file sits in the folder of the
source path it tests, or in one of the folders for what no one module owns."""

from __future__ import annotations

from pathlib import Path

from platform_config.paths import PROJECT_ROOT

OWN_FOLDERS = ("cluster", "project")
"""Tests of no one module: the local control plane and real servers end to end; the repository as a whole."""


def misplaced(root: Path) -> list[str]:
    """Each test file under `root`/tests whose folder is neither a source folder of `root` nor one of OWN_FOLDERS."""
    tests = root / "tests"
    out = []
    for test in sorted(tests.rglob("test_*.py")):
        folder = test.parent.relative_to(tests)
        if folder.parts and folder.parts[0] in OWN_FOLDERS:
            continue
        if folder == Path(".") or not (root / folder).is_dir():
            out.append(
                f"{test.relative_to(root)}: no source folder {folder.as_posix()}/ to mirror; put it under the "
                f"folder of the source it tests, or in tests/{{{','.join(OWN_FOLDERS)}}}/"
            )
    return out


def test_every_test_file_mirrors_a_source_folder() -> None:
    assert len(list((PROJECT_ROOT / "tests").rglob("test_*.py"))) > 100
    assert misplaced(PROJECT_ROOT) == []


def test_a_test_outside_the_mirror_is_named(tmp_path: Path) -> None:
    (tmp_path / "simulator").mkdir()
    for path in (
        "tests/test_top.py",
        "tests/simulator/test_ok.py",
        "tests/planner/test_gone.py",
        "tests/cluster/test_e2e.py",
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert misplaced(tmp_path) == [
        "tests/planner/test_gone.py: no source folder planner/ to mirror; put it under the folder of the source it "
        "tests, or in tests/{cluster,project}/",
        "tests/test_top.py: no source folder ./ to mirror; put it under the folder of the source it tests, or in "
        "tests/{cluster,project}/",
    ]
