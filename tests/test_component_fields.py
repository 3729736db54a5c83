"""Every stack key that sets a component's Arg has that Arg's default and bounds: one declaration, the
component's (platform_config/component_fields.py). A stack model is listed here with the Args type it sets;
each of its fields named like a key of that type is compared, key by key."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from platform_config import scaling
from platform_config.component_fields import from_component
from platform_config.types import Strict
from triton_platform import keda_scaling_args
from triton_platform.arg_problems import ArgProblems
from triton_platform.arg_schema import UNSET, arg_types, resolve, setting

SETS: list[tuple[type[BaseModel], type]] = [
    (scaling.ScalingConfig, keda_scaling_args.KedaScalingArgs),
    (scaling.ScalePolicy, keda_scaling_args.ScalePolicy),
    (scaling.Fallback, keda_scaling_args.Fallback),
    (scaling.KedaInstall, keda_scaling_args.KedaInstall),
    (scaling.PrometheusAuth, keda_scaling_args.PrometheusAuth),
]
"""Which stack model sets which component Args type."""


def shared_keys() -> list[tuple[type[BaseModel], type, str]]:
    return [
        (model, args_type, key)
        for model, args_type in SETS
        for key in model.model_fields
        if key in arg_types(args_type)
    ]


def _plain(value: Any) -> Any:
    """A stack default as Args: models dumped by field name, unset optional keys left out."""
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_none=True)
    return value


def _bounds(field: FieldInfo) -> dict[str, float]:
    found: dict[str, float] = {}
    for item in field.metadata:
        for name in ("ge", "le", "gt"):
            bound = getattr(item, name, None)
            if bound is not None:
                found[name] = bound
    return found


@pytest.mark.parametrize(("model", "args_type", "key"), shared_keys(), ids=lambda v: getattr(v, "__name__", v))
def test_a_stack_key_has_its_components_default(model: type[BaseModel], args_type: type, key: str) -> None:
    rules = setting(args_type, key)
    field = model.model_fields[key]
    if rules.default is UNSET:
        # No default on the component: the stack key is required, or unset (None) when absent.
        assert field.is_required() or field.get_default(call_default_factory=True, validated_data={}) is None
        return
    problems = ArgProblems("Probe", "default")
    component = resolve(problems, key, rules.default, arg_types(args_type)[key], rules)
    assert problems.problems == []
    default = field.get_default(call_default_factory=True, validated_data={})
    annotation = field.annotation
    if isinstance(default, dict) and isinstance(annotation, type) and issubclass(annotation, BaseModel):
        default = annotation.model_validate(default)
    stack = _plain(default)
    if isinstance(stack, dict) and isinstance(component, dict):
        stack = {k: v for k, v in stack.items() if k in component or v not in ({}, [], None)}
    assert stack == component, f"{model.__name__}.{key}: the stack's default {stack!r}, the component's {component!r}"


@pytest.mark.parametrize(("model", "args_type", "key"), shared_keys(), ids=lambda v: getattr(v, "__name__", v))
def test_a_stack_key_is_never_looser_than_its_component(model: type[BaseModel], args_type: type, key: str) -> None:
    rules = setting(args_type, key)
    stack = _bounds(model.model_fields[key])
    if rules.minimum is not None:
        assert stack.get("ge", stack.get("gt", float("-inf"))) >= rules.minimum, f"{model.__name__}.{key}"
    if rules.maximum is not None:
        assert stack.get("le", float("inf")) <= rules.maximum, f"{model.__name__}.{key}"
    if rules.above is not None:
        assert stack.get("gt", float("-inf")) >= rules.above, f"{model.__name__}.{key}"


def test_every_stack_model_that_sets_args_is_listed() -> None:
    """A model of the scaling section is either listed with its Args type or sets none."""
    for name in dir(scaling):
        value = getattr(scaling, name)
        if isinstance(value, type) and issubclass(value, Strict) and value.__module__ == scaling.__name__:
            listed = [model for model, _ in SETS]
            assert value in listed or value.__name__ in ("KedaChart",), name


def test_a_changed_component_default_reaches_the_stack() -> None:
    """from_component reads the declaration at the time the field is built: a different default there is a
    different default here."""

    class Probe(Strict):
        polling_interval_seconds: int = from_component(keda_scaling_args.KedaScalingArgs, "polling_interval_seconds")

    assert Probe().polling_interval_seconds == 30
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Probe.model_validate({"pollingIntervalSeconds": 0})
