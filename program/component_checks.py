"""The components' own checks of a stack, run without Pulumi and reported in the stack's keys.

Each component checks its Args with rules the stack schema (platform_config/) does not repeat: a deployment named
like the model loader's objects, two deployments with one ingress host, a label the component sets itself, a taint
given twice... `component_issues` builds each component's Args exactly as `TritonPlatform` does (the `*_args`
functions of program/platform.py), with plain stand-ins where the program hands one component another's Output
(the pool placement, the metrics namespace, the Prometheus URL, the Deployments' names), runs the four checkers
(pure functions), and turns each problem of an `ArgsError` (an Args path and a reason, `ArgProblem`) into a
ConfigIssue at the stack key that set that Arg. An Arg the root derives from several keys, or from none, is named
at the component's section, its Args path kept in the message.

`stackctl validate` runs this only once the stack schema passed, so no problem is reported twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pydantic.alias_generators import to_camel

from platform_config.cluster import PROFILES
from platform_config.errors import ConfigError, ConfigIssue
from platform_config.loader import StackConfig
from platform_config.problem_text import key_path
from platform_config.scaling import SIGNAL_TARGETS
from platform_config.schema import PlatformConfig, section_key
from program.platform import (
    Workload,
    gpu_pool_args,
    monitoring_args,
    scaling_args,
    served_plainly,
    serving_args,
    token_triggers_of,
)
from triton_platform.args.arg_problems import ArgPath, ArgsError, path_text
from triton_platform.args.arg_schema import fields_along
from triton_platform.args.object_claims import Identity, described, identities, taken
from triton_platform.gpu_pool.gpu_node_pool import named_objects as pool_objects
from triton_platform.gpu_pool.gpu_node_pool import pool_manifests
from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs, pool_of
from triton_platform.gpu_pool.gpu_pool_nodes import pool_placement
from triton_platform.kube.namespace import namespace_manifests
from triton_platform.monitoring.monitoring import in_cluster_prometheus_url
from triton_platform.monitoring.monitoring import named_objects as monitoring_objects
from triton_platform.monitoring.monitoring_args import MonitoringArgs
from triton_platform.monitoring.monitoring_rules import load_queries
from triton_platform.monitoring.monitoring_settings import monitoring_settings
from triton_platform.monitoring.token_rules import token_queries
from triton_platform.scaling.keda_scaling import named_objects as scaling_objects
from triton_platform.scaling.keda_scaling_args import KedaScalingArgs, scaling_of
from triton_platform.serving.served_deployments import deployment_names
from triton_platform.serving.serving_context import ServingContext
from triton_platform.serving.triton_serving import deployments_of
from triton_platform.serving.triton_serving import named_objects as serving_objects
from triton_platform.serving.triton_serving_args import TritonServingArgs
from triton_platform.serving.triton_serving_spec import serving_spec

KUBERNETES, CLUSTER, GPU_POOL, SERVING, MODELS, SCALING, MONITORING, IMAGE_DIGESTS = (
    section_key(name)
    for name in ("kubernetes", "cluster", "gpu_pool", "serving", "models", "scaling", "monitoring", "image_digests")
)
STACK = "(stack)"
"""Where the loader names the stack's own name (platform_config/loader.py)."""


@dataclass(frozen=True)
class Field:
    """A key of an Args record (a TypedDict): snake_case, written camelCase in the stack."""

    name: str


@dataclass(frozen=True)
class Key:
    """A key the user chose (a deployment, model, label or receiver name): the same in the stack."""

    name: str


Step = Field | Key | int
"""One step of an Args path; an int is a list index."""


@dataclass(frozen=True)
class StackKey:
    """Where in the stack an Arg was set: a top-level key and the path below it, as the stack file writes it.

    `note`: None when that key sets the Arg exactly; otherwise how the Arg comes from it, and the issue's message
    keeps the Args path."""

    section: str
    loc: tuple[str | int, ...] = ()
    note: str | None = None

    def path(self) -> str:
        return key_path(self.section, self.loc)


def stack_loc(steps: Sequence[Step]) -> tuple[str | int, ...]:
    """Args steps as the stack writes them: record keys camelCase, the user's keys and list indexes as they are."""
    return tuple(
        to_camel(step.name) if isinstance(step, Field) else step.name if isinstance(step, Key) else step
        for step in steps
    )


def _at(section: str, *steps: Step | str) -> StackKey:
    """`section` and the steps below it; a plain str is a stack key written as it is (camelCase already)."""
    return StackKey(section, tuple(s if isinstance(s, str) else stack_loc([s])[0] for s in steps))


def _derived(section: str, note: str, *steps: Step | str) -> StackKey:
    key = _at(section, *steps)
    return StackKey(key.section, key.loc, note)


PLATFORM_LABELS = "the platform's labels, which the program sets from triton-platform:environment"


# ---------------------------------------------------------------------------------------------------------------
# Args paths back to stack keys. Each component has a table of its top-level Args and the stack key that sets
# each (the path below it follows, record keys camelCase), and a function for the Args set otherwise.

Renames = Mapping[str, tuple[str, ...]]
"""A top-level Arg's name, and the stack key that sets it: a section and the keys below it, camelCase."""


def _same(section: str, *names: str) -> dict[str, tuple[str, ...]]:
    """Args that `<section>.<camelCase name>` sets."""
    return {name: (section, to_camel(name)) for name in names}


def _renamed(renames: Renames, section: str, steps: Sequence[Step]) -> StackKey:
    """The stack key of the Arg at `steps` by `renames`; an Arg not listed is the program's own."""
    match list(steps):
        case [Field(name), *rest] if name in renames:
            top, *below = renames[name]
            return _at(top, *below, *rest)
    return _derived(section, "set by the program")


SERVING_KEYS: Renames = {
    "namespace": (KUBERNETES, "namespace"),
    "deployments": (SERVING, "deployments"),
    "model_repository": (SERVING, "modelRepository"),
    "models": (MODELS,),
    "metrics_namespace": (MONITORING, "prometheus", "namespace"),
    "metrics_pod_labels": (MONITORING, "prometheus", "podLabels"),
    "autoscaled": (SCALING, "enabled"),
    "image_digests": (IMAGE_DIGESTS,),
    **_same(
        SERVING,
        "image",
        "model_defaults",
        "inference_clients",
        "ingress",
        "startup_timeout_seconds",
        "drain",
        "shm_size_limit",
        "tmp_size_limit",
        "service_account_annotations",
    ),
}
"""TritonServing's Args and the stack keys that set them (program/platform.py `serving_args`)."""


def serving_key(config: PlatformConfig, steps: Sequence[Step]) -> StackKey:
    """The stack key that set TritonServing's Arg at `steps`."""
    identity = PROFILES[config.cluster.platform].identity_annotation
    match list(steps):
        case [Field("model_repository"), Field("path"), *_]:
            return _derived(SERVING, "the model repository folder stackctl reads: --model-repo, else model_repo/")
        case [Field("config_name")]:
            return _derived(STACK, "the stack's name, under which its model configs are rendered")
        case [Field("service_account_annotations"), Key(name), *_] if (
            name == identity and name not in config.serving.service_account_annotations
        ):
            return _at(CLUSTER, "workloadIdentity", "models")
        case [Field("pool"), Field("node_selector"), *rest]:
            return _at(GPU_POOL, "nodeLabels", *rest)
        case [Field("pool"), Field("tolerations"), int(i), *_]:
            return _derived(GPU_POOL, "the toleration of this taint", "taints", i)
        case [Field("pool"), Field("gpu_resource")]:
            return _at(GPU_POOL, "resourceName")
        case [Field("pool"), *_]:
            return _derived(GPU_POOL, "the GPU pool's placement")
        case [Field("labels"), *_]:
            return _derived(SERVING, PLATFORM_LABELS)
    return _renamed(SERVING_KEYS, SERVING, steps)


GPU_POOL_KEYS: Renames = {
    "workload_namespace": (KUBERNETES, "namespace"),
    "gpu_operator_namespace": (CLUSTER, "gpuOperator", "namespace"),
    "image_digests": (IMAGE_DIGESTS,),
    "metrics_namespace": (MONITORING, "prometheus", "namespace"),
    "metrics_selector_labels": (MONITORING, "selectorLabels"),
    "scrape_interval": (MONITORING, "scrapeInterval"),
    "kube_version": (KUBERNETES, "kubeVersion"),
    **_same(
        GPU_POOL,
        "max_nodes",
        "gpus_per_node",
        "min_nodes",
        "manage",
        "resource_name",
        "node_labels",
        "taints",
        "autoscaler",
        "karpenter",
        "cluster_autoscaler",
        "static_nodes",
        "device_plugin",
        "overprovisioning_replicas",
        "overprovisioning_image",
        "dcgm_exporter",
        "dcgm_exporter_image",
    ),
}
"""GpuNodePool's Args and the stack keys that set them (program/platform.py `gpu_pool_args`)."""


def gpu_pool_key(config: PlatformConfig, steps: Sequence[Step]) -> StackKey:
    """The stack key that set GpuNodePool's Arg at `steps`."""
    identity = PROFILES[config.cluster.platform].identity_annotation
    autoscaler = config.gpu_pool.cluster_autoscaler
    own_annotations = autoscaler.service_account_annotations if autoscaler is not None else {}
    match list(steps):
        case [Field("karpenter"), Field("node_class_kind"), *_]:
            return _derived(CLUSTER, "the node class of the cluster's platform", "platform")
        case [Field("cluster_autoscaler"), Field("service_account_annotations"), Key(name), *_] if (
            name == identity and name not in own_annotations
        ):
            return _at(CLUSTER, "workloadIdentity", "nodeAutoscaler")
        case [Field("gpu_software")]:
            return _derived(CLUSTER, "who runs the GPU software: cluster.gpuOperator, else the platform")
        case [Field("labels"), *_]:
            return _derived(GPU_POOL, PLATFORM_LABELS)
    return _renamed(GPU_POOL_KEYS, GPU_POOL, steps)


MONITORING_KEYS: Renames = {
    "namespace": (KUBERNETES, "namespace"),
    "latency_slo_ms": (SERVING, "p95LatencySloMs"),
    "latency_p99_slo_ms": (SERVING, "p99LatencySloMs"),
    "deployments": (SERVING, "deployments"),
    "token_objectives": (SERVING, "tokenObjectives"),
    "prometheus_namespace": (MONITORING, "prometheus", "namespace"),
    "prometheus_pod_labels": (MONITORING, "prometheus", "podLabels"),
    "scaling_enabled": (SCALING, "enabled"),
    "kube_version": (KUBERNETES, "kubeVersion"),
    **_same(
        MONITORING,
        "mode",
        "chart",
        "selector_labels",
        "receivers",
        "routes",
        "runbook_base_url",
        "grafana_folder",
        "scrape_interval",
        "alerts",
        "replicas",
        "retention",
        "storage",
        "priority_class_name",
    ),
}
"""Monitoring's Args and the stack keys that set them (program/platform.py `monitoring_args`)."""


def signal_target(config: PlatformConfig) -> str:
    """The scaling key that sets the target of the stack's signal."""
    return SIGNAL_TARGETS[config.scaling.signal][1]


def monitoring_key(config: PlatformConfig, steps: Sequence[Step]) -> StackKey:
    """The stack key that set Monitoring's Arg at `steps`."""
    match list(steps):
        case [Field("deployments"), Key(key), Field("max_replicas")]:
            return _at(SERVING, "deployments", Key(key), "replicas", "max")
        case [Field("deployments"), Key(key), Field("models"), *rest]:
            return _at(SERVING, "deployments", Key(key), "models", *rest)
        case [Field("deployments"), Key(_), Field("signal"), Field("kind")]:
            return _at(SCALING, "signal")
        case [Field("deployments"), Key(_), Field("signal"), Field("target")]:
            return _at(SCALING, signal_target(config))
        case [Field("deployments"), Key(_), Field("signal"), Field("capacity_per_pod"), *rest]:
            return _at(SCALING, "capacityProfiles", *rest)
        case [Field("deployments"), Key(key), *_]:
            return _derived(SERVING, "what the program derives from this deployment", "deployments", Key(key))
        case [Field("token_objectives"), Key(model), Field("metrics")]:
            return _derived(SERVING, "the series the model's backend gives", "tokenObjectives", Key(model))
        case [Field("labels"), Key(label), *_] if label in config.monitoring.selector_labels:
            note = "a label the platform puts on every object, which this selector label gives another value"
            return _derived(MONITORING, note, "selectorLabels", Key(label))
        case [Field("labels"), *_]:
            return _derived(MONITORING, PLATFORM_LABELS)
        case [Field("dcgm_metrics")]:
            return _derived(GPU_POOL, "whether a DCGM exporter's metrics reach Prometheus")
        case [Field("dashboard_tags"), *_]:
            return _derived(MONITORING, "the dashboards' tags, which the program sets from triton-platform:environment")
    return _renamed(MONITORING_KEYS, MONITORING, steps)


SCALING_KEYS: Renames = {
    "targets": (SERVING, "deployments"),
    "kube_version": (KUBERNETES, "kubeVersion"),
    **_same(
        SCALING,
        "polling_interval_seconds",
        "scale_up",
        "scale_down",
        "fallback",
        "gpu_memory_ratio_target",
        "paused",
        "paused_replicas",
        "prometheus_auth",
        "keda",
    ),
}
"""KedaScaling's Args and the stack keys that set them (program/platform.py `scaling_args`)."""


def scaling_key(config: PlatformConfig, steps: Sequence[Step]) -> StackKey:
    """The stack key that set KedaScaling's Arg at `steps`."""
    match list(steps):
        case [Field("targets"), Key(key), Field("min_replicas" | "max_replicas" as bound)]:
            return _at(SERVING, "deployments", Key(key), "replicas", bound.removesuffix("_replicas"))
        case [Field("targets"), Key(_), Field("trigger"), Field("name")]:
            return _at(SCALING, "signal")
        case [Field("targets"), Key(_), Field("trigger"), Field("threshold")]:
            return _at(SCALING, signal_target(config))
        case [Field("targets"), Key(_), Field("trigger"), Field("activation_threshold")]:
            return _at(SCALING, "activationQueueDepth")
        case [Field("targets"), Key(key), Field("daily_floor"), *below]:
            return _at(SCALING, "dailyFloor", Key(key), *below)
        case [Field("targets"), Key(key), *_]:
            return _derived(SERVING, "what the program derives from this deployment", "deployments", Key(key))
        case [Field("prometheus_url")] if config.scaling.prometheus_address is not None:
            return _at(SCALING, "prometheusAddress")
        case [Field("prometheus_url")]:
            return _derived(MONITORING, "the in-cluster URL of its Prometheus", "prometheus", "namespace")
        case [Field("labels"), *_]:
            return _derived(SCALING, PLATFORM_LABELS)
    return _renamed(SCALING_KEYS, SCALING, steps)


def arg_steps(args_type: type, path: ArgPath) -> tuple[Step, ...]:
    """An ArgProblem's path as steps the key mappings match: each field a Field, each map key a Key, indices as
    they are (the Args type tells a field from a key, `fields_along`)."""
    fields = fields_along(args_type, path)
    return tuple(
        step if isinstance(step, int) else Field(step) if field else Key(step)
        for step, field in zip(path, fields, strict=True)
    )


@dataclass(frozen=True)
class Component:
    """One component as the root creates it: its type, its resource name, the Args the root gives it, the stack
    section its settings live in, and where in the stack each Arg was set."""

    kind: str
    name: str
    args_type: type
    args: Mapping[str, Any]
    section: str
    key_of: Callable[[PlatformConfig, Sequence[Step]], StackKey]


def issues_of(config: PlatformConfig, component: Component, error: ArgsError) -> list[ConfigIssue]:
    """The problems of `component`'s ArgsError as ConfigIssues at the stack keys that set the Args named."""
    issues = []
    for problem in error.problems:
        if problem.where is not None:
            # Located elsewhere (a file of the model repository): named at the section, as the component said it.
            located = f"{problem.where}: {problem.reason}" if problem.where else problem.reason
            issues.append(ConfigIssue(component.section, f"{component.kind}: {located}"))
            continue
        key = component.key_of(config, arg_steps(component.args_type, problem.path))
        message = problem.reason
        if key.note is not None:
            message = f"{component.kind} {path_text(problem.path)} ({key.note}): {message}"
        issues.append(ConfigIssue(key.path(), message))
    return issues


def _checked(config: PlatformConfig, component: Component, check: Callable[[], object]) -> list[ConfigIssue]:
    try:
        check()
    except ArgsError as err:
        return issues_of(config, component, err)
    return []


def component_issues(stack: StackConfig, live_version: str | None = None) -> list[ConfigIssue]:
    """Every problem the components find in the Args the root builds from `stack` (a stack the schema passed, its
    models rendered), at the stack keys that set them; none for a stack the program deploys as it is.
    `live_version`: the deploy target's API server version where the program read it (`deployable`); validate
    contacts no cluster."""
    config, rendered = stack.config, stack.rendered
    assert rendered is not None, "the stack's serving and models are in the file: nothing is left to ESC"
    # What the program reads from other components' Outputs, as plain values: TritonServing's (the same functions
    # make them), Monitoring's load queries and Prometheus URL, and each Deployment's name and namespace.
    served = served_plainly(config, rendered)
    kube_version = None if config.kubernetes.mode == "deploy" else config.kubernetes.kube_version

    monitoring_given: MonitoringArgs = monitoring_args(config, served, rendered, kube_version)
    monitoring = Component(
        "Monitoring", f"{stack.stack}-monitoring", MonitoringArgs, monitoring_given, MONITORING, monitoring_key
    )
    # What each component would create under names known now, in the order the root builds them (the root's
    # namespace and its policies first): two of them creating one object would fail in `pulumi up`.
    namespace = namespace_manifests(config.kubernetes.namespace, config.environment)
    objects = [Creator("the platform", f"{section_key('kubernetes')}.namespace", list(namespace.values()))]
    issues: list[ConfigIssue] = []
    try:
        monitoring_checked = monitoring_settings(monitoring.name, monitoring_given)
        queries: dict[str, str] = load_queries(monitoring_checked)
        tokens: dict[str, dict[str, str]] = token_queries(monitoring_checked)
    except ArgsError as err:
        issues += issues_of(config, monitoring, err)
        # Stand-ins: KedaScaling checks the rest.
        queries = dict.fromkeys(config.serving.deployments, "vector(0)")
        tokens = {
            key: dict.fromkeys(token_triggers_of(config, rendered, key), "vector(0)")
            for key in config.serving.deployments
        }
        monitoring_checked = None

    pool_given: GpuNodePoolArgs = gpu_pool_args(config, live_version or kube_version)
    pool = Component("GpuNodePool", f"{stack.stack}-gpu-pool", GpuNodePoolArgs, pool_given, GPU_POOL, gpu_pool_key)
    try:
        pool_checked = pool_of(pool.name, pool_given)
        placement = pool_placement(pool_checked)
        objects.append(_creator(pool, pool_objects(pool_checked, pool_manifests(pool_checked, placement))))
    except ArgsError as err:
        issues += issues_of(config, pool, err)
        placement = pool_placement(pool_given)  # the root gives every key the placement reads

    serving_given: TritonServingArgs = serving_args(config, rendered, placement)
    serving = Component(
        "TritonServing", f"{stack.stack}-serving", TritonServingArgs, serving_given, SERVING, serving_key
    )
    try:
        context = ServingContext(serving_spec(serving.name, serving_given, stack.stack))
        objects.append(_creator(serving, serving_objects(context, deployments_of(context))))
    except ArgsError as err:
        issues += issues_of(config, serving, err)
    if monitoring_checked is not None:
        objects.append(_creator(monitoring, monitoring_objects(monitoring_checked, joined=False)))

    if config.scaling.enabled:
        workloads = {
            key: Workload(name, config.kubernetes.namespace)
            for key, name in deployment_names(serving_given["deployments"]).items()
        }
        prometheus_url = in_cluster_prometheus_url(config.monitoring.prometheus.namespace)
        scaling_given: KedaScalingArgs = scaling_args(
            config, workloads, queries, prometheus_url, kube_version, token_queries=tokens
        )
        scaling = Component(
            "KedaScaling", f"{stack.stack}-scaling", KedaScalingArgs, scaling_given, SCALING, scaling_key
        )
        try:
            objects.append(_creator(scaling, scaling_objects(scaling_of(scaling.name, scaling_given))))
        except ArgsError as err:
            issues += issues_of(config, scaling, err)
    return issues + _shared_objects(objects)


@dataclass(frozen=True)
class Creator:
    """What creates objects under its own names: a component, or the root itself, and the stack key its names
    come from."""

    what: str
    key: str
    objects: Sequence[Mapping[str, Any]]


def _creator(component: Component, objects: Sequence[Mapping[str, Any]]) -> Creator:
    return Creator(component.kind, component.section, objects)


def _shared_objects(creators: Sequence[Creator]) -> list[ConfigIssue]:
    """Each object two creators would make, at the later one's key, naming both (object_claims.py finds the same
    when the program runs, in one message for the whole component and with no stack key)."""
    claims: dict[Identity, str] = {}
    issues = []
    for creator in creators:
        issues += [
            ConfigIssue(
                creator.key,
                f"{creator.what} would create {described(identity)}, which {other} creates already; give one of them "
                "another name or namespace",
            )
            for identity, other in taken(claims, creator.objects)
        ]
        claims.update(dict.fromkeys(identities(creator.objects), f"{creator.what} ({creator.key})"))
    return issues


def check_components(stack: StackConfig, live_version: str | None = None) -> StackConfig:
    """`stack`, once the components' own checks pass; otherwise a ConfigError with every problem at its stack key
    (a component's own ArgsError would name its Args, and a collision no key at all)."""
    issues = component_issues(stack, live_version)
    if issues:
        raise ConfigError(stack.source, issues)
    return stack


def deployable(stack: StackConfig, version: str | None) -> StackConfig:
    """`check_components` for the program, with the cluster's `version` (`cluster_version`): a problem stops it
    with the whole report, no traceback."""
    try:
        return check_components(stack, version)
    except ConfigError as err:
        raise pulumi.RunError(err.report()) from None
