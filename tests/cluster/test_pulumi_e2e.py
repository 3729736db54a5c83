"""End to end with the real Pulumi CLI, offline: preview, up (render mode), an idempotent
second preview, and destroy for every stack; what it writes is what `stackctl synth`
writes, and valid for Kubernetes and the CRDs; a config error stops `pulumi preview`
with the same report as `stackctl validate`.

The CLI, language hosts and providers come from scripts/pulumi-toolchain (`make tools`).
"""

from __future__ import annotations

import base64
import importlib.metadata
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from offline.synth import synthesize
from platform_config.paths import PROJECT_ROOT
from policy.rules import POLICY_NAMES
from tests.conftest import STACKS
from tests.support.crd_schemas import validate as validate_custom
from tests.support.invented_names import INVENTED_FLAG
from tests.support.local_cluster import SHARED_CHARTS, edit_stack, use_offline_charts
from tests.support.local_registry import pin_images
from tests.support.pulumi_cli import Project, make_project, pulumi_binary, rendered_objects
from triton_platform.kube.kubernetes_objects import CUSTOM_KINDS
from triton_platform.monitoring.monitoring import GRAFANA_ADMIN_SECRET
from triton_platform.serving.triton_server_args import ADMIN_KEY_SECRET

pytestmark = pytest.mark.real_tools  # the Pulumi CLI and the go-fetched CRDs

KUBERNETES_VERSION = "1.33.0"
# The one field that differs between render mode and `stackctl synth`, and why: the values
# of Secrets drawn by RandomPassword. The real provider draws a random value, the mocks
# a placeholder; their keys must match. (Render mode also writes a Secret's stringData
# as base64 `data`, the form the API server stores; compared decoded.)
RANDOM_SECRETS = {ADMIN_KEY_SECRET, GRAFANA_ADMIN_SECRET}


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    metadata = obj.get("metadata") or {}
    return obj["kind"], metadata.get("namespace") or "", metadata["name"]


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """A Secret's values decoded into one map, random ones replaced by a marker; other kinds as they are."""
    if obj["kind"] != "Secret":
        return obj
    values = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
    values.update(obj.get("stringData") or {})
    if obj["metadata"]["name"] in RANDOM_SECRETS:
        values = dict.fromkeys(values, "<random>")
    rest = {k: v for k, v in obj.items() if k not in ("data", "stringData")}
    return {**rest, "values": values}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pulumi-e2e")


@pytest.fixture(scope="module")
def project(scratch: Path) -> Project:
    copy = make_project(scratch)
    # Production's charts from the offline chart folders: no chart repository can be reached here.
    production = copy.root / "stacks" / "Pulumi.production.yaml"
    edit_stack(production, use_offline_charts)
    # Its images by digest, pinned as the deploy workflow pins them before its preview.
    pin_images(production, scratch / "registry", {"TRITON_CHART_MIRROR": str(SHARED_CHARTS)})
    return copy


def from_chart(obj: dict[str, Any]) -> bool:
    """An object of an installed chart: Helm's labels, or a chart's CRD."""
    labels = obj["metadata"].get("labels") or {}
    return (
        "helm.sh/chart" in labels
        or labels.get("app.kubernetes.io/managed-by") == "Helm"
        or (obj["kind"] == "CustomResourceDefinition")
    )


def assert_chart_bump_is_a_diff(project: Project, scratch: Path) -> None:
    """A new KEDA chart version shows as changes to the objects it changes, not as one opaque string."""
    bumped = scratch / "charts" / "keda"
    shutil.copytree(SHARED_CHARTS / "keda", bumped)
    manifest = bumped / "Chart.yaml"
    manifest.write_text(manifest.read_text().replace("version: 2.20.2", "version: 2.20.3", 1))
    stack_file = project.root / "stacks" / "Pulumi.production.yaml"
    original = stack_file.read_text()

    def bump(config: dict[str, Any]) -> None:
        config["triton-platform:scaling"]["keda"]["chart"].update(path=str(bumped), version="2.20.3")

    edit_stack(stack_file, bump)
    try:
        preview = project.ok("preview", "--diff", stack="production")
    finally:
        stack_file.write_text(original)
    assert '"keda-2.20.2" => "keda-2.20.3"' in preview, preview[-3000:]
    assert "kubernetes:apps/v1:Deployment: (update)" in preview
    assert "CustomResourceDefinition: (update)" in preview


@pytest.mark.parametrize("stack", STACKS)
def test_stack_lifecycle_with_the_real_cli(project: Project, scratch: Path, stack: str) -> None:
    project.ok("stack", "init", stack)
    # The policy pack runs on the first preview: no mandatory violation, exceptions listed as advisories.
    preview = project.ok("preview", "--policy-pack", str(project.root / "policy"), stack=stack)
    assert "to create" in preview
    assert "[mandatory]" not in preview
    assert "exception to no-host-access: the kubelet's device-plugin directory is a host path by design" in preview

    project.ok("up", "--yes", "--skip-preview", stack=stack)
    rendered = rendered_objects(scratch / "rendered" / stack)
    assert rendered, f"pulumi up wrote no manifests under {scratch / 'rendered' / stack}"

    # A second run changes nothing: the program is deterministic, and so is every object.
    project.ok("preview", "--expect-no-changes", stack=stack)
    if stack == "production":
        assert_chart_bump_is_a_diff(project, scratch)

    # What the CLI wrote is what `stackctl synth` (mocks) says the program creates, plus, in install
    # mode, the charts' objects, which only a real provider templates.
    synth = {
        key(m): comparable(m) for m in synthesize(project.root / "stacks" / f"Pulumi.{stack}.yaml", stack).manifests()
    }
    charts = [o for o in rendered if key(o) not in synth]
    assert all(from_chart(o) for o in charts), [key(o) for o in charts if not from_chart(o)]
    if stack == "production":
        kinds = {(o["kind"], o["metadata"]["name"]) for o in charts}
        assert {
            ("CustomResourceDefinition", "scaledobjects.keda.sh"),
            ("CustomResourceDefinition", "prometheusrules.monitoring.coreos.com"),
            ("Deployment", "keda-operator"),
            ("Deployment", "kube-prometheus-stack-operator"),
            ("APIService", "v1beta1.external.metrics.k8s.io"),
        } <= kinds
    else:
        assert charts == []
    real = {key(o): comparable(o) for o in rendered if key(o) in synth}
    assert sorted(real) == sorted(synth)
    for obj in rendered:
        if key(obj) not in synth:
            continue  # the charts' own objects: the real API server admits them (tests/cluster/test_cluster_deploy.py)
        if (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS:
            validate_custom(obj)
        else:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    for name, obj in real.items():
        assert obj == synth[name], f"{name} differs between render mode and stackctl synth"

    # Production's model storage, its namespace and its charts' CRDs are protected.
    project.destroy(stack, protected=stack == "production")


def test_a_config_error_stops_preview_with_the_validate_report(project: Project, scratch: Path) -> None:
    stacks = project.root / "stacks"
    broken = yaml.safe_load((stacks / "Pulumi.dev.yaml").read_text())
    deployments = broken["config"]["triton-platform:serving"]["deployments"]
    first = next(iter(deployments.values()))
    first["replicas"] = {"min": 3, "max": 1}
    broken["config"]["triton-platform:gpuPool"]["gpusPerNode"] = 0
    (stacks / "Pulumi.broken.yaml").write_text(yaml.safe_dump(broken))

    report = project.stackctl("validate", "--stack", "broken")
    assert report.returncode == 1
    # validate names each key's line and column (`file:line:column: key: message`); the program, which the engine
    # hands flattened config without the file's positions, names the file alone.
    problems = [
        re.sub(r"^(stacks/[^:]+):\d+:\d+: ", r"\1: ", line.strip())
        for line in report.stderr.splitlines()
        if line.strip().startswith("stacks/")
    ]
    assert len(problems) >= 2, report.stderr
    assert all(":" in line.split(": ", 1)[0] for line in report.stderr.splitlines()[1:] if line.startswith("stacks/"))

    project.ok("stack", "init", "broken")
    preview = project.pulumi("preview", stack="broken")
    assert preview.returncode != 0
    for problem in problems:
        assert problem in preview.stdout, f"{problem!r} missing from the preview's output:\n{preview.stdout}"
    assert "Traceback" not in preview.stdout + preview.stderr

    up = project.pulumi("up", "--yes", "--skip-preview", stack="broken")
    assert up.returncode != 0
    assert not (scratch / "rendered" / "broken").exists(), "a failed config must create nothing"


# Each rule the bad fixture breaks, with the message it must print.
FIXTURE_VIOLATIONS = {
    "pod-security-restricted": "container triton is privileged",
    "no-host-access": "host namespace hostNetwork is enabled",
    "read-only-root-filesystem": "container triton must set securityContext.readOnlyRootFilesystem: true",
    "resources-and-pinned-images": "image 'nvcr.io/nvidia/tritonserver:latest' must be pinned",
    "triton-health": "the tritonserver container has no nvidia.com/gpu limit",
    "triton-api-surface": f"unknown tritonserver flag {INVENTED_FLAG}",
    "no-load-balancer": "Service type LoadBalancer exposes the server outside the cluster",
    "keda-scaling-safety": "production ScaledObjects need a fallback",
    "no-plaintext-secrets": "env SLACK_WEBHOOK holds a secret-looking value",
    "protected-model-storage": "production model storage must be protected (pulumi protect)",
    "triton-availability": "no PodDisruptionBudget selects its pods",
    "triton-drain": "runs as few as 0 replicas (ScaledObject 'triton' minReplicaCount)",
    "namespace-network-policy": "no NetworkPolicy in this namespace",
    "keda-no-static-replicas": "scaled by KEDA, so it must not set spec.replicas",
    "ephemeral-storage": "container triton has no ephemeral-storage requests",
    "production-image-digests": "container triton runs nvcr.io/nvidia/tritonserver:latest by tag",
    "namespace-egress-policy": "runs pods but has no NetworkPolicy denying egress",
}


def grant_an_exception_to_triton_general(config: dict[str, Any]) -> None:
    config["triton-platform:policyExceptions"] = [
        {
            "policy": "production-image-digests",
            "kind": "Deployment",
            "name": "triton-general",
            "reason": "Granted by the test, for an object the bad program lacks.",
        }
    ]


def test_the_policy_pack_blocks_a_bad_program(project: Project, scratch: Path) -> None:
    fixture = scratch / "bad-program"
    shutil.copytree(PROJECT_ROOT / "tests" / "fixtures" / "policy_violations", fixture)
    (fixture / ".venv").symlink_to(project.root / ".venv")
    env = {
        **project.env,
        "POLICY_FIXTURE_RENDER_DIR": str(scratch / "bad-rendered"),
        "POLICY_FIXTURE_INVENTED_FLAG": INVENTED_FLAG,
    }
    bad = Project(fixture, env)
    bad.ok("stack", "init", "production")
    # The pack reads the production stack file's exceptions: one naming a Deployment this program does not create.
    production = project.root / "stacks" / "Pulumi.production.yaml"
    original = production.read_text()
    edit_stack(production, grant_an_exception_to_triton_general)
    try:
        preview = bad.pulumi("preview", "--policy-pack", str(project.root / "policy"), stack="production")
    finally:
        production.write_text(original)
    output = preview.stdout + preview.stderr
    assert preview.returncode != 0
    for policy, message in FIXTURE_VIOLATIONS.items():
        assert f"[mandatory]  {policy}" in output, f"{policy} did not fire:\n{output}"
        assert message in output, f"{policy}: {message!r} missing"
    assert set(FIXTURE_VIOLATIONS) == set(POLICY_NAMES)
    assert "[mandatory]  policy-exceptions-name-objects" in output
    assert "grants production-image-digests to Deployment 'triton-general', which is no object" in output
    # `up` previews first: blocked there, it creates nothing. (With --skip-preview, resource policies
    # still stop each bad object, but stack policies only run after the update.)
    up = bad.pulumi("up", "--yes", "--policy-pack", str(project.root / "policy"), stack="production")
    assert up.returncode != 0
    assert not (scratch / "bad-rendered" / "1-manifest").exists()


@pytest.mark.parametrize("toolchain", ["offline", "stock"])
def test_make_up_renders_dev_into_rendered_dev(tmp_path: Path, toolchain: str) -> None:
    """`make up` through a real CLI of another 3.x release than the SDK's: the offline toolchain's, and the same
    binary found on PATH as a user's own (stock: the range check, the user's plugin home, acquisition on)."""
    project = make_project(tmp_path, render_override=False)
    # scripts/up uses scripts/pulumi-env: the copy's own file backend.
    project.env.pop("PULUMI_BACKEND_URL")
    # Offline: the copy builds its own toolchain (.tools is not in git). Stock: this checkout's CLI, as a user's.
    cli = str(project.root / ".tools" / "bin" / "pulumi")
    if toolchain == "stock":
        users = tmp_path / "users-bin"
        users.mkdir()
        (users / "pulumi").symlink_to(pulumi_binary())
        cli = str(users / "pulumi")
        project.env["PATH"] = f"{users}{os.pathsep}{project.env['PATH']}"
        project.env.pop("TRITON_PULUMI_TOOLCHAIN")
    result = subprocess.run(
        ["scripts/up", "dev"], cwd=project.root, env=project.env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    cli_version = subprocess.run([cli, "version"], capture_output=True, text=True, check=True).stdout.strip()
    sdk_version = importlib.metadata.version("pulumi")
    assert cli_version.removeprefix("v") != sdk_version, "this case needs a CLI of another release than the SDK's"
    assert f"make up: {cli} {cli_version} ({toolchain}), Python SDK pulumi {sdk_version}," in result.stderr
    objects = rendered_objects(project.root / "rendered" / "dev")
    assert {"Namespace", "Deployment", "Service", "ConfigMap"} <= {o["kind"] for o in objects}
    assert (project.root / ".pulumi-state").is_dir()
