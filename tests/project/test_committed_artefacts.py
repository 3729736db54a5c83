"""The generated files the repository commits still say what the tree holds.

`make artefacts` regenerates every one of them: the planning traces (bench/plan_traces.py), production's example
simulation (docs/simulation/) and each stack's plan (docs/plan/). Each simulation and plan records its inputs
(`inputs` in summary.json and plan.json: the stack file, the latency profile and a trace file by sha256, the
settings it ran with); `stale` compares them with the tree and with the target's own command lines, and names
the artefact, the input and the line that regenerates it. docs/simulation.md quotes the example's figures, so
they are held to its summary.json too. pareto.png draws the plan's front and binding constraint, computed by
planner/pareto.py, checked here on literal candidates.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.plan_traces import traces
from planner.pareto import binding, pareto_front
from planner.search import Result
from planner.settings import Settings
from platform_config.errors import ConfigError
from platform_config.loader import load_stack_file
from platform_config.node_provisioning import pool_node_provisioning
from platform_config.paths import PROJECT_ROOT
from simulator.report import FIGURES
from simulator.scenario import shaped_trace
from stackctl.main import parser

TARGET = "artefacts"
RECORDS = {"simulate": "summary.json", "plan": "plan.json"}
"""The file of each command's output that records its inputs."""
FOLDERS = ("docs/simulation", "docs/plan")
"""Where committed outputs live, one folder each."""
EXAMPLE = "docs/simulation/production-spike"
"""The simulation docs/simulation.md shows."""


@dataclass(frozen=True)
class Command:
    line: str
    """As the Makefile's target runs it, from `stackctl`."""
    args: argparse.Namespace


def target_lines(makefile: str) -> list[str]:
    """The recipe of `make artefacts`, each line without its tab."""
    lines = makefile.splitlines()
    start = lines.index(f"{TARGET}: $(STAMP)") + 1
    recipe = []
    for line in lines[start:]:
        if not line.startswith("\t"):
            break
        recipe.append(line[1:])
    return recipe


def commands(makefile: str) -> dict[str, Command]:
    """Each stackctl line of the target, by the folder it writes."""
    found = {}
    for line in target_lines(makefile):
        # `|| test $$? -eq 1`: a run whose check failed still wrote its outputs.
        words = shlex.split(line.split(" || ")[0])
        if words[1:3] == ["-m", "stackctl"]:
            args = parser().parse_args(words[3:])
            found[args.out] = Command(" ".join(["stackctl", *words[3:]]), args)
    return found


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def expected_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What a run of `args` records, by dotted key, apart from digests."""
    settings: dict[str, Any] = {"inputs.stack": args.stack, "inputs.seed": args.seed}
    if args.trace:
        settings["inputs.trace.file"] = args.trace
    else:
        settings |= {
            "inputs.trace.shape": args.profile,
            "inputs.trace.peak_rps": args.peak_rps,
            "inputs.trace.hours": args.hours if args.hours is not None else 1.0,
        }
    if args.command == "plan":
        settings |= {
            "budget": args.budget,
            "seeds": list(range(args.seed, args.seed + args.seeds)),
            "max_rejected_pct": args.max_rejected_pct,
        }
        if args.slo_ms is not None:  # else the stack's own SLO, which the stack file's digest covers
            settings["slo_ms"] = args.slo_ms
    return settings


def dotted(record: dict[str, Any], key: str) -> Any:
    value: Any = record
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _node_time(root: Path, inputs: dict[str, Any]) -> int | None:
    """The node time the recorded stack file gives now (platform_config/node_provisioning.py); None where it no
    longer loads, which its changed digest names."""
    stack_file = inputs.get("stack_file")
    if not stack_file or not (root / stack_file).is_file():
        return None
    try:
        config = load_stack_file(root / stack_file, inputs.get("stack")).config
    except ConfigError:
        return None
    return pool_node_provisioning(config.cluster, config.gpu_pool, config.scaling.simulation).seconds


def _stale_record(root: Path, record_path: str, command: Command) -> list[str]:
    regenerate = f"regenerate with `make {TARGET}` ({command.line})"
    record = json.loads((root / record_path).read_text(encoding="utf-8"))
    if not isinstance(record.get("inputs"), dict):
        return [f"{record_path}: records no inputs, so nothing says what it ran; {regenerate}"]
    problems = [
        f"{record_path}: {key} records {dotted(record, key)!r}, the command gives {value!r}; {regenerate}"
        for key, value in expected_settings(command.args).items()
        if dotted(record, key) != value
    ]
    inputs = record["inputs"]
    digests = [("inputs.stack_sha256", inputs.get("stack_file")), ("inputs.profile_sha256", inputs.get("profile"))]
    if command.args.trace:
        digests.append(("inputs.trace.sha256", inputs.get("trace", {}).get("file")))
    node = _node_time(root, inputs)
    if node is not None and inputs.get("node_provision_seconds") != node:
        problems.append(
            f"{record_path}: inputs.node_provision_seconds records {inputs.get('node_provision_seconds')!r}, "
            f"the stack's node time is now {node!r}; {regenerate}"
        )
    for key, file in digests:
        recorded = dotted(record, key)
        if not file or not (root / file).is_file():
            problems.append(f"{record_path}: {key} records {recorded!r} of {file!r}, which is no file; {regenerate}")
        elif recorded != sha256(root / file):
            problems.append(
                f"{record_path}: {key} records {recorded!r}, but {file} is now {sha256(root / file)!r}; {regenerate}"
            )
    return problems


def _failing_current(root: Path, record_path: str, command: Command) -> list[str]:
    """A committed stack whose own plan says its current settings fail: every example stack holds its plan."""
    if command.args.command != "plan" or not command.args.stack:
        return []
    current = json.loads((root / record_path).read_text(encoding="utf-8"))["candidates"][0]
    if current["passed"]:
        return []
    stack = f"stacks/Pulumi.{command.args.stack}.yaml"
    return [
        f"{record_path}: the current settings (#0) of {stack} fail its own plan ({'; '.join(current['failures'])}); "
        f"apply the plan's patch ({Path(record_path).parent}/Pulumi.{command.args.stack}.yaml.patch) or change the "
        f"stack until they pass, then regenerate with `make {TARGET}` ({command.line})"
    ]


def _stale_example_figures(root: Path) -> list[str]:
    """docs/simulation.md's caption and table of the example against its summary.json."""
    summary = json.loads((root / EXAMPLE / "summary.json").read_text(encoding="utf-8"))
    missing = [key for key in FIGURES if key not in summary]
    if missing:
        return [
            f"{EXAMPLE}/summary.json: records no {', '.join(missing)}, which docs/simulation.md quotes; "
            f"regenerate with `make {TARGET}`"
        ]
    trace = summary["inputs"]["trace"]
    peak = float(shaped_trace(trace["shape"], trace["peak_rps"], trace["hours"]).max())
    row = (
        f"| {summary['p50_ms']:.1f} | {summary['p95_ms']:.1f} | {summary['p99_ms']:.1f} | "
        f"{summary['slo_violation_seconds']:g} | {summary['rejected_pct']:.1f} | {summary['gpu_hours']:.1f} | "
        f"{summary['oracle_gpu_hours']:.1f} | {summary['oracle_ratio']:.2f} | {summary['reaction_seconds']:g} |"
    )
    doc = (root / "docs" / "simulation.md").read_text(encoding="utf-8")
    return [
        f"docs/simulation.md: the example ({EXAMPLE}) should say {text!r}, from its summary.json; "
        f"write the figures `make {TARGET}` produced"
        for text in (f"peak demand {peak:,.0f} req/s", f"--peak-rps {trace['peak_rps']:g}", row)
        if text not in doc
    ]


def stale(root: Path) -> list[str]:
    """Every way the committed artefacts under `root` disagree with its tree, one message each."""
    found = commands((root / "Makefile").read_text(encoding="utf-8"))
    problems = [
        f"stacks/traces/{name}: differs from what bench/plan_traces.py generates; regenerate with `make {TARGET}`"
        for name, text in traces().items()
        if not (root / "stacks" / "traces" / name).is_file()
        or (root / "stacks" / "traces" / name).read_text(encoding="utf-8") != text
    ]
    folders = sorted(
        folder.relative_to(root).as_posix()
        for parent in FOLDERS
        if (root / parent).is_dir()
        for folder in (root / parent).iterdir()
        if folder.is_dir()
    )
    for folder in folders:
        if folder not in found:
            problems.append(
                f"{folder}: no line of `make {TARGET}` writes it; add the command that generates it to the "
                f"Makefile's {TARGET} target, or delete the folder"
            )
    for folder, command in sorted(found.items()):
        record = f"{folder}/{RECORDS[command.args.command]}"
        if not (root / record).is_file():
            problems.append(f"{record}: not committed; generate it with `make {TARGET}` ({command.line})")
        else:
            problems += _stale_record(root, record, command)
            problems += _failing_current(root, record, command)
    if (root / EXAMPLE / "summary.json").is_file():
        problems += _stale_example_figures(root)
    return problems


def test_every_committed_artefact_matches_the_tree() -> None:
    assert stale(PROJECT_ROOT) == []


def test_make_artefacts_regenerates_every_committed_output() -> None:
    # The traces first: the plans read them.
    recipe = target_lines((PROJECT_ROOT / "Makefile").read_text(encoding="utf-8"))
    assert recipe[0] == "$(BIN)/python bench/plan_traces.py"
    assert sorted(commands("\n".join(["artefacts: $(STAMP)", *(f"\t{line}" for line in recipe)]))) == [
        "docs/plan/dev",
        "docs/plan/production",
        "docs/plan/staging",
        EXAMPLE,
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The inputs and records of the committed artefacts, in a copy to break."""
    for relative in ("Makefile", "docs/simulation.md"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_ROOT / relative, tmp_path / relative)
    for relative in ("stacks", "bench/results/profiles"):
        shutil.copytree(PROJECT_ROOT / relative, tmp_path / relative)
    for parent in FOLDERS:
        for record in (PROJECT_ROOT / parent).glob("*/*.json"):
            copy = tmp_path / record.relative_to(PROJECT_ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(record, copy)
    return tmp_path


SIMULATE = (
    "regenerate with `make artefacts` (stackctl simulate --stack production --profile spike --hours 1 "
    "--peak-rps 40000 --seed 0 --out docs/simulation/production-spike)"
)
PLAN_PRODUCTION = (
    "regenerate with `make artefacts` (stackctl plan --stack production --trace stacks/traces/production.csv "
    "--out docs/plan/production)"
)


def test_a_changed_stack_file_names_each_artefact_that_ran_it(tree: Path) -> None:
    stack = tree / "stacks" / "Pulumi.production.yaml"
    old = sha256(stack)
    stack.write_text(stack.read_text(encoding="utf-8").replace("min: 2, max: 4", "min: 2, max: 5"), encoding="utf-8")
    new = sha256(stack)
    assert stale(tree) == [
        f"docs/plan/production/plan.json: inputs.stack_sha256 records {old!r}, but stacks/Pulumi.production.yaml "
        f"is now {new!r}; {PLAN_PRODUCTION}",
        f"docs/simulation/production-spike/summary.json: inputs.stack_sha256 records {old!r}, but "
        f"stacks/Pulumi.production.yaml is now {new!r}; {SIMULATE}",
    ]


def test_a_stack_that_fails_its_own_plan_is_named(tree: Path) -> None:
    record = tree / "docs" / "plan" / "staging" / "plan.json"
    plan = json.loads(record.read_text(encoding="utf-8"))
    plan["candidates"][0] |= {"passed": False, "failures": ["rejected: 0.4573% > 0.1% in 3 of 3 seeds"]}
    record.write_text(json.dumps(plan), encoding="utf-8")
    assert stale(tree) == [
        "docs/plan/staging/plan.json: the current settings (#0) of stacks/Pulumi.staging.yaml fail its own plan "
        "(rejected: 0.4573% > 0.1% in 3 of 3 seeds); apply the plan's patch "
        "(docs/plan/staging/Pulumi.staging.yaml.patch) or change the stack until they pass, then regenerate with "
        "`make artefacts` (stackctl plan --stack staging --trace stacks/traces/staging.csv --out docs/plan/staging)"
    ]


def test_a_changed_trace_or_profile_is_named(tree: Path) -> None:
    trace = tree / "stacks" / "traces" / "production.csv"
    old_trace = sha256(trace)
    trace.write_text(trace.read_text(encoding="utf-8") + "86400,1\n", encoding="utf-8")
    profile = tree / "bench" / "results" / "profiles" / "classifier.json"
    old_profile = sha256(profile)
    profile.write_text(profile.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    new_trace, new_profile = sha256(trace), sha256(profile)
    problems = stale(tree)
    assert problems[0] == (
        "stacks/traces/production.csv: differs from what bench/plan_traces.py generates; regenerate with "
        "`make artefacts`"
    )
    assert (
        f"docs/plan/production/plan.json: inputs.trace.sha256 records {old_trace!r}, but stacks/traces/production.csv "
        f"is now {new_trace!r}; {PLAN_PRODUCTION}"
    ) in problems
    # Every run of the classifier's profile: the three plans and the simulation.
    assert [p for p in problems if "inputs.profile_sha256" in p] == [
        f"{folder}/{record}: inputs.profile_sha256 records {old_profile!r}, but "
        f"bench/results/profiles/classifier.json is now {new_profile!r}; {regenerate}"
        for folder, record, regenerate in (
            ("docs/plan/dev", "plan.json", PLAN_PRODUCTION.replace("production", "dev")),
            ("docs/plan/production", "plan.json", PLAN_PRODUCTION),
            ("docs/plan/staging", "plan.json", PLAN_PRODUCTION.replace("production", "staging")),
            ("docs/simulation/production-spike", "summary.json", SIMULATE),
        )
    ]


def test_a_changed_node_time_is_named(tree: Path) -> None:
    # The stack file unchanged, its node time moved (a new default for its autoscaler): staging's plan ran on 120 s.
    record = tree / "docs" / "plan" / "staging" / "plan.json"
    plan = json.loads(record.read_text(encoding="utf-8"))
    plan["inputs"]["node_provision_seconds"] = 120
    record.write_text(json.dumps(plan), encoding="utf-8")
    assert stale(tree) == [
        "docs/plan/staging/plan.json: inputs.node_provision_seconds records 120, the stack's node time is now 270; "
        + PLAN_PRODUCTION.replace("production", "staging")
    ]


def test_a_changed_setting_in_the_target_is_named(tree: Path) -> None:
    makefile = tree / "Makefile"
    makefile.write_text(
        makefile.read_text(encoding="utf-8")
        .replace("--peak-rps 40000", "--peak-rps 50000")
        .replace("--trace stacks/traces/dev.csv --out", "--trace stacks/traces/dev.csv --budget 100 --out"),
        encoding="utf-8",
    )
    assert stale(tree) == [
        "docs/plan/dev/plan.json: budget records 200, the command gives 100; regenerate with `make artefacts` "
        "(stackctl plan --stack dev --trace stacks/traces/dev.csv --budget 100 --out docs/plan/dev)",
        "docs/simulation/production-spike/summary.json: inputs.trace.peak_rps records 40000.0, the command gives "
        f"50000.0; {SIMULATE.replace('40000', '50000')}",
    ]


def test_an_output_folder_without_a_command_or_a_record_is_named(tree: Path) -> None:
    (tree / "docs" / "plan" / "canary").mkdir()
    (tree / "docs" / "plan" / "staging" / "plan.json").unlink()
    assert stale(tree) == [
        "docs/plan/canary: no line of `make artefacts` writes it; add the command that generates it to the "
        "Makefile's artefacts target, or delete the folder",
        "docs/plan/staging/plan.json: not committed; generate it with `make artefacts` (stackctl plan --stack "
        "staging --trace stacks/traces/staging.csv --out docs/plan/staging)",
    ]


def test_the_docs_figures_of_the_example_are_its_own(tree: Path) -> None:
    doc = tree / "docs" / "simulation.md"
    summary = json.loads((tree / EXAMPLE / "summary.json").read_text(encoding="utf-8"))
    peak = float(shaped_trace("spike", 40000, 1).max())
    doc.write_text(doc.read_text(encoding="utf-8").replace(f"peak demand {peak:,.0f} req/s", "peak 40,000 req/s"))
    assert stale(tree) == [
        f"docs/simulation.md: the example ({EXAMPLE}) should say 'peak demand {peak:,.0f} req/s', from its "
        "summary.json; write the figures `make artefacts` produced"
    ]
    assert summary["inputs"]["trace"]["peak_rps"] == 40000


# --- what pareto.png draws: the front of the passing candidates, and the binding constraint -------------------

SETTINGS = Settings(
    max_batch_size=32,
    max_queue_delay_us=5000,
    preferred_sizes=(),
    instances=3,
    max_queue_size=0,
    timeout_us=100000,
    min_replicas=2,
    max_replicas=10,
    up_stabilization_s=30,
    up_percent=50,
    up_pods=1,
    up_period_s=60,
    down_stabilization_s=60,
    down_percent=50,
    down_pods=None,
    down_period_s=30,
    signal="busy-ratio",
    target=0.9,
)


def result(index: int, gpu_hours: float | None, p95_ms: float | None, *failures: str) -> Result:
    # The trace alone, its GPU-hours the cost (a yardstick of 1 GPU-hour).
    return Result(index, "sweep", SETTINGS, {"gpu_hours": gpu_hours, "p95_ms": p95_ms}, (), failures, (), gpu_hours)


RESULTS = [
    result(0, 10.0, 50.0),
    # Cheaper and faster than any that passed, because it rejected 9.8% of the load: no option, never on the front.
    result(1, 4.0, 20.0, "rejected: 9.8% > 0.1% in 3 of 3 seeds"),
    result(2, 6.0, 150.0),
    result(3, 8.0, 40.0),
    result(4, 9.0, 45.0),
    result(5, 5.0, 250.0, "p95: 250 ms > 200 ms in 3 of 3 seeds"),
    result(6, 5.5, 30.0, "rejected: 0.4% > 0.1% in 1 of 3 seeds"),
    result(7, None, None, "invalid: replicas.max below replicas.min"),
    result(8, 7.0, 260.0, "p95: 260 ms > 200 ms in 3 of 3 seeds"),
]


def test_the_front_holds_only_candidates_that_passed() -> None:
    # #2 is the chosen (cheapest passing); #3 trades GPU-hours for p95; #4 and #0 are beaten by #3.
    assert [r.index for r in pareto_front(RESULTS)] == [2, 3]
    assert pareto_front([r for r in RESULTS if not r.passed]) == []


def test_the_binding_constraint_is_what_stopped_the_cheaper_candidates() -> None:
    bound = binding(RESULTS, RESULTS[2])
    assert bound is not None
    # #1, #5 and #6 used fewer GPU-hours than #2 and failed; #8, dearer, and #7, unmeasured, do not count.
    assert [r.index for r in bound.cheaper] == [1, 5, 6]
    assert bound.counts == {"p95": 1, "rejected": 2}
    assert bound.kind == "rejected"
    assert bound.nearest.index == 6
    # The cheapest passing candidate has nothing cheaper that failed: nothing bound it but the load.
    assert binding(RESULTS[2:5], RESULTS[2]) is None


def test_an_example_without_the_figures_the_docs_quote_is_named(tree: Path) -> None:
    record = tree / EXAMPLE / "summary.json"
    summary = json.loads(record.read_text(encoding="utf-8"))
    del summary["oracle_gpu_hours"], summary["oracle_ratio"]
    record.write_text(json.dumps(summary), encoding="utf-8")
    assert stale(tree) == [
        f"{EXAMPLE}/summary.json: records no oracle_gpu_hours, oracle_ratio, which docs/simulation.md quotes; "
        "regenerate with `make artefacts`"
    ]
