"""`stackctl plan --engine dask`: the candidates on a Dask cluster give the local run's plan, byte for byte, with one
model and with two planned together (a trace column per model: classifier by name and through pipeline, whose
steps are preprocess and classifier)."""

from __future__ import annotations

from pathlib import Path

import pytest
from distributed import LocalCluster

from stackctl.main import main
from tests.planner.test_planner import LIGHT, plan, stack_copy

ARGS = ("--slo-ms", "10", "--budget", "12", "--seeds", "2")
MODELS = "t_seconds,classifier,pipeline\n0,8,12\n60,16,24\n119,16,24\n"


def run(root: Path, out: str, *extra: str, trace: str = "models.csv") -> tuple[str, str]:
    """A plan of a light trace on production's stack file: plan.json and plan.md."""
    args = ["--config", str(root / "Pulumi.production.yaml"), "--trace", str(root / trace), *ARGS]
    assert main(["plan", *args, "--out", str(root / out), *extra]) == 0
    return (root / out / "plan.json").read_text(), (root / out / "plan.md").read_text()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("engine")
    stack_copy(folder)
    (folder / "light.csv").write_text(LIGHT)
    (folder / "models.csv").write_text(MODELS)
    return folder


@pytest.fixture(scope="module")
def local(root: Path) -> tuple[str, str]:
    plan_json, plan_md = run(root, "local")
    assert "Models: this plan simulates classifier, preprocess together" in plan_md
    return plan_json, plan_md


def test_a_local_dask_cluster_gives_the_local_plan(root: Path, local: tuple[str, str]) -> None:
    """Without --scheduler: a LocalCluster of worker processes on loopback, started and stopped by the plan."""
    assert run(root, "dask", "--engine", "dask") == local


def test_one_model_on_a_local_dask_cluster_gives_the_local_plan(root: Path) -> None:
    alone = run(root, "alone-local", trace="light.csv")
    assert "Models: this plan simulates classifier alone" in alone[1]
    assert run(root, "alone-dask", "--engine", "dask", trace="light.csv") == alone


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


@pytest.mark.slow  # Dask tries the address until SCHEDULER_TIMEOUT (15 s)
def test_a_scheduler_that_cannot_be_reached_is_named_as_the_option(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--config", str(root / "Pulumi.production.yaml"), "--trace", str(root / "light.csv"), *ARGS]
    # Port 1 on loopback: nothing listens there.
    code, _, err = plan(
        capsys, *args, "--out", str(root / "unreached"), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:1"
    )
    assert code == 2
    assert err.startswith("stackctl plan: --scheduler tcp://127.0.0.1:1: cannot reach the Dask scheduler (")
    assert err.rstrip().endswith(
        "); start one there (`dask scheduler`), or leave --scheduler out for a LocalCluster on this machine"
    )
