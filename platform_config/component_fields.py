"""Stack keys that set a component's Args take that Arg's default and bounds from the component's declaration
(triton_platform/arg_schema.py), so each is declared once: `from_component` builds the pydantic Field, and
`COMPONENT_ARGS` names which stack model sets which Args type, which tests/test_component_fields.py holds equal
key by key. A stack key may narrow its Arg (a tighter bound the stack needs), never widen it.
"""

from __future__ import annotations

import copy
from typing import Any, get_args, get_origin

from pydantic import Field
from pydantic.alias_generators import to_camel

from triton_platform.arg_schema import UNSET, arg_types, is_args_type, setting


def _as_stack(value: Any, annotation: Any) -> Any:
    """An Args default as the stack file writes it: the keys of each record (TypedDict) in camelCase; the keys of a
    plain map (labels, annotations) as they are."""
    if isinstance(value, dict) and is_args_type(annotation):
        types = arg_types(annotation)
        return {to_camel(key): _as_stack(item, types.get(key)) for key, item in value.items()}
    if isinstance(value, list) and get_origin(annotation) is list:
        return [_as_stack(item, get_args(annotation)[0]) for item in value]
    return value


def from_component(args_type: type, key: str, **narrower: Any) -> Any:
    """The pydantic Field of the stack key that sets `args_type`'s `key`: its default and bounds, over which
    `narrower` (pydantic Field arguments: ge, le, gt, ...) may only tighten."""
    rules = setting(args_type, key)
    bounds: dict[str, Any] = {
        name: bound
        for name, bound in (("ge", rules.minimum), ("le", rules.maximum), ("gt", rules.above))
        if bound is not None
    }
    # A narrower bound on one side replaces the component's on that side.
    for side in ({"ge", "gt"}, {"le", "lt"}):
        if side & set(narrower):
            bounds = {name: bound for name, bound in bounds.items() if name not in side}
    options: dict[str, Any] = {**bounds, **narrower}
    if rules.default is not UNSET and "default" not in narrower:
        default = rules.default
        annotation = arg_types(args_type)[key]
        options["default_factory"] = lambda: copy.deepcopy(_as_stack(default, annotation))
        options["validate_default"] = True
    return Field(**options)
