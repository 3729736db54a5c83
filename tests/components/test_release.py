"""A release a user can install: the tag `v<version>` of the package's one `__version__`, its CHANGELOG.md section
as the notes (scripts/release-notes), the wheel and schema on the GitHub release, and README install lines of
that tag form against one `REPO` variable."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from platform_config.paths import PROJECT_ROOT
from triton_platform import __version__

SCRIPT = PROJECT_ROOT / "scripts" / "release-notes"
DATED = f"""# Changelog

## [Unreleased]

## [{__version__}] - 2026-12-24

### Added

- Everything.

## [0.0.1] - 2026-01-01

- Older.
"""


def notes(tmp_path: Path, tag: str, changelog: str) -> subprocess.CompletedProcess[str]:
    """scripts/release-notes run in a copy of the files it reads, with `changelog` as CHANGELOG.md."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "release-notes")
    package = tmp_path / "components" / "triton_platform"
    package.mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / "components" / "triton_platform" / "__init__.py", package / "__init__.py")
    (tmp_path / "CHANGELOG.md").write_text(changelog)
    return subprocess.run(
        ["python3", str(tmp_path / "scripts" / "release-notes"), tag], capture_output=True, text=True, check=False
    )


def test_the_notes_are_the_versions_dated_section(tmp_path: Path) -> None:
    run = notes(tmp_path, f"v{__version__}", DATED)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "### Added\n\n- Everything.\n"


@pytest.mark.parametrize(
    ("tag", "changelog", "expected"),
    [
        (
            "v9.9.9",
            DATED,
            f"release-notes: tag 'v9.9.9' is not the package's version: __version__ is '{__version__}', so the tag "
            f"is 'v{__version__}' (set __version__ in components/triton_platform/__init__.py and tag that commit)",
        ),
        (
            __version__,
            DATED,
            f"release-notes: tag '{__version__}' is not the package's version: __version__ is '{__version__}', so "
            f"the tag is 'v{__version__}' (set __version__ in components/triton_platform/__init__.py and tag that "
            "commit)",
        ),
        (
            f"v{__version__}",
            "# Changelog\n\n## [Unreleased]\n\n- Everything.\n",
            f"release-notes: CHANGELOG.md has no section `## [{__version__}] - <YYYY-MM-DD>`; write one",
        ),
        (
            f"v{__version__}",
            f"## [{__version__}] - soon\n\n- Everything.\n",
            f"release-notes: CHANGELOG.md's section {__version__} is dated 'soon', not YYYY-MM-DD",
        ),
        (
            f"v{__version__}",
            f"## [{__version__}] - 2026-12-24\n\n## [0.0.1] - 2026-01-01\n",
            f"release-notes: CHANGELOG.md's section {__version__} is empty",
        ),
    ],
)
def test_a_release_stops_before_anything_is_built(tmp_path: Path, tag: str, changelog: str, expected: str) -> None:
    run = notes(tmp_path, tag, changelog)
    assert run.returncode == 1
    assert run.stderr == expected + "\n"
    assert run.stdout == ""


def test_the_release_workflow_checks_the_tag_first_and_attaches_the_wheel_and_schema() -> None:
    workflow = yaml.safe_load((PROJECT_ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert workflow[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key `on` as true
    job = workflow["jobs"]["release"]
    assert job["permissions"] == {"contents": "write"}
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs[0] == 'scripts/release-notes "$GITHUB_REF_NAME" > release-notes.md'
    assert "--wheel-dir dist ./components" in runs[1]
    assert "dist/*.whl components/schema.json" in runs[2]
    assert "--notes-file release-notes.md" in runs[2]


def test_the_readme_installs_the_current_release_from_one_repo_variable() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert len(re.findall(r"^REPO=", readme, re.MULTILINE)) == 1
    assert "<org>" not in readme
    installs = re.findall(r"(?:pip install \"git\+https://|pulumi package add )\$REPO\S*", readme)
    assert len(installs) == 3
    for line in installs:
        assert re.search(rf"@v{re.escape(__version__)}\b", line), line


def test_the_package_is_apache_licensed_and_versioned_once() -> None:
    assert (PROJECT_ROOT / "LICENSE").read_text().split()[:3] == ["Apache", "License", "Version"]
    assert (PROJECT_ROOT / "components" / "LICENSE").resolve() == (PROJECT_ROOT / "LICENSE").resolve()
    project = tomllib.loads((PROJECT_ROOT / "components" / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["dynamic"] == ["version"]  # read from __version__ (tool.hatch.version)
