"""Each Arg declared once, and every Args value checked against that declaration, from any language.

An Arg's type and doc are its TypedDict annotation and the docstring below it: Pulumi's analyzer infers the
package schema from exactly these, and accepts only plain types there (no `Annotated`). What a type cannot
say, its default, bounds, allowed values and format, is its `Setting`, declared beside the class with
`declare`. `resolve` walks a value through both: every problem recorded with the Arg's path (a wrong shape,
a key the type does not declare, a string where a list belongs, `'false'` for a boolean, an Output where a
plain value is needed, a number out of bounds, a bad format), defaults applied, whole floats made ints. An
Output where an Input is allowed is checked the same way when it resolves.

The stack schema builds its fields from the same declarations (`platform_config/component_fields.py`), so a
setting's default and bounds are the component's wherever it is given.
"""

from __future__ import annotations

import copy
import difflib
import functools
import inspect
import json
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

import pulumi

from triton_platform.args.arg_problems import ArgPath, ArgProblems, path_text
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import Format

UNSET: Any = object()
"""No default: a missing NotRequired Arg stays missing (the component treats it as unset)."""


@dataclass(frozen=True)
class Setting:
    """What an Arg's type cannot say. Number bounds, `choices` and `format` apply to the value, or to each
    item of a list or value of a map; `keys` to each key of a map; `min_items` and `unique` to a list or map."""

    default: Any = UNSET
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    """An exclusive lower bound."""
    choices: tuple[str, ...] = ()
    format: Format | None = None
    keys: Format | None = None
    min_items: int = 0
    unique: bool = False
    min_length: int = 0
    """Of a string: 1 refuses the empty string where no format does."""


NO_RULES = Setting()
_DECLARED: dict[type, dict[str, Setting]] = {}


@functools.cache
def arg_types(args_type: type) -> dict[str, Any]:
    """The type of each key of `args_type` (a TypedDict), NotRequired unwrapped. `pulumi.Input` names its
    Output as a forward reference, resolved here."""
    return typing.get_type_hints(args_type, localns={"Output": pulumi.Output, "T": Any})


def declare(args_type: type, **settings: Setting) -> None:
    """Record the Settings of `args_type`'s keys (a TypedDict); naming a key it does not have is a bug."""
    unknown = set(settings) - set(arg_types(args_type))
    if unknown:
        raise TypeError(f"{args_type.__name__} has no key {', '.join(sorted(unknown))}")
    _DECLARED[args_type] = dict(settings)


def setting(args_type: type, key: str) -> Setting:
    """The Setting declared for `args_type`'s `key`, or none."""
    return _DECLARED.get(args_type, {}).get(key, NO_RULES)


def declared(args_type: type) -> Mapping[str, Setting]:
    """Every Setting declared for `args_type`, by key."""
    return _DECLARED.get(args_type, {})


def is_args_type(annotation: Any) -> bool:
    """Whether `annotation` is a TypedDict: a record of Args."""
    return isinstance(annotation, type) and typing.is_typeddict(annotation)


def input_type(annotation: Any) -> Any | None:
    """T, when `annotation` is `pulumi.Input[T]` (T, an Awaitable of it or an Output of it); else None."""
    if get_origin(annotation) is not Union:
        return None
    members = get_args(annotation)
    if not any(get_origin(member) is pulumi.Output for member in members):
        return None
    return members[0]


def fields_along(args_type: type, path: ArgPath) -> tuple[bool, ...]:
    """For each step of `path` below the Args `args_type`, whether it names a field of a record (else a map's key or
    a list's index): what tells `labels.a` (a key) from `karpenter.expire_after` (a field) once a path is data."""
    annotation: Any = args_type
    fields: list[bool] = []
    for step in path:
        annotation = input_type(annotation) or annotation
        field = isinstance(step, str) and is_args_type(annotation) and step in arg_types(annotation)
        fields.append(field)
        if field:
            annotation = arg_types(annotation)[str(step)]
        elif get_origin(annotation) in (list, dict):
            annotation = get_args(annotation)[-1]
        else:
            annotation = Any
    return tuple(fields)


def input_name(key: str) -> str:
    """An Arg's name among the component's inputs, as Pulumi's schema analyzer writes it (camelCase)."""
    first, *rest = key.split("_")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


def property_path(args_type: type, path: ArgPath) -> str:
    """An Args path as the engine names the component's inputs: fields camelCase, a user's keys whole and quoted,
    indexes in brackets (`gpusPerNode`, `taints[0].key`, `labels["a.b/c"]`)."""
    out = ""
    for step, field in zip(path, fields_along(args_type, path), strict=True):
        if isinstance(step, int):
            out += f"[{step}]"
        elif field:
            out += ("." if out else "") + input_name(step)
        else:
            out += f"[{json.dumps(step)}]"
    return out


def named_by(args_type: type) -> Callable[[ArgPath], str]:
    """`property_path` for the Args `args_type`: what an ArgProblems of that component names its errors by."""
    return functools.partial(property_path, args_type)


def resolve(problems: ArgProblems, path: ArgPath, value: Any, annotation: Any, rules: Setting = NO_RULES) -> Any:
    """`value` checked as the Arg `annotation` at `path` (below `args`), with its defaults applied.

    Problems are recorded, never raised; the value returned after one is a stand-in of the right type, so the
    checks after it can go on and report theirs too.
    """
    inner = input_type(annotation)
    if inner is not None:
        if isinstance(value, pulumi.Output) or inspect.isawaitable(value):
            # Known only later: checked as it resolves, so a value the API server would refuse (a namespace or
            # object name) stops the update naming its Arg, as a plain value stops the program at once.
            later = functools.partial(_resolved, problems.prefix, path, inner, rules)
            return pulumi.Output.from_input(value).apply(later)
        return resolve(problems, path, value, inner, rules)
    if isinstance(value, pulumi.Output):
        problems.add(
            path,
            "is an Output, but this Arg must be a plain value known when the program runs (the component "
            "builds names, queries or files from it); pass the value itself",
        )
        return _stand_in(annotation)
    if annotation is Any:
        return value
    if is_args_type(annotation):
        return resolve_record(problems, path, value, annotation)
    origin = get_origin(annotation)
    if origin is list:
        return _list(problems, path, value, get_args(annotation)[0], rules)
    if origin is dict:
        return _map(problems, path, value, get_args(annotation)[1], rules)
    if annotation is bool:
        return _bool(problems, path, value)
    if annotation is int:
        return _int(problems, path, value, rules)
    if annotation is float:
        return _float(problems, path, value, rules)
    if annotation is str:
        return _str(problems, path, value, rules)
    raise TypeError(f"no check for Arg type {annotation!r} at {path_text(path)}")


def _resolved(prefix: str, path: ArgPath, annotation: Any, rules: Setting, value: Any) -> Any:
    """An Output's value, once known, checked as `resolve` checks a plain one; ArgsError on a problem."""
    problems = ArgProblems.of(prefix)
    checked = resolve(problems, path, value, annotation, rules)
    problems.check()
    return checked


def resolve_record(problems: ArgProblems, path: ArgPath, value: Any, args_type: type) -> dict[str, Any]:
    """A TypedDict's value: each key it declares checked, each missing one given its default (or left out)."""
    if not isinstance(value, Mapping):
        problems.add(
            path,
            f"{excerpt(value)} is not a mapping of {args_type.__name__}'s keys"
            if value is not None
            else f"missing: give {args_type.__name__}, a mapping of its keys",
        )
        return {}
    hints = arg_types(args_type)
    required: frozenset[str] = args_type.__required_keys__  # type: ignore[attr-defined]
    for key in value:
        if key not in hints:
            close = difflib.get_close_matches(str(key), list(hints), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.add((*path, str(key)), f"unknown key; known keys: {', '.join(sorted(hints))}{hint}")
    out: dict[str, Any] = {}
    for key, annotation in hints.items():
        rules = setting(args_type, key)
        given = value.get(key)
        if given is None:
            if key in required:
                problems.add((*path, key), "missing (required)")
            elif rules.default is not UNSET:
                out[key] = resolve(problems, (*path, key), copy.deepcopy(rules.default), annotation, rules)
            continue
        out[key] = resolve(problems, (*path, key), given, annotation, rules)
    return out


def _list(problems: ArgProblems, path: ArgPath, value: Any, item: Any, rules: Setting) -> list[Any]:
    if isinstance(value, str):
        problems.add(path, f"{excerpt(value)} is a string, not a list; a list of one is [{excerpt(value)}]")
        return []
    if not isinstance(value, list | tuple):
        problems.add(path, f"{excerpt(value)} is not a list")
        return []
    items = [resolve(problems, (*path, i), entry, item, rules) for i, entry in enumerate(value)]
    if len(items) < rules.min_items:
        problems.add(path, f"has {len(items)} items; list at least {rules.min_items}")
    if rules.unique:
        seen: list[Any] = []
        for entry in items:
            if entry in seen and isinstance(entry, str | int):
                problems.add(path, f"{entry!r} is listed twice; list each once")
            seen.append(entry)
    return items


def _map(problems: ArgProblems, path: ArgPath, value: Any, item: Any, rules: Setting) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        problems.add(path, f"{excerpt(value)} is not a mapping")
        return {}
    out: dict[str, Any] = {}
    for key, entry in value.items():
        where = (*path, str(key))
        if not isinstance(key, str):
            problems.add(where, f"key {excerpt(key)} is not a string")
            continue
        if rules.keys is not None:
            problem = rules.keys.problem(key)
            if problem is not None:
                problems.add(where, f"key {problem}")
        out[key] = resolve(problems, where, entry, item, rules)
    if len(out) < rules.min_items:
        problems.add(path, f"has {len(out)} entries; give at least {rules.min_items}")
    return out


def _bool(problems: ArgProblems, path: ArgPath, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "on", "off"):
        problems.add(path, f"{excerpt(value)} is a string; write the boolean true or false, unquoted")
    else:
        problems.add(path, f"{excerpt(value)} is not true or false")
    return False


def _int(problems: ArgProblems, path: ArgPath, value: Any, rules: Setting) -> int:
    if isinstance(value, float) and not math.isfinite(value):
        problems.add(path, f"{value} is not a whole number")
        return int(rules.minimum or 0)
    low, high = rules.minimum, rules.maximum
    return problems.integer(
        path, value, minimum=None if low is None else int(low), maximum=None if high is None else int(high)
    )


def _float(problems: ArgProblems, path: ArgPath, value: Any, rules: Setting) -> float:
    if isinstance(value, float) and not math.isfinite(value):
        problems.add(path, f"{value} is not a finite number")
        return float(rules.minimum or 0)
    return problems.number(path, value, above=rules.above, at_least=rules.minimum, at_most=rules.maximum)


def _str(problems: ArgProblems, path: ArgPath, value: Any, rules: Setting) -> str:
    if not isinstance(value, str):
        problems.add(path, f"{excerpt(value)} is not a string")
        return ""
    if rules.choices and value not in rules.choices:
        problems.add(path, f"{excerpt(value)} is not one of {', '.join(rules.choices)}")
    elif len(value) < rules.min_length:
        problems.add(path, "is empty; give a value" if not value else f"{excerpt(value)} is too short")
    elif rules.format is not None:
        problem = rules.format.problem(value)
        if problem is not None:
            problems.add(path, problem)
    return value


def _stand_in(annotation: Any) -> Any:
    """An empty value of `annotation`'s shape."""
    origin = get_origin(annotation)
    if origin is list:
        return []
    if origin is dict or is_args_type(annotation):
        return {}
    return {bool: False, int: 0, float: 0.0, str: ""}.get(annotation)
