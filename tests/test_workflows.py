"""The GitHub workflows deploy the way docs/environments.md says: the pinned stock CLI, a preview before approval, nothing secret uploaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from platform_config.paths import PROJECT_ROOT

WORKFLOWS = sorted((PROJECT_ROOT / ".github" / "workflows").glob("*.yml"))
PIN = next(
    line.removeprefix("pulumi==")
    for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines()
    if line.startswith("pulumi==")
)


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    assert isinstance(document, dict)
    return document


def steps(path: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(job, step) for job, spec in load(path)["jobs"].items() for step in spec.get("steps", [])]


def pulumi_steps(path: Path) -> dict[str, dict[str, Any]]:
    found = {job: step["with"] for job, step in steps(path) if str(step.get("uses", "")).startswith("pulumi/actions@")}
    return found


def test_every_pulumi_action_installs_the_pinned_cli() -> None:
    used = [(path.name, job, spec) for path in WORKFLOWS for job, spec in pulumi_steps(path).items()]
    assert used, "no workflow runs pulumi/actions"
    for name, job, spec in used:
        assert str(spec.get("pulumi-version")) == PIN, f"{name} job {job}: pulumi-version {spec.get('pulumi-version')}"


def test_no_workflow_builds_the_offline_toolchain_to_deploy() -> None:
    deploy = PROJECT_ROOT / ".github" / "workflows" / "deploy-stack.yml"
    text = deploy.read_text()
    for offline in ("pulumi-toolchain", "setup-go", "make up"):
        assert offline not in text


def test_production_is_approved_after_a_policy_checked_preview_and_up_refreshes() -> None:
    deploy = PROJECT_ROOT / ".github" / "workflows" / "deploy-stack.yml"
    jobs = load(deploy)["jobs"]
    assert jobs["up"]["needs"] == "preview"
    # The reviewers' environment gates `up` only: the preview runs before anyone approves.
    assert jobs["up"]["environment"] == "${{ inputs.stack }}"
    assert jobs["preview"]["environment"] == "${{ inputs.stack }}-preview"
    actions = pulumi_steps(deploy)
    assert actions["preview"]["command"] == "preview"
    assert actions["up"]["command"] == "up"
    for job in ("preview", "up"):
        assert actions[job]["policyPacks"] == "policy"
        assert actions[job]["refresh"] is True
    up_steps = [step.get("run", "") for job, step in steps(deploy) if job == "up"]
    assert any("stackctl publish-models" in run for run in up_steps), "the model repository is not published"


def test_nothing_rendered_is_uploaded() -> None:
    """Render mode writes Secrets in plain text: no workflow uploads a rendered folder."""
    for path in WORKFLOWS:
        for job, step in steps(path):
            if str(step.get("uses", "")).startswith("actions/upload-artifact@"):
                assert "rendered" not in str(step.get("with", {}).get("path", "")), f"{path.name} job {job}"
