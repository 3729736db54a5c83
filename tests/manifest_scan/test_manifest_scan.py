"""checkov and kube-score over every stack's manifests: no finding outside manifest_scan/exceptions.yaml.

The scanners are the real ones `make tools` builds (manifest_scan/.venv, .tools/bin);
a missing one fails the test with what to run, nothing is skipped.
"""

from __future__ import annotations

import functools
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from manifest_scan.cli import main
from manifest_scan.exceptions import EXCEPTIONS_FILE, ExceptionsError, ScanException, load_exceptions
from manifest_scan.findings import Finding
from manifest_scan.matching import apply, stale
from manifest_scan.runners import CHECKOV_VERSION, KUBE_SCORE_VERSION, ScanError, run_checkov
from manifest_scan.scan import StackScan, scan_folder
from offline.synth import write_synth
from platform_config.paths import PROJECT_ROOT
from tests.conftest import STACKS, synth_production_at_zero, synth_stack, synth_with_charts

POLICY_DOC = PROJECT_ROOT / "docs" / "policy.md"
TABLE_START = "<!-- scanner-exceptions:start -->"
TABLE_END = "<!-- scanner-exceptions:end -->"
TRITON_DEPLOYMENT = "deployment-triton-dev-triton-general.yaml"


def exceptions() -> list[ScanException]:
    return load_exceptions(EXCEPTIONS_FILE, STACKS)


@functools.cache
def scanned(stack: str) -> StackScan:
    """Both scanners over the stack's synthesized manifests, its charts' objects included; once per stack."""
    with tempfile.TemporaryDirectory(prefix=f"scan-{stack}-") as folder:
        write_synth(synth_with_charts(stack), Path(folder))
        return scan_folder(Path(folder), stack)


def lines(findings: list[Finding]) -> str:
    return "\n".join(f.line() for f in findings)


@pytest.mark.real_tools
@pytest.mark.parametrize("stack", STACKS)
def test_every_finding_is_fixed_or_excepted(stack: str) -> None:
    unexcepted, _ = apply(scanned(stack).findings, exceptions())
    assert not unexcepted, (
        f"fix these, or except them with a reason in manifest_scan/exceptions.yaml:\n{lines(unexcepted)}"
    )


@functools.cache
def scanned_at_zero() -> StackScan:
    """Both scanners over production with a deployment at zero, the KEDA HTTP add-on's chart included."""
    with tempfile.TemporaryDirectory(prefix="scan-production-at-zero-") as folder:
        write_synth(synth_production_at_zero(), Path(folder))
        return scan_folder(Path(folder), "production")


@pytest.mark.real_tools
def test_production_at_zero_has_no_finding_outside_the_exceptions() -> None:
    unexcepted, _ = apply(scanned_at_zero().findings, exceptions())
    assert [f.line() for f in unexcepted] == []


@pytest.mark.real_tools
def test_every_exception_still_covers_a_finding() -> None:
    loaded = exceptions()
    # Production with a deployment at zero installs the KEDA HTTP add-on, which the committed stacks do not.
    findings = [f for stack in STACKS for f in scanned(stack).findings] + scanned_at_zero().findings
    _, used = apply(findings, loaded)
    assert [e.describe(pattern, stack) for e, pattern, stack in stale(loaded, used, STACKS)] == []


def mutated_triton(tmp_path: Path) -> Path:
    """dev's manifests with the triton container's securityContext removed."""
    write_synth(synth_stack("dev"), tmp_path)
    obj = yaml.safe_load((tmp_path / TRITON_DEPLOYMENT).read_text())
    container = next(c for c in obj["spec"]["template"]["spec"]["containers"] if c["name"] == "triton")
    del container["securityContext"]
    (tmp_path / TRITON_DEPLOYMENT).write_text(yaml.safe_dump(obj))
    return tmp_path


def keys(findings: list[Finding]) -> set[tuple[str | None, ...]]:
    return {(f.scanner, f.check, f.kind, f.namespace, f.name, f.container) for f in findings}


@pytest.mark.real_tools
def test_a_weakened_manifest_is_reported_by_both_scanners(tmp_path: Path) -> None:
    unexcepted, _ = apply(scan_folder(mutated_triton(tmp_path), "dev").findings, exceptions())
    where = ("Deployment", "triton-dev", "triton-general", "triton")
    expected = {
        ("checkov", "CKV_K8S_20", *where),
        ("kube-score", "container-security-context-readonlyrootfilesystem", *where),
    }
    assert expected <= keys(unexcepted), lines(unexcepted)
    assert not expected & keys(scanned("dev").findings)


def test_an_exception_covers_only_its_objects_containers_and_stacks() -> None:
    finding = Finding("dev", "checkov", "CKV_K8S_40", "name", "Deployment", "ns", "triton-general", None, "failed", "m")
    for_triton = ScanException(0, "checkov", "CKV_K8S_40", ("Deployment/triton-general",), ("triton",), ("dev",), "x")
    # A finding that names no container is not about the containers an exception names.
    assert apply([finding], [for_triton]) == ([finding], set())
    for_staging = ScanException(1, "checkov", "CKV_K8S_40", ("Deployment/triton-general",), (), ("staging",), "x")
    assert apply([finding], [for_staging]) == ([finding], set())
    # Names are exact: a glob would silently cover a future object.
    globbed = ScanException(2, "checkov", "CKV_K8S_40", ("Deployment/triton-*",), (), ("dev",), "x")
    assert apply([finding], [globbed]) == ([finding], set())
    for_dev = ScanException(3, "checkov", "CKV_K8S_40", ("Deployment/triton-general",), (), ("dev", "staging"), "x")
    assert apply([finding], [for_dev]) == ([], {(for_dev, "Deployment/triton-general", "dev")})
    # The staging grant matched nothing: stale there, not in dev.
    assert stale([for_dev], {(for_dev, "Deployment/triton-general", "dev")}, STACKS) == [
        (for_dev, "Deployment/triton-general", "staging")
    ]
    assert stale([for_dev], set(), ["dev"]) == [(for_dev, "Deployment/triton-general", "dev")]


def test_digest_stands_for_a_content_addressed_suffix_only() -> None:
    job = ScanException(0, "checkov", "CKV_K8S_40", ("Job/model-loader-{digest}",), (), ("production",), "x")

    def finding(name: str) -> Finding:
        return Finding("production", "checkov", "CKV_K8S_40", "n", "Job", "ns", name, None, "failed", "m")

    covered = finding("model-loader-9a495975e5938973")
    assert apply([covered], [job]) == ([], {(job, "Job/model-loader-{digest}", "production")})
    for other in ("model-loader-evil", "model-loader-9a495975e5938973x", "other-loader-9a495975e5938973"):
        assert apply([finding(other)], [job])[0] == [finding(other)]


VALID: list[dict[str, Any]] = [
    {"scanner": "checkov", "check": "CKV_K8S_15", "objects": ["Deployment/a"], "stacks": ["dev", "staging"], "reason": "Pinned images only, as agreed."},
    {"scanner": "kube-score", "check": "deployment-replicas", "objects": ["Deployment/a"], "stacks": ["dev"], "reason": "KEDA owns the replicas here."},
    {"scanner": "checkov", "check": "CKV_K8S_35", "objects": ["Job/x-{digest}"], "containers": ["load"], "stacks": ["dev"], "reason": "The credentials come as variables."},
]  # fmt: skip


def problems(tmp_path: Path, *entries: Any) -> list[str]:
    """The loader's error lines for VALID followed by `entries`."""
    path = tmp_path / "exceptions.yaml"
    path.write_text(yaml.safe_dump([*VALID, *entries]))
    with pytest.raises(ExceptionsError) as caught:
        load_exceptions(path, STACKS)
    return [line.removeprefix(f"{path}: ") for line in caught.value.lines]


def test_the_valid_entries_load(tmp_path: Path) -> None:
    path = tmp_path / "exceptions.yaml"
    path.write_text(yaml.safe_dump(VALID))
    loaded = load_exceptions(path, STACKS)
    assert loaded[2] == ScanException(
        2, "checkov", "CKV_K8S_35", ("Job/x-{digest}",), ("load",), ("dev",), "The credentials come as variables."
    )


BASE = {
    "scanner": "checkov",
    "check": "CKV_K8S_8",
    "objects": ["DaemonSet/a"],
    "stacks": ["dev"],
    "reason": "Nothing to probe on it.",
}
OBJECT_RULE = "<Kind>/<name>, e.g. Deployment/triton-general ({digest} may end a name: Job/model-loader-{digest})"
ALLOWED = "allowed: scanner, check, objects, stacks, reason, and optionally containers"


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {**BASE, "scanner": "trivy"},
            "[3].scanner: 'trivy' is not a scanner; allowed: checkov, kube-score",
        ),
        (
            {**BASE, "objects": []},
            f"[3].objects: [] is empty; list at least one: {OBJECT_RULE}",
        ),
        (
            {**BASE, "objects": ["triton-general"]},
            f"[3].objects[0]: 'triton-general' is not {OBJECT_RULE}",
        ),
        (
            {**BASE, "objects": ["Deployment/triton-*"]},
            f"[3].objects[0]: 'Deployment/triton-*' is not {OBJECT_RULE}",
        ),
        (
            {**BASE, "objects": ["Job/{digest}-loader"]},
            f"[3].objects[0]: 'Job/{{digest}}-loader' is not {OBJECT_RULE}",
        ),
        (
            {key: value for key, value in BASE.items() if key != "stacks"},
            "[3].stacks: missing; every exception has scanner, check, objects, stacks, reason",
        ),
        (
            {**BASE, "container": ["triton"]},
            f"[3].container: unknown key 'container'; {ALLOWED}",
        ),
        (
            {key: value for key, value in BASE.items() if key != "check"},
            "[3].check: missing; every exception has scanner, check, objects, stacks, reason",
        ),
        (
            {**BASE, "reason": "because."},
            "[3].reason: 'because.' is not a reason; give at least one full sentence "
            "(20 characters or more, ending with '.')",
        ),
        (
            {**BASE, "reason": "the plugin has nothing to probe"},
            "[3].reason: 'the plugin has nothing to probe' is not a reason; give at least one full sentence "
            "(20 characters or more, ending with '.')",
        ),
        (
            {**BASE, "containers": []},
            "[3].containers: [] is empty; list at least one: container names",
        ),
        (
            {**BASE, "stacks": ["qa"]},
            "[3].stacks[0]: 'qa' is not a stack; known: dev, staging, production",
        ),
        (
            {**BASE, "check": "CKV_K8S_15", "objects": ["DaemonSet/a", "Deployment/a"]},
            "[3].objects[1]: 'Deployment/a' in dev is already excepted from checkov CKV_K8S_15 by [0]; "
            "keep one entry per check, object, stack and container",
        ),
        (
            {**BASE, "check": "CKV_K8S_35", "objects": ["Job/x-{digest}"], "containers": ["load", "init"]},
            "[3].objects[0]: 'Job/x-{digest}' in dev is already excepted from checkov CKV_K8S_35 by [2]; "
            "keep one entry per check, object, stack and container",
        ),
    ],
)
def test_each_rule_refuses_a_bad_entry_naming_it(tmp_path: Path, entry: dict[str, Any], expected: str) -> None:
    assert problems(tmp_path, entry) == [expected]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    assert problems(tmp_path, {**BASE, "scanner": "trivy"}, "CKV_K8S_1", {**BASE, "reason": "short."}) == [
        "[3].scanner: 'trivy' is not a scanner; allowed: checkov, kube-score",
        f"[4]: 'CKV_K8S_1' is not a mapping; {ALLOWED}",
        "[5].reason: 'short.' is not a reason; give at least one full sentence (20 characters or more, ending with '.')",
    ]


def test_a_bad_exceptions_file_is_one_line_per_error_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "exceptions.yaml"
    path.write_text(yaml.safe_dump([{**BASE, "scanner": "trivy", "reason": "because."}]))
    assert main(["--exceptions", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: [0].scanner: 'trivy' is not a scanner; allowed: checkov, kube-score",
        f"{path}: [0].reason: 'because.' is not a reason; give at least one full sentence "
        "(20 characters or more, ending with '.')",
    ]
    path.write_text("- scanner: [\n")
    assert main(["--exceptions", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: not valid YAML: line 2, column 1: expected the node content, but found '<stream end>'"
    ]


@pytest.mark.real_tools
def test_the_cli_prints_each_finding_left_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # All but the KEDA replicas entry; the production-only entries are not stale when one stack is scanned.
    entries = [e for e in yaml.safe_load(EXCEPTIONS_FILE.read_text()) if e["check"] != "deployment-replicas"]
    path = tmp_path / "exceptions.yaml"
    path.write_text(yaml.safe_dump(entries))
    assert main(["--stack", "dev", "--exceptions", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "findings before → after exceptions",
        "stack  checkov passed  checkov failed  kube-score critical  kube-score warning",
    ]
    assert re.fullmatch(r"dev    \d+ +\d+ → \d+ +\d+ → \d+ +\d+ → [1-9]\d*", out[2])
    assert "dev: kube-score deployment-replicas Deployment/triton-dev/triton-general: Deployment few replicas" in out
    assert not [line for line in out if line.startswith(str(path))]


def test_the_policy_doc_lists_the_exceptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--markdown"]) == 0
    table = capsys.readouterr().out
    doc = POLICY_DOC.read_text(encoding="utf-8")
    assert TABLE_START in doc, f"docs/policy.md needs a {TABLE_START} ... {TABLE_END} section"
    assert TABLE_END in doc, f"docs/policy.md needs a {TABLE_START} ... {TABLE_END} section"
    section = doc[doc.index(TABLE_START) + len(TABLE_START) : doc.index(TABLE_END)]
    assert section.strip("\n") + "\n" == table, (
        "docs/policy.md's scanner exceptions are stale: paste `python -m manifest_scan --markdown`"
    )


def test_a_missing_scanner_fails_naming_make_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHECKOV", str(tmp_path / "checkov"))
    with pytest.raises(ScanError) as caught:
        run_checkov(tmp_path, "dev")
    assert str(caught.value) == (
        f"checkov not found at {tmp_path / 'checkov'} (from CHECKOV): run `make tools` to build "
        f"manifest_scan/.venv/bin/checkov, or set CHECKOV to a checkov {CHECKOV_VERSION}"
    )


def test_the_scanner_versions_are_the_makefile_ones() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert f"\nKUBE_SCORE_VERSION := {KUBE_SCORE_VERSION}\n" in makefile
    assert f"\ncheckov=={CHECKOV_VERSION}\n" in (PROJECT_ROOT / "manifest_scan/requirements.txt").read_text()
