"""Faults on the way to a real control plane: a second `up` that has nothing to do, a context that cannot
be reached, and an API server that dies in the middle of `pulumi up`."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import stack_values
from tests.support.local_cluster import CONTEXT, LocalCluster, edit_stack, point_stack_at, start_cluster, wait_until
from tests.support.pulumi_cli import Project, make_project, pulumi_binary

pytestmark = pytest.mark.real_tools  # the local control plane and the Pulumi CLI

STACK = "dev"
NAMESPACE = stack_values(STACK)["triton-platform:kubernetes"]["namespace"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    started = start_cluster(tmp_path_factory.mktemp("faults") / "cluster")
    try:
        yield started
    finally:
        started.stop()


def fresh_project(tmp_path: Path, cluster: LocalCluster) -> Project:
    project = make_project(tmp_path / "pulumi", deploys=True)
    point_stack_at(project.root / "stacks" / f"Pulumi.{STACK}.yaml", cluster)
    project.ok("stack", "init", STACK)
    return project


def test_a_second_up_with_nothing_changed_changes_nothing(cluster: LocalCluster, tmp_path: Path) -> None:
    project = fresh_project(tmp_path, cluster)
    project.ok("up", "--yes", "--skip-preview", stack=STACK)
    second = project.ok("up", "--yes", "--skip-preview", "--expect-no-changes", stack=STACK)
    assert "unchanged" in second
    project.ok("destroy", "--yes", "--skip-preview", stack=STACK)


def test_up_against_an_unreachable_context_names_it(cluster: LocalCluster, tmp_path: Path) -> None:
    project = make_project(tmp_path / "pulumi", deploys=True)
    # The same context name, but its API server address has nothing listening.
    dead = tmp_path / "dead-kubeconfig"
    dead.write_text(cluster.kubeconfig.read_text().replace(f"127.0.0.1:{cluster.api_port}", "127.0.0.1:9"))

    def unreachable(config: dict[str, Any]) -> None:
        config["triton-platform:kubernetes"].update(mode="deploy", context=CONTEXT, kubeconfig=str(dead))

    edit_stack(project.root / "stacks" / f"Pulumi.{STACK}.yaml", unreachable)
    project.ok("stack", "init", STACK)
    up = project.pulumi("up", "--yes", "--skip-preview", stack=STACK)
    output = up.stdout + up.stderr
    assert up.returncode != 0
    assert f"context {CONTEXT!r}" in output, output
    assert "127.0.0.1:9" in output, output
    assert "Traceback" not in output


def test_objects_the_state_lost_are_adopted_by_the_next_up(cluster: LocalCluster, tmp_path: Path) -> None:
    # What an interrupted `up` can leave every time: objects the API server created whose creation never
    # reached the state. The next `up` applies them as new field managers (pulumi-kubernetes names each at
    # random) and must share each field rather than conflict, as it must after the fault below, whatever the
    # moment of the fault.
    project = fresh_project(tmp_path, cluster)
    project.ok("up", "--yes", "--skip-preview", stack=STACK)
    deployment = json.loads(project.ok("stack", "export", stack=STACK))
    resources = deployment["deployment"]["resources"]
    lost = {r["urn"] for r in resources if r["type"].startswith("kubernetes:") and r.get("custom")}
    assert len(lost) > 20, lost
    kept = [r for r in resources if r["urn"] not in lost]
    for resource in kept:
        resource["dependencies"] = [urn for urn in resource.get("dependencies", []) if urn not in lost]
        for key, urns in resource.get("propertyDependencies", {}).items():
            resource["propertyDependencies"][key] = [urn for urn in urns if urn not in lost]
    deployment["deployment"]["resources"] = kept
    exported = tmp_path / "state-without-objects.json"
    exported.write_text(json.dumps(deployment))
    project.ok("stack", "import", "--file", str(exported), stack=STACK)

    project.ok("up", "--yes", "--skip-preview", stack=STACK)
    project.ok("preview", "--expect-no-changes", stack=STACK)
    project.ok("destroy", "--yes", "--skip-preview", stack=STACK)


def test_the_api_server_dies_mid_up_and_the_next_up_converges(cluster: LocalCluster, tmp_path: Path) -> None:
    project = fresh_project(tmp_path, cluster)
    # Checkpoints after every step, as a user's `up` saves them: the interrupted run's state is what is tested.
    project.env.pop("PULUMI_SKIP_CHECKPOINTS")
    command = [pulumi_binary(), "up", "--yes", "--skip-preview", "--non-interactive", "--stack", STACK]
    running = subprocess.Popen(command, cwd=project.root, env=project.env, stdout=subprocess.PIPE, text=True)
    try:
        # Kill it once part of the stack exists: the namespace is among the first objects created.
        wait_until("the first objects", lambda: cluster.get("namespace", NAMESPACE) is not None, timeout=300)
        assert running.poll() is None, "pulumi up finished before the API server could be killed"
        cluster.script("kill-apiserver")
        # The provider's calls fail or wait (an await retries its watch); either way the API server
        # comes back while this `up` may still be running, and whatever it left is the next up's job.
        time.sleep(10)
        cluster.script("restart-apiserver")
        running.communicate(timeout=900)
    finally:
        if running.poll() is None:
            running.kill()

    # The next up finishes the job: no errors, nothing left to change, and every object once.
    project.ok("up", "--yes", "--skip-preview", stack=STACK)
    project.ok("preview", "--expect-no-changes", stack=STACK)
    deployments = cluster.get("deployments", "-n", NAMESPACE)["items"]
    names = [d["metadata"]["name"] for d in deployments]
    assert sorted(names) == sorted(set(names))
    assert set(names) >= {f"triton-{name}" for name in stack_values(STACK)["triton-platform:serving"]["deployments"]}
    state = project.ok("stack", "export", stack=STACK)
    assert '"pending_operations"' not in state or '"pending_operations": []' in state
    project.ok("destroy", "--yes", "--skip-preview", stack=STACK)
