"""Wall time of the test suite and of each `make test` stage on this machine.

A measurement, not a test: run `.venv/bin/python bench/suite_time.py [--repeat N]`
and quote the printed figures. Each stage runs N times; min and median are shown.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"

REAL_TOOL_TESTS = [
    # Start tritonserver, Prometheus, promtool/amtool, the Pulumi CLI, or fetch CRDs through the Go proxy.
    "tests/cluster/test_pulumi_e2e.py",
    "tests/preview/test_preview_diff.py",
    "tests/offline/test_pulumi_toolchain.py",
    "tests/cluster/test_triton_real.py",
    "tests/cluster/test_prometheus_real.py",
    "tests/program/test_monitoring.py",
    "tests/components/triton_platform/kube/test_custom_resources.py",
    # A real control plane (scripts/local-cluster) with the Pulumi CLI, KEDA, tritonserver and Prometheus.
    "tests/cluster/test_cluster_deploy.py",
    "tests/cluster/test_cluster_faults.py",
    "tests/cluster/test_cluster_scaling.py",
]
PYTEST = [str(BIN / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
STAGES = {
    "ruff format --check": [str(BIN / "ruff"), "format", "--check", "."],
    "ruff check": [str(BIN / "ruff"), "check", "."],
    "mypy (warm cache)": [str(BIN / "mypy"), "."],
    "pytest: mock and unit tests": [*PYTEST, *(f"--ignore={t}" for t in REAL_TOOL_TESTS)],
    "pytest: real-tool tests": [*PYTEST, *REAL_TOOL_TESTS],
    "pytest: whole suite": PYTEST,
}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"# suite wall time, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"command: .venv/bin/python bench/suite_time.py --repeat {args.repeat}\n")
    print("| stage | min s | median s |")
    print("| --- | ---: | ---: |")
    for name, command in STAGES.items():
        runs = [timed(command) for _ in range(args.repeat)]
        print(f"| {name} | {min(runs):.2f} | {statistics.median(runs):.2f} |")


if __name__ == "__main__":
    main()
