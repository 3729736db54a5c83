"""The stack's fields for a component's settings, generated from the component's declaration.

A setting is declared once, on the Args of the component that uses it (triton_platform/args/arg_schema.py): its name,
type, doc, default, bounds and format. The stack models that set Args (`platform_config/serving.py`, `gpu_pool.py`,
`scaling.py`, `monitoring.py`) hold no copy of that declaration: `stack_fields` writes their fields from it, into
the `[[[cog ...]]]` regions of those modules (cog, https://nedbatchelder.com/code/cog/), and
`tests/platform_config/test_component_fields.py` fails when a region differs from what the declaration gives
or a stack model declares a component's key by hand. Regenerate with `make stack-fields`.

At run time `from_component` builds each field's pydantic Field from the declaration (default and bounds), and
`arg_format` checks a string with the component's own format rule, in its words.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import inspect
import itertools
import re
import sys
import textwrap
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import AfterValidator, BaseModel, Field, model_validator
from pydantic.alias_generators import to_camel

from platform_config.types import KeyProblemsError
from triton_platform.args.arg_problems import ArgPath, ArgProblems
from triton_platform.args.arg_schema import UNSET, arg_types, fields_along, input_type, is_args_type, setting
from triton_platform.gpu_pool import gpu_node_pool_args as pool
from triton_platform.model_packaging import model_settings_args as settings
from triton_platform.monitoring import monitoring_args as mon
from triton_platform.scaling import keda_scaling_args as keda
from triton_platform.serving import triton_serving_args as serving

STACK_MODELS: dict[type, str] = {
    serving.TritonServingArgs: "serving.ServingConfig",
    serving.TritonDeploymentArgs: "serving.DeploymentConfig",
    serving.ReplicaRangeArgs: "serving.ReplicaRange",
    serving.ContainerResourcesArgs: "serving.ContainerResources",
    serving.ComputeResourcesArgs: "serving.ComputeResources",
    settings.ModelSettingsArgs: "serving.ModelSettings",
    settings.QueuePolicyArgs: "serving.QueuePolicy",
    settings.DynamicBatchingArgs: "serving.DynamicBatching",
    settings.InstanceGroupArgs: "serving.InstanceGroup",
    settings.VersionPolicyArgs: "serving.VersionPolicy",
    settings.LatestVersionsArgs: "serving.LatestVersions",
    settings.AllVersionsArgs: "serving.AllVersions",
    settings.SpecificVersionsArgs: "serving.SpecificVersions",
    settings.WarmupArgs: "serving.Warmup",
    settings.VllmSettingsArgs: "serving.VllmSettings",
    settings.TensorRtLlmSettingsArgs: "serving.TensorRtLlmSettings",
    serving.ModelRepositoryArgs: "serving.ModelRepositoryConfig",
    serving.ModelClaimArgs: "serving.PvcSource",
    serving.StoreEgressArgs: "serving.StoreEgress",
    serving.InferenceClientArgs: "serving.InferenceClient",
    serving.IngressArgs: "serving.IngressConfig",
    serving.DrainArgs: "serving.Drain",
    mon.TokenObjectives: "serving.TokenObjectives",
    pool.GpuNodePoolArgs: "gpu_pool.GpuPoolConfig",
    pool.Taint: "gpu_pool.Taint",
    pool.KarpenterSettings: "gpu_pool.KarpenterPool",
    pool.ClusterAutoscalerSettings: "gpu_pool.ClusterAutoscalerPool",
    pool.DevicePluginSettings: "gpu_pool.DevicePlugin",
    keda.KedaScalingArgs: "scaling.ScalingConfig",
    keda.ScalePolicy: "scaling.ScalePolicy",
    keda.Fallback: "scaling.Fallback",
    keda.KedaInstall: "scaling.KedaInstall",
    keda.PrometheusAuth: "scaling.PrometheusAuth",
    keda.HttpAddOnInstall: "scaling.HttpAddOnInstall",
    keda.WakeRoute: "serving.Wake",
    keda.DailyFloor: "scaling.DailyFloor",
    keda.FloorWindow: "scaling.FloorWindow",
    mon.MonitoringArgs: "monitoring.MonitoringConfig",
    mon.AlertThresholds: "monitoring.AlertsConfig",
    mon.MonitoringStorage: "monitoring.StorageConfig",
    mon.AlertReceiver: "monitoring.Receiver",
    mon.SlackReceiver: "monitoring.SlackReceiver",
    mon.PagerDutyReceiver: "monitoring.PagerDutyReceiver",
    mon.WebhookReceiver: "monitoring.WebhookReceiver",
    mon.ReceiverCredential: "monitoring.Credential",
    mon.CredentialSecret: "monitoring.SecretRef",
}
"""Which stack model (`<module of platform_config>.<class>`) sets each component Args type: the one list of them."""


def _as_stack(value: Any, annotation: Any) -> Any:
    """An Args default as the stack file writes it: the keys of each record (TypedDict) in camelCase; the keys of a
    plain map (labels, annotations) as they are."""
    if isinstance(value, dict) and is_args_type(annotation):
        types = arg_types(annotation)
        return {to_camel(key): _as_stack(item, types.get(key)) for key, item in value.items()}
    if isinstance(value, list) and get_origin(annotation) is list:
        return [_as_stack(item, get_args(annotation)[0]) for item in value]
    return value


def _plain_type(args_type: type, key: str) -> Any:
    """The Arg's type, `pulumi.Input[T]` taken as T."""
    annotation = arg_types(args_type)[key]
    return input_type(annotation) or annotation


def from_component(args_type: type, key: str, **narrower: Any) -> Any:
    """The pydantic Field of the stack key that sets `args_type`'s `key`: its default and bounds (of a number; a
    list's or map's fewest items), over which `narrower` (pydantic Field arguments: ge, le, gt, ...) may only
    tighten."""
    rules = setting(args_type, key)
    annotation = _plain_type(args_type, key)
    bounds: dict[str, Any] = {}
    if annotation in (int, float):
        bounds = {
            name: bound
            for name, bound in (("ge", rules.minimum), ("le", rules.maximum), ("gt", rules.above))
            if bound is not None
        }
    elif get_origin(annotation) in (list, dict) and rules.min_items:
        bounds = {"min_length": rules.min_items}
    elif annotation is str and rules.min_length and not rules.choices:
        bounds = {"min_length": rules.min_length}
    # A narrower bound on one side replaces the component's on that side.
    for side in ({"ge", "gt"}, {"le", "lt"}):
        if side & set(narrower):
            bounds = {name: bound for name, bound in bounds.items() if name not in side}
    options: dict[str, Any] = {**bounds, **narrower}
    if rules.default is not UNSET and "default" not in narrower:
        default = rules.default
        options["default_factory"] = lambda: copy.deepcopy(_as_stack(default, annotation))
        options["validate_default"] = True
    elif "default" not in narrower and key not in args_type.__required_keys__:  # type: ignore[attr-defined]
        options["default"] = None  # unset, as the component leaves it
    return Field(**options)


@dataclasses.dataclass(frozen=True)
class FormatCheck(AfterValidator):
    """A format's check, with its pattern for the config reference to name (platform_config/reference.py)."""

    pattern: str | None = None


def arg_format(args_type: type, key: str, part: str = "value") -> Any:
    """An AfterValidator checking a string with the format `args_type`'s `key` declares, in the component's words:
    `part` "value" (the string, or each item or map value) or "key" (each key of a map)."""
    rules = setting(args_type, key)
    check = rules.keys if part == "key" else rules.format
    if check is None:
        raise TypeError(f"{args_type.__name__}.{key} declares no {part} format")

    def valid(value: str) -> str:
        problem = check.problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    return FormatCheck(valid, pattern=check.pattern)


def arg_unique(args_type: type, key: str) -> Any:
    """An AfterValidator refusing an item listed twice, as `args_type`'s `key` declares."""
    del args_type, key  # named so the generated field says whose rule it is

    def once(items: list[Any]) -> list[Any]:
        twice = [item for index, item in enumerate(items) if item in items[:index]]
        if twice:
            # The component's words (arg_schema._list).
            raise ValueError(
                "; ".join(f"{item!r} is listed twice" for item in dict.fromkeys(twice)) + "; list each once"
            )
        return items

    return AfterValidator(once)


@functools.cache
def arg_docs(args_type: type) -> dict[str, str]:
    """The docstring below each key of `args_type` (a TypedDict), as Pulumi's analyzer reads it for the schema."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(args_type)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        documented = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and documented:
            docs[node.target.id] = str(after.value.value)
    return docs


_DEFAULT_SENTENCE = re.compile(r"\s*Default:? [^\n]*$", re.DOTALL)
_QUOTED = re.compile(r"`[^`]*`")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


@functools.cache
def _arg_keys() -> frozenset[str]:
    """Every key of every Args type a stack model sets."""
    return frozenset(key for args_type in STACK_MODELS for key in arg_types(args_type))


ELSEWHERE = {"prometheus_namespace": "prometheus.namespace", "prometheus_pod_labels": "prometheus.podLabels"}
"""Args keys the stack sets under another path (`monitoring.prometheus` groups Monitoring's Prometheus keys)."""


def _stack_key(key: str) -> str:
    return ELSEWHERE.get(key) or (to_camel(key) if key in _arg_keys() else key)


def _camel_keys(quoted: re.Match[str]) -> str:
    """A `quoted` span with each Args key in it as the stack writes it (a metric name stays as it is)."""
    return _SNAKE.sub(lambda key: _stack_key(key[0]), quoted[0])


def stack_doc(args_type: type, key: str, note: str = "") -> str:
    """The Arg's doc as the stack reference shows it: one paragraph, keys named in camelCase as the stack writes
    them, the closing `Default: ...` left to the reference's own default column where the Arg declares one."""
    text = " ".join(arg_docs(args_type).get(key, "").split())
    if setting(args_type, key).default is not UNSET or text.endswith("Default: unset."):
        text = _DEFAULT_SENTENCE.sub("", text)  # the reference's default column says it
    return f"{_QUOTED.sub(_camel_keys, text)} {note}".strip()


def _name(args_type: type) -> str:
    """How a section module names an Args type: by its module (`from triton_platform import triton_serving_args`),
    as several Args share a name with the stack model that sets them."""
    return f"{args_type.__module__.rsplit('.', 1)[-1]}.{args_type.__name__}"


def _number_bounds(args_type: type, key: str) -> str:
    rules = setting(args_type, key)
    bounds = [
        f"{name}={bound!r}"
        for name, bound in (("ge", rules.minimum), ("le", rules.maximum), ("gt", rules.above))
        if bound is not None
    ]
    return ", ".join(bounds)


def _scalar(args_type: type, key: str, annotation: Any, whole: bool) -> str:
    """The annotation of one value of the Arg: the field itself (`whole`), or an item or map value."""
    rules = setting(args_type, key)
    ref = f'{_name(args_type)}, "{key}"'
    if is_args_type(annotation):
        return STACK_MODELS[annotation].rsplit(".", 1)[-1]
    if annotation is str:
        if rules.choices:
            return "Literal[" + ", ".join(f'"{choice}"' for choice in rules.choices) + "]"
        if rules.format is not None:
            return f"Annotated[str, arg_format({ref})]"
        if rules.min_length and not whole:
            return f"Annotated[str, Field(min_length={rules.min_length})]"
        return "str"
    if annotation in (int, float):
        bounds = _number_bounds(args_type, key)
        return f"Annotated[{annotation.__name__}, Field({bounds})]" if bounds and not whole else annotation.__name__
    if annotation is bool:
        return "bool"
    if annotation is Any:
        return "Any"  # a backend's own values (vLLM's engine arguments), checked against the backend's source
    raise TypeError(f"{args_type.__name__}.{key}: no stack type for {annotation!r}")


def _annotation(args_type: type, key: str) -> str:
    annotation = _plain_type(args_type, key)
    rules = setting(args_type, key)
    origin = get_origin(annotation)
    if origin is list:
        text = f"list[{_scalar(args_type, key, get_args(annotation)[0], whole=False)}]"
        if rules.unique:
            text = f'Annotated[{text}, arg_unique({_name(args_type)}, "{key}")]'
    elif origin is dict:
        keys = f'Annotated[str, arg_format({_name(args_type)}, "{key}", "key")]' if rules.keys else "str"
        text = f"dict[{keys}, {_scalar(args_type, key, get_args(annotation)[1], whole=False)}]"
    else:
        text = _scalar(args_type, key, annotation, whole=True)
    return text


def stack_fields(
    args_type: type,
    *,
    only: Collection[str] = (),
    exclude: Collection[str] = (),
    narrow: Mapping[str, str] = {},
    notes: Mapping[str, str] = {},
    metadata: Mapping[str, str] = {},
    names: Mapping[str, str] = {},
) -> str:
    """The fields of a stack model that sets `args_type`, as Python source, one per key in declaration order.

    A nested Args type is its stack model (`STACK_MODELS`); `only` and `exclude` pick the keys the stack sets;
    `narrow` gives a key tighter pydantic bounds (as source: `le=1000`); `notes` adds a stack sentence to a key's
    doc; `metadata` adds an Annotated item to a key's type (as source: the loader's SECRET marker).
    """
    keys = [key for key in arg_types(args_type) if (not only or key in only) and key not in exclude]
    unknown = (set(only) | set(exclude) | set(narrow) | set(notes) | set(metadata) | set(names)) - set(
        arg_types(args_type)
    )
    if unknown:
        raise TypeError(f"{args_type.__name__} has no key {', '.join(sorted(unknown))}")
    lines: list[str] = []
    for key in keys:
        annotation = _annotation(args_type, key)
        optional = key not in args_type.__required_keys__  # type: ignore[attr-defined]
        if optional and setting(args_type, key).default is UNSET and "default=" not in narrow.get(key, ""):
            annotation = f"{annotation} | None"  # unset, as the component leaves it
        if key in metadata:
            annotation = f"Annotated[{annotation}, {metadata[key]}]"
        extra = f", {narrow[key]}" if key in narrow else ""
        doc = stack_doc(args_type, key, notes.get(key, "")).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        field = f'{names.get(key, key)}: {annotation} = from_component({_name(args_type)}, "{key}"{extra})'
        lines += [field, f'"""{doc}"""', ""]
    # Written as generated, one line each: ruff's formatter would rewrap them and the regions would differ.
    # (cog indents each line as its region.)
    return "\n".join(["# fmt: off", *lines[:-1], "# fmt: on"])


def _args_type(model: BaseModel) -> type:
    """The Args type a stack model's fields are written from."""
    model_name = f"{type(model).__module__.rsplit('.', 1)[-1]}.{type(model).__name__}"
    return next(args for args, name in STACK_MODELS.items() if name == model_name)


def section_args(model: BaseModel) -> dict[str, Any]:
    """A stack model's settings as its component's Args: the fields written from them, by their keys (nested
    models alike), unset ones left out; the stack's own fields are not the component's and stay behind."""
    return model.model_dump(include=set(arg_types(_args_type(model))), exclude_none=True)


def _stack_steps(args_type: type, path: ArgPath) -> tuple[str | int, ...]:
    """An Args path below a model's Args (`("pvc", "claim_name")`, `("receivers", "a.b")`) as the stack's steps:
    each field as the stack writes its key, map keys and indices as they are."""
    fields = fields_along(args_type, path)
    return tuple(
        _stack_key(step) if field and isinstance(step, str) else step for step, field in zip(path, fields, strict=True)
    )


def component_rule(rule: Callable[[ArgProblems, ArgPath, Any], object]) -> Any:
    """A model validator running the component's own `rule` (a function of an ArgProblems, a path and the model's
    Args, `section_args`, that records each problem at its Args path below that one): each problem raised at its
    stack key, in the component's words with keys as the stack writes them. The rule is not repeated here."""

    def check(model: BaseModel) -> BaseModel:
        problems = ArgProblems("stack", "rule")
        rule(problems, (), section_args(model))
        args_type = _args_type(model)
        found = [
            (_stack_steps(args_type, p.path), _SNAKE.sub(lambda key: _stack_key(key[0]), p.reason))
            for p in problems.problems
        ]
        if found:
            raise KeyProblemsError(found)
        return model

    return model_validator(mode="after")(check)


def stack_modules() -> list[Path]:
    """The modules of platform_config whose regions `stack_fields` writes."""
    return [
        Path(__file__).with_name(f"{module}.py") for module in sorted({m.split(".")[0] for m in STACK_MODELS.values()})
    ]


def regenerate(check: bool = False) -> int:
    """Rewrite every region from the declarations (or, with `check`, fail naming each stale one); cog's exit status."""
    # cogapp is a development requirement; `pulumi up` imports this module with the runtime ones only.
    from cogapp import Cog  # noqa: PLC0415

    return int(
        Cog().main(
            ["cog", "-I", str(Path(__file__).parents[1]), "--check" if check else "-r", *map(str, stack_modules())]
        )
    )


if __name__ == "__main__":
    sys.exit(regenerate(check=sys.argv[1:] == ["--check"]))
