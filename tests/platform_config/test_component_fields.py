"""Every stack key that sets a component's Arg has that Arg's default and bounds: one declaration, the
component's (platform_config/component_fields.py). A stack model is listed here with the Args type it sets;
each of its fields named like a key of that type is compared, key by key."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from platform_config import gpu_pool, monitoring, scaling, serving
from platform_config.component_fields import (
    STACK_MODELS,
    component_rule,
    from_component,
    stack_doc,
    stack_modules,
)
from platform_config.types import KeyProblemsError, Strict
from triton_platform.args.arg_problems import ArgPath, ArgProblems
from triton_platform.args.arg_schema import UNSET, arg_types, resolve, setting
from triton_platform.gpu_pool import gpu_node_pool_args
from triton_platform.model_packaging import model_settings_args
from triton_platform.monitoring import monitoring_args
from triton_platform.scaling import keda_scaling_args
from triton_platform.serving import triton_serving_args

SETS: list[tuple[type[BaseModel], type]] = [
    (getattr(importlib.import_module(f"platform_config.{module}"), name), args_type)
    for args_type, (module, name) in ((a, m.split(".")) for a, m in STACK_MODELS.items())
]
"""Which stack model sets which component Args type (component_fields.STACK_MODELS)."""
STACK_ONLY = ("KedaChart", "HttpAddOnChart", "PrometheusStackChart", "CapacityProfile")
"""Models of the listed sections that set no Args of their own: a chart pin is a `ChartSource` (helm_chart.py); a
capacity profile is read by the program, which gives Monitoring the capacity it derives (platform_config/capacity.py)."""


RENAMED: dict[tuple[type[BaseModel], str], tuple[type, str]] = {
    (monitoring.PrometheusPeer, "namespace"): (monitoring_args.MonitoringArgs, "prometheus_namespace"),
    (monitoring.PrometheusPeer, "pod_labels"): (monitoring_args.MonitoringArgs, "prometheus_pod_labels"),
}
"""Stack keys that set an Arg of another name: the stack groups Prometheus's namespace and pods."""
COMPUTED = {(gpu_pool.GpuPoolConfig, "min_nodes")}
"""Keys whose default the component computes from other keys: each has a test of its own below."""


def shared_keys() -> list[tuple[type[BaseModel], type, str, str]]:
    """(stack model, Args type, stack field, Arg key) for every stack key that sets an Arg."""
    named = [
        (model, args_type, key, key)
        for model, args_type in SETS
        for key in model.model_fields
        if key in arg_types(args_type)
    ]
    return named + [(model, args_type, field, key) for (model, field), (args_type, key) in RENAMED.items()]


def _plain(value: Any) -> Any:
    """A stack default as Args: models dumped by field name, unset optional keys left out."""
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_none=True)
    return value


def _bounds(field: FieldInfo) -> dict[str, float]:
    """The field's bounds; a list's are its items' (`list[Annotated[int, Field(ge=...)]]`)."""
    metadata = list(field.metadata)
    for member in get_args(field.annotation):
        if get_origin(member) is list:
            metadata += getattr(get_args(member)[0], "__metadata__", ())
    if get_origin(field.annotation) is list:
        metadata += getattr(get_args(field.annotation)[0], "__metadata__", ())
    metadata += [bound for item in metadata if isinstance(item, FieldInfo) for bound in item.metadata]
    found: dict[str, float] = {}
    for item in metadata:
        for name in ("ge", "le", "gt", "lt"):
            bound = getattr(item, name, None)
            if bound is not None:
                found[name] = bound
    return found


@pytest.mark.parametrize(("model", "args_type", "name", "key"), shared_keys(), ids=lambda v: getattr(v, "__name__", v))
def test_a_stack_key_has_its_components_default(model: type[BaseModel], args_type: type, name: str, key: str) -> None:
    rules = setting(args_type, key)
    field = model.model_fields[name]
    if (model, name) in COMPUTED:
        return  # tests/platform_config/test_component_fields.py test_the_node_minimum_defaults_as_the_component_computes_it
    if rules.default is UNSET:
        # No default on the component: the stack key is required, or unset (None) when absent.
        assert field.is_required() or field.get_default(call_default_factory=True, validated_data={}) is None
        return
    problems = ArgProblems("Probe", "default")
    component = resolve(problems, (key,), rules.default, arg_types(args_type)[key], rules)
    assert problems.problems == []
    default = field.get_default(call_default_factory=True, validated_data={})
    annotation = field.annotation
    if isinstance(default, dict) and isinstance(annotation, type) and issubclass(annotation, BaseModel):
        default = annotation.model_validate(default)
    stack = _plain(default)
    if isinstance(stack, dict) and isinstance(component, dict):
        stack = {k: v for k, v in stack.items() if k in component or v not in ({}, [], None)}
    assert stack == component, f"{model.__name__}.{key}: the stack's default {stack!r}, the component's {component!r}"


@pytest.mark.parametrize(("model", "args_type", "name", "key"), shared_keys(), ids=lambda v: getattr(v, "__name__", v))
def test_a_stack_key_is_never_looser_than_its_component(
    model: type[BaseModel], args_type: type, name: str, key: str
) -> None:
    rules = setting(args_type, key)
    stack = _bounds(model.model_fields[name])
    if rules.minimum is not None:
        assert stack.get("ge", stack.get("gt", float("-inf"))) >= rules.minimum, f"{model.__name__}.{key}"
    if rules.maximum is not None:
        assert stack.get("le", stack.get("lt", float("inf"))) <= rules.maximum, f"{model.__name__}.{key}"
    if rules.above is not None:
        assert stack.get("gt", float("-inf")) >= rules.above, f"{model.__name__}.{key}"


@pytest.mark.parametrize("section", [scaling, gpu_pool, serving, monitoring], ids=lambda m: m.__name__)
def test_every_stack_model_that_sets_args_is_listed(section: Any) -> None:
    """Each model of a section is listed with the Args type it sets, or is the stack's own (a chart pin)."""
    listed = [model for model, _ in SETS] + [model for model, _ in RENAMED]
    for name in dir(section):
        value = getattr(section, name)
        if isinstance(value, type) and issubclass(value, Strict) and value.__module__ == section.__name__:
            assert value in listed or value.__name__ in STACK_ONLY, name


def test_a_changed_component_default_reaches_the_stack() -> None:
    """from_component reads the declaration at the time the field is built: a different default there is a
    different default here."""

    class Probe(Strict):
        polling_interval_seconds: int = from_component(keda_scaling_args.KedaScalingArgs, "polling_interval_seconds")

    assert Probe().polling_interval_seconds == 30
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Probe.model_validate({"pollingIntervalSeconds": 0})


@pytest.mark.parametrize(
    ("autoscaler", "settings", "expected"),
    [
        ("static", {}, 3),
        ("cluster-autoscaler", {"clusterAutoscaler": {"cloudProvider": "aws", "nodeGroups": ["g"]}}, 0),
    ],
)
def test_the_node_minimum_defaults_as_the_component_computes_it(
    autoscaler: str, settings: dict[str, Any], expected: int
) -> None:
    pool = gpu_pool.GpuPoolConfig.model_validate({"maxNodes": 3, "autoscaler": autoscaler, **settings})
    assert pool.min_nodes == expected == gpu_node_pool_args.default_min_nodes(autoscaler, 3)


# No field declared twice: every stack field that sets an Arg is written from the Arg's declaration.

REGION_START, REGION_END = "# [[[cog", "# [[[end]]]"
CHART_PINS = {"KedaInstall.chart", "HttpAddOnInstall.chart", "MonitoringConfig.chart"}
"""Fields named like an Arg that are the stack's own: a chart pin is a HelmChart (a folder relative to the project,
its Chart.yaml checked), which the root hands on as the component's ChartSource."""


def hand_declared(source: str) -> list[str]:
    """`Class.field` for each field of `source` that calls `from_component` outside a generated region, or is
    named like a key of the Args type its class sets (STACK_MODELS) outside one."""
    lines = source.split("\n")
    inside, generated = False, set()
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith(REGION_START) and stripped != REGION_START:
            inside = True
        elif stripped == REGION_END:
            inside = False
        elif inside:
            generated.add(number)
    sets = {name.split(".")[1]: args_type for args_type, name in STACK_MODELS.items()}
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        keys = arg_types(sets[node.name]) if node.name in sets else {}
        for field in node.body:
            if not isinstance(field, ast.AnnAssign) or not isinstance(field.target, ast.Name):
                continue
            called = "from_component(" in ast.unparse(field.value) if field.value is not None else False
            if (called or field.target.id in keys) and field.lineno not in generated:
                found.append(f"{node.name}.{field.target.id}")
    return found


@pytest.mark.parametrize("module", stack_modules(), ids=lambda path: path.name)
def test_no_stack_model_declares_a_components_key_by_hand(module: Path) -> None:
    assert set(hand_declared(module.read_text(encoding="utf-8"))) <= CHART_PINS


def test_a_hand_declared_key_is_found() -> None:
    source = """
class ReplicaRange(Strict):
    # [[[cog fields(triton_serving_args.ReplicaRangeArgs, only=["min"])]]]
    min: int = from_component(triton_serving_args.ReplicaRangeArgs, "min")
    # [[[end]]]
    max: int = 3
    floor: int = from_component(triton_serving_args.ReplicaRangeArgs, "min")
    note: str = ""
"""
    assert hand_declared(source) == ["ReplicaRange.max", "ReplicaRange.floor"]


def test_every_region_is_what_the_declarations_give() -> None:
    # In a process of its own, as `make stack-fields` runs it: cog compiles the regions' code, and CPython 3.11's
    # AST constructor once failed inside a busy test worker ("AST constructor recursion depth mismatch").
    done = subprocess.run(
        [sys.executable, "-m", "platform_config.component_fields", "--check"],
        cwd=Path(serving.__file__).parents[1],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_region_edited_by_hand_is_stale(tmp_path: Path) -> None:
    edited = tmp_path / "serving.py"
    text = (Path(serving.__file__)).read_text(encoding="utf-8")
    edited.write_text(text.replace('from_component(triton_serving_args.DrainArgs, "pre_stop_seconds")', "5", 1))
    # cog in a process of its own, as above: in a pytest worker CPython 3.11.7's AST constructor can fail inside
    # inspect.getsource ("AST constructor recursion depth mismatch", python/cpython#106905), depending on what
    # ran before on the same thread.
    done = subprocess.run(
        [sys.executable, "-m", "cogapp", "-I", str(Path(serving.__file__).parents[1]), "--check", str(edited)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 5, done.stdout + done.stderr
    assert "serving.py(changed)" in done.stdout.replace(" ", "")


def test_a_stack_doc_names_keys_as_the_stack_writes_them() -> None:
    """Args keys in a doc become the stack's camelCase (or the path the stack sets them at); a metric stays."""
    doc = stack_doc(monitoring_args.MonitoringArgs, "mode")
    assert "`prometheus.namespace`" in doc
    assert "prometheus_namespace" not in doc
    assert stack_doc(model_settings_args.QueuePolicyArgs, "allow_timeout_override").endswith(
        "may override `defaultTimeoutMicroseconds`. Default: the base config.pbtxt's."
    )
    # A declared default is the reference's own column, not repeated in the text.
    assert "Default" not in stack_doc(triton_serving_args.DrainArgs, "pre_stop_seconds")


def test_a_components_rule_is_raised_at_the_stack_keys_in_its_words() -> None:
    """component_rule: each problem the rule records, at its path turned into the stack's steps (camelCase keys,
    list indexes, a user's dotted key kept whole), its message naming keys as the stack writes them."""

    def rule(problems: ArgProblems, path: ArgPath, args: dict[str, Any]) -> None:
        assert args == {"pre_stop_seconds": 5, "exit_timeout_seconds": 30}  # the model's Args, as section_args
        problems.add((*path, "pre_stop_seconds"), "above exit_timeout_seconds")
        problems.add(("taints", 2, "key", "example.com/a.b"), "a dotted key")
        problems.add(path, "the record itself")

    check = component_rule(rule).wrapped
    with pytest.raises(KeyProblemsError) as raised:
        check(serving.Drain.model_validate({"preStopSeconds": 5}))
    assert raised.value.problems == [
        (("preStopSeconds",), "above exitTimeoutSeconds"),
        (("taints", 2, "key", "example.com/a.b"), "a dotted key"),
        ((), "the record itself"),
    ]
