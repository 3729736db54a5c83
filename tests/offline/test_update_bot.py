"""renovate.json: the update bot's config finds every version it claims to. Each custom manager's patterns match
at least one file, and each of its match strings finds a version there (Renovate's JavaScript named groups read
as Python's), so a file that moves or a constant renamed fails here rather than leaving a pin un-updated."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from offline.chart_template import HELM_VERSION
from offline.image_digests import CRANE_VERSION
from platform_config.paths import PROJECT_ROOT

CONFIG: dict[str, Any] = json.loads((PROJECT_ROOT / "renovate.json").read_text())
TRACKED = [
    str(path.relative_to(PROJECT_ROOT))
    for path in PROJECT_ROOT.rglob("*")
    if path.is_file()
    and not any(
        part.startswith(".") and part not in (".go-version", ".github")
        for part in path.parts[len(PROJECT_ROOT.parts) :]
    )
]


def files(patterns: list[str]) -> list[str]:
    """The project files a manager's `managerFilePatterns` (`/regex/`) select."""
    regexes = [re.compile(pattern.strip("/")) for pattern in patterns]
    return sorted(path for path in TRACKED if any(regex.search(path) for regex in regexes))


def found(manager: dict[str, Any]) -> list[tuple[str, str]]:
    """(file, version) for each version each match string finds in the manager's files."""
    hits = []
    for match_string in manager["matchStrings"]:
        regex = re.compile(match_string.replace("(?<", "(?P<"), re.MULTILINE)
        versions = [
            (path, hit["currentValue"])
            for path in files(manager["managerFilePatterns"])
            for hit in regex.finditer((PROJECT_ROOT / path).read_text())
        ]
        assert versions, f"{manager['description']}: {match_string!r} finds nothing"
        hits += versions
    return hits


@pytest.mark.parametrize("manager", CONFIG["customManagers"], ids=lambda m: m["description"][:40])
def test_every_custom_manager_finds_its_versions(manager: dict[str, Any]) -> None:
    assert found(manager)


def test_the_images_the_components_run_are_all_tracked() -> None:
    images = next(m for m in CONFIG["customManagers"] if m["datasourceTemplate"] == "docker")
    tracked = {f"{path}: {version}" for path, version in found(images)}
    assert "components/triton_platform/serving/triton_serving_args.py: 24.10-py3" in tracked
    assert len(tracked) >= 5  # Triton, the loader, the device plugin, DCGM exporter, pause


def test_each_cluster_autoscaler_minor_is_tracked_within_its_minor() -> None:
    from triton_platform.gpu_pool.gpu_node_pool_args import CLUSTER_AUTOSCALER_RELEASES  # noqa: PLC0415

    manager = next(m for m in CONFIG["customManagers"] if m.get("depNameTemplate", "").endswith("/cluster-autoscaler"))
    assert sorted(version for _, version in found(manager)) == sorted(CLUSTER_AUTOSCALER_RELEASES.values())
    [rule] = [r for r in CONFIG["packageRules"] if manager["depNameTemplate"] in r["matchDepNames"]]
    assert (rule["matchUpdateTypes"], rule["enabled"]) == (["major", "minor"], False)


def test_a_manager_that_finds_nothing_fails() -> None:
    stale = {
        "description": "gone",
        "managerFilePatterns": ["/^Makefile$/"],
        "matchStrings": ["NO_SUCH := (?<currentValue>v.+)"],
    }
    with pytest.raises(AssertionError, match="gone: 'NO_SUCH"):
        found(stale)


def test_the_locks_and_the_other_requirements_are_tracked() -> None:
    assert files(CONFIG["pip-compile"]["managerFilePatterns"]) == ["requirements-dev.lock", "requirements.lock"]
    assert files(CONFIG["pip_requirements"]["managerFilePatterns"]) == [
        "manifest_scan/requirements.txt",
        "policy/requirements.txt",
    ]
    assert Path(PROJECT_ROOT / ".github" / "workflows").is_dir()  # github-actions: Renovate's own manager
    assert "helpers:pinGitHubActionDigests" in CONFIG["extends"]


def test_crane_and_the_deploys_helm_are_tracked_at_one_version_each() -> None:
    """crane's version is the Makefile's and stackctl's (which names it in its install hint); the deploy workflow
    builds the Helm the Makefile does: each manager finds one version in all its files, so Renovate moves them
    together."""
    crane = next(
        m for m in CONFIG["customManagers"] if m.get("depNameTemplate") == "github.com/google/go-containerregistry"
    )
    assert found(crane) == [("Makefile", CRANE_VERSION), ("offline/image_digests.py", CRANE_VERSION)]
    helm = next(m for m in CONFIG["customManagers"] if m.get("depNameTemplate") == "helm.sh/helm/v3")
    assert sorted(found(helm)) == [(".github/workflows/deploy-stack.yml", HELM_VERSION), ("Makefile", HELM_VERSION)]
