"""checkov and kube-score over a folder of manifests, their reports read into findings.

The tools are where `make tools` puts them; `CHECKOV` and `KUBE_SCORE` point
elsewhere. A missing tool is an error, never a skipped scan.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

from manifest_scan.findings import Finding, Severity
from manifest_scan.manifests import ObjectKey, container_names, pod_spec, read_objects
from platform_config.paths import PROJECT_ROOT, display_path

CHECKOV_VERSION = "3.3.30"
CHECKOV = PROJECT_ROOT / "manifest_scan" / ".venv" / "bin" / "checkov"
KUBE_SCORE_VERSION = "v1.20.0"
KUBE_SCORE = PROJECT_ROOT / ".tools" / "bin" / f"kube-score-{KUBE_SCORE_VERSION}"

# Both exit 1 when they find something; anything else is a crash.
SCANNER_EXIT_CODES = (0, 1)
# checkov's evaluated keys name a container by list and index: `spec/template/spec/containers/[0]/image`.
CHECKOV_CONTAINER = re.compile(r"(?:^|/)(initContainers|containers)/\[(\d+)\]")
KUBE_SCORE_OK = 10
KUBE_SCORE_CRITICAL = 1


class ScanError(Exception):
    """A scanner that is missing, crashed, or reported something that is not in the folder."""


def tool(name: str, variable: str, default: Path, version: str) -> Path:
    """The scanner's executable: `$variable` when set, else where `make tools` builds it."""
    override = os.environ.get(variable)
    path = Path(override) if override else default
    if not (path.is_file() and os.access(path, os.X_OK)):
        where = f"{override} (from {variable})" if override else display_path(path)
        raise ScanError(
            f"{name} not found at {where}: run `make tools` to build {display_path(default)}, "
            f"or set {variable} to a {name} {version}"
        )
    return path


def _run(command: list[str], name: str) -> Any:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in SCANNER_EXIT_CODES:
        raise ScanError(f"{name} exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as err:
        raise ScanError(f"{name} printed no JSON report ({err}): {done.stdout[:500]!r}") from err


def _checkov_object(objects: dict[ObjectKey, dict[str, Any]], resource: str) -> tuple[ObjectKey, dict[str, Any]]:
    """The object of checkov's `Kind.namespace.name` (checkov says `default` for cluster-scoped ones)."""
    kind, namespace, name = resource.split(".", 2)
    candidates: list[ObjectKey] = [(kind, namespace, name)]
    if namespace == "default":
        candidates.append((kind, None, name))
    for key in candidates:
        if key in objects:
            return key, objects[key]
    raise ScanError(f"checkov reported {resource}, which is no object of the folder")


def _checkov_container(obj: dict[str, Any], evaluated_keys: list[str]) -> str | None:
    """The one container checkov's evaluated keys point at; None when they name none, or several."""
    spec = pod_spec(obj)
    named = {
        spec[match[1]][int(match[2])]["name"] for key in evaluated_keys if (match := CHECKOV_CONTAINER.search(key))
    }
    return named.pop() if len(named) == 1 else None


def run_checkov(folder: Path, stack: str) -> tuple[list[Finding], int]:
    """checkov's failed checks on the folder's manifests, and how many checks passed."""
    checkov = tool("checkov", "CHECKOV", CHECKOV, CHECKOV_VERSION)
    # --skip-download: otherwise checkov fetches its check metadata from Prisma Cloud.
    command = [str(checkov), "-d", str(folder), "--framework", "kubernetes", "--skip-download"]
    report = _run([*command, "--quiet", "--compact", "-o", "json"], "checkov")
    # With no check run at all, checkov prints the summary alone.
    summary = report.get("summary", report)
    if summary["parsing_errors"]:
        raise ScanError(f"checkov could not parse {summary['parsing_errors']} file(s) in {folder}")
    objects = read_objects(folder)
    findings = []
    for failed in (report.get("results") or {}).get("failed_checks", []):
        (kind, namespace, name), obj = _checkov_object(objects, failed["resource"])
        container = _checkov_container(obj, failed["check_result"].get("evaluated_keys") or [])
        findings.append(
            Finding(
                stack=stack,
                scanner="checkov",
                check=failed["check_id"],
                check_name=failed["check_name"],
                kind=kind,
                namespace=namespace,
                name=name,
                container=container,
                severity="failed",
                message=failed["check_name"],
            )
        )
    return findings, int(summary["passed"])


def run_kube_score(folder: Path, stack: str) -> list[Finding]:
    """kube-score's checks graded below OK, one finding per check, object and container."""
    kube_score = tool("kube-score", "KUBE_SCORE", KUBE_SCORE, KUBE_SCORE_VERSION)
    objects = read_objects(folder)
    # With no object it scores, kube-score prints `null`.
    scored = _run([str(kube_score), "score", *map(str, sorted(folder.glob("*.yaml"))), "-o", "json"], "kube-score")
    findings = []
    for result in scored or []:
        kind, metadata = result["type_meta"]["kind"], result["object_meta"]
        key: ObjectKey = (kind, metadata.get("namespace"), metadata["name"])
        if key not in objects:
            raise ScanError(f"kube-score reported {result['object_name']}, which is no object of the folder")
        containers = set(container_names(objects[key]))
        for check in result["checks"]:
            if check["skipped"] or check["grade"] >= KUBE_SCORE_OK:
                continue
            severity: Severity = "critical" if check["grade"] <= KUBE_SCORE_CRITICAL else "warning"
            # A comment's path names the container it is about, when it is about one.
            messages: defaultdict[str | None, list[str]] = defaultdict(list)
            for comment in check["comments"] or [{"path": "", "summary": check["check"]["name"]}]:
                path = comment["path"]
                if path in containers:
                    messages[path].append(comment["summary"])
                else:
                    messages[None].append(f"{path}: {comment['summary']}" if path else comment["summary"])
            findings += [
                Finding(
                    stack=stack,
                    scanner="kube-score",
                    check=check["check"]["id"],
                    check_name=check["check"]["name"],
                    kind=kind,
                    namespace=key[1],
                    name=key[2],
                    container=container,
                    severity=severity,
                    message="; ".join(summaries),
                )
                for container, summaries in messages.items()
            ]
    return findings
