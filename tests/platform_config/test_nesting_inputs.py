"""Config shapes that used to pass quietly or crash: deep nesting, non-finite chart values, misplaced sections.

One nesting bound holds whichever door config comes through (the stack file or the engine's JSON): a
value nested past platform_config.nesting.MAX_DEPTH is reported at the bound, naming the key path down
to it, never a RecursionError. Chart values, which the schema cannot type, take finite numbers only;
a section under a misspelt or cut-short namespace is named, not silently ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest

from offline.synth import run_synth
from platform_config.errors import ConfigError, ConfigIssue
from platform_config.loader import load_stack_file, parse_config
from platform_config.nesting import MAX_DEPTH, json_too_deep
from platform_config.paths import PROJECT_ROOT
from platform_config.serving import ServingConfig
from platform_config.stack_document import pulumi_config_from_stack_file

DEV = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
MONITORING = "triton-platform:monitoring"
VALUES = f"{MONITORING}.chart.values"
TOO_DEEP = "nested more than 50 levels deep"


def nested(depth: int) -> dict[str, Any]:
    """{"a": {"a": ... {"a": 1}}} with `depth` mappings, built without recursion."""
    value: dict[str, Any] = {"a": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def dev_flat() -> tuple[dict[str, str], list[str]]:
    return pulumi_config_from_stack_file(DEV)


def with_chart_values_json(text: str) -> dict[str, str]:
    """The dev stack's engine config with the monitoring chart's values replaced by raw JSON `text`."""
    flat, _ = dev_flat()
    monitoring = json.loads(flat[MONITORING])
    monitoring["chart"] = {"values": "@VALUES@"}
    flat[MONITORING] = json.dumps(monitoring).replace('"@VALUES@"', text)
    return flat


def engine_issues(flat: dict[str, str]) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as caught:
        parse_config(flat, "stacks/Pulumi.dev.yaml")
    return caught.value.issues


# The bound's path: the values' own key, then "a" for each level down to the first value past the bound
# (the chart's `values` mapping is itself two levels below the section: chart, values).
AT_THE_BOUND = ConfigIssue(VALUES + ".a" * (MAX_DEPTH - 1), TOO_DEEP)


@pytest.mark.parametrize("depth", [MAX_DEPTH, 900, 100_000])
def test_chart_values_nested_past_the_bound_are_refused_at_the_engine_door(depth: int) -> None:
    """900 deep decodes in Python, 100,000 deep does not: both are the same report, at the same path."""
    text = '{"a": ' * (depth - 1) + '{"a": 1' + "}" * depth
    assert engine_issues(with_chart_values_json(text)) == [AT_THE_BOUND]


def test_chart_values_just_inside_the_bound_pass_the_engine_door() -> None:
    flat = with_chart_values_json(json.dumps(nested(MAX_DEPTH - 2)))
    assert parse_config(flat, "stacks/Pulumi.dev.yaml").monitoring.chart.values["a"]["a"]


def test_the_stack_file_and_the_engine_stop_at_the_same_key_path(tmp_path: Path) -> None:
    """The stack file's walk and the engine's scan own one bound and report one path."""
    deep = json.dumps(nested(60))  # JSON is YAML flow syntax
    text = DEV.read_text().replace(
        "  triton-platform:monitoring:\n", "  triton-platform:monitoring:\n    chart:\n      values: " + deep + "\n", 1
    )
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        pulumi_config_from_stack_file(path)
    assert caught.value.issues == [AT_THE_BOUND]
    assert engine_issues(with_chart_values_json(deep)) == [AT_THE_BOUND]


def test_config_json_100000_deep_reaching_the_program_is_a_report_not_a_recursion_error() -> None:
    """Through the program's own door (PULUMI_CONFIG, as the language host passes it)."""
    flat, secret_keys = dev_flat()
    flat["other:deep"] = "[" * 100_000 + "]" * 100_000
    with pytest.raises(pulumi.RunError) as caught:
        run_synth("dev", flat, secret_keys)
    assert str(caught.value) == (
        "stacks/Pulumi.dev.yaml: 1 config error\n"
        "stacks/Pulumi.dev.yaml: other:deep" + "[0]" * (MAX_DEPTH + 1) + ": nested more than 50 levels deep"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[]", None),
        ('"[[[[not json"', None),
        ('{"k": "{[{[ in a string"}', None),
        (json.dumps({"x": [1, {"y": nested(MAX_DEPTH - 3)}]}), None),
        (json.dumps({"x": [1, {"y": nested(MAX_DEPTH - 2)}]}), ("x", 1, "y", *["a"] * (MAX_DEPTH - 2))),
        (json.dumps({'q"\\': nested(MAX_DEPTH)}), ('q"\\', *["a"] * MAX_DEPTH)),
    ],
)
def test_the_scan_counts_levels_as_the_stack_file_walk_does(text: str, where: tuple[object, ...] | None) -> None:
    assert json_too_deep(text) == where


# --- chart values take finite numbers only -----------------------------------------------------

NOT_FINITE = (
    "is not a finite number; chart values must be finite: the chart's objects are sent as JSON, which has no NaN "
    "or infinity (RFC 8259)"
)


@pytest.mark.parametrize(("spelled", "shown"), [(".nan", "nan"), (".inf", "inf"), ("-.Inf", "-inf")])
def test_a_non_finite_number_in_chart_values_is_refused_with_its_path(tmp_path: Path, spelled: str, shown: str) -> None:
    text = DEV.read_text().replace(
        "  triton-platform:scaling:\n",
        f"  triton-platform:scaling:\n    keda:\n      chart:\n        values: {{operator: {{x: [1, {spelled}]}}}}\n",
        1,
    )
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    assert caught.value.issues == [
        ConfigIssue("triton-platform:scaling.keda.chart.values.operator.x[1]", f"{shown} {NOT_FINITE}")
    ]


def test_the_engine_door_refuses_a_non_finite_chart_value_too() -> None:
    assert engine_issues(with_chart_values_json('{"retention": NaN}')) == [
        ConfigIssue(f"{VALUES}.retention", f"nan {NOT_FINITE}")
    ]


# --- a section under a misspelt namespace is named ---------------------------------------------


@pytest.mark.parametrize(
    ("spelled", "suggested"),
    [
        ("triton:serving", "triton-platform:serving"),  # the issue's case: the namespace cut short
        ("Triton_Platform:serving", "triton-platform:serving"),
        ("triton-platfrom:servng", "triton-platform:serving"),
    ],
)
def test_a_section_under_a_misspelt_namespace_is_named_with_a_suggestion(
    tmp_path: Path, spelled: str, suggested: str
) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(DEV.read_text().replace("  triton-platform:serving:\n", f"  {spelled}:\n", 1))
    namespace = spelled.partition(":")[0]
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    assert caught.value.issues == sorted(
        [
            ConfigIssue(
                spelled,
                f"unknown config namespace {namespace!r}, so the platform never reads this key; "
                f"did you mean {suggested!r}?",
            ),
            ConfigIssue(
                "triton-platform:serving",
                "required key is missing (expects a mapping with keys "
                + ", ".join(sorted(str(f.alias) for f in ServingConfig.model_fields.values()))
                + ")",
            ),
        ]
    )


@pytest.mark.parametrize("key", ["azure:environment", "kubernetes:context", "aws:region", "tri:serving"])
def test_other_programs_config_is_left_alone(key: str) -> None:
    """A provider's own keys may share a section's name (`azure:environment`): only our namespace's near misses count."""
    flat, _ = dev_flat()
    flat[key] = "x"
    assert parse_config(flat, "stacks/Pulumi.dev.yaml").environment == "dev"
