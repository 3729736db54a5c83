"""scripts/preview-diff on two commits of a fixture repository, offline and live, with the real CLI; and its rules."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from platform_config.kubernetes import RENDER_OVERRIDE_ENV
from platform_config.paths import PROJECT_ROOT
from platform_config.secrets_provider import LOCAL_PASSPHRASE
from preview.comment import MAX_COMMENT, StackReport, comment
from preview.events import ABSENT, MASK, Change, PropertyChange, changes, read_event_log
from preview.settings import CHART_KEYS, TUNING_KEYS, setting_changes
from preview.workspace import export_tree
from stackctl import preview_command
from tests.support import local_registry
from tests.support.local_cluster import SHARED_CHARTS, edit_stack, use_offline_charts
from tests.support.pulumi_cli import pulumi_binary, toolchain_env

FIXTURES = PROJECT_ROOT / "tests" / "fixtures"
# Plaintext of the secret webhook URL in each commit: neither may reach a comment.
BASE_SECRET = "https://hooks.example.invalid/base-plaintext-4f1c0d"
HEAD_SECRET = "https://hooks.example.invalid/head-plaintext-9a2e7b"
SECRET_PATH = "triton-platform:monitoring.receivers.audit.webhook.url.value"
# Production's demand target as the stack file writes it.
DEMAND_TARGET = re.search(r"demandTarget: ([0-9.]+)", (PROJECT_ROOT / "stacks" / "Pulumi.production.yaml").read_text())[
    1
]  # type: ignore[index]
LB_REASON = "internal load balancer for the on-prem metrics gateway, ticket NET-123"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=fixture", "-c", "user.email=fixture@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def cli_env(scratch: Path, *, render_override: bool) -> dict[str, str]:
    """The offline toolchain against a scratch file backend (as tests/support/pulumi_cli.py runs it)."""
    env = toolchain_env(scratch)
    if not render_override:
        env.pop(RENDER_OVERRIDE_ENV)
    return env


def set_secret(repo: Path, env: dict[str, str], value: str) -> None:
    subprocess.run(
        [pulumi_binary(), "config", "set", "--secret", "--path", SECRET_PATH, value, "--stack", "production"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )


def bump_keda(chart_dir: Path) -> Any:
    """Head's production: KEDA 2.20.2 -> 2.20.3, its metrics Service a LoadBalancer by exception."""

    def change(config: dict[str, Any]) -> None:
        chart = config["triton-platform:scaling"]["keda"]["chart"]
        chart.update(path=str(chart_dir), version="2.20.3")
        chart.setdefault("values", {})["service"] = {"type": "LoadBalancer"}
        config.setdefault("triton-platform:policyExceptions", []).append(
            {"policy": "no-load-balancer", "kind": "Service", "name": "keda-operator-metrics-apiserver"}
            | {"reason": LB_REASON}
        )

    return change


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project as commit 1; commit 2 bumps production's KEDA chart (and a chart value that needs
    an advisory policy exception), retunes batching and scaling, and changes a secret; dev's batching too."""
    root = tmp_path_factory.mktemp("fixture")
    repo = root / "repo"
    export_tree(PROJECT_ROOT, None, repo)
    for venv in (".venv", "policy/.venv"):
        (repo / venv).unlink()
    production = repo / "stacks" / "Pulumi.production.yaml"
    # Production's charts from the offline chart folders: no chart repository can be reached here.
    edit_stack(production, use_offline_charts)
    # A secret config value needs the stack's salt: `stack init` writes it into the stack file.
    env = cli_env(root / "secrets", render_override=True)
    subprocess.run([pulumi_binary(), "stack", "init", "production"], cwd=repo, env=env, check=True, capture_output=True)
    set_secret(repo, env, BASE_SECRET)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")

    bumped = root / "charts" / "keda"
    shutil.copytree(SHARED_CHARTS / "keda", bumped)
    edit(bumped / "Chart.yaml", "version: 2.20.2", "version: 2.20.3")
    edit_stack(production, bump_keda(bumped))
    edit(production, "maxQueueDelayMicroseconds: 5000", "maxQueueDelayMicroseconds: 8000")
    edit(production, f"demandTarget: {DEMAND_TARGET}", "demandTarget: 0.95")
    set_secret(repo, env, HEAD_SECRET)
    edit(repo / "stacks" / "Pulumi.dev.yaml", "maxQueueDelayMicroseconds: 500", "maxQueueDelayMicroseconds: 900")
    # A change inside the component package, which the virtualenv installs editable from this checkout.
    edit(
        repo / "components" / "triton_platform" / "serving" / "triton_deployment.py",
        '"revisionHistoryLimit": 5',
        '"revisionHistoryLimit": 7',
    )
    git(
        repo,
        "commit",
        "-q",
        "-am",
        "bump KEDA, retune batching and scaling, rotate the audit webhook, keep more ReplicaSets",
    )
    return repo


def run_script(repo: Path, out: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """scripts/preview-diff itself, with the project's offline toolchain."""
    pulumi_binary()
    return subprocess.run(
        [str(PROJECT_ROOT / "scripts" / "preview-diff"), "--repo", str(repo), "--out", str(out), *args],
        cwd=PROJECT_ROOT,
        env={**env, "TRITON_PULUMI_TOOLCHAIN": "offline"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def offline(fixture_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Production's comment and full diff text, offline (no backend given). Production's images are pinned
    first, from a loopback registry serving each tag it runs (`stackctl pin-images`, as the workflows do)."""
    out = tmp_path_factory.mktemp("preview-diff")
    env = local_registry.tool_environment({})
    env.pop("PULUMI_BACKEND_URL", None)
    production = fixture_repo / "stacks" / "Pulumi.production.yaml"
    with local_registry.loopback_registry() as registry:
        mirrors = local_registry.serve_unpinned(production, registry, tmp_path_factory.mktemp("images"), {})
        result = run_script(fixture_repo, out, env, *mirrors, "--base", "HEAD~1", "--head", "HEAD", "production")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == [str(out / "production.md")]
    return (out / "production.md").read_text(), (out / "production.diff.txt").read_text()


@pytest.mark.real_tools
def test_offline_comment_names_its_mode_and_both_commits(fixture_repo: Path, offline: tuple[str, str]) -> None:
    report, _ = offline
    assert "**Mode: offline.**" in report
    assert f"Base: `HEAD~1` at `{git(fixture_repo, 'rev-parse', 'HEAD~1')}`." in report
    assert f"Head: `HEAD` at `{git(fixture_repo, 'rev-parse', 'HEAD')}`." in report


@pytest.mark.real_tools
def test_chart_bump_shows_as_settings_and_per_object_values(offline: tuple[str, str]) -> None:
    report, _ = offline
    chart = report[report.index("#### Chart versions and values") :]
    # Base pinned nothing (the platform's default, 2.20.2); the objects say what that was.
    assert '| `triton-platform:scaling.keda.chart.version` | `—` | `"2.20.3"` |' in chart
    assert '| `triton-platform:scaling.keda.chart.values.service.type` | `—` | `"LoadBalancer"` |' in chart
    values = report[report.index("#### Changed values") :]
    assert '- `metadata.labels["helm.sh/chart"]`: `"keda-2.20.2"` → `"keda-2.20.3"`' in values
    crd = "**update** `kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition` `keda:scaledobjects.keda.sh`"
    assert f'{crd}\n- `metadata.labels["helm.sh/chart"]`: `"keda-2.20.2"` → `"keda-2.20.3"`\n' in values
    service = "**update** `kubernetes:core/v1:Service` `keda:keda/keda-operator-metrics-apiserver`"
    assert service in values
    assert '- `spec.type`: `"ClusterIP"` → `"LoadBalancer"`' in values[values.index(service) :]
    # KEDA's installation is a chart setting, not a tuning one.
    tuning = report[report.index("#### Batching and scaling settings") :]
    assert "keda.chart" not in tuning[: tuning.index("####", 5)]


@pytest.mark.real_tools
def test_batching_change_shows_old_and_new_values(offline: tuple[str, str]) -> None:
    report, _ = offline
    assert '| `models.classifier.dynamicBatching.maxQueueDelayMicroseconds` | `"5000"` | `"8000"` |' in report
    assert f"| `triton-platform:scaling.demandTarget` | `{DEMAND_TARGET}` | `0.95` |" in report
    # The rendered model config, line by line, in the ConfigMap that carries it.
    assert "-  max_queue_delay_microseconds: 5000\n  +  max_queue_delay_microseconds: 8000" in report
    assert "| update | `kubernetes:keda.sh/v1alpha1:ScaledObject` |" in report
    impact = report[report.index("#### Scaling impact") :]
    for label in ("p95 ms", "SLO-violation s", "rejected %", "GPU-hours", "reaction s"):
        assert f"| {label} |" in impact


@pytest.mark.real_tools
def test_a_change_in_the_component_package_shows(offline: tuple[str, str]) -> None:
    """Each revision runs its own component package, not the one of the checkout the virtualenv was built in."""
    report, _ = offline
    values = report[report.index("#### Changed values") :]
    deployment = "**update** `kubernetes:apps/v1:Deployment` `production-serving-general-deployment`"
    assert deployment in values
    assert "- `spec.revisionHistoryLimit`: `5` → `7`" in values[values.index(deployment) :]


@pytest.mark.real_tools
def test_warnings_and_every_policy_result_are_kept(offline: tuple[str, str]) -> None:
    report, _ = offline
    warnings = report[report.index("#### Warnings") : report.index("#### Policy results")]
    assert "rendered YAML will contain a secret value in plaintext" in warnings
    policy = report[report.index("#### Policy results (`triton-platform@0.0.1`)") :]
    assert (
        "- **advisory** `policy-exceptions` on `kubernetes:core/v1:Service keda:keda/keda-operator-metrics-apiserver`: "
        "Lists every exception granted, with its reason, so none passes unseen. — "
        f"exception to no-load-balancer: {LB_REASON}\n"
    ) in policy
    # The node agents' standing exceptions too: every result, not only the new ones.
    assert "exception to no-host-access: the kubelet's device-plugin directory is a host path by design" in policy
    assert re.search(r"Passed: .*`no-load-balancer`.*`triton-health`", policy)


@pytest.mark.real_tools
def test_secrets_stay_masked(offline: tuple[str, str]) -> None:
    report, text = offline
    for secret in (BASE_SECRET, HEAD_SECRET, "base-plaintext", "head-plaintext"):
        assert secret not in report
        assert secret not in text
    assert f"| `{SECRET_PATH}` |" not in report  # not a chart or tuning setting: no row at all
    assert f"`{MASK}` → `{MASK}`" in report


@pytest.mark.real_tools
def test_full_diff_is_collapsed_and_fits_a_comment(offline: tuple[str, str]) -> None:
    report, text = offline
    details = report[report.index("<details><summary>Full <code>pulumi preview --diff</code> output</summary>") :]
    assert "<pre>\nPreviewing update (production):" in details
    assert details.rstrip().endswith("</details>")
    assert len(report) <= MAX_COMMENT
    assert "~ kubernetes:apps/v1:Deployment: (update)" in text


@pytest.mark.real_tools
def test_live_mode_previews_against_the_stacks_real_state(fixture_repo: Path, tmp_path: Path) -> None:
    """dev, deployed from base with an outside change (delay 700, in no commit), stands for the live stack."""
    live = export_tree(fixture_repo, "HEAD~1", tmp_path / "live")
    edit(live / "stacks" / "Pulumi.dev.yaml", "maxQueueDelayMicroseconds: 500", "maxQueueDelayMicroseconds: 700")
    env = cli_env(tmp_path / "scratch", render_override=False)
    for args in (["stack", "init", "dev"], ["up", "--yes", "--skip-preview", "--stack", "dev"]):
        deployed = subprocess.run(
            [pulumi_binary(), *args], cwd=live, env=env, capture_output=True, text=True, check=False
        )
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    out = tmp_path / "out"
    # --mode auto: PULUMI_BACKEND_URL is set, so live.
    result = run_script(fixture_repo, out, env, "--base", "HEAD~1", "dev")
    assert result.returncode == 0, result.stdout + result.stderr
    report = (out / "dev.md").read_text()
    assert "**Mode: live.**" in report
    assert f"Head: the working tree: `HEAD` at `{git(fixture_repo, 'rev-parse', 'HEAD')}`" in report
    # Against the deployed 700, not the base commit's 500: the drift shows.
    assert "-  max_queue_delay_microseconds: 700\n  +  max_queue_delay_microseconds: 900" in report
    assert "max_queue_delay_microseconds: 500" not in report
    # A render-mode stack has no cluster to refresh from: said, not failed.
    assert "_Not refreshed: this stack renders manifests (`kubernetes.mode: render`)" in report


@pytest.mark.real_tools
def test_live_mode_needs_a_backend(
    fixture_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    code = preview_command.main(
        ["--repo", str(fixture_repo), "--base", "HEAD~1", "--mode", "live", "--out", str(tmp_path)]
    )
    assert code == 1
    assert capsys.readouterr().err.startswith("preview-diff: --mode live needs PULUMI_BACKEND_URL")


@pytest.mark.real_tools
def test_live_mode_refuses_a_stack_the_backend_lacks(
    fixture_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in cli_env(tmp_path / "empty", render_override=False).items():
        monkeypatch.setenv(key, value)
    code = preview_command.main(
        ["--repo", str(fixture_repo), "--base", "HEAD~1", "--out", str(tmp_path / "out"), "staging"]
    )
    assert code == 1
    assert capsys.readouterr().err.startswith(
        "preview-diff: stack 'staging' is not in the backend PULUMI_BACKEND_URL names"
    )


@pytest.mark.real_tools
def test_a_base_that_is_no_commit_is_named(
    fixture_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--repo", str(fixture_repo), "--base", "no-such-ref", "--mode", "offline", "--out", str(tmp_path)]
    assert preview_command.main(args) == 1
    assert capsys.readouterr().err.startswith(
        f"preview-diff: --base 'no-such-ref' is not a commit of the git repository {fixture_repo}"
    )


def test_event_log_gives_old_and_new_values_with_secrets_masked() -> None:
    events = read_event_log(FIXTURES / "preview_events.jsonl")
    deployment, secret = events.changes
    assert deployment.properties == (
        # inputDiff: the old value from the old inputs; otherwise from the old outputs.
        PropertyChange('metadata.labels["app.kubernetes.io/version"]', "2.20.2", "2.20.3"),
        PropertyChange('metadata.labels["helm.sh/chart"]', "keda-2.20.1", "keda-2.20.3"),
        PropertyChange("spec.replicas", 1, ABSENT),
        PropertyChange("spec.template.spec.containers[0].args[0]", ABSENT, "--zap-log-level=info"),
    )
    assert secret.properties == (
        PropertyChange("data", MASK, MASK),
        PropertyChange("metadata.annotations.token", MASK, MASK),
        # Not marked secret by the program, but a Secret's payload all the same.
        PropertyChange("stringData.url", MASK, MASK),
    )


def test_event_log_keeps_warnings_once_and_every_policy_result() -> None:
    events = read_event_log(FIXTURES / "preview_events.jsonl")
    assert [(d.severity, d.message) for d in events.diagnostics] == [
        ("warning", "rendered YAML will contain a secret value in plaintext"),
        ("error", "preview failed: 1 mandatory policy violation"),
    ]
    assert [(v.level, v.policy, v.resource) for v in events.policy_violations] == [
        ("advisory", "policy-exceptions", "kubernetes:core/v1:Service prod-keda-metrics"),
        ("mandatory", "resources-and-pinned-images", "kubernetes:apps/v1:Deployment prod-keda-operator"),
    ]
    assert events.policies_failed == ["policy-exceptions", "resources-and-pinned-images"]
    assert events.policies_passed == ["no-load-balancer", "triton-availability", "triton-health"]
    assert events.errors == ["preview failed: 1 mandatory policy violation"]


def report_of(full_diff: str) -> str:
    events = read_event_log(FIXTURES / "preview_events.jsonl")
    return comment(StackReport("production", "**Mode: offline.**", "Base: a. Head: b.", events, [], [], full_diff))


def test_comment_from_the_event_log() -> None:
    text = report_of("Previewing update (production):\n  ~ spec: <computed>\n")
    assert "> **`pulumi preview` fails: this change cannot be deployed as it is.**" in text
    assert '- `metadata.labels["helm.sh/chart"]`: `"keda-2.20.1"` → `"keda-2.20.3"`' in text
    assert "- `spec.replicas`: `1` → `(none)`" in text
    assert "- `stringData.url`: `[secret]` → `[secret]`" in text
    assert "plaintext-the-program-forgot" not in text
    assert "another-unmarked-plaintext" not in text
    assert (
        "- **mandatory** `resources-and-pinned-images` on `kubernetes:apps/v1:Deployment prod-keda-operator`: " in text
    )
    assert "<pre>\nPreviewing update (production):\n  ~ spec: &lt;computed&gt;\n</pre>" in text
    assert "trimmed" not in text


def test_a_long_diff_is_trimmed_to_fit_githubs_limit() -> None:
    text = report_of("  ~ kubernetes:core/v1:ConfigMap: (update) <x>\n" * 5000)
    assert len(text) <= MAX_COMMENT < 65536
    assert ":warning: The output was too long and was trimmed:" in text
    assert text.rstrip().endswith("</details>")
    assert not re.search(r"&[a-z]*\n</pre>", text)  # no entity cut in half


def step(op: str, type_: str, name: str, **state: object) -> dict[str, object]:
    urn = f"urn:pulumi:production::triton-platform::triton-platform:index:TritonPlatform${type_}::{name}"
    return {"op": op, "urn": urn, "diffs": ["spec"], "new": dict(state), "old": dict(state)}


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


def test_replacing_protected_storage_is_flagged_and_creating_it_is_not() -> None:
    found = changes([step("create", "kubernetes:core/v1:PersistentVolumeClaim", "pvc", protect=True)])
    assert found == [Change("create", "kubernetes:core/v1:PersistentVolumeClaim", "pvc", ("spec",), None)]
    replaced = changes([step("replace", "kubernetes:core/v1:PersistentVolumeClaim", "pvc", protect=True)])
    assert replaced[0].danger == "protected; model storage"


def test_settings_tables_pick_their_keys_and_show_added_ones() -> None:
    base = {"triton-platform:serving.p95LatencySloMs": "200", "models.ranker.maxBatchSize": "16"}
    head = {"triton-platform:serving.p95LatencySloMs": "150", "models.ranker.maxBatchSize": "32"}
    head["triton-platform:scaling.cooldownSeconds"] = "60"
    head["triton-platform:monitoring.chart.version"] = '"79.8.0"'
    assert setting_changes(base, head, TUNING_KEYS) == [
        ("models.ranker.maxBatchSize", "16", "32"),
        ("triton-platform:scaling.cooldownSeconds", "—", "60"),
    ]
    assert setting_changes(base, head, CHART_KEYS) == [("triton-platform:monitoring.chart.version", "—", '"79.8.0"')]


def test_scratch_runs_use_the_local_passphrase_dev_is_salted_for() -> None:
    assert f'PULUMI_CONFIG_PASSPHRASE="{LOCAL_PASSPHRASE}"' in (PROJECT_ROOT / "scripts/pulumi-env").read_text()
    assert "encryptionsalt: v1:" in (PROJECT_ROOT / "stacks/Pulumi.dev.yaml").read_text()
