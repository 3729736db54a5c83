"""`stackctl plan --apply` and its patch change exactly the planned keys: an alias or a merge key on a planned
key's path is broken for that key alone, an anchor the plan would have to edit is refused with the reason, and
the file keeps its line endings and comments. Literal files in, literal files out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from planner.settings import Place, Value
from planner.stack_patch import PatchError, patched
from platform_config.loader import load_stack_file
from platform_config.paths import PROJECT_ROOT
from stackctl.main import main

MODELS = "triton-platform:models"
NOTE = "stackctl plan: t.csv, 2026-12-01"
DELAY: dict[Place, Value] = {(MODELS, "classifier", "dynamicBatching", "maxQueueDelayMicroseconds"): 1000}
LEFT = "the stack file is left as it is; write the values plan.md lists by hand"

ALIASED = """\
config:
  triton-platform:serving:
    modelDefaults:
      # Every model batches alike.
      dynamicBatching: &batching
        # 5 ms of delay fills batches at peak.
        maxQueueDelayMicroseconds: 5000
        preferredBatchSize: [8]
  triton-platform:models:
    classifier:
      # The classifier batches as the defaults do.
      dynamicBatching: *batching
    ranker:
      dynamicBatching: *batching
"""


def test_an_alias_on_the_planned_path_is_broken_for_that_key_alone() -> None:
    # The classifier gets its own copy with the new delay; modelDefaults and the ranker keep 5000.
    assert patched(ALIASED, DELAY, NOTE) == (
        """\
config:
  triton-platform:serving:
    modelDefaults:
      # Every model batches alike.
      dynamicBatching: &batching
        # 5 ms of delay fills batches at peak.
        maxQueueDelayMicroseconds: 5000
        preferredBatchSize: [8]
  triton-platform:models:
    classifier:
      # The classifier batches as the defaults do.
      dynamicBatching:
        maxQueueDelayMicroseconds: 1000  # stackctl plan: t.csv, 2026-12-01
        preferredBatchSize: [8]
    ranker:
      dynamicBatching: *batching
"""
    )


def test_an_anchor_whose_last_alias_is_broken_stays_written() -> None:
    text = ALIASED.replace("    ranker:\n      dynamicBatching: *batching\n", "")
    assert patched(text, DELAY, NOTE) == (
        """\
config:
  triton-platform:serving:
    modelDefaults:
      # Every model batches alike.
      dynamicBatching: &batching
        # 5 ms of delay fills batches at peak.
        maxQueueDelayMicroseconds: 5000
        preferredBatchSize: [8]
  triton-platform:models:
    classifier:
      # The classifier batches as the defaults do.
      dynamicBatching:
        maxQueueDelayMicroseconds: 1000  # stackctl plan: t.csv, 2026-12-01
        preferredBatchSize: [8]
"""
    )


MERGED = """\
config:
  triton-platform:serving:
    modelDefaults: &defaults
      maxBatchSize: 16
      # Every model waits up to 5 ms.
      dynamicBatching:
        maxQueueDelayMicroseconds: 5000
  triton-platform:models:
    # The classifier inherits the defaults, then overrides its batch size.
    classifier:
      <<: *defaults
      maxBatchSize: 8  # small images
"""


def test_a_merged_mapping_on_the_planned_path_becomes_the_models_own() -> None:
    changes: dict[Place, Value] = {**DELAY, (MODELS, "classifier", "maxBatchSize"): 4}
    assert patched(MERGED, changes, NOTE) == (
        """\
config:
  triton-platform:serving:
    modelDefaults: &defaults
      maxBatchSize: 16
      # Every model waits up to 5 ms.
      dynamicBatching:
        maxQueueDelayMicroseconds: 5000
  triton-platform:models:
    # The classifier inherits the defaults, then overrides its batch size.
    classifier:
      <<: *defaults
      maxBatchSize: 4  # small images; stackctl plan: t.csv, 2026-12-01
      dynamicBatching:
        maxQueueDelayMicroseconds: 1000  # stackctl plan: t.csv, 2026-12-01
"""
    )


def test_an_anchor_the_plan_would_edit_is_refused_naming_it() -> None:
    # The classifier's own mapping is the anchor the ranker aliases: editing it in place would move the ranker too.
    text = """\
config:
  triton-platform:models:
    classifier:
      dynamicBatching: &batching
        maxQueueDelayMicroseconds: 5000
    ranker:
      dynamicBatching: *batching
"""
    with pytest.raises(PatchError) as raised:
        patched(text, DELAY, NOTE)
    assert str(raised.value) == (
        "triton-platform:models.classifier.dynamicBatching is the anchor &batching that other keys use (an alias or "
        "a merge key), so writing triton-platform:models.classifier.dynamicBatching.maxQueueDelayMicroseconds there "
        f"would change them too; {LEFT}"
    )


def test_removing_a_key_a_merge_key_supplies_is_refused_naming_the_key() -> None:
    # YAML cannot take back an inherited key: the result would still have it, which the check on the data finds.
    text = """\
config:
  triton-platform:scaling:
    scaleUp:
      <<: &policy {percent: 50, pods: 1}
      stabilizationSeconds: 30
"""
    with pytest.raises(PatchError) as raised:
        patched(text, {("triton-platform:scaling", "scaleUp", "pods"): None}, NOTE)
    assert str(raised.value) == (
        "writing the plan would also change triton-platform:scaling.scaleUp.pods, which a YAML anchor, alias or "
        f"merge key ties to a planned key; {LEFT}"
    )


CRLF = (
    "config:\r\n"
    "  triton-platform:models:\r\n"
    "    # Windows line endings throughout.\r\n"
    "    classifier:\r\n"
    "      dynamicBatching:\r\n"
    "        maxQueueDelayMicroseconds: 5000  # the old delay\r\n"
    "        preferredBatchSize: [8, 16]\r\n"
)


def test_a_crlf_file_comes_back_crlf_with_its_comments() -> None:
    assert patched(CRLF, DELAY, NOTE) == (
        "config:\r\n"
        "  triton-platform:models:\r\n"
        "    # Windows line endings throughout.\r\n"
        "    classifier:\r\n"
        "      dynamicBatching:\r\n"
        "        maxQueueDelayMicroseconds: 1000  # the old delay; stackctl plan: t.csv, 2026-12-01\r\n"
        "        preferredBatchSize: [8, 16]\r\n"
    )


def test_mixed_line_endings_are_refused_rather_than_made_one_kind() -> None:
    with pytest.raises(PatchError) as raised:
        patched(CRLF + "  triton-platform:environment: dev\n", DELAY, NOTE)
    assert str(raised.value) == (
        "its lines end in both CRLF (7 lines) and LF or a lone CR (1), and a patch keeps a file's line endings; "
        f"give every line one kind, then plan again; {LEFT}"
    )


# Two minutes at 20 then 40 req/s, with a 4 ms SLO: production's 5 ms batching delay misses it, so the plan
# lowers the delay, a key of the classifier's dynamicBatching.
LIGHT = "t_seconds,rps\n0,20\n60,40\n119,40\n"
PLAN = ["--slo-ms", "4", "--budget", "30", "--seeds", "1", "--apply"]
PRODUCTION = PROJECT_ROOT / "stacks" / "Pulumi.production.yaml"


def production_copy(tmp_path: Path, edit: tuple[str, str]) -> tuple[Path, Path]:
    """production's stack file with `edit` made, in CRLF, beside the light trace."""
    text = PRODUCTION.read_text(encoding="utf-8")
    assert edit[0] in text
    stack = tmp_path / PRODUCTION.name
    stack.write_bytes(text.replace(*edit).replace("\n", "\r\n").encode())
    trace = tmp_path / "light.csv"
    trace.write_text(LIGHT)
    return stack, trace


def test_apply_keeps_crlf_and_leaves_the_defaults_an_alias_shares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The classifier's batching is an alias of modelDefaults' (its own planned settings dropped for the test).
    own = PRODUCTION.read_text(encoding="utf-8")
    classifier = own[own.index("    classifier:\n") : own.index("  triton-platform:scaling:\n")]
    stack, trace = production_copy(tmp_path, (classifier, "    classifier:\n      dynamicBatching: *defaults\n"))
    # modelDefaults' batching, the file's first.
    stack.write_bytes(
        stack.read_bytes().replace(b"      dynamicBatching:\r\n", b"      dynamicBatching: &defaults\r\n", 1)
    )
    before = load_stack_file(stack, "production").config
    code = main(["plan", "--config", str(stack), "--trace", str(trace), *PLAN, "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"applied to {stack}" in out
    data = stack.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n")
    after = load_stack_file(stack, "production").config
    assert after.serving.model_defaults == before.serving.model_defaults
    assert after.models["ranker"] == before.models["ranker"]
    assert after.models["classifier"] != before.models["classifier"]
    assert b"      dynamicBatching: &defaults\r\n" in data
    assert b"    classifier:\r\n      dynamicBatching:\r\n" in data


def test_apply_refuses_an_anchor_it_would_edit_and_leaves_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The classifier's own batching is the anchor the ranker's, written after it, aliases.
    own = PRODUCTION.read_text(encoding="utf-8")
    ranker = own[own.index("    ranker:\n      # Both") : own.index("    classifier:\n")]
    stack, trace = production_copy(tmp_path, (ranker, ""))
    stack.write_bytes(
        stack.read_bytes().replace(
            b"  triton-platform:scaling:\r\n",
            b"    ranker:\r\n      dynamicBatching: *classifier\r\n  triton-platform:scaling:\r\n",
        )
    )
    stack.write_bytes(
        stack.read_bytes().replace(
            b"    classifier:\r\n      dynamicBatching:\r\n",
            b"    classifier:\r\n      dynamicBatching: &classifier\r\n",
        )
    )
    shutil.copy(stack, tmp_path / "before.yaml")
    code = main(["plan", "--config", str(stack), "--trace", str(trace), *PLAN, "--out", str(tmp_path / "out")])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.splitlines()[-1] == (
        f"stackctl plan: cannot patch {stack}: triton-platform:models.classifier.dynamicBatching is the anchor "
        "&classifier that other keys use (an alias or a merge key), so writing "
        "triton-platform:models.classifier.dynamicBatching.maxQueueDelayMicroseconds there would change them too; "
        f"{LEFT}"
    )
    assert stack.read_bytes() == (tmp_path / "before.yaml").read_bytes()
    # plan.md still says what the plan chose; there is no patch to apply.
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".stackctl-output.json",
        "pareto.png",
        "plan.json",
        "plan.md",
    ]
