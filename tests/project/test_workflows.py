"""The GitHub workflows deploy the way docs/environments.md and docs/ci.md say: the pinned stock CLI, a preview before approval, nothing secret uploaded, keyless cloud logins."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.chart_template import HELM_VERSION
from offline.image_digests import CRANE_VERSION
from platform_config.paths import PROJECT_ROOT
from tests.conftest import STACKS

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


# --- Keyless CI: GitHub OIDC to each stack's cloud (docs/ci.md) ----------------------------------------------------

ACTIONS = sorted((PROJECT_ROOT / ".github" / "actions").glob("*/action.yml"))
CLUSTER_CREDENTIALS = "./.github/actions/cluster-credentials"
CREDENTIALS_ACTION = PROJECT_ROOT / CLUSTER_CREDENTIALS / "action.yml"
DEFAULT_BRANCH_GUARD = "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)"
LONG_LIVED_SECRET = re.compile(
    r"AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|GOOGLE_APPLICATION_CREDENTIALS_JSON|GOOGLE_CREDENTIALS"
    r"|AZURE_CLIENT_SECRET|AZURE_CREDENTIALS|.*_KEY_JSON"
)
"""Secret names that hold a cloud key: no workflow or action may read or declare one."""
KEY_INPUTS = {
    "aws-actions/configure-aws-credentials": {"aws-access-key-id", "aws-secret-access-key", "aws-session-token"},
    "google-github-actions/auth": {"credentials_json"},
    "azure/login": {"creds"},
}
"""The inputs through which each login action takes a long-lived key instead of the OIDC token."""
UPSTREAM_INPUTS = {
    # action.yml of aws-actions/configure-aws-credentials v6.2.3 (those this project may use)
    "aws-actions/configure-aws-credentials": {"role-to-assume", "aws-region", "role-duration-seconds", "audience"},
    # action.yml of google-github-actions/auth v3.0.0
    "google-github-actions/auth": {"workload_identity_provider", "service_account", "project_id", "audience"},
    # action.yml of google-github-actions/get-gke-credentials v3.0.0
    "google-github-actions/get-gke-credentials": {"cluster_name", "location", "project_id", "context_name"},
    # action.yml of Azure/login v3.0.1
    "azure/login": {"client-id", "tenant-id", "subscription-id"},
    # action.yml of Azure/use-kubelogin v1.3
    "azure/use-kubelogin": {"kubelogin-version"},
}
"""Inputs checked against each action's own action.yml at the release its pin names."""
CLOUD_STEPS = {
    "aws-actions/configure-aws-credentials": ("aws", {"role-to-assume", "aws-region"}),
    "google-github-actions/auth": ("gcp", {"workload_identity_provider", "service_account"}),
    "google-github-actions/get-gke-credentials": ("gcp", {"cluster_name", "location", "project_id", "context_name"}),
    "azure/login": ("azure", {"client-id", "tenant-id", "subscription-id"}),
    "azure/use-kubelogin": ("azure", {"kubelogin-version"}),
}
"""Each cloud's login and kubeconfig actions in cluster-credentials: the cloud that runs it, the inputs it gets."""


def triggers(document: dict[str, Any]) -> dict[str, Any]:
    """The events of `on:`, in any of its three forms (an event, a list of them, a mapping)."""
    # YAML 1.1 (PyYAML) reads the key `on` as True.
    keys: dict[Any, Any] = document
    found = keys.get("on", keys.get(True))
    if isinstance(found, str):
        return {found: None}
    if isinstance(found, list):
        return dict.fromkeys(found)
    return found if isinstance(found, dict) else {}


def strings(node: Any) -> list[str]:
    """Every string value in a parsed workflow or action, at any depth."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for value in node.values() for s in strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in strings(value)]
    return []


def action_name(uses: object) -> str:
    return str(uses).partition("@")[0].lower()


def all_steps(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, step) for a workflow's jobs' steps or a composite action's."""
    if "runs" in document:
        return [("steps", step) for step in document["runs"].get("steps", [])]
    return [(f"job {job}", step) for job, spec in document["jobs"].items() for step in spec.get("steps", [])]


def long_lived_keys(name: str, document: dict[str, Any]) -> list[str]:
    """Every long-lived cloud key a workflow or action reads, declares or hands to a login action."""
    problems = []
    declared = triggers(document).get("workflow_call", {}) or {}
    referenced = {m for text in strings(document) for m in re.findall(r"secrets\.([A-Za-z_][A-Za-z0-9_]*)", text)}
    for secret in sorted(referenced | set(declared.get("secrets", None) or {})):
        if LONG_LIVED_SECRET.fullmatch(secret):
            problems.append(f"{name}: secret {secret} is a long-lived cloud key; use the OIDC identity (docs/ci.md)")
    for where, step in all_steps(document):
        action = action_name(step.get("uses", ""))
        for key in sorted(KEY_INPUTS.get(action, set()) & set(step.get("with", {}))):
            problems.append(f"{name} {where}: {action} input {key} takes a long-lived key; use the OIDC identity")
    return problems


def authenticates(job: dict[str, Any], called: Callable[[str], dict[str, Any]]) -> bool:
    """The job logs in to a cloud: through cluster-credentials, or by calling a workflow whose jobs do."""
    if any(step.get("uses") == CLUSTER_CREDENTIALS for step in job.get("steps", [])):
        return True
    uses = str(job.get("uses", ""))
    return uses.startswith("./") and any(
        grants_id_token(spec) for spec in called(uses.removeprefix("./"))["jobs"].values()
    )


def grants_id_token(job: dict[str, Any]) -> bool:
    permissions = job.get("permissions")
    return permissions == "write-all" or (isinstance(permissions, dict) and permissions.get("id-token") == "write")


def id_token_problems(name: str, document: dict[str, Any], called: Callable[[str], dict[str, Any]]) -> list[str]:
    """`contents: read` for the workflow; `id-token: write` on exactly the jobs that log in to a cloud."""
    problems = []
    if document.get("permissions") != {"contents": "read"}:
        problems.append(f"{name}: workflow permissions {document.get('permissions')!r}; want {{contents: read}}")
    for job, spec in document["jobs"].items():
        needed, granted = authenticates(spec, called), grants_id_token(spec)
        if needed and not granted:
            problems.append(f"{name} job {job}: logs in to a cloud but lacks permissions id-token: write")
        if granted and not needed:
            problems.append(f"{name} job {job}: has id-token: write but logs in to no cloud")
    return problems


def dispatch_problems(name: str, document: dict[str, Any]) -> list[str]:
    """A workflow that can be dispatched by hand runs each job from the default branch only."""
    if "workflow_dispatch" not in triggers(document):
        return []
    return [
        f"{name} job {job}: runs on workflow_dispatch from any branch; add `if: {DEFAULT_BRANCH_GUARD}`"
        for job, spec in document["jobs"].items()
        if DEFAULT_BRANCH_GUARD not in str(spec.get("if", ""))
    ]


def cloud_step_problems(action: dict[str, Any]) -> list[str]:
    """Each cloud's login and kubeconfig actions, once each, run for that cloud only, with checked inputs."""
    problems = []
    for uses, (cloud, inputs) in CLOUD_STEPS.items():
        found = [step for _, step in all_steps(action) if action_name(step.get("uses", "")) == uses]
        if len(found) != 1:
            problems.append(f"{uses}: {len(found)} steps; want 1")
            continue
        step = found[0]
        if step.get("if") != f"steps.cloud.outputs.cloud == '{cloud}'":
            problems.append(f"{uses}: if {step.get('if')!r}; want it to run for CLOUD {cloud} only")
        given = set(step.get("with", {}))
        if given != inputs:
            problems.append(f"{uses}: inputs {sorted(given)}; want {sorted(inputs)}")
        if unknown := given - UPSTREAM_INPUTS[uses]:
            problems.append(f"{uses}: inputs {sorted(unknown)} are not in its action.yml")
    return problems


def called_workflow(path: str) -> dict[str, Any]:
    return load(PROJECT_ROOT / path)


def test_no_workflow_or_action_reads_a_long_lived_cloud_key() -> None:
    assert [p for path in (*WORKFLOWS, *ACTIONS) for p in long_lived_keys(path.name, load(path))] == []


def test_a_long_lived_key_is_found_wherever_it_is_read() -> None:
    bad = {
        "on": {"workflow_call": {"secrets": {"GCS_KEY_JSON": {"required": False}}}},
        "jobs": {
            "up": {
                "env": {"KEY": "${{ secrets.AWS_SECRET_ACCESS_KEY }}"},
                "steps": [
                    {"uses": "Azure/login@v3", "with": {"creds": "${{ secrets.SP }}"}},
                    {"run": "echo ${{ secrets.AZURE_CLIENT_SECRET }}"},
                ],
            }
        },
    }
    problems = long_lived_keys("bad.yml", bad)
    # Read in an env, in a run script, declared by workflow_call: each named once, sorted.
    assert problems[:3] == [
        f"bad.yml: secret {secret} is a long-lived cloud key; use the OIDC identity (docs/ci.md)"
        for secret in ("AWS_SECRET_ACCESS_KEY", "AZURE_CLIENT_SECRET", "GCS_KEY_JSON")
    ]
    assert problems[3:] == ["bad.yml job up: azure/login input creds takes a long-lived key; use the OIDC identity"]


def test_id_token_is_granted_to_exactly_the_jobs_that_log_in() -> None:
    assert [p for path in WORKFLOWS for p in id_token_problems(path.name, load(path), called_workflow)] == []
    granted = {
        (path.name, job) for path in WORKFLOWS for job, spec in load(path)["jobs"].items() if grants_id_token(spec)
    }
    assert granted == {
        ("deploy-stack.yml", "preview"),
        ("deploy-stack.yml", "up"),
        ("deploy.yml", "dev"),
        ("deploy.yml", "staging"),
        ("deploy.yml", "production"),
        ("preview.yml", "live"),
    }


def test_an_id_token_missing_or_granted_in_vain_is_named() -> None:
    login = {"uses": CLUSTER_CREDENTIALS, "with": {"stack": "dev", "vars": "${{ toJSON(vars) }}"}}
    called = {"jobs": {"up": {"permissions": {"id-token": "write"}, "steps": [login]}}}
    bad = {
        "permissions": {"contents": "read", "id-token": "write"},
        "jobs": {
            "deploy": {"steps": [login]},
            "lint": {"permissions": "write-all", "steps": [{"run": "make lint"}]},
            "call": {"uses": "./.github/workflows/called.yml"},
        },
    }
    assert id_token_problems("bad.yml", bad, lambda path: called) == [
        "bad.yml: workflow permissions {'contents': 'read', 'id-token': 'write'}; want {contents: read}",
        "bad.yml job deploy: logs in to a cloud but lacks permissions id-token: write",
        "bad.yml job lint: has id-token: write but logs in to no cloud",
        "bad.yml job call: logs in to a cloud but lacks permissions id-token: write",
    ]


def test_manual_runs_deploy_the_default_branch_only() -> None:
    assert [p for path in WORKFLOWS for p in dispatch_problems(path.name, load(path))] == []
    assert "workflow_dispatch" in triggers(load(PROJECT_ROOT / ".github" / "workflows" / "deploy.yml"))


def test_a_dispatchable_job_without_the_guard_is_named() -> None:
    bad = yaml.safe_load(
        "on: [push, workflow_dispatch]\n"
        "jobs:\n"
        "  a: {if: \"github.ref == format('refs/heads/{0}', github.event.repository.default_branch)\"}\n"
        "  b: {if: github.ref == 'refs/heads/main'}\n"
    )
    assert dispatch_problems("bad.yml", bad) == [
        f"bad.yml job b: runs on workflow_dispatch from any branch; add `if: {DEFAULT_BRANCH_GUARD}`"
    ]


def test_each_cloud_logs_in_and_writes_its_kubeconfig_with_checked_inputs() -> None:
    assert cloud_step_problems(load(CREDENTIALS_ACTION)) == []


def test_a_login_step_missing_misspelled_or_run_for_every_cloud_is_named() -> None:
    action = load(CREDENTIALS_ACTION)
    steps = action["runs"]["steps"]
    action["runs"]["steps"] = [
        {**step, "with": {"role-to-asume": "x", "aws-region": "y"}}
        if action_name(step.get("uses", "")) == "aws-actions/configure-aws-credentials"
        else {**step, "if": None}
        if action_name(step.get("uses", "")) == "azure/login"
        else step
        for step in steps
        if action_name(step.get("uses", "")) != "google-github-actions/get-gke-credentials"
    ]
    assert cloud_step_problems(action) == [
        "aws-actions/configure-aws-credentials: inputs ['aws-region', 'role-to-asume']; want ['aws-region', "
        "'role-to-assume']",
        "aws-actions/configure-aws-credentials: inputs ['role-to-asume'] are not in its action.yml",
        "google-github-actions/get-gke-credentials: 0 steps; want 1",
        "azure/login: if None; want it to run for CLOUD azure only",
    ]


def test_the_variables_cluster_credentials_reads_are_those_docs_ci_lists() -> None:
    read = set(re.findall(r"fromJSON\(inputs\.vars\)\.(\w+)", CREDENTIALS_ACTION.read_text()))
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", (PROJECT_ROOT / "docs" / "ci.md").read_text(), re.M))
    assert read == documented - {"KUBECONFIG_CONTENT"}
    assert "KUBECONFIG_CONTENT" in documented


def reaches_cluster(step: dict[str, Any]) -> bool:
    """A pulumi preview or up against real state, or a live preview-diff."""
    return "--mode live" in str(step.get("run", "")) or str(step.get("with", {}).get("command")) in ("preview", "up")


def cluster_job_problems(name: str, document: dict[str, Any]) -> list[str]:
    """A job reaches a cluster only after cluster-credentials, given its own environment's variables."""
    problems = []
    for job, spec in document["jobs"].items():
        steps = spec.get("steps", [])
        reaching = [i for i, step in enumerate(steps) if reaches_cluster(step)]
        logins = [i for i, step in enumerate(steps) if step.get("uses") == CLUSTER_CREDENTIALS]
        if not reaching:
            problems += [f"{name} job {job}: runs cluster-credentials but reaches no cluster"] if logins else []
            continue
        if len(logins) != 1 or logins[0] > reaching[0]:
            problems.append(f"{name} job {job}: reaches a cluster without one cluster-credentials step before")
            continue
        given = steps[logins[0]].get("with", {})
        if given.get("vars") != "${{ toJSON(vars) }}":
            problems.append(f"{name} job {job}: cluster-credentials vars {given.get('vars')!r}")
        if not str(spec.get("environment", "")).startswith(str(given.get("stack"))):
            problems.append(
                f"{name} job {job}: stack {given.get('stack')!r} in environment {spec.get('environment')!r}"
            )
    return problems


def test_every_job_that_reaches_a_cluster_logs_in_first_with_its_environments_identity() -> None:
    assert [p for path in WORKFLOWS for p in cluster_job_problems(path.name, load(path))] == []
    reaching = [
        (path.name, job)
        for path in WORKFLOWS
        for job, spec in load(path)["jobs"].items()
        if any(reaches_cluster(step) for step in spec.get("steps", []))
    ]
    assert reaching == [("deploy-stack.yml", "preview"), ("deploy-stack.yml", "up"), ("preview.yml", "live")]


def test_a_cluster_reached_without_credentials_or_with_anothers_is_named() -> None:
    login = {"uses": CLUSTER_CREDENTIALS, "with": {"stack": "dev", "vars": "${{ toJSON(vars) }}"}}
    up = {"uses": "pulumi/actions@v6", "with": {"command": "up"}}
    bad = {
        "jobs": {
            "late": {"environment": "dev", "steps": [up, login]},
            "other": {"environment": "production", "steps": [login, up]},
            "unused": {"steps": [login]},
            "repo": {"environment": "dev", "steps": [{**login, "with": {"stack": "dev", "vars": "${{ vars }}"}}, up]},
        }
    }
    assert cluster_job_problems("bad.yml", bad) == [
        "bad.yml job late: reaches a cluster without one cluster-credentials step before",
        "bad.yml job other: stack 'dev' in environment 'production'",
        "bad.yml job unused: runs cluster-credentials but reaches no cluster",
        "bad.yml job repo: cluster-credentials vars '${{ vars }}'",
    ]


def test_every_stack_is_previewed_live_and_deployed() -> None:
    live = load(PROJECT_ROOT / ".github" / "workflows" / "preview.yml")["jobs"]["live"]
    assert tuple(live["strategy"]["matrix"]["stack"]) == STACKS
    deploy = load(PROJECT_ROOT / ".github" / "workflows" / "deploy.yml")["jobs"]
    assert tuple(spec["with"]["stack"] for spec in deploy.values()) == STACKS


PIN_LINE = re.compile(r"uses: *([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # (v[0-9]+)[0-9.]*")
TAGGED = {
    f"{name}@{sha}": f"{name}@{major}"
    for path in (*WORKFLOWS, *ACTIONS)
    for name, sha, major in PIN_LINE.findall(path.read_text())
}
"""Each pinned action as actionlint's table of popular actions names it (`azure/login@v3`): actionlint checks
the inputs only of actions it knows by tag, so the lint below sees each pin as its release's major tag."""


def as_tagged(text: str) -> str:
    """A workflow with each pinned `uses:` written as its major tag, for actionlint."""
    return PIN_LINE.sub(lambda pin: f"uses: {TAGGED[f'{pin[1]}@{pin[2]}']}", text)


def actionlint(workflow_text: str, folder: Path) -> subprocess.CompletedProcess[str]:
    workflow = folder / ".github" / "workflows" / "action.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(workflow_text)
    binary = PROJECT_ROOT / ".tools" / "bin" / "actionlint-v1.7.12"
    return subprocess.run([binary, "-no-color", workflow], cwd=folder, capture_output=True, text=True, check=False)


def actionlint_steps(action: dict[str, Any], folder: Path) -> subprocess.CompletedProcess[str]:
    """actionlint reads workflows only: a composite action's steps, as the job of a called workflow with the
    action's inputs, get its checks too (expressions, `if`s, the inputs of the actions it knows)."""
    inputs = {name: {"type": "string", "required": bool(i.get("required"))} for name, i in action["inputs"].items()}
    steps = [
        {**step, "uses": TAGGED.get(step["uses"], step["uses"])} if "uses" in step else step
        for step in action["runs"]["steps"]
    ]
    wrapped = {
        "on": {"workflow_call": {"inputs": inputs}},
        "jobs": {"steps": {"runs-on": "ubuntu-latest", "steps": steps}},
    }
    return actionlint(yaml.safe_dump(wrapped, sort_keys=False), folder)


@pytest.mark.real_tools
def test_actionlint_checks_the_pinned_actions_inputs(tmp_path: Path) -> None:
    """`make lint` runs actionlint on the workflows as they are, pinned by commit; here the same files with each
    pin as its tag, so actionlint checks the inputs given to the actions it knows."""
    folder = tmp_path / ".github"
    shutil.copytree(PROJECT_ROOT / ".github", folder)
    tagged = []
    for workflow in sorted((folder / "workflows").glob("*.yml")):
        workflow.write_text(as_tagged(workflow.read_text()))
        tagged.append(workflow)
    assert all(not PIN_LINE.search(path.read_text()) for path in tagged)
    binary = PROJECT_ROOT / ".tools" / "bin" / "actionlint-v1.7.12"
    done = subprocess.run(
        [binary, "-no-color", "-config-file", folder / "actionlint.yaml", *tagged],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.real_tools
@pytest.mark.parametrize("action", ACTIONS, ids=lambda path: path.parent.name)
def test_actionlint_accepts_each_composite_actions_steps(action: Path, tmp_path: Path) -> None:
    done = actionlint_steps(load(action), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.real_tools
def test_actionlint_sees_a_composite_actions_mistakes(tmp_path: Path) -> None:
    action = load(CREDENTIALS_ACTION)
    login = next(s for s in action["runs"]["steps"] if action_name(s.get("uses", "")) == "azure/login")
    login["with"]["clientid"] = login["with"].pop("client-id")
    done = actionlint_steps(action, tmp_path)
    assert done.returncode == 1
    assert 'input "clientid" is not defined in action "azure/login@v3"' in done.stdout


def test_every_pull_request_runs_lint_and_the_fast_suite_by_the_makefiles_commands() -> None:
    workflow = PROJECT_ROOT / ".github" / "workflows" / "test.yml"
    document = load(workflow)
    assert {"pull_request", "push", "schedule"} <= set(triggers(document))
    assert document["permissions"] == {"contents": "read"}
    runs = {job: [step["run"] for step in spec["steps"] if "run" in step] for job, spec in document["jobs"].items()}
    assert runs == {"fast": ["make lint", "make test-fast"], "full": ["make test"]}
    assert "if" not in document["jobs"]["fast"]
    assert document["jobs"]["full"]["if"] == "github.event_name != 'pull_request'"
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    for target in ("lint", "test-fast", "test"):
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), target


def unpinned(text: str) -> list[str]:
    """Each remote `uses:` of a workflow or action text not pinned to a commit with its tag in a comment."""
    found = []
    for line in text.splitlines():
        used = re.search(r"uses: *([^\s#]+)(.*)$", line)
        if used is None or used[1].startswith("./"):
            continue
        if not re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", used[1]) or not re.fullmatch(r" # v[0-9.]+", used[2]):
            found.append(line.strip())
    return found


def test_every_action_is_pinned_to_a_commit_with_its_tag() -> None:
    """A tag can be moved; a commit cannot. Renovate (helpers:pinGitHubActionDigests) keeps both current."""
    assert [line for path in (*WORKFLOWS, *ACTIONS) for line in unpinned(path.read_text())] == []


def test_a_tag_or_a_pin_without_its_tag_is_found() -> None:
    text = (
        "- uses: actions/checkout@v7\n"
        "- uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1\n"
        "- uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1\n"
        "- uses: ./.github/actions/stack-setup\n"
    )
    assert unpinned(text) == [
        "- uses: actions/checkout@v7",
        "- uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1",
    ]


def step_outputs(text: str) -> dict[str, str]:
    """A `$GITHUB_OUTPUT` file as the runner reads it (actions/runner, FileCommandManager: `name=value` where `=`
    comes before any `<<`, else `name<<delimiter`, the value's lines, the delimiter); each name once."""
    lines, outputs = text.split("\n"), {}
    while lines:
        line = lines.pop(0)
        if not line:
            continue
        if "=" in line and ("<<" not in line or line.index("=") < line.index("<<")):
            name, value = line.split("=", 1)
        else:
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter)
            value, lines = "\n".join(lines[:end]), lines[end + 1 :]
        assert name not in outputs, f"output {name} written twice"
        outputs[name] = value
    return outputs


@pytest.mark.parametrize(
    ("printed", "context"),
    [("production", "production"), ("prod\ncloud=none\ncontext=other", "prod\ncloud=none\ncontext=other")],
    ids=["plain", "lines-that-would-forge-outputs"],
)
def test_cluster_credentials_writes_its_outputs_so_no_value_adds_one(
    tmp_path: Path, printed: str, context: str
) -> None:
    """The context stackctl prints (which it refuses with a control character) goes into the step's outputs in the
    multiline form with a random delimiter: whatever lines it held, it stays one output and adds none."""
    step = next(s for s in load(CREDENTIALS_ACTION)["runs"]["steps"] if s.get("id") == "cloud")
    stub = tmp_path / ".venv" / "bin" / "python"
    stub.parent.mkdir(parents=True)
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$PRINTED"\n')
    stub.chmod(0o755)
    outputs = tmp_path / "github_output"
    outputs.touch()
    variables = {"AWS_ROLE_ARN": "arn:aws:iam::111122223333:role/ci", "AWS_REGION": "eu-west-1", "EKS_CLUSTER": "prod"}
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "STACK": "production", "CLOUD": "aws", "GITHUB_OUTPUT": str(outputs)}
        | variables
        | {"PRINTED": printed},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert step_outputs(outputs.read_text()) == {"context": context, "cloud": "aws"}
    assert "<<ghadelimiter_" in outputs.read_text()


# --- Images by digest: the preview pins them, the up job deploys that file (docs/deploying.md) -------------------

DEPLOY_STACK = PROJECT_ROOT / ".github" / "workflows" / "deploy-stack.yml"


def pin_problems(document: dict[str, Any]) -> list[str]:
    """What keeps the deploy from running exactly the digests its preview pinned and showed."""
    jobs = document["jobs"]
    preview, up = jobs["preview"]["steps"], jobs["up"]["steps"]
    problems = []
    pin = [n for n, s in enumerate(preview) if "stackctl pin-images --stack" in str(s.get("run", ""))]
    upload = [n for n, s in enumerate(preview) if action_name(s.get("uses")) == "actions/upload-artifact"]
    pulumi = [n for n, s in enumerate(preview) if action_name(s.get("uses")) == "pulumi/actions"]
    validate = [n for n, s in enumerate(preview) if "stackctl validate" in str(s.get("run", ""))]
    if len(pin) != 1 or "--check" in str(preview[pin[0]].get("run")):
        return ["the preview job does not run `stackctl pin-images --stack` (once, writing)"]
    if not pulumi or not pin[0] < min(pulumi) or not validate or not pin[0] < min(validate):
        problems.append("the preview job pins after its validate or its pulumi preview")
    uploaded = [preview[n]["with"] for n in upload if n > pin[0]]
    if not uploaded or uploaded[0].get("path") != "stacks/Pulumi.${{ inputs.stack }}.yaml":
        problems.append("the preview job does not upload the pinned stack file")
    download = [n for n, s in enumerate(up) if action_name(s.get("uses")) == "actions/download-artifact"]
    deploys = [n for n, s in enumerate(up) if action_name(s.get("uses")) == "pulumi/actions"]
    if not download or not deploys or not download[0] < min(deploys):
        return [*problems, "the up job does not download the preview's stack file before pulumi up"]
    if uploaded and up[download[0]]["with"].get("name") != uploaded[0].get("name"):
        problems.append("the up job downloads another artifact than the preview uploads")
    copies = [
        n
        for n, s in enumerate(up)
        if download[0] < n < min(deploys) and 'stacks/Pulumi.$STACK.yaml"' in str(s.get("run", ""))
    ]
    if not copies:
        problems.append("the up job does not put the preview's stack file in place before pulumi up")
    return problems


def test_the_deploy_runs_exactly_the_digests_its_preview_pinned() -> None:
    assert pin_problems(load(DEPLOY_STACK)) == []


def test_a_deploy_that_pins_late_or_deploys_another_file_is_named() -> None:
    document = load(DEPLOY_STACK)
    late = copy.deepcopy(document)
    steps_ = late["jobs"]["preview"]["steps"]
    pin = next(s for s in steps_ if "stackctl pin-images" in str(s.get("run", "")))
    steps_.remove(pin)
    steps_.append(pin)
    assert pin_problems(late) == [
        "the preview job pins after its validate or its pulumi preview",
        "the preview job does not upload the pinned stack file",
    ]
    fresh = copy.deepcopy(document)
    fresh["jobs"]["up"]["steps"] = [
        s for s in fresh["jobs"]["up"]["steps"] if action_name(s.get("uses")) != "actions/download-artifact"
    ]
    assert pin_problems(fresh) == ["the up job does not download the preview's stack file before pulumi up"]
    unpinned = copy.deepcopy(document)
    for step in unpinned["jobs"]["preview"]["steps"]:
        if "stackctl pin-images" in str(step.get("run", "")):
            step["run"] += " --check"
    assert pin_problems(unpinned) == ["the preview job does not run `stackctl pin-images --stack` (once, writing)"]


def test_the_preview_builds_the_pinned_crane_and_helm() -> None:
    """crane at the Makefile's CRANE_VERSION (`make crane`) and the Helm synth templates with (HELM_VERSION), so the
    charts' images pin-images lists are those the provider's own Helm renders."""
    tools = next(s for _, s in steps(DEPLOY_STACK) if "make crane" in str(s.get("run", "")))
    assert tools["env"]["HELM_VERSION"] == HELM_VERSION
    assert "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" in tools["run"]
    assert "TRITON_HELM=" in tools["run"]
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert f"CRANE_VERSION := {CRANE_VERSION}\n" in makefile
    assert re.search(r"^crane: \$\(CRANE\)$", makefile, re.MULTILINE)
