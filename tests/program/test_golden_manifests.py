"""Every stack's synthesized manifests against tests/golden/<stack>/; `make golden` rewrites them (docs/testing.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import golden
from tests.conftest import SERVING, STACKS, setting, synth_mutated, synth_stack
from tests.golden import compare, golden_files, synthesized_files, update
from tests.golden.__main__ import main

SCALED_OBJECT = "scaledobject-triton-production-triton-general.yaml"


@pytest.mark.parametrize("stack", STACKS)
def test_synthesized_manifests_match_the_golden_files(stack: str) -> None:
    stored = golden_files(stack)
    assert stored, f"tests/golden/{stack}/ is empty: run `make golden`"
    differences = compare(stack, stored, synthesized_files(synth_stack(stack)))
    assert not differences, differences.report()


def test_a_changed_manifest_is_reported_by_name_with_its_diff() -> None:
    # A real change through the program: the general deployment's replica ceiling, 10 in the stack file.
    changed = synth_mutated("production", setting(SERVING, "deployments", "general", "replicas", "max", value=8))
    differences = compare("production", golden_files("production"), synthesized_files(changed))
    report = differences.report()
    assert differences
    assert SCALED_OBJECT in differences.changed
    assert differences.added == differences.removed == []
    assert report.startswith(
        "tests/golden/production: the synthesized manifests of stack production differ from the golden files\n"
        "  changed: "
    )
    assert f"--- golden/production/{SCALED_OBJECT}\n+++ synth/production/{SCALED_OBJECT}\n" in report
    assert "\n-  maxReplicaCount: 10\n+  maxReplicaCount: 8\n" in report
    assert report.endswith(
        "If the change is intended, run `make golden` and commit tests/golden/production/ with it for review."
    )


def test_the_report_lists_changed_added_and_removed_files() -> None:
    stored = {"a.yaml": "kind: A\nx: 1\n", "gone.yaml": "kind: Gone\n", "same.yaml": "kind: Same\n"}
    synthesized = {"a.yaml": "kind: A\nx: 2\n", "new.yaml": "kind: New\n", "same.yaml": "kind: Same\n"}
    assert compare("dev", stored, synthesized).report() == (
        "tests/golden/dev: the synthesized manifests of stack dev differ from the golden files\n"
        "  changed: a.yaml\n"
        "  added: new.yaml\n"
        "  removed: gone.yaml\n"
        "--- golden/dev/a.yaml\n"
        "+++ synth/dev/a.yaml\n"
        "@@ -1,2 +1,2 @@\n"
        " kind: A\n"
        "-x: 1\n"
        "+x: 2\n"
        "--- golden/dev/gone.yaml\n"
        "+++ /dev/null\n"
        "@@ -1 +0,0 @@\n"
        "-kind: Gone\n"
        "--- /dev/null\n"
        "+++ synth/dev/new.yaml\n"
        "@@ -0,0 +1 @@\n"
        "+kind: New\n"
        "If the change is intended, run `make golden` and commit tests/golden/dev/ with it for review."
    )


def test_the_diff_in_a_report_is_cut_and_the_rest_counted() -> None:
    stored = {"big.yaml": "".join(f"line: {i}\n" for i in range(100))}
    synthesized = {"big.yaml": "".join(f"line: {i + 1000}\n" for i in range(100))}
    report = compare("staging", stored, synthesized).report(limit=10)
    lines = report.splitlines()
    # Header, one changed line, 10 diff lines, the count, the update hint.
    assert len(lines) == 14
    assert lines[2:5] == ["--- golden/staging/big.yaml", "+++ synth/staging/big.yaml", "@@ -1,100 +1,100 @@"]
    assert lines[-2] == "... 193 more diff lines"


def test_update_makes_the_folder_hold_exactly_the_synthesized_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(golden, "GOLDEN_DIR", tmp_path)
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "gone.yaml").write_text("kind: Gone\n")
    (tmp_path / "dev" / "a.yaml").write_text("kind: A\n")
    done = update("dev", {"a.yaml": "kind: A\nx: 1\n", "new.yaml": "kind: New\n"})
    assert (done.changed, done.added, done.removed) == (["a.yaml"], ["new.yaml"], ["gone.yaml"])
    assert golden_files("dev") == {"a.yaml": "kind: A\nx: 1\n", "new.yaml": "kind: New\n"}


def test_the_command_reports_differences_and_update_clears_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(golden, "GOLDEN_DIR", tmp_path)
    assert main(["--update", "dev"]) == 0
    assert capsys.readouterr().out == "tests/golden/dev: 0 changed, 29 added, 0 removed\n"
    deployment = tmp_path / "dev" / "deployment-triton-dev-triton-general.yaml"
    deployment.write_text(deployment.read_text().replace("name: triton-general\n", "name: triton-other\n", 1))
    assert main(["dev"]) == 1
    err = capsys.readouterr().err
    assert "  changed: deployment-triton-dev-triton-general.yaml\n" in err
    assert "\n-  name: triton-other\n+  name: triton-general\n" in err
    assert main(["--update", "dev"]) == 0
    assert capsys.readouterr().out == "tests/golden/dev: 1 changed, 0 added, 0 removed\n"
    assert main(["dev"]) == 0
    assert capsys.readouterr().out == "tests/golden/dev: 29 files, as synthesized\n"


def test_the_command_refuses_an_unknown_stack(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["prod"])
    assert exited.value.code == 2
    assert "error: no stack 'prod'; known stacks: dev, staging, production" in capsys.readouterr().err
