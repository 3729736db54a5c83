"""Staging's scaling loop on the local control plane, as tests/cluster/test_cluster_scaling.py and test_cluster_demand.py
run it: a real tritonserver (CPU) and Prometheus outside the cluster, the stack's copy deployed with its Prometheus
address pointed there, and the object store's Secret a staging user lays beside the stack."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platform_config.schema import PlatformConfig
from tests.support.local_cluster import LocalCluster, edit_stack, point_stack_at, start_cluster
from tests.support.pulumi_cli import Project, make_project
from tests.support.triton_prometheus import Served, serve_with_prometheus

GPU_MEMORY = (2e9, 24e9)
"""A CPU-only Triton exports no GPU gauges; the GPU trigger reads a static 1/12 of a GPU's memory, far below its
target, so the load trigger alone moves the count, as on a GPU node at light use."""


@dataclass
class Loop:
    cluster: LocalCluster
    served: Served
    project: Project
    work: Path


@contextmanager
def deployed_loop(
    work: Path,
    stack: str,
    config: PlatformConfig,
    deployment: str,
    edit: Callable[[dict[str, Any], Served], None],
    *,
    more_metrics: Callable[[], str] | None = None,
    models: Path | None = None,
) -> Iterator[Loop]:
    """`stack`'s copy, changed by `edit` (its config and the Triton and Prometheus serving it), deployed;
    `more_metrics`, series scraped beside Triton's (serve_with_prometheus); `models`, a folder of model folders
    added to the copy's model repository."""
    cluster = start_cluster(work / "cluster")
    try:
        with serve_with_prometheus(
            stack, config, deployment, work / "serving", gpu_memory=GPU_MEMORY, more_metrics=more_metrics
        ) as served:
            project = make_project(work / "pulumi", deploys=True)
            if models is not None:
                shutil.copytree(models, project.root / "model_repo", dirs_exist_ok=True)
            stack_file = project.root / "stacks" / f"Pulumi.{stack}.yaml"
            point_stack_at(stack_file, cluster)
            edit_stack(stack_file, lambda values: edit(values, served))
            project.ok("stack", "init", stack)
            project.ok("up", "--yes", "--skip-preview", stack=stack)
            # The object store's credentials, as a staging user lays them beside the stack: without the Secret
            # KEDA cannot resolve the scale target's environment and never creates the HPA.
            secret = config.serving.model_repository.credentials_secret
            assert secret is not None
            cluster.kubectl(
                "create", "secret", "generic", secret, "-n", config.kubernetes.namespace,
                "--from-literal=AWS_ACCESS_KEY_ID=local", "--from-literal=AWS_SECRET_ACCESS_KEY=local",
            )  # fmt: skip
            yield Loop(cluster, served, project, work)
    finally:
        cluster.stop()
