"""Golden manifests: what `stackctl synth --no-charts` writes for each stack, kept in tests/golden/<stack>/ for review.

The program's own objects: the charts production installs are upstream's, templated by `make scan` and its tests.

tests/program/test_golden_manifests.py fails when a stack's synthesized files differ from these; `make golden`
(`python -m tests.golden --update`) rewrites them, and the diff of this folder in a change is what a reviewer
reads. Without --update, `python -m tests.golden` prints the differences and exits 1 if there are any.
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from offline.out_folder import MANIFEST
from offline.synth import SynthResult, write_synth

GOLDEN_DIR = Path(__file__).parent
STACKS = ("dev", "staging", "production")
"""Every stack: synth runs under mocks in seconds, so none is left unguarded."""

DIFF_LINES = 200
"""Unified-diff lines shown in a report; the rest are counted."""

UPDATE_COMMAND = "make golden"


def golden_folder(stack: str) -> Path:
    return GOLDEN_DIR / stack


def synthesized_files(result: SynthResult) -> dict[str, str]:
    """The files `stackctl synth` writes for a stack, by name; its folder marker left out (it only lists them)."""
    with tempfile.TemporaryDirectory(prefix="golden-") as scratch:
        write_synth(result, Path(scratch))
        return {p.name: p.read_text(encoding="utf-8") for p in sorted(Path(scratch).iterdir()) if p.name != MANIFEST}


def golden_files(stack: str) -> dict[str, str]:
    """The stored files of a stack, by name; none when the folder does not exist yet."""
    folder = golden_folder(stack)
    if not folder.is_dir():
        return {}
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir()) if p.is_file()}


@dataclass(frozen=True)
class Differences:
    """How a stack's synthesized files differ from its golden ones."""

    stack: str
    changed: list[str]
    """Files in both whose contents differ."""
    added: list[str]
    """Files synth writes that the golden folder lacks."""
    removed: list[str]
    """Golden files synth no longer writes."""
    diff: list[str]
    """Unified diff, golden to synthesized, of the changed, added and removed files (lines without newlines)."""

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def report(self, limit: int = DIFF_LINES) -> str:
        """Every changed, added and removed file by name, then the first `limit` lines of the diff."""
        folder = f"tests/golden/{self.stack}"
        lines = [f"{folder}: the synthesized manifests of stack {self.stack} differ from the golden files"]
        for label, names in (("changed", self.changed), ("added", self.added), ("removed", self.removed)):
            if names:
                lines.append(f"  {label}: {', '.join(names)}")
        lines.extend(self.diff[:limit])
        if len(self.diff) > limit:
            lines.append(f"... {len(self.diff) - limit} more diff lines")
        lines.append(f"If the change is intended, run `{UPDATE_COMMAND}` and commit {folder}/ with it for review.")
        return "\n".join(lines)


def compare(stack: str, golden: Mapping[str, str], synthesized: Mapping[str, str]) -> Differences:
    """The differences between a stack's golden files and its synthesized ones, files in name order."""
    changed = sorted(n for n in golden.keys() & synthesized.keys() if golden[n] != synthesized[n])
    added = sorted(synthesized.keys() - golden.keys())
    removed = sorted(golden.keys() - synthesized.keys())
    diff: list[str] = []
    for name in sorted(changed + added + removed):
        before = golden.get(name, "").splitlines(keepends=True)
        after = synthesized.get(name, "").splitlines(keepends=True)
        old = f"golden/{stack}/{name}" if name in golden else "/dev/null"
        new = f"synth/{stack}/{name}" if name in synthesized else "/dev/null"
        diff.extend(line.rstrip("\n") for line in difflib.unified_diff(before, after, old, new))
    return Differences(stack, changed, added, removed, diff)


def update(stack: str, synthesized: Mapping[str, str]) -> Differences:
    """Make a stack's golden folder hold exactly the synthesized files; returns what changed."""
    differences = compare(stack, golden_files(stack), synthesized)
    folder = golden_folder(stack)
    folder.mkdir(exist_ok=True)
    for name in differences.removed:
        (folder / name).unlink()
    for name in differences.changed + differences.added:
        (folder / name).write_text(synthesized[name], encoding="utf-8")
    return differences
