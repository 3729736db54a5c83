"""How the program scales with the number of models: `stackctl synth` and real `pulumi preview`.

    .venv/bin/python bench/program_scale.py [--sizes 10 50 100 500] [--stacks dev staging production]

For each size it writes a synthetic model repository (copies of the example
classifier, so every config renders and validates for real) and a copy of
each stack file whose one deployment serves all of them, then runs synth in a
fresh process and reads its time and max RSS, and times `pulumi preview` of
the same stack with the real CLI (render mode, scratch backend; the toolchain
from scripts/pulumi-toolchain). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
sys.path.insert(0, str(ROOT))
from preview.workspace import cli_env, export_tree  # noqa: E402
from tests.support.local_cluster import use_offline_charts  # noqa: E402
from tests.support.pulumi_cli import TOOLCHAIN_HOME  # noqa: E402

PULUMI = ROOT / ".tools" / "bin" / "pulumi"


def synthetic_repo(target: Path, count: int) -> list[str]:
    source = ROOT / "model_repo" / "classifier"
    names = [f"model_{i:04d}" for i in range(count)]
    base = (source / "config.pbtxt").read_text().replace('name: "classifier"', "")
    for name in names:
        shutil.copytree(source / "1", target / name / "1")
        (target / name / "config.pbtxt").write_text(f'name: "{name}"\n{base}')
    return names


def stack_copy(stack: str, names: list[str], target: Path) -> Path:
    document = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    config = document["config"]
    serving = config["triton-platform:serving"]
    first = sorted(serving["deployments"])[0]
    deployment = serving["deployments"][first]
    deployment["models"] = names
    serving["deployments"] = {first: deployment}
    if serving["modelRepository"]["source"] == "bundled":
        serving["modelRepository"] = {"source": "pvc", "pvc": {"claimName": "models"}}
    config.pop("triton-platform:models", None)
    pool = config["triton-platform:gpuPool"]
    pool["maxNodes"] = max(pool["maxNodes"], deployment["replicas"]["max"])
    # Install-mode charts from the offline chart folders beside the checkout: no chart repository here.
    use_offline_charts(config)
    path = target / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def measure(stack_file: Path, repo: Path, out: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one synth, in its own process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [str(PYTHON), "-m", "stackctl", "synth", "--config", str(stack_file), "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "TRITON_PLATFORM_MODEL_REPO": str(repo)},
        stdout=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"synth failed for {stack_file} ({child.returncode})")
    return elapsed, usage.ru_maxrss / 1024


def preview_seconds(project: Path, stack_file: Path, repo: Path, scratch: Path) -> float:
    """Wall seconds of one `pulumi preview` of the stack file, in a project copy with its own backend."""
    stack = stack_file.stem.removeprefix("Pulumi.")
    shutil.copy2(stack_file, project / "stacks" / stack_file.name)
    env = cli_env(scratch)
    env.update(
        PATH=f"{PULUMI.parent}{os.pathsep}{env['PATH']}",
        PULUMI_HOME=str(TOOLCHAIN_HOME),  # with the CLI's automatic log, as a user runs it
        TRITON_PLATFORM_MODEL_REPO=str(repo),
    )

    def pulumi(*args: str) -> None:
        subprocess.run([str(PULUMI), *args, "--non-interactive"], cwd=project, env=env, check=True, capture_output=True)

    pulumi("stack", "init", stack)
    start = time.perf_counter()
    pulumi("preview", "--stack", stack)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 100, 500])
    parser.add_argument("--stacks", nargs="+", default=["dev", "staging", "production"])
    args = parser.parse_args()
    print(f"# stackctl synth scale, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"command: .venv/bin/python bench/program_scale.py --sizes {' '.join(map(str, args.sizes))}\n")
    if not PULUMI.exists():
        raise SystemExit("no .tools/bin/pulumi: run scripts/pulumi-toolchain first")
    print("| stack | models | synth s | peak RSS MiB | pulumi preview s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    times: dict[tuple[str, int], float] = {}
    previews: dict[tuple[str, int], float] = {}
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as work:
            repo = Path(work) / "repo"
            names = synthetic_repo(repo, size)
            project = export_tree(ROOT, None, Path(work) / "project")
            for stack in args.stacks:
                stack_file = stack_copy(stack, names, Path(work))
                elapsed, peak = measure(stack_file, repo, Path(work) / f"out-{stack}")
                preview = preview_seconds(project, stack_file, repo, Path(work) / f"scratch-{stack}")
                times[(stack, size)], previews[(stack, size)] = elapsed, preview
                print(f"| {stack} | {size} | {elapsed:.2f} | {peak:.0f} | {preview:.2f} |", flush=True)
    if 50 in args.sizes and 500 in args.sizes:
        print()
        for stack in args.stacks:
            synth_ratio = times[(stack, 500)] / times[(stack, 50)]
            preview_ratio = previews[(stack, 500)] / previews[(stack, 50)]
            print(f"{stack}: t(500)/t(50) = {synth_ratio:.2f} (synth), {preview_ratio:.2f} (pulumi preview)")


if __name__ == "__main__":
    main()
