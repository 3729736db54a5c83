"""Random mutations of valid stack configs validate or fail with key-path errors, never a traceback."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from platform_config.errors import ConfigError
from platform_config.flat_config import DISABLE_DEFAULT_PROVIDERS
from platform_config.loader import parse_config
from platform_config.paths import PROJECT_ROOT
from platform_config.schema import SECTION_KEYS, PlatformConfig
from platform_config.stack_document import pulumi_config_from_stack_file
from tests.conftest import STACKS, encode, example_count, stack_values

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _paths(child, (*prefix, i))
    return found


@st.composite
def mutated_configs(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    stack = draw(st.sampled_from(STACKS))
    values = copy.deepcopy(stack_values(stack))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(values)))
        parent: Any = values
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=10))] = draw(JSON_VALUES)
    return values, stack


@settings(max_examples=example_count(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_mutations_validate_or_fail_with_key_paths(case: tuple[dict[str, Any], str]) -> None:
    values, stack = case
    flat = encode(values)
    try:
        config = parse_config(flat, f"stacks/Pulumi.{stack}.yaml")
    except ConfigError as err:
        issues, report = err.issues, err.report().splitlines()
    else:
        assert isinstance(config, PlatformConfig)
        return
    assert issues
    assert report[0] == f"stacks/Pulumi.{stack}.yaml: {len(issues)} config error{'s' if len(issues) > 1 else ''}"
    known = {*flat, *SECTION_KEYS, DISABLE_DEFAULT_PROVIDERS}
    for issue in issues:
        assert issue.message
        assert any(issue.path == k or issue.path.startswith((f"{k}.", f"{k}[", f"{k} ")) for k in known), issue


YAML_SNIPPETS = st.sampled_from(
    [
        "2024-01-01",
        "!!binary aGVsbG8=",
        "!!set {a, b}",
        "&a [*a]",
        ".inf",
        "~",
        "{secure: abc}",
        "[1, {x: 2}]",
        "'quoted'",
        "{1: 2}",
        "yes",
        "0x1F",
        "1e400",
        "{a: 1, a: 2}",
        "!!python/object:os.system x",
    ]
)


@settings(max_examples=example_count(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_any_stack_file_text_gives_a_report_never_a_traceback(tmp_path: Path, data: st.DataObject) -> None:
    """The YAML layer too: odd scalars, tags, aliases, duplicates and bytes end in a report or success."""
    lines = (PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml").read_text().splitlines()
    value_lines = [i for i, line in enumerate(lines) if re.match(r"^\s+[A-Za-z:-]+: \S", line)]
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.sampled_from(value_lines))
        lines[i] = lines[i].split(": ", 1)[0] + ": " + data.draw(YAML_SNIPPETS)
    content = "\n".join(lines).encode() + data.draw(st.sampled_from([b"", b"\xff\xfe", b"\n  x"]))
    path = tmp_path / "Pulumi.fuzz.yaml"
    path.write_bytes(content)
    issues = []
    try:
        flat, _ = pulumi_config_from_stack_file(path)
        parse_config(flat, str(path))
    except ConfigError as err:
        issues = err.issues
        assert issues, "a ConfigError always carries its issues"
    assert all(issue.path and issue.message for issue in issues)
