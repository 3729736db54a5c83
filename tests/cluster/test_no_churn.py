"""No churn for existing stacks: state that `pulumi up` created at a base revision previews with no change at
the working tree, for every stack.

Per stack: the base revision's tree (`git archive`) runs `pulumi up` into a scratch file
backend; the working tree then runs `pulumi preview --expect-no-changes` against the same
backend and stack, with the same stack file (the base's, salt included) and the same mode.
dev renders to files; staging and production deploy onto a local control plane
(scripts/local-cluster), pointed at it as tests/cluster/test_cluster_deploy.py points them, each
on a cluster of its own: both create the `gpu-system` namespace and its device plugin, and
production installs the KEDA and Prometheus Operator charts that staging expects to find.

Every step of the preview must be `same`: a changed URN (type, name or parent) without an
alias shows as a create and a delete, a changed object as an update. Production's model
claim and namespace are protected in the base state, so no replacement can reach them.

The base is the last commit whose deployed objects or stack files differ from the tree's: a change meant to
alter what is deployed moves it, in the same review (as a golden file), and everything after must not churn.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from platform_config.paths import PROJECT_ROOT
from preview.settings import renders, stack_settings
from preview.workspace import export_tree, tree_env
from tests.conftest import STACKS
from tests.support.local_cluster import LocalCluster, point_stack_at, start_cluster
from tests.support.pulumi_cli import Project, make_project

pytestmark = pytest.mark.real_tools

BASE_REVISION = "0cfceda718857bc29e85f56653de1eda5b9a9d64"
"""The last commit that changed what is deployed (issue 55: each stack's ServiceMonitor selects the monitored
deployments' Services by their app.kubernetes.io/instance, TritonServing's Deployment names). Before it: bc753aa
(issue 54: the loader image is rclone 1.76.0, was 1.60.1). Before it:
820b668 (issue 54: production installs kube-prometheus-stack 88.5.3, was 79.7.1). Before it: da29533 (issue 55: the alerts select the monitored deployments' objects by name). Before it: 1b7bc6b (issue 54: staging's cluster-autoscaler image, v1.34.5 of the stacks' Kubernetes minor,
was v1.31.0). Before it: 5f09c1b (issue 54: the PrometheusRule's GPUSeriesMissing alerts, a GPU
series absent while Triton pods are scraped). Before it: 78d0c33 (issue 53: every chart's PodDisruptionBudget, and the HTTP
add-on's own, let an unready pod be evicted, `unhealthyPodEvictionPolicy: AlwaysAllow`; the add-on's pods at KEDA's
priority class where KEDA installs with one). Before it: 1c25928 (issue 52: production scales on demand, its ScaledObjects' query
and scale-up, its recording rule and dashboards, and its queues bounded by time in every model's config; staging's
plan applied: classifier's preferred batch sizes and the scale-up). Before it: f99fbc4 (issue 41: dev's `general`
idles at zero, woken through the KEDA
HTTP add-on: its ExternalName and pods' Services, InterceptorRoutes, ScaledObject triggers, wake alert). Before it:
402d3d4 (every stack's ServiceMonitor states its relabelings' `replace` action, which the CRD defaulted). Before it: 681d527 (issue 39: production's p99 objective, `p99LatencySloMs`, and
its `TritonLatencyP99AboveSLO` alert, one rule more in production's PrometheusRule). Before it: 42e3935 (issue 40: production's Prometheus and Alertmanager with volumes, two
replicas, resources and a PriorityClass; KEDA at two replicas with PDBs, spread, narrowed RBAC; every chart image
by the platform's pull rule; the control-plane jobs off on EKS). Before it: c812397 (issue 37: the device plugin
v0.20.0 and DCGM exporter 4.6.0-4.8.3 images, its DISABLE_STARTUP_VALIDATE, and the GPU alerts' node label). Before
it: b125f84 (issue 29: the charts' CRDs in a ConfigGroup of their own, two new component resources; from 502fb68's
state every cluster object previewed same and only the two `-crds` groups were created). Before it: e1906b6 (issue
28: PDB eviction policy, production's drain floor, DCGM priority, pull policy by tag or digest); issue 26's
component package (new type tokens, aliased) was proven from 5b85fc8 at a1536ac, and issue 19's rework from
6b4dc4c. Before issue 29 the base tree imported the checkout's component package (the virtualenv installs it
editable), so those proofs held the program and the stack files, not the package."""

# Production's objects whose loss loses data (docs/architecture.md, "Publishing and the PVC loader"): (resource type, object name).
PRODUCTION_PROTECTED = {
    ("kubernetes:core/v1:Namespace", "triton-production"),
    ("kubernetes:core/v1:PersistentVolumeClaim", "triton-model-repository"),
}
PVC = "kubernetes:core/v1:PersistentVolumeClaim"


def pulumi_json(project: Project, *args: str, stack: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """A `pulumi` command's JSON output, decoded, and the run; a run that printed no JSON fails, naming its output."""
    result = project.pulumi(*args, stack=stack)
    try:
        decoded: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"pulumi {' '.join(args)} (exit {result.returncode}) printed no JSON:\n{result.stdout}\n{result.stderr}"
        ) from None
    return decoded, result


FORMER_TYPES = {
    "triton-platform:gpu:GpuNodePool": "triton-platform:index:GpuNodePool",
    "triton-platform:serving:TritonServing": "triton-platform:index:TritonServing",
    "triton-platform:scaling:KedaScaling": "triton-platform:index:KedaScaling",
    "triton-platform:monitoring:Monitoring": "triton-platform:index:Monitoring",
}
"""The components' type tokens before the component package, and theirs since (each aliased to the former)."""


def former_to_current(urn: str) -> str:
    for former, current in FORMER_TYPES.items():
        urn = urn.replace(former, current)
    return urn


def object_name(resource: dict[str, Any]) -> str | None:
    return ((resource.get("outputs") or {}).get("metadata") or {}).get("name")


def describe(step: dict[str, Any]) -> str:
    """A step as `op urn`, with the properties an update or replacement changes."""
    diff = step.get("detailedDiff") or step.get("diffReasons")
    return f"{step['op']} {step['urn']}" + (f": {json.dumps(diff)}" if diff else "")


def is_default_provider(urn: str) -> bool:
    # The engine registers default providers (here: random's) without a step of their own.
    return "::pulumi:providers:" in urn and urn.rsplit("::", 1)[1].startswith("default")


@dataclass(frozen=True)
class Trees:
    """One stack at the two revisions, sharing one scratch backend."""

    stack: str
    base: Project
    """The base revision's tree; a deploying stack's file is pointed at the local cluster."""
    head: Project
    """The working tree."""
    committed: dict[str, str]
    """The stack's settings as the base revision commits them (preview.settings.stack_settings)."""


@pytest.fixture(params=STACKS)
def trees(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Trees]:
    """The stack at both revisions; a deploying stack gets a local cluster of its own."""
    stack: str = request.param
    found = subprocess.run(
        ["git", "cat-file", "-e", f"{BASE_REVISION}^{{commit}}"], cwd=PROJECT_ROOT, capture_output=True, check=False
    )
    assert found.returncode == 0, (
        f"the base revision {BASE_REVISION} is not in the git history of {PROJECT_ROOT} (a shallow clone?): "
        "fetch the full history (`git fetch --unshallow`) to run the no-churn proof"
    )
    committed = stack_settings(export_tree(PROJECT_ROOT, BASE_REVISION, tmp_path / "base"), stack)
    # dev renders to files; staging and production deploy.
    deploys = not renders(tmp_path / "base", stack)
    # The working tree; its backend and CLI environment serve the base tree too.
    head = make_project(tmp_path / "pulumi", render_override=False, deploys=deploys)
    # The base revision's own component package, not the checkout's (tree_env).
    base = Project(tmp_path / "base", tree_env(tmp_path / "base", head.env))
    cluster: LocalCluster | None = None
    try:
        if deploys:
            # Like test_cluster_deploy.py: KEDA and the Prometheus Operator's CRDs are there unless the stack installs them.
            installs = committed.get("triton-platform:monitoring.mode") == json.dumps("install")
            cluster = start_cluster(tmp_path / "cluster", operators=not installs)
            stack_file = base.root / "stacks" / f"Pulumi.{stack}.yaml"
            # The committed salt is the local-only passphrase's; `stack init` draws one for the deploy passphrase.
            lines = stack_file.read_text().splitlines(keepends=True)
            stack_file.write_text("".join(line for line in lines if not line.startswith("encryptionsalt:")))
            point_stack_at(stack_file, cluster)
        yield Trees(stack, base, head, committed)
    finally:
        if cluster is not None:
            cluster.stop()


def test_state_from_the_base_revision_previews_without_change(trees: Trees) -> None:
    stack, base, head = trees.stack, trees.base, trees.head
    base.ok("stack", "init", stack)
    base.ok("up", "--yes", "--skip-preview", stack=stack)
    exported, run = pulumi_json(base, "stack", "export", stack=stack)
    assert run.returncode == 0, run.stderr
    state = exported["deployment"]["resources"]

    protected_urns: set[str] = set()
    if stack == "production":
        by_name = {(r["type"], object_name(r)): r for r in state}
        for kind, name in sorted(PRODUCTION_PROTECTED):
            assert (kind, name) in by_name, f"production's base state has no {kind} {name}"
            assert by_name[kind, name].get("protect") is True, f"{kind} {name} is not protected in the base state"
        claims = [r for r in state if r["type"] == PVC]
        assert [object_name(r) for r in claims if not r.get("protect")] == []
        protected_urns = {by_name[key]["urn"] for key in PRODUCTION_PROTECTED}

    # The working tree's own stack file holds the same settings (its comments may differ), and the
    # preview runs with the very file the base deployed with.
    assert stack_settings(head.root, stack) == trees.committed, f"stacks/Pulumi.{stack}.yaml changed its settings"
    stack_file = Path("stacks") / f"Pulumi.{stack}.yaml"
    (head.root / stack_file).write_text((base.root / stack_file).read_text())
    args = ("preview", "--json", "--show-sames", "--expect-no-changes")
    preview, run = pulumi_json(head, *args, stack=stack)
    errors = [d.get("message", "") for d in preview.get("diagnostics", []) if d.get("severity") == "error"]
    assert errors == [], f"{stack}: pulumi preview at the working tree failed:\n" + "\n".join(errors)
    steps = preview["steps"]
    changed = [describe(s) for s in steps if s["op"] != "same"]
    assert changed == [], f"{stack}: the working tree changes resources of the base state:\n" + "\n".join(changed)
    assert run.returncode == 0, f"pulumi {' '.join(args)} failed:\n{run.stderr}"
    assert preview["changeSummary"] == {"same": len(steps)}
    # Every resource of the base state is still declared (a missing one would be a delete): a step's old
    # state is the base resource it matched, by URN or through an alias (the package's new type tokens).
    matched = {(s.get("oldState") or {}).get("urn", s["urn"]) for s in steps}
    assert matched == {r["urn"] for r in state if not is_default_provider(r["urn"])}
    aliased = [s for s in steps if (s.get("oldState") or {}).get("urn", s["urn"]) != s["urn"]]
    if aliased:
        # Only the type tokens changed, and only as the package's aliases say (component_types.py).
        renamed = {(s["oldState"]["urn"], s["urn"]) for s in aliased}
        assert all(former_to_current(old) == new for old, new in renamed), sorted(renamed)[:3]
    ops = {(s.get("oldState") or {}).get("urn", s["urn"]): s["op"] for s in steps}
    assert {urn: ops[urn] for urn in protected_urns} == dict.fromkeys(protected_urns, "same")
