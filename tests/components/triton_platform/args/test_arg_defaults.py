"""Each Arg's doc states the default its Setting declares: the package schema (what a YAML, TypeScript or Go user
reads) shows the doc, the component applies the Setting, and this test holds the one to the other."""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any, NotRequired, TypedDict

import pytest

from platform_config.component_fields import arg_docs
from triton_platform.args.arg_schema import UNSET, Setting, declare, declared
from triton_platform.gpu_pool import gpu_node_pool_args
from triton_platform.monitoring import monitoring_args
from triton_platform.scaling import keda_scaling_args
from triton_platform.serving import triton_serving_args

ARGS_MODULES: tuple[ModuleType, ...] = (gpu_node_pool_args, triton_serving_args, keda_scaling_args, monitoring_args)
DEFAULT_CLAUSE = re.compile(r"\bDefault\b:?(.*)\Z", re.DOTALL)


def leaves(value: Any) -> list[str]:
    """A default's plain values as a doc writes them: numbers as `:g` prints them, booleans in lower case; the
    values of a map or record and the items of a list (their keys are Args keys or spelt otherwise)."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in leaves(item)]
    if isinstance(value, bool):
        return [str(value).lower()]
    if isinstance(value, int | float):
        return [f"{value:g}"]
    return [str(value)] if value != "" else []


def states(clause: str, leaf: str) -> bool:
    """Whether `clause` holds `leaf` whole: `3` is not in `30`, `13` or `3.5`."""
    return re.search(rf"(?<![\w.]){re.escape(leaf)}(?!\w|\.\d)", clause) is not None


def default_problems(args_type: type) -> list[str]:
    """Each key of `args_type` with a declared default whose doc has no `Default` clause, or whose clause leaves
    out one of the default's values."""
    docs, out = arg_docs(args_type), []
    for key, rules in declared(args_type).items():
        if rules.default is UNSET:
            continue
        clause = DEFAULT_CLAUSE.search(" ".join(docs.get(key, "").split()))
        if clause is None:
            out.append(f"{args_type.__name__}.{key}: the doc states no default; the Setting's is {rules.default!r}")
            continue
        missing = [leaf for leaf in leaves(rules.default) if not states(clause[1], leaf)]
        if missing:
            out.append(
                f"{args_type.__name__}.{key}: the doc's default ({clause[1].strip()!r}) leaves out {missing}; "
                f"the Setting's is {rules.default!r}"
            )
    return out


def args_types() -> list[type]:
    return [
        value
        for module in ARGS_MODULES
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__ and declared(value)
    ]


def test_every_args_doc_states_its_settings_default() -> None:
    checked = args_types()
    assert len(checked) > 40  # every Args record with a Setting, not a few
    assert [problem for args_type in checked for problem in default_problems(args_type)] == []


class _Example(TypedDict):
    replicas: NotRequired[int]
    """How many. Default: 2."""

    labels: NotRequired[dict[str, str]]
    """Labels. Default: `team: search`."""

    nodes: NotRequired[list[str]]
    """Nodes."""


@pytest.fixture
def example() -> type:
    declare(
        _Example,
        replicas=Setting(default=3),
        labels=Setting(default={"team": "ranking"}),
        nodes=Setting(default=[]),
    )
    return _Example


def test_a_doc_that_disagrees_with_its_setting_is_named(example: type) -> None:
    assert default_problems(example) == [
        "_Example.replicas: the doc's default ('2.') leaves out ['3']; the Setting's is 3",
        "_Example.labels: the doc's default ('`team: search`.') leaves out ['ranking']; the Setting's is "
        "{'team': 'ranking'}",
        "_Example.nodes: the doc states no default; the Setting's is []",
    ]


@pytest.mark.parametrize(
    ("clause", "found"),
    [("3 pods per 30 s", True), ("30 s", False), ("13 pods", False), ("3.5 s", False), ("`3`.", True)],
)
def test_a_value_is_found_whole(clause: str, found: bool) -> None:
    assert states(clause, "3") is found
