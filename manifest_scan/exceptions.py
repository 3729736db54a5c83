"""exceptions.yaml: the scanner findings the platform keeps by design, each with its reason.

Each entry excepts one check of one scanner for the objects it names (`<Kind>/<name>`,
exactly: no glob that would silently cover a future object) in the stacks it names,
optionally only for some containers. Loading reports every problem of the file at
once, each naming the entry, the key, the bad value and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from manifest_scan.findings import SCANNERS, Scanner
from platform_config.paths import display_path

EXCEPTIONS_FILE = Path(__file__).with_name("exceptions.yaml")
REQUIRED_KEYS = ("scanner", "check", "objects", "stacks", "reason")
OPTIONAL_KEYS = ("containers",)
MIN_REASON = 20
DIGEST = "{digest}"
"""Stands for a content-addressed name suffix: the model loader Job is named after its repository's digest."""
DIGEST_SUFFIX = "[0-9a-f]{16}"
OBJECT_PATTERN = re.compile(r"^[A-Z][A-Za-z0-9]*/[a-z0-9][-a-z0-9.]*(\{digest\})?$")
OBJECT_EXAMPLE = "<Kind>/<name>, e.g. Deployment/triton-general ({digest} may end a name: Job/model-loader-{digest})"


def names_object(pattern: str, kind: str, name: str) -> bool:
    """Whether `<Kind>/<name>` names this object: exactly, or up to its content digest."""
    want_kind, want_name = pattern.split("/", 1)
    if want_kind != kind:
        return False
    if want_name.endswith(DIGEST):
        return re.fullmatch(re.escape(want_name.removesuffix(DIGEST)) + DIGEST_SUFFIX, name) is not None
    return want_name == name


@dataclass(frozen=True)
class ScanException:
    index: int
    """The entry's position in the file, as messages name it: `[3]`."""
    scanner: Scanner
    check: str
    objects: tuple[str, ...]
    containers: tuple[str, ...]
    """Empty: every finding; else only findings about these containers."""
    stacks: tuple[str, ...]
    reason: str

    def describe(self, pattern: str, stack: str | None = None) -> str:
        return f"[{self.index}] {self.scanner} {self.check} {pattern}" + (f" in {stack}" if stack else "")


class ExceptionsError(Exception):
    """Every problem of an exceptions file, one line each."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.lines = [f"{source}: {problem}" for problem in problems]
        super().__init__("\n".join(self.lines))


def _strings(value: Any, where: str, what: str, problems: list[str]) -> tuple[str, ...]:
    """A non-empty list of non-empty strings; empty after adding the problems found."""
    if not isinstance(value, list):
        problems.append(f"{where}: {value!r} is not a list; expected a list of {what}")
        return ()
    if not value:
        problems.append(f"{where}: [] is empty; list at least one: {what}")
        return ()
    bad = [(position, item) for position, item in enumerate(value) if not (isinstance(item, str) and item)]
    problems += [f"{where}[{position}]: {item!r} is not a string; expected {what}" for position, item in bad]
    return () if bad else tuple(value)


def _is_sentence(reason: Any) -> bool:
    return isinstance(reason, str) and len(text := " ".join(reason.split())) >= MIN_REASON and text.endswith(".")


def _entry(index: int, entry: Any, stacks: Collection[str], problems: list[str]) -> ScanException | None:
    """The entry as an exception, or None after adding its problems."""
    where = f"[{index}]"
    allowed = f"allowed: {', '.join(REQUIRED_KEYS)}, and optionally {', '.join(OPTIONAL_KEYS)}"
    if not isinstance(entry, dict):
        problems.append(f"{where}: {entry!r} is not a mapping; {allowed}")
        return None
    before = len(problems)
    problems += [
        f"{where}.{key}: unknown key {key!r}; {allowed}" for key in entry if key not in REQUIRED_KEYS + OPTIONAL_KEYS
    ]
    problems += [
        f"{where}.{key}: missing; every exception has {', '.join(REQUIRED_KEYS)}"
        for key in REQUIRED_KEYS
        if key not in entry
    ]
    scanner, check, reason = entry.get("scanner"), entry.get("check"), entry.get("reason")
    if "scanner" in entry and scanner not in SCANNERS:
        problems.append(f"{where}.scanner: {scanner!r} is not a scanner; allowed: {', '.join(SCANNERS)}")
    if "check" in entry and not (isinstance(check, str) and check):
        problems.append(
            f"{where}.check: {check!r} is not a check id; give the scanner's id, "
            "e.g. CKV_K8S_15 or container-image-pull-policy"
        )
    objects = _strings(entry["objects"], f"{where}.objects", OBJECT_EXAMPLE, problems) if "objects" in entry else ()
    problems += [
        f"{where}.objects[{position}]: {pattern!r} is not {OBJECT_EXAMPLE}"
        for position, pattern in enumerate(objects)
        if not OBJECT_PATTERN.match(pattern)
    ]
    containers = (
        _strings(entry["containers"], f"{where}.containers", "container names", problems)
        if "containers" in entry
        else ()
    )
    chosen = _strings(entry["stacks"], f"{where}.stacks", "stack names", problems) if "stacks" in entry else ()
    problems += [
        f"{where}.stacks[{position}]: {stack!r} is not a stack; known: {', '.join(stacks)}"
        for position, stack in enumerate(chosen)
        if stack not in stacks
    ]
    if "reason" in entry and not _is_sentence(reason):
        problems.append(
            f"{where}.reason: {reason!r} is not a reason; give at least one full sentence "
            f"({MIN_REASON} characters or more, ending with '.')"
        )
    if len(problems) > before:
        return None
    return ScanException(
        index=index,
        scanner=cast(Scanner, scanner),
        check=cast(str, check),
        objects=objects,
        containers=containers,
        stacks=chosen,
        reason=" ".join(cast(str, reason).split()),
    )


def _document(path: Path) -> Any:
    source = display_path(path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ExceptionsError(source, [f"cannot read: {err.strerror}"]) from err
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ExceptionsError(source, [f"not valid YAML: {at}{err.problem}"]) from err


def load_exceptions(path: Path, stacks: Collection[str]) -> list[ScanException]:
    """The file's exceptions; ExceptionsError listing every problem when any entry is wrong.

    `stacks` are the stacks an entry's `stacks` may name.
    """
    document = _document(path)
    if not isinstance(document, list):
        raise ExceptionsError(display_path(path), [f"{document!r} is not a list of exceptions"])
    problems: list[str] = []
    exceptions = [e for i, entry in enumerate(document) if (e := _entry(i, entry, stacks, problems))]
    # Each (check, object, stack) has one entry, or one per container: an entry naming no container covers them all.
    first: dict[tuple[str, str, str, str], dict[str, int]] = {}
    for exception in exceptions:
        for position, pattern in enumerate(exception.objects):
            for stack in exception.stacks:
                seen = first.setdefault((exception.scanner, exception.check, pattern, stack), {})
                mine = exception.containers or ("",)
                clash = [seen[c] for c in seen if not exception.containers or c in mine or c == ""]
                if clash:
                    problems.append(
                        f"[{exception.index}].objects[{position}]: {pattern!r} in {stack} is already excepted from "
                        f"{exception.scanner} {exception.check} by [{clash[0]}]; keep one entry per check, "
                        "object, stack and container"
                    )
                for container in mine:
                    seen.setdefault(container, exception.index)
    if problems:
        raise ExceptionsError(display_path(path), problems)
    return exceptions
