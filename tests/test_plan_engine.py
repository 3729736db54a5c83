"""`stackctl plan --engine dask`: the candidates on a Dask cluster give the local run's plan, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from distributed import LocalCluster

from stackctl.main import main
from tests.test_planner import LIGHT, plan, stack_copy

ARGS = ("--slo-ms", "10", "--budget", "12", "--seeds", "2")


def run(root: Path, out: str, *extra: str) -> tuple[str, str]:
    """A plan of the light trace on production's stack file: plan.json and plan.md."""
    args = ["--config", str(root / "Pulumi.production.yaml"), "--trace", str(root / "light.csv"), *ARGS]
    assert main(["plan", *args, "--out", str(root / out), *extra]) == 0
    return (root / out / "plan.json").read_text(), (root / out / "plan.md").read_text()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("engine")
    stack_copy(folder)
    (folder / "light.csv").write_text(LIGHT)
    return folder


@pytest.fixture(scope="module")
def local(root: Path) -> tuple[str, str]:
    return run(root, "local")


def test_a_local_dask_cluster_gives_the_local_plan(root: Path, local: tuple[str, str]) -> None:
    """Without --scheduler: a LocalCluster of worker processes on loopback, started and stopped by the plan."""
    assert run(root, "dask", "--engine", "dask") == local


def test_a_dask_scheduler_gives_the_local_plan(root: Path, local: tuple[str, str]) -> None:
    """--scheduler: the workers of a cluster running apart from the plan, two processes on loopback."""
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None)  # type: ignore[no-untyped-call]
    with cluster:
        assert run(root, "scheduler", "--engine", "dask", "--scheduler", cluster.scheduler_address) == local


def test_a_scheduler_without_the_dask_engine_is_an_input_error(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--config", str(root / "Pulumi.production.yaml"), "--trace", str(root / "light.csv"), *ARGS]
    code, _, err = plan(capsys, *args, "--out", str(root / "refused"), "--scheduler", "tcp://127.0.0.1:8786")
    assert code == 2
    assert "--engine dask" in err
