"""simulator/compiled.py: numba's cache keyed by the simulator's source, shared by every copy of it, and trusted only
in a folder this user alone can write."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from platform_config.paths import PROJECT_ROOT
from simulator import compiled
from simulator.compiled import CACHE_DAYS, SourceDigestLocator, cache_root, source_digest

ROOT = PROJECT_ROOT

COMPILE = """
import json, numpy as np
from simulator import surface
surface.search_left(np.array([1.0, 2.0, 4.0]), 3.0)
stats = surface.search_left.stats
print(json.dumps({"hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values()),
                  "folder": surface.search_left._cache._cache_path}))
"""


def copy_of_simulator(at: Path) -> Path:
    """A copy of the simulator package at `at` (as a fresh clone has it: no __pycache__)."""
    shutil.copytree(ROOT / "simulator", at / "simulator", ignore=shutil.ignore_patterns("__pycache__"))
    return at


def compile_in(copy: Path, cache_home: Path) -> dict[str, object]:
    """Compile surface.search_left from `copy`'s simulator with the user cache folder `cache_home`: cache hits, misses and
    the folder numba used."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env.update(XDG_CACHE_HOME=str(cache_home), PYTHONPATH=os.pathsep.join([str(copy), str(ROOT)]))
    run = subprocess.run(
        [sys.executable, "-c", COMPILE], cwd=copy, env=env, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, object] = json.loads(run.stdout.splitlines()[-1])
    return result


def test_two_clones_at_different_paths_share_one_compilation(tmp_path: Path) -> None:
    home = tmp_path / "cache"
    first = compile_in(copy_of_simulator(tmp_path / "clone-a"), home)
    folder = home / "triton-platform" / "numba" / source_digest()
    assert first == {"hits": 0, "misses": 1, "folder": str(folder)}
    assert any(folder.glob("surface.search_left-*.nbi")), sorted(p.name for p in folder.iterdir())
    assert folder.stat().st_mode & 0o777 == 0o700
    # Another clone, elsewhere: the same source, so numba loads what the first compiled.
    second = compile_in(copy_of_simulator(tmp_path / "clone-b"), home)
    assert second == {"hits": 1, "misses": 0, "folder": str(folder)}
    assert not list((tmp_path / "clone-b").rglob("*.nb[ic]"))


def test_a_changed_source_compiles_into_its_own_folder(tmp_path: Path) -> None:
    home = tmp_path / "cache"
    compile_in(copy_of_simulator(tmp_path / "clone-a"), home)
    changed = copy_of_simulator(tmp_path / "clone-b")
    engine = changed / "simulator" / "engine.py"
    # A constant the compiled loop reads from another module than its own: numba's stamp (surface.py's) would miss it.
    engine.write_text(engine.read_text() + "\n# a change elsewhere in the package\n")
    result = compile_in(changed, home)
    assert result["hits"] == 0
    assert result["misses"] == 1
    assert result["folder"] != str(home / "triton-platform" / "numba" / source_digest())
    assert len(list((home / "triton-platform" / "numba").iterdir())) == 2


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_a_cache_folder_others_can_write_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    root = tmp_path / "cache" / "triton-platform" / "numba"
    root.mkdir(parents=True)
    root.chmod(mode)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(compiled.config, "CACHE_DIR", "")
    locator = SourceDigestLocator(compiled_function())
    with pytest.raises(PermissionError, match=f"{root}: not a folder that only this user can write"):
        locator.ensure_cache_path()
    assert SourceDigestLocator.from_function(compiled_function(), str(ROOT / "simulator" / "surface.py")) is None
    assert list(root.iterdir()) == []


def test_a_linked_cache_folder_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "cache" / "triton-platform").mkdir(parents=True)
    (tmp_path / "cache" / "triton-platform" / "numba").symlink_to(elsewhere)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(compiled.config, "CACHE_DIR", "")
    assert SourceDigestLocator.from_function(compiled_function(), str(ROOT / "simulator" / "surface.py")) is None
    assert list(elsewhere.iterdir()) == []


def test_numba_cache_dir_is_the_root_when_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled.config, "CACHE_DIR", str(tmp_path / "numba"))
    assert cache_root() == tmp_path / "numba"
    monkeypatch.setattr(compiled.config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "triton-platform" / "numba"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "triton-platform" / "numba"


def test_functions_outside_the_simulator_are_left_to_numba(tmp_path: Path) -> None:
    assert SourceDigestLocator.from_function(compiled_function(), str(ROOT / "planner" / "search.py")) is None


def test_stale_folders_of_other_digests_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled.config, "CACHE_DIR", str(tmp_path))
    old = time.time() - (CACHE_DAYS + 1) * 86400
    stale, recent, other = tmp_path / ("a" * 24), tmp_path / ("b" * 24), tmp_path / "notes"
    numbas = tmp_path / ("simulator_" + "z" * 14)  # 24 characters, not a digest: numba's own, left alone
    for folder in (stale, recent, other, numbas):
        folder.mkdir(mode=0o700)
    for folder in (stale, other, numbas):
        os.utime(folder, (old, old))
    SourceDigestLocator(compiled_function()).ensure_cache_path()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([recent.name, other.name, numbas.name, source_digest()])


def compiled_function() -> Callable[..., Any]:
    """A function of the simulator package, as numba hands it to a locator."""
    from simulator import surface  # noqa: PLC0415 - the compiled module, loaded only by the tests that need it

    function: Callable[..., Any] = surface.search_left.py_func  # type: ignore[attr-defined]  # compiled: a numba Dispatcher
    return function
