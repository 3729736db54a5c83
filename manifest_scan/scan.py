"""One stack scanned: its manifests synthesized into a temporary folder, then both scanners over them."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from manifest_scan.findings import Finding
from manifest_scan.runners import run_checkov, run_kube_score
from offline.chart_template import HelmTemplater
from offline.synth import synthesize, write_synth
from platform_config.paths import STACKS_DIR, stack_file


@dataclass(frozen=True)
class StackScan:
    stack: str
    findings: list[Finding]
    """Both scanners', before exceptions."""
    checkov_passed: int


def known_stacks() -> list[str]:
    """Every stack with a `stacks/Pulumi.<name>.yaml`."""
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def scan_folder(folder: Path, stack: str) -> StackScan:
    checkov_findings, passed = run_checkov(folder, stack)
    return StackScan(stack, sorted([*checkov_findings, *run_kube_score(folder, stack)]), passed)


def synth_and_scan(stack: str) -> StackScan:
    with tempfile.TemporaryDirectory(prefix=f"manifest-scan-{stack}-") as folder:
        write_synth(synthesize(stack_file(stack), stack, HelmTemplater.from_environment()), Path(folder))
        return scan_folder(Path(folder), stack)
