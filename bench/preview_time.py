"""Production's `pulumi preview` beside its anchors, in one run on this machine.

    .venv/bin/python bench/preview_time.py [--repeat 3]

(a) production's preview, in render mode and in deploy mode against the local control plane
    (scripts/local-cluster, empty: production installs its charts);
(b) bench/bare_charts: a program installing only production's two charts, from the same folders, by the same
    mechanism (triton_platform.kube.helm_chart.InstalledChart) with the same values, read from production's program;
(c) `helm template` of the same two charts with the same options (Helm as `make tools` builds it).

Every preview also runs with the CLI's automatic log unavailable (its `logs` folder a file, in a Pulumi home of
the bench's own sharing the toolchain's plugins). That is a diagnostic, not a way to run: the CLI writes a debug log
of every property it marshals to ~/.pulumi/logs, unconditionally since pulumi/pulumi#23731 (2026-06;
pkg/cmd/pulumi/pulumi.go, StartLogging), with no setting to turn it off; the column shows what that log costs.
Each figure is the median of `--repeat` runs; CPU is every process of the run together (the CLI, the program,
the providers).
Prints a Markdown table (bench/results/preview_time.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pulumi
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from offline.chart_template import HelmTemplater  # noqa: E402
from offline.mock_runtime import HELM_TEMPLATE, EchoMocks  # noqa: E402
from offline.synth import run_synth  # noqa: E402
from platform_config.loader import load_stack_file  # noqa: E402
from platform_config.stack_document import pulumi_config_from_stack_file  # noqa: E402
from tests.support.local_cluster import CONTEXT, LocalCluster, point_stack_at, start_cluster, use_offline_charts  # noqa: E402
from tests.support.pulumi_cli import Project, make_project, pulumi_home  # noqa: E402

STACK = "production"
BARE = "bench/bare_charts"


class RecordingMocks(EchoMocks):
    """Production's program under mocks, keeping the options of each chart it templates."""

    def __init__(self) -> None:
        super().__init__()
        self.templated: list[dict[str, Any]] = []

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        if args.token == HELM_TEMPLATE:
            self.templated.append(json.loads(args.args["jsonOpts"]))
        return super().call(args)


def production_file(target: Path) -> Path:
    """Production's stack file with its charts from the offline folders, as the deploy tests install them."""
    document = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())
    use_offline_charts(document["config"])
    path = target / f"Pulumi.{STACK}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def chart_options(stack_file: Path) -> list[dict[str, Any]]:
    """`kubernetes:helm:template`'s options for each chart production installs, in the order it installs them."""
    loaded = load_stack_file(stack_file, STACK)
    flat, secret_keys = pulumi_config_from_stack_file(stack_file)
    mocks = RecordingMocks()
    run_synth(loaded.stack, flat, secret_keys, mocks)
    # The calls come in no fixed order; KEDA's chart brings a ServiceMonitor, so the Prometheus Operator's goes
    # first, as production orders them.
    return sorted(mocks.templated, key=lambda options: options["chart"] != "kube-prometheus-stack")


def bare_charts(options: list[dict[str, Any]], *, deploys: bool) -> list[dict[str, Any]]:
    """bench/bare_charts' settings: each chart's folder, version, release, namespace and values as production's."""
    charts = []
    for chart in options:
        folder = Path(chart["path"]) / chart["chart"]
        charts.append(
            {
                "chart_name": chart["chart"],
                "version": str(yaml.safe_load((folder / "Chart.yaml").read_text())["version"]),
                "path": str(folder),
                "release": chart["release_name"],
                "namespace": chart["namespace"],
                "values": chart["values"],
                # Deploying, the provider asks the API server, as production's program leaves it to.
                "kube_version": None if deploys else chart.get("kube_version"),
            }
        )
    return charts


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    log_bytes: int


def logs_size(home: Path, since: float) -> int:
    folder = home / "logs"
    if not folder.is_dir():
        return 0
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.stat().st_mtime >= since)


def preview(project: Project, stack: str, home: Path) -> Run:
    """One `pulumi preview` of a stack that exists; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, since = time.perf_counter(), time.time()
    project.env["PULUMI_HOME"] = str(home)
    project.ok("preview", stack=stack)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, logs_size(home, since))


def helm_template_seconds(options: list[dict[str, Any]], scratch: Path) -> float:
    """Wall seconds of `helm template` of every chart, one after another, as the provider templates them."""
    templater = HelmTemplater.from_environment()
    started = time.perf_counter()
    for chart in options:
        command, env = templater.command(chart, scratch)
        subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


@contextmanager
def local_cluster(folder: Path) -> Iterator[LocalCluster]:
    cluster = start_cluster(folder, operators=False)
    try:
        yield cluster
    finally:
        cluster.stop()


def median_runs(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        int(statistics.median(r.log_bytes for r in runs)),
    )


def measure(project: Project, stack: str, homes: dict[str, Path], repeat: int) -> dict[str, Run]:
    """Each home's median preview, the runs interleaved so that drift in the machine's load hits both alike."""
    project.ok("stack", "init", stack)
    runs: dict[str, list[Run]] = {name: [] for name in homes}
    for _ in range(repeat):
        for name, home in homes.items():
            runs[name].append(preview(project, stack, home))
    return {name: median_runs(r) for name, r in runs.items()}


def bare_project(copy: Project, charts: list[dict[str, Any]], scratch: Path, cluster: LocalCluster | None) -> Project:
    settings = scratch / "bare-charts.json"
    settings.write_text(json.dumps(charts))
    env = {**copy.env, "BARE_CHARTS": str(settings)}
    if cluster is None:
        env["BARE_RENDER_DIR"] = str(scratch / "bare-rendered")
    else:
        env.update(BARE_KUBECONFIG=cluster.kubeconfig.read_text(), BARE_CONTEXT=CONTEXT)
    return Project(copy.root / BARE, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"# production preview time against its anchors, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"command: .venv/bin/python bench/preview_time.py --repeat {args.repeat}\n")
    rows: list[tuple[str, str, dict[str, Run]]] = []
    with tempfile.TemporaryDirectory(prefix="preview-time-") as work:
        scratch = Path(work)
        homes = {
            name: pulumi_home(scratch / f"home-{name}", automatic_log=name == "logged")
            for name in ("logged", "unlogged")
        }
        stack_file = production_file(scratch)
        options = chart_options(stack_file)
        helm = statistics.median(helm_template_seconds(options, scratch) for _ in range(args.repeat))

        render = make_project(scratch / "render")
        shutil.copy2(stack_file, render.root / "stacks" / f"Pulumi.{STACK}.yaml")
        rows.append(("(a) production", "render", measure(render, STACK, homes, args.repeat)))
        bare = bare_project(render, bare_charts(options, deploys=False), scratch / "render", None)
        rows.append(("(b) bare charts", "render", measure(bare, "bench", homes, args.repeat)))

        with local_cluster(scratch / "cluster") as cluster:
            deploy = make_project(scratch / "deploy", deploys=True)
            point_stack_at(deploy.root / "stacks" / f"Pulumi.{STACK}.yaml", cluster)
            rows.append(("(a) production", "deploy", measure(deploy, STACK, homes, args.repeat)))
            bare = bare_project(deploy, bare_charts(options, deploys=True), scratch / "deploy", cluster)
            rows.append(("(b) bare charts", "deploy", measure(bare, "bench", homes, args.repeat)))

    print("| program | mode | wall s | CPU s | automatic log MB | wall s, log off | CPU s, log off |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for program, mode, runs in rows:
        on, off = runs["logged"], runs["unlogged"]
        print(
            f"| {program} | {mode} | {on.wall:.1f} | {on.cpu:.1f} | {on.log_bytes / 2**20:.0f} "
            f"| {off.wall:.1f} | {off.cpu:.1f} |"
        )
    print(f"| (c) helm template, both charts | | {helm:.1f} | | | | |")
    print()
    by_mode = {(program[:3], mode): runs for program, mode, runs in rows}
    for mode in ("render", "deploy"):
        production, bare_runs = by_mode[("(a)", mode)], by_mode[("(b)", mode)]
        print(
            f"{mode}: production / bare charts = {production['logged'].wall / bare_runs['logged'].wall:.2f} "
            f"(log off: {production['unlogged'].wall / bare_runs['unlogged'].wall:.2f}); "
            f"bare charts / helm template = {bare_runs['logged'].wall / helm:.1f}"
        )


if __name__ == "__main__":
    main()
