"""The locks hold what the requirements files pin: every pin at its version in its lock, every locked package
with hashes, the runtime lock within the development one, and the command that wrote them the Makefile's
(`make lock`). `make venv` and `make runtime-venv` install from the locks with `--require-hashes`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.markers import Marker

from platform_config.paths import PROJECT_ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)\s*(?:;\s*([^\\#]+?))?\s*(?:\\|#.*)?$")


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _marker(marker: str | None) -> str:
    """A marker as uv writes it in a lock (`python_version < "3.13"` becomes `python_full_version < '3.13'`)."""
    return "" if marker is None else marker.replace('"', "'").replace("python_version", "python_full_version")


def pins(text: str, base: Path = PROJECT_ROOT) -> dict[tuple[str, str], str]:
    """(package, marker) -> version for each `name==version` line of a requirements file, `-r` files included."""
    found: dict[tuple[str, str], str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("-r "):
            found |= pins((base / line.removeprefix("-r ").strip()).read_text(), base)
        elif match := PIN.match(line):
            found[(_name(match[1]), _marker(match[3]))] = match[2]
    return found


def locked(text: str) -> dict[tuple[str, str], str]:
    """(package, marker) -> version for each entry of a uv lock."""
    return {
        (_name(match[1]), _marker(match[3])): match[2]
        for line in text.splitlines()
        if (match := PIN.match(line.strip())) and not line.startswith((" ", "#"))
    }


def disagreements(requirements: str, lock: str) -> list[str]:
    """Each pin the lock does not hold at its version, and each locked package without a hash."""
    held = locked(lock)
    found = [
        f"{name}{'; ' + marker if marker else ''}: requirements pin {version}, the lock holds "
        f"{held.get((name, marker), 'nothing')}"
        for (name, marker), version in pins(requirements).items()
        if held.get((name, marker)) != version
    ]
    entries = re.split(r"\n(?=[A-Za-z0-9])", lock.split("\n", 2)[2])
    found += [f"{entry.split()[0]}: no hash" for entry in entries if entry.strip() and "--hash=sha256:" not in entry]
    return found


LOCKS = {"requirements.txt": "requirements.lock", "requirements-dev.txt": "requirements-dev.lock"}
LOCKS_OF = {lock: source for source, lock in LOCKS.items()}


@pytest.mark.parametrize(("requirements", "lock"), LOCKS.items())
def test_a_lock_holds_its_requirements(requirements: str, lock: str) -> None:
    problems = disagreements((PROJECT_ROOT / requirements).read_text(), (PROJECT_ROOT / lock).read_text())
    assert problems == [], f"{lock} disagrees with {requirements}: run `make lock`\n" + "\n".join(problems)


def test_a_changed_pin_or_a_missing_hash_is_found() -> None:
    lock = (PROJECT_ROOT / "requirements.lock").read_text()
    requirements = (PROJECT_ROOT / "requirements.txt").read_text().replace("pyyaml==6.0.3", "pyyaml==6.0.2")
    assert disagreements(requirements, lock) == ["pyyaml: requirements pin 6.0.2, the lock holds 6.0.3"]
    unhashed = re.sub(r"(pyyaml==6\.0\.3) \\\n(    --hash=sha256:\w+( \\)?\n)+", r"\1\n", lock)
    assert disagreements((PROJECT_ROOT / "requirements.txt").read_text(), unhashed) == ["pyyaml==6.0.3: no hash"]


def test_the_runtime_lock_is_within_the_development_lock() -> None:
    """One resolution: the runtime venv and the development venv run the same versions of what they share."""
    runtime = locked((PROJECT_ROOT / "requirements.lock").read_text())
    development = locked((PROJECT_ROOT / "requirements-dev.lock").read_text())
    assert {key: version for key, version in runtime.items() if development.get(key) != version} == {}


def test_the_locks_were_written_by_make_lock() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    options = re.search(r"^LOCK := \$\(BIN\)/uv (pip compile .*)$", makefile, re.MULTILINE)
    assert options is not None
    command = options[1].replace("--quiet ", "")
    assert (PROJECT_ROOT / "requirements-dev.lock").read_text().splitlines()[1] == (
        f"#    uv {command} requirements-dev.txt -o requirements-dev.lock"
    )
    assert (PROJECT_ROOT / "requirements.lock").read_text().splitlines()[1] == (
        f"#    uv {command} requirements.txt --constraint requirements-dev.lock -o requirements.lock"
    )


def installed_from(lock: str, python: str, platform: str) -> dict[str, str]:
    """What pip installs from a universal lock on that Python and platform: each entry whose marker holds."""
    environment = {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "sys_platform": platform,
        "platform_system": {"linux": "Linux", "darwin": "Darwin", "win32": "Windows"}[platform],
        "platform_machine": "x86_64",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "os_name": "nt" if platform == "win32" else "posix",
    }
    chosen: dict[str, str] = {}
    for (name, marker), version in locked(lock).items():
        if not marker or Marker(marker).evaluate(environment):
            assert name not in chosen, f"{name}: {chosen[name]} and {version} both apply on {python} {platform}"
            chosen[name] = version
    return chosen


@pytest.mark.parametrize("python", ["3.11", "3.12", "3.13"])
@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-dev.lock"])
def test_each_supported_python_gets_one_version_of_every_requirement(lock: str, python: str) -> None:
    """`make venv` on 3.11, 3.12 and 3.13: the universal lock gives each one exactly one version of every package
    its requirements name (nvidia-pytriton, Linux below 3.13 only, aside)."""
    source = LOCKS_OF[lock]
    for platform in ("linux", "darwin"):
        chosen = installed_from((PROJECT_ROOT / lock).read_text(), python, platform)
        wanted = {
            name
            for (name, marker), _ in pins((PROJECT_ROOT / source).read_text()).items()
            if not marker
            or Marker(marker).evaluate(
                {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": platform}
            )
        }
        assert wanted - set(chosen) == set(), (python, platform)
    assert installed_from((PROJECT_ROOT / lock).read_text(), python, "linux").get("numpy") == (
        "1.26.4" if python < "3.13" else "2.5.5"
    )
