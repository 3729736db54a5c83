"""What `stackctl plan` writes into its folder: plan.md (the choice and why: planner.report_markdown), plan.json
(every candidate: planner.report_json), pareto.png (planner.pareto_plot) and the stack file's patch."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from offline.out_folder import claim
from planner.pareto_plot import pareto_png
from planner.plan import Plan
from planner.report_json import plan_json
from planner.report_markdown import plan_markdown

PLAN_FILE = "plan.md"
JSON_FILE = "plan.json"
PARETO_FILE = "pareto.png"


def write_outputs(plan: Plan, inputs: Mapping[str, Any], patch: str | None, patch_name: str, out: Path) -> list[Path]:
    """plan.md, plan.json, pareto.png and the stack file's patch (None: none, the file cannot take the plan), into
    a folder stackctl plan may write."""
    files = {
        PLAN_FILE: plan_markdown(plan).encode(),
        JSON_FILE: plan_json(plan, inputs).encode(),
        PARETO_FILE: pareto_png(plan),
    }
    if patch is not None:
        files[patch_name] = patch.encode()
    return claim(out, "plan").replace(files)
