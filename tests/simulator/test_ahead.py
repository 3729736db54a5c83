"""simulator/ahead.py: after `python -m simulator.ahead` (what `make venv` runs), plans and simulations of every
committed stack compile nothing: they load it all from the cache."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT

pytestmark = pytest.mark.slow


def run(args: list[str], cache: Path, *, ok: tuple[int, ...] = (0,)) -> str:
    """`args` run in the checkout with `cache` as numba's cache root; its output."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode in ok, (args, done.stdout, done.stderr)
    return done.stdout


def cache_files(cache: Path) -> dict[str, tuple[int, int]]:
    """Every file under `cache` with its size and modification time: numba writes an index and a data file per
    compilation, and rewrites the index to add one."""
    return {str(p.relative_to(cache)): (p.stat().st_size, p.stat().st_mtime_ns) for p in cache.rglob("*.nb[ic]")}


def compiled_count(output: str) -> int:
    found = re.search(r"simulator: (\d+) functions compiled ahead of time", output)
    assert found, output
    return int(found.group(1))


def test_after_the_ahead_step_the_stacks_plans_and_simulations_compile_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "numba"
    python = str(ROOT / ".venv" / "bin" / "python")
    assert compiled_count(run([python, "-m", "simulator.ahead"], cache)) > 0
    before = cache_files(cache)
    assert before
    stackctl = [python, "-m", "stackctl"]
    for stack in ("dev", "staging", "production"):
        out = tmp_path / stack
        # Each stack's own trace (production's: two models on one pod), one candidate, one seed: the planner's calls.
        trace = ["--trace", f"stacks/traces/{stack}.csv"]
        run(
            [*stackctl, "plan", "--stack", stack, *trace, "--budget", "1", "--seeds", "1", "--out", str(out)],
            cache,
            ok=(0, 1),
        )
        # The detailed engine, and the fluid model's runs at zero and at one that simulate reports beside it.
        run(
            [
                *stackctl,
                "simulate",
                "--stack",
                stack,
                "--profile",
                "spike",
                "--hours",
                "0.05",
                "--no-plot",
                "--out",
                str(out / "simulation"),
            ],
            cache,
            ok=(0, 1),
        )
    assert cache_files(cache) == before
    # And the step itself, run again, finds everything there.
    assert compiled_count(run([python, "-m", "simulator.ahead"], cache)) == 0


def test_without_the_ahead_step_a_plan_compiles(tmp_path: Path) -> None:
    """The comparison's other side: the cache is what the step fills, so a plan on an empty one writes to it."""
    cache = tmp_path / "numba"
    run(
        [
            str(ROOT / ".venv" / "bin" / "python"),
            "-m",
            "stackctl",
            "plan",
            "--stack",
            "dev",
            "--trace",
            "stacks/traces/dev.csv",
            "--budget",
            "1",
            "--seeds",
            "1",
            "--out",
            str(tmp_path / "plan"),
        ],
        cache,
        ok=(0, 1),
    )
    assert cache_files(cache)
