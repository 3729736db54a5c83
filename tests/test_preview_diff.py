"""scripts/preview-diff on two commits of a fixture repository, with the real CLI; and its report rules."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT
from stackctl import preview_diff
from stackctl.preview_diff import Change, changes, markdown, tuning_changes
from tests.local_cluster import edit_stack, use_offline_charts
from tests.pulumi_cli import PULUMI_HOME, TOOLS_BIN, pulumi_binary


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=fixture", "-c", "user.email=fixture@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project as commit 1; commit 2 retunes batching and scaling and moves production's model storage."""
    repo = tmp_path_factory.mktemp("fixture") / "repo"
    preview_diff.export_tree(PROJECT_ROOT, None, repo)
    for venv in (".venv", "policy/.venv"):
        (repo / venv).unlink()
    production = repo / "stacks" / "Pulumi.production.yaml"
    # Production's charts from the offline chart folders: no chart repository can be reached here.
    edit_stack(production, use_offline_charts)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    edit(production, "maxQueueDelayMicroseconds: 5000", "maxQueueDelayMicroseconds: 8000")
    edit(production, "queueDepthTarget: 10", "queueDepthTarget: 20")
    edit(production, "storageClassName: shared-rwx", "storageClassName: shared-rwx-v2")
    git(repo, "commit", "-q", "-am", "retune production; move its model storage")
    return repo


@pytest.fixture(scope="module")
def reports(fixture_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("preview-diff")
    env = {**os.environ, "PATH": f"{TOOLS_BIN}{os.pathsep}{os.environ['PATH']}", "PULUMI_HOME": str(PULUMI_HOME)}
    pulumi_binary()
    result = subprocess.run(
        [
            str(PROJECT_ROOT / ".venv" / "bin" / "python"),
            "-m",
            "stackctl.preview_diff",
            "--repo",
            str(fixture_repo),
            "--base",
            "HEAD~1",
            "--head",
            "HEAD",
            "--out",
            str(out),
            "dev",
            "production",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    # Production's preview fails (protected storage cannot be replaced): exit 2, every report written.
    assert result.returncode == 2, result.stdout + result.stderr
    assert "pulumi preview fails for production" in result.stderr
    assert result.stdout.split() == [str(out / "dev.md"), str(out / "production.md")]
    return {p.stem: p.read_text() for p in out.glob("*.md")}


def test_an_unchanged_stack_reports_no_changes(reports: dict[str, str]) -> None:
    assert "No changes." in reports["dev"]
    assert "CAUTION" not in reports["dev"]
    assert "Batching and scaling" not in reports["dev"]


def test_replacing_protected_model_storage_is_flagged_loudly(reports: dict[str, str]) -> None:
    report = reports["production"]
    caution = report[report.index("> [!CAUTION]") : report.index("\n\n", report.index("> [!CAUTION]"))]
    assert "**replace** `kubernetes:core/v1:PersistentVolumeClaim`" in caution
    assert "protected; retained on delete; model storage" in caution
    assert "| replace ⚠️ | `kubernetes:core/v1:PersistentVolumeClaim` |" in report
    assert "`spec.storageClassName`" in report or "`spec`" in report


def test_batching_and_scaling_changes_are_side_by_side(reports: dict[str, str]) -> None:
    report = reports["production"]
    assert '| `models.classifier.dynamicBatching.maxQueueDelayMicroseconds` | `"5000"` | `"8000"` |' in report
    assert "| `triton-platform:scaling.queueDepthTarget` | `10` | `20` |" in report
    # A batching change reaches the pods (new model config) and the scaling change the ScaledObject.
    assert "| update | `kubernetes:keda.sh/v1alpha1:ScaledObject` |" in report
    # And the simulator says what they do to latency and cost, base against head.
    impact = report[report.index("#### Scaling impact") :]
    assert "general/classifier" in impact
    for label in ("p95 ms", "SLO-violation s", "rejected %", "GPU-hours", "reaction s"):
        assert f"| {label} |" in impact


def step(op: str, type_: str, name: str, **state: object) -> dict[str, object]:
    urn = f"urn:pulumi:production::triton-platform::triton-platform:index:TritonPlatform${type_}::{name}"
    return {"op": op, "urn": urn, "diffReasons": ["spec"], "newState": dict(state), "oldState": dict(state)}


def test_replacement_steps_fold_into_one_change_and_sames_are_dropped() -> None:
    steps = [
        step("same", "kubernetes:core/v1:Service", "svc"),
        step("create-replacement", "kubernetes:core/v1:ConfigMap", "cm"),
        step("delete-replaced", "kubernetes:core/v1:ConfigMap", "cm"),
        step("delete", "kubernetes:core/v1:Namespace", "ns"),
    ]
    found = changes(steps)
    assert [(c.op, c.name) for c in found] == [("replace", "cm"), ("delete", "ns")]
    assert found[0].danger is None
    assert found[1].danger == "deleting a namespace deletes every claim in it"


def test_creating_a_protected_resource_is_not_dangerous() -> None:
    found = changes([step("create", "kubernetes:core/v1:PersistentVolumeClaim", "pvc", protect=True)])
    assert found == [Change("create", "kubernetes:core/v1:PersistentVolumeClaim", "pvc", ("spec",), None)]


def test_tuning_ignores_other_settings_and_shows_added_keys() -> None:
    base = {"triton-platform:serving.p95LatencySloMs": "200", "models.ranker.maxBatchSize": "16"}
    head = {"triton-platform:serving.p95LatencySloMs": "150", "models.ranker.maxBatchSize": "32"}
    head["triton-platform:scaling.cooldownSeconds"] = "60"
    assert tuning_changes(base, head) == [
        ("models.ranker.maxBatchSize", "16", "32"),
        ("triton-platform:scaling.cooldownSeconds", "—", "60"),
    ]


def test_markdown_counts_every_operation() -> None:
    found = [Change("update", "kubernetes:apps/v1:Deployment", "general", ("spec",), None)]
    text = markdown("staging", found, [], ["note"])
    assert "0 to create · 1 to update · 0 to replace · 0 to delete" in text
    assert text.endswith("_note_\n")


def test_scratch_runs_use_the_local_passphrase_dev_is_salted_for() -> None:
    assert (
        f'PULUMI_CONFIG_PASSPHRASE="{preview_diff.LOCAL_PASSPHRASE}"'
        in (PROJECT_ROOT / "scripts/pulumi-env").read_text()
    )
    assert "encryptionsalt: v1:" in (PROJECT_ROOT / "stacks/Pulumi.dev.yaml").read_text()
