"""What TritonServing makes of its Args: checked, defaults applied, its models read and rendered.

`serving_spec` turns a TritonServingArgs dict (triton_platform/triton_serving_args.py) into a frozen ServingSpec,
which the pure builders (triton_platform/triton_manifests.py) read. Every problem is collected and raised at once,
each line naming the Arg's path, the bad value and what is allowed.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from triton_platform.arg_problems import ArgProblems
from triton_platform.gpu_pool_contract import PoolPlacement, Toleration
from triton_platform.kubernetes_values import DNS_LABEL, QUANTITY, quantity_value
from triton_platform.model_fit import SettingNames, fit_problems, unserved_steps
from triton_platform.model_packaging.bundle import bundle_problems
from triton_platform.model_packaging.digest import version_paths
from triton_platform.model_packaging.render import RenderedRepository, render_repository
from triton_platform.model_packaging.settings import (
    INT32_MAX,
    INT64_MAX,
    UINT32_MAX,
    UINT64_MAX,
    AllVersions,
    DynamicBatching,
    InstanceGroup,
    LatestVersions,
    ModelSettings,
    QueuePolicy,
    SpecificVersions,
    VersionPolicy,
    Warmup,
)
from triton_platform.model_packaging.source import ModelRepository, read_repository
from triton_platform.model_packaging.store import SCHEMES, StoreUri, parse_store_uri
from triton_platform.triton_serving_args import (
    AllVersionsArgs,
    ComputeResourcesArgs,
    ContainerResourcesArgs,
    DrainArgs,
    DynamicBatchingArgs,
    InferenceClientArgs,
    IngressArgs,
    InstanceGroupArgs,
    LatestVersionsArgs,
    ModelClaimArgs,
    ModelRepositoryArgs,
    ModelSettingsArgs,
    QueuePolicyArgs,
    ReplicaRangeArgs,
    SpecificVersionsArgs,
    StoreEgressArgs,
    TritonDeploymentArgs,
    TritonServingArgs,
    VersionPolicyArgs,
    WarmupArgs,
)

COMPONENT = "TritonServing"
DEFAULT_IMAGE = "nvcr.io/nvidia/tritonserver:24.10-py3"
DEFAULT_LOADER_IMAGE = "docker.io/rclone/rclone:1.60.1"
PROMETHEUS_POD_LABELS = {"app.kubernetes.io/name": "prometheus"}
"""The Prometheus Operator's pods: who may scrape Triton unless `metrics_pod_labels` says otherwise."""
SOURCES = ("bundled", "pvc", "s3", "gcs")
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce")
DEPLOYMENT_NAME_MAX = 40
"""Objects are named `triton-<deployment>-...`: a deployment name leaves room for the suffixes."""
CONFIG_NAME = r"^[A-Za-z0-9_.-]+$"
"""A config name is a file name (`configs/<name>.pbtxt`) and a tritonserver flag's value."""
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
QUANTITY_RULE = "a Kubernetes quantity such as 500m, 4 or 16Gi"


@dataclass(frozen=True)
class Replicas:
    min: int
    max: int


@dataclass(frozen=True)
class Compute:
    cpu: str
    memory: str


@dataclass(frozen=True)
class Resources:
    requests: Compute
    limits: Compute


@dataclass(frozen=True)
class Deployment:
    """One Triton Deployment and the models it serves."""

    models: tuple[str, ...]
    replicas: Replicas
    gpus_per_pod: int
    resources: Resources


@dataclass(frozen=True)
class Claim:
    """The model-repository claim (`model_repository.pvc`)."""

    claim_name: str
    create: bool
    size: str
    storage_class_name: str | None
    access_mode: str
    origin: str | None
    loader_image: str


@dataclass(frozen=True)
class EgressRule:
    cidr: str
    ports: tuple[int, ...]


@dataclass(frozen=True)
class ModelSource:
    """How the model files reach the pods (`model_repository`), defaults applied."""

    path: Path | None
    """The local folder the models are read from; None where it is missing or not a folder."""
    source: str
    pvc: Claim | None
    store: StoreUri | None
    """The object store the repository is published to: the uri, or the claim's origin."""
    revision: str | None
    credentials_secret: str | None
    egress: tuple[EgressRule, ...]
    """Where pods reading the store may connect: `store_egress`, or its default. Empty without a store."""


@dataclass(frozen=True)
class InferenceClient:
    namespace: pulumi.Input[str]
    pod_labels: dict[str, str]


@dataclass(frozen=True)
class Ingress:
    enabled: bool
    class_name: str
    base_domain: str | None
    tls_secret_name: str | None
    max_request_body: str
    controller_namespace: str


@dataclass(frozen=True)
class Drain:
    pre_stop_seconds: int
    exit_timeout_seconds: int


@dataclass(frozen=True)
class ServingSpec:
    """TritonServing's Args, checked and with their defaults; its served models rendered."""

    namespace: str
    image: str
    deployments: dict[str, Deployment]
    model_repository: ModelSource
    rendered: RenderedRepository
    """Every served model's config, rendered as `configs/<config_name>.pbtxt`."""
    inference_clients: tuple[InferenceClient, ...]
    ingress: Ingress
    startup_timeout_seconds: int
    drain: Drain
    shm_size_limit: str
    tmp_size_limit: str
    service_account_annotations: dict[str, str]
    pod_labels: dict[str, str]
    pool: PoolPlacement
    metrics_namespace: pulumi.Input[str]
    metrics_pod_labels: dict[str, str]
    labels: dict[str, str]
    autoscaled: bool
    image_digests: dict[str, str]
    protect_model_claim: bool


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _mapping(problems: ArgProblems, path: str, value: Any, keys: type | None = None) -> Mapping[str, Any]:
    """`value` as a mapping (None: empty); with `keys` (a TypedDict), a key it does not declare is a problem."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.add(path, f"{value!r} is not a mapping")
        return {}
    if keys is not None:
        problems.unknown_keys(path, value, keys)
    return value


def _list(problems: ArgProblems, path: str, value: Any) -> list[Any]:
    """`value` as a list (None: empty)."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        problems.add(path, f"{value!r} is not a list")
        return []
    return list(value)


def _text(problems: ArgProblems, path: str, value: Any, pattern: str | None = None, rule: str = "") -> str:
    """`value` as a non-empty string, matching `pattern` (described by `rule`) when given; None: ``."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value:
        problems.add(path, f"{value!r} is not a non-empty string")
        return ""
    if pattern is not None and not re.fullmatch(pattern, value):
        problems.add(path, f"{value!r} is not {rule}")
    return value


def _optional_text(problems: ArgProblems, path: str, value: Any) -> str | None:
    return None if value is None else _text(problems, path, value)


def _choice(problems: ArgProblems, path: str, value: Any, allowed: tuple[str, ...]) -> str:
    """One of `allowed`; None: the first."""
    return allowed[0] if value is None else problems.choice(path, value, allowed)


def _integer(problems: ArgProblems, path: str, value: Any, minimum: int, maximum: int, *, default: int = 0) -> int:
    """A whole number (a float such as 16.0 is one) within the bounds; None: `default`."""
    return default if value is None else problems.integer(path, value, minimum=minimum, maximum=maximum)


def _optional_integer(problems: ArgProblems, path: str, value: Any, minimum: int, maximum: int) -> int | None:
    return None if value is None else problems.integer(path, value, minimum=minimum, maximum=maximum)


def _quantity(problems: ArgProblems, path: str, value: Any, default: str) -> str:
    return default if value is None else _text(problems, path, value, QUANTITY, QUANTITY_RULE)


def _flag(problems: ArgProblems, path: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        problems.add(path, f"{value!r} is not true or false")
        return default
    return value


def _strings(problems: ArgProblems, path: str, value: Any) -> dict[str, str]:
    """A map of strings to strings (labels, annotations, digests); None: empty."""
    out = {}
    for key, item in _mapping(problems, path, value).items():
        if not isinstance(item, str):
            problems.add(f"{path}.{key}", f"{item!r} is not a string")
        out[str(key)] = str(item)
    return out


def _integers(
    problems: ArgProblems, path: str, value: Any, minimum: int, maximum: int, *, required: bool = False
) -> tuple[int, ...]:
    """A list of whole numbers within the bounds; `required`: at least one."""
    numbers = tuple(
        problems.integer(f"{path}[{i}]", item, minimum=minimum, maximum=maximum)
        for i, item in enumerate(_list(problems, path, value))
    )
    if required and not numbers:
        problems.add(path, "empty; list at least one")
    return numbers


def _once(problems: ArgProblems, path: str, items: tuple[Any, ...]) -> None:
    for item in sorted({i for i in items if items.count(i) > 1}):
        problems.add(path, f"{item!r} is listed twice; list each once")


def _queue_policy(problems: ArgProblems, path: str, value: QueuePolicyArgs | None) -> QueuePolicy | None:
    if value is None:
        return None
    args = _mapping(problems, path, value, QueuePolicyArgs)
    action = args.get("timeout_action")
    return QueuePolicy(
        max_queue_size=_optional_integer(problems, f"{path}.max_queue_size", args.get("max_queue_size"), 0, UINT32_MAX),
        default_timeout_microseconds=_optional_integer(
            problems, f"{path}.default_timeout_microseconds", args.get("default_timeout_microseconds"), 0, UINT64_MAX
        ),
        timeout_action=None
        if action is None
        else problems.choice(f"{path}.timeout_action", action, ("REJECT", "DELAY")),
        allow_timeout_override=None
        if args.get("allow_timeout_override") is None
        else _flag(problems, f"{path}.allow_timeout_override", args["allow_timeout_override"], False),
    )


def _dynamic_batching(problems: ArgProblems, path: str, value: DynamicBatchingArgs | None) -> DynamicBatching | None:
    if value is None:
        return None
    args = _mapping(problems, path, value, DynamicBatchingArgs)
    sizes = args.get("preferred_batch_size")
    return DynamicBatching(
        max_queue_delay_microseconds=_optional_integer(
            problems, f"{path}.max_queue_delay_microseconds", args.get("max_queue_delay_microseconds"), 0, 10_000_000
        ),
        preferred_batch_size=None
        if sizes is None
        else _integers(problems, f"{path}.preferred_batch_size", sizes, 1, INT32_MAX),
        default_queue_policy=_queue_policy(problems, f"{path}.default_queue_policy", args.get("default_queue_policy")),
    )


def _instance_group(problems: ArgProblems, path: str, value: InstanceGroupArgs | None) -> InstanceGroup | None:
    if value is None:
        return None
    args = _mapping(problems, path, value, InstanceGroupArgs)
    kind = args.get("kind")
    return InstanceGroup(
        count=_optional_integer(problems, f"{path}.count", args.get("count"), 1, 64),
        kind=None if kind is None else problems.choice(f"{path}.kind", kind, ("KIND_GPU", "KIND_CPU", "KIND_AUTO")),
    )


def _version_policy(problems: ArgProblems, path: str, value: VersionPolicyArgs | None) -> VersionPolicy | None:
    if value is None:
        return None
    args = _mapping(problems, path, value, VersionPolicyArgs)
    chosen = [key for key in ("latest", "all", "specific") if args.get(key) is not None]
    if len(chosen) != 1:
        problems.add(path, f"set exactly one of latest, all, specific; got {', '.join(chosen) or 'none'}")
    latest, versions = None, None
    if "latest" in chosen:
        given = _mapping(problems, f"{path}.latest", args["latest"], LatestVersionsArgs)
        count = problems.required(f"{path}.latest", given, "num_versions")
        latest = LatestVersions(_integer(problems, f"{path}.latest.num_versions", count, 1, 100))
    if "all" in chosen:
        _mapping(problems, f"{path}.all", args["all"], AllVersionsArgs)
    if "specific" in chosen:
        given = _mapping(problems, f"{path}.specific", args["specific"], SpecificVersionsArgs)
        listed = problems.required(f"{path}.specific", given, "versions")
        versions = _integers(problems, f"{path}.specific.versions", listed, 1, INT64_MAX, required=True)
        _once(problems, f"{path}.specific.versions", versions)
    return VersionPolicy(
        latest=latest,
        all=AllVersions() if "all" in chosen else None,
        specific=None if versions is None else SpecificVersions(versions),
    )


def _warmup(problems: ArgProblems, path: str, value: WarmupArgs | None) -> Warmup | None:
    if value is None:
        return None
    args = _mapping(problems, path, value, WarmupArgs)
    return Warmup(
        batch_sizes=_integers(problems, f"{path}.batch_sizes", args.get("batch_sizes"), 1, UINT32_MAX, required=True),
        data=_choice(problems, f"{path}.data", args.get("data"), ("zero", "random")),
    )


def model_settings(problems: ArgProblems, path: str, value: ModelSettingsArgs | None) -> ModelSettings:
    """One model's settings (or the defaults) at Arg `path`, as the renderer takes them; None: none set."""
    args = _mapping(problems, path, value, ModelSettingsArgs)
    return ModelSettings(
        max_batch_size=_optional_integer(problems, _at(path, "max_batch_size"), args.get("max_batch_size"), 0, 4096),
        dynamic_batching=_dynamic_batching(problems, _at(path, "dynamic_batching"), args.get("dynamic_batching")),
        instance_group=_instance_group(problems, _at(path, "instance_group"), args.get("instance_group")),
        version_policy=_version_policy(problems, _at(path, "version_policy"), args.get("version_policy")),
        warmup=_warmup(problems, _at(path, "warmup"), args.get("warmup")),
    )


def _compute(problems: ArgProblems, path: str, value: ComputeResourcesArgs | None, default: Compute) -> Compute:
    if value is None:
        return default
    args = _mapping(problems, path, value, ComputeResourcesArgs)
    cpu, memory = (
        _text(problems, _at(path, key), problems.required(path, args, key), QUANTITY, QUANTITY_RULE)
        for key in ("cpu", "memory")
    )
    return Compute(cpu, memory)


def _resources(problems: ArgProblems, path: str, value: ContainerResourcesArgs | None) -> Resources:
    args = _mapping(problems, path, value, ContainerResourcesArgs)
    requests = _compute(problems, f"{path}.requests", args.get("requests"), Compute("2", "8Gi"))
    limits = _compute(problems, f"{path}.limits", args.get("limits"), Compute("4", "8Gi"))
    for resource in ("cpu", "memory"):
        request, limit = getattr(requests, resource), getattr(limits, resource)
        if all(re.fullmatch(QUANTITY, q) for q in (request, limit)) and quantity_value(limit) < quantity_value(request):
            problems.add(
                f"{path}.limits.{resource}", f"{limit} is below its request {request}; limits must be >= requests"
            )
    return Resources(requests, limits)


def _replicas(problems: ArgProblems, path: str, value: ReplicaRangeArgs | None) -> Replicas:
    args = _mapping(problems, path, value, ReplicaRangeArgs)
    if value is None:
        return Replicas(0, 1)
    low = _integer(problems, f"{path}.min", problems.required(path, args, "min"), 0, 1000)
    high = _integer(problems, f"{path}.max", problems.required(path, args, "max"), 1, 1000, default=low)
    if low > high:
        problems.add(path, f"min {low} is above max {high}; min must be <= max")
    return Replicas(low, high)


def _deployment(problems: ArgProblems, path: str, value: TritonDeploymentArgs) -> Deployment:
    args = _mapping(problems, path, value, TritonDeploymentArgs)
    models = tuple(
        _text(problems, f"{path}.models[{i}]", model)
        for i, model in enumerate(_list(problems, f"{path}.models", problems.required(path, args, "models")))
    )
    if "models" in args and not models:
        problems.add(f"{path}.models", "empty; list at least one model")
    _once(problems, f"{path}.models", models)
    return Deployment(
        models=models,
        replicas=_replicas(problems, f"{path}.replicas", problems.required(path, args, "replicas")),
        gpus_per_pod=_integer(problems, f"{path}.gpus_per_pod", args.get("gpus_per_pod"), 1, 16, default=1),
        resources=_resources(problems, f"{path}.resources", args.get("resources")),
    )


def _deployments(problems: ArgProblems, value: Any) -> dict[str, Deployment]:
    args = _mapping(problems, "deployments", value)
    if value is not None and not args:
        problems.add("deployments", "no deployment; give at least one")
    out = {}
    for key, deployment in args.items():
        path = f"deployments.{key}"
        if not re.fullmatch(DNS_LABEL, str(key)) or len(str(key)) > DEPLOYMENT_NAME_MAX:
            problems.add(
                path,
                f"{key!r} is not a deployment name: lowercase letters, digits and '-', starting and ending "
                f"with a letter or digit, at most {DEPLOYMENT_NAME_MAX} characters",
            )
        out[str(key)] = _deployment(problems, path, deployment)
    return out


def _store(problems: ArgProblems, path: str, uri: Any, source: str) -> StoreUri | None:
    try:
        return parse_store_uri(_text(problems, path, uri), source)
    except ValueError as err:
        problems.add(path, str(err))
        return None


def _claim(problems: ArgProblems, path: str, value: ModelClaimArgs) -> tuple[Claim, StoreUri | None]:
    """The claim, and the store its `origin` names."""
    args = _mapping(problems, path, value, ModelClaimArgs)
    origin = args.get("origin")
    store = None
    if origin is not None:
        if isinstance(origin, str) and origin.startswith(("s3://", "gs://")):
            store = _store(problems, f"{path}.origin", origin, "gcs" if origin.startswith("gs://") else "s3")
        else:
            problems.add(f"{path}.origin", f"{origin!r} is not s3://<bucket>/<prefix> or gs://<bucket>/<prefix>")
    mode = args.get("access_mode")
    claim = Claim(
        claim_name=_text(problems, f"{path}.claim_name", problems.required(path, args, "claim_name")),
        create=_flag(problems, f"{path}.create", args.get("create"), False),
        size=_quantity(problems, f"{path}.size", args.get("size"), "50Gi"),
        storage_class_name=_optional_text(problems, f"{path}.storage_class_name", args.get("storage_class_name")),
        access_mode="ReadOnlyMany" if mode is None else problems.choice(f"{path}.access_mode", mode, ACCESS_MODES),
        origin=origin if isinstance(origin, str) else None,
        loader_image=DEFAULT_LOADER_IMAGE
        if args.get("loader_image") is None
        else _text(problems, f"{path}.loader_image", args["loader_image"]),
    )
    if claim.create and origin is None:
        problems.add(
            f"{path}.origin",
            "missing (required with create): a claim the component creates starts empty, and Triton would find "
            "no model; set the s3:// or gs:// URI the repository is published to (a Job then fills the claim), "
            "or use an existing, filled claim (create: false)",
        )
    if origin is not None and mode in (None, "ReadOnlyMany"):
        problems.add(
            f"{path}.access_mode",
            "the loader Job writes the repository from origin into the claim, and ReadOnlyMany cannot be written; "
            "use ReadWriteMany (Triton still mounts it read-only)",
        )
    return claim, store


def _egress_rule(problems: ArgProblems, path: str, value: StoreEgressArgs) -> EgressRule:
    args = _mapping(problems, path, value, StoreEgressArgs)
    cidr = _text(problems, f"{path}.cidr", problems.required(path, args, "cidr"))
    try:
        ipaddress.ip_network(cidr, strict=True)
    except ValueError as err:
        problems.add(f"{path}.cidr", f"{cidr!r} is not a network in CIDR form (e.g. 10.0.0.0/16): {err}")
    ports = _integers(problems, f"{path}.ports", problems.required(path, args, "ports"), 1, 65535, required=True)
    return EgressRule(cidr, ports)


def _default_egress(store: StoreUri, credentials_secret: str | None) -> tuple[EgressRule, ...]:
    """Any address, on the store's port only; GKE's metadata server too where workload identity gives the token."""
    rules = [EgressRule(cidr, (store.port,)) for cidr in ("0.0.0.0/0", "::/0")]
    if store.backend == "gcs" and credentials_secret is None:
        # GKE workload identity: tokens come from the metadata server, metadata.google.internal on port 80
        # (cloud.google.com/compute/docs/metadata/querying-metadata).
        rules.append(EgressRule("169.254.169.254/32", (80,)))
    return tuple(rules)


def _source_settings(
    problems: ArgProblems, path: str, args: Mapping[str, Any], source: str
) -> tuple[Claim | None, StoreUri | None]:
    """The claim (source `pvc`) and the object store (the uri of `s3`/`gcs`, or the claim's origin)."""
    claim, store = None, None
    if args.get("pvc") is not None:
        claim, store = _claim(problems, f"{path}.pvc", args["pvc"])
        if source != "pvc":
            problems.add(f"{path}.pvc", f"applies only to source 'pvc', not {source!r}")
    elif source == "pvc":
        problems.add(f"{path}.pvc", "missing (required for source 'pvc'): the claim (pvc.claim_name)")
    if args.get("uri") is not None:
        if source in SCHEMES:
            store = _store(problems, f"{path}.uri", args["uri"], source)
        else:
            problems.add(f"{path}.uri", f"applies only to sources 's3' and 'gcs', not {source!r}")
    elif source in SCHEMES:
        problems.add(f"{path}.uri", f"missing (required for source {source!r}): {SCHEMES[source]}<bucket>/<prefix>")
    return claim, store


def _revision(problems: ArgProblems, path: str, value: Any, source: str, published: bool) -> str | None:
    """Only a claim filled by hand has a revision: anything else rolls the pods by content."""
    if value is None:
        return None
    revision = _text(problems, path, value)
    if published:
        problems.add(
            path,
            "does not apply to a published repository (s3, gcs, pvc.origin): the pods read it under its content "
            "digest, so a model change rolls them by itself; remove revision",
        )
    elif source == "bundled":
        problems.add(path, "does not apply to source 'bundled': the bundled files roll the pods by content")
    elif len(revision) > 63:
        problems.add(path, f"{len(revision)} characters; at most 63")
    return revision


def _model_source(problems: ArgProblems, value: ModelRepositoryArgs | None) -> ModelSource:
    path = "model_repository"
    args = _mapping(problems, path, value, ModelRepositoryArgs)
    if value is None:
        return ModelSource(None, "bundled", None, None, None, None, ())
    folder = _text(problems, f"{path}.path", problems.required(path, args, "path"))
    if folder and not Path(folder).is_absolute():
        # A relative path would depend on where the component runs: a provider's folder, from YAML or TypeScript.
        problems.add(f"{path}.path", f"{folder!r} is not an absolute path; give the model repository's full path")
    elif folder and not Path(folder).is_dir():
        problems.add(f"{path}.path", f"{folder!r} is not a folder; give the local folder of the model repository")
    source = _choice(problems, f"{path}.source", problems.required(path, args, "source"), SOURCES)
    claim, store = _source_settings(problems, path, args, source)
    published = source in SCHEMES or (claim is not None and claim.origin is not None)
    for key in ("credentials_secret", "store_egress"):
        if args.get(key) is not None and not published:
            problems.add(
                f"{path}.{key}", f"applies only to sources 's3' and 'gcs' and to a pvc with origin, not {source!r}"
            )
    credentials = _optional_text(problems, f"{path}.credentials_secret", args.get("credentials_secret"))
    egress = tuple(
        _egress_rule(problems, f"{path}.store_egress[{i}]", rule)
        for i, rule in enumerate(_list(problems, f"{path}.store_egress", args.get("store_egress")))
    )
    if store is not None and args.get("store_egress") is None:
        egress = _default_egress(store, credentials)
    revision = _revision(problems, f"{path}.revision", args.get("revision"), source, published)
    readable = folder and Path(folder).is_absolute() and Path(folder).is_dir()
    return ModelSource(Path(folder) if readable else None, source, claim, store, revision, credentials, egress)


def _inference_client(problems: ArgProblems, path: str, value: InferenceClientArgs) -> InferenceClient:
    args = _mapping(problems, path, value, InferenceClientArgs)
    return InferenceClient(
        problems.required(path, args, "namespace"), _strings(problems, f"{path}.pod_labels", args.get("pod_labels"))
    )


def _ingress(problems: ArgProblems, value: IngressArgs | None) -> Ingress:
    path = "ingress"
    args = _mapping(problems, path, value, IngressArgs)
    ingress = Ingress(
        enabled=_flag(problems, f"{path}.enabled", args.get("enabled"), False),
        class_name=args.get("class_name") or "nginx",
        base_domain=_optional_text(problems, f"{path}.base_domain", args.get("base_domain")),
        tls_secret_name=_optional_text(problems, f"{path}.tls_secret_name", args.get("tls_secret_name")),
        max_request_body=_quantity(problems, f"{path}.max_request_body", args.get("max_request_body"), "64m"),
        controller_namespace=args.get("controller_namespace") or "ingress-nginx",
    )
    for key in ("base_domain", "tls_secret_name"):
        if ingress.enabled and args.get(key) is None:
            problems.add(f"{path}.{key}", "missing (required when enabled)")
    return ingress


def _drain(problems: ArgProblems, value: DrainArgs | None) -> Drain:
    args = _mapping(problems, "drain", value, DrainArgs)
    return Drain(
        pre_stop_seconds=_integer(problems, "drain.pre_stop_seconds", args.get("pre_stop_seconds"), 0, 300, default=10),
        exit_timeout_seconds=_integer(
            problems, "drain.exit_timeout_seconds", args.get("exit_timeout_seconds"), 1, 3600, default=30
        ),
    )


def _pool(problems: ArgProblems, value: PoolPlacement | None) -> PoolPlacement:
    args = _mapping(problems, "pool", value, PoolPlacement)
    if value is None:
        return {"node_selector": {}, "tolerations": [], "gpu_resource": ""}
    node_selector = _strings(problems, "pool.node_selector", problems.required("pool", args, "node_selector"))
    tolerations: list[Toleration] = []
    for i, item in enumerate(_list(problems, "pool.tolerations", problems.required("pool", args, "tolerations"))):
        path = f"pool.tolerations[{i}]"
        toleration = _mapping(problems, path, item, Toleration)
        _text(problems, f"{path}.key", problems.required(path, toleration, "key"))
        _choice(problems, f"{path}.operator", problems.required(path, toleration, "operator"), TOLERATION_OPERATORS)
        _choice(problems, f"{path}.effect", problems.required(path, toleration, "effect"), TAINT_EFFECTS)
        tolerations.append(item)
    return {
        "node_selector": node_selector,
        "tolerations": tolerations,
        "gpu_resource": _text(problems, "pool.gpu_resource", problems.required("pool", args, "gpu_resource")),
    }


ARG_NAMES = SettingNames(models="args.models", defaults="args.model_defaults", key=str, file=str)
"""The model-fit checks (triton_platform/model_fit.py) in TritonServing's Args."""


def _served_models_exist(
    problems: ArgProblems, repo: ModelRepository, shown: str, deployments: dict[str, Deployment]
) -> None:
    """Each served model is a model Triton can load from the repository, an ensemble with its steps beside it."""
    for key, deployment in deployments.items():
        for i, name in enumerate(deployment.models):
            path = f"deployments.{key}.models[{i}]"
            if name not in repo.names:
                problems.add(
                    path, f"model {name!r} is not in the model repository; known models: {repo.describe(shown)}"
                )
            for problem in repo.problems.get(name, []):
                problems.add(path, f"{problem.file}: {problem.message}")
    for key, unserved in unserved_steps(repo, {key: d.models for key, d in deployments.items()}):
        problems.add(f"deployments.{key}.models", unserved)


def _bundled_files_fit(problems: ArgProblems, repo: ModelRepository, deployments: dict[str, Deployment]) -> None:
    """Each deployment's bundled files can be ConfigMap keys, one key per file (model_packaging/bundle.py)."""
    found: dict[tuple[Path, str], None] = {}  # a file two deployments bundle is named once
    for deployment in deployments.values():
        files = version_paths(repo, [m for m in deployment.models if m in repo.models])
        found |= dict.fromkeys(bundle_problems(files, str))
    for file, problem in found:
        problems.add_at(str(file), problem)


def serving_spec(name: str, args: TritonServingArgs, default_config_name: str) -> ServingSpec:
    """TritonServing `name`'s Args checked (ArgsError naming every problem), its models read and rendered."""
    problems = ArgProblems(COMPONENT, name)
    given = _mapping(problems, "", args, TritonServingArgs)
    namespace = _text(
        problems,
        "namespace",
        problems.required("", given, "namespace"),
        DNS_LABEL,
        "a namespace name: lowercase letters, digits and '-', starting and ending with a letter or digit",
    )
    deployments = _deployments(problems, problems.required("", given, "deployments"))
    source = _model_source(problems, problems.required("", given, "model_repository"))
    served = sorted({model for deployment in deployments.values() for model in deployment.models})
    repo = ModelRepository(Path()) if source.path is None else read_repository(source.path)
    if source.path is not None:
        _served_models_exist(problems, repo, str(source.path), deployments)
        if source.source == "bundled":
            _bundled_files_fit(problems, repo, deployments)
    config_name = _text(
        problems,
        "config_name",
        given.get("config_name", default_config_name),
        CONFIG_NAME,
        "a config name: letters, digits, '_', '.' and '-'",
    )
    before_settings = len(problems.problems)
    defaults = model_settings(problems, "model_defaults", given.get("model_defaults"))
    models = {
        str(model): model_settings(problems, f"models.{model}", settings)
        for model, settings in _mapping(problems, "models", given.get("models")).items()
    }
    settings_read = len(problems.problems) == before_settings
    for model in sorted(set(models) - set(served)):
        problems.add(
            f"models.{model}",
            f"settings for model {model!r}, which no deployment serves; add it to a deployment's models or remove them",
        )
    clients = tuple(
        _inference_client(problems, f"inference_clients[{i}]", client)
        for i, client in enumerate(_list(problems, "inference_clients", given.get("inference_clients")))
    )
    image = DEFAULT_IMAGE if given.get("image") is None else _text(problems, "image", given["image"])
    ingress = _ingress(problems, given.get("ingress"))
    startup = _integer(problems, "startup_timeout_seconds", given.get("startup_timeout_seconds"), 30, 7200, default=600)
    drain = _drain(problems, given.get("drain"))
    shm = _quantity(problems, "shm_size_limit", given.get("shm_size_limit"), "1Gi")
    tmp = _quantity(problems, "tmp_size_limit", given.get("tmp_size_limit"), "10Gi")
    annotations = _strings(problems, "service_account_annotations", given.get("service_account_annotations"))
    pod_labels = _strings(problems, "pod_labels", given.get("pod_labels"))
    pool = _pool(problems, problems.required("", given, "pool"))
    metrics_namespace = problems.required("", given, "metrics_namespace")
    metrics_pods = _strings(problems, "metrics_pod_labels", given.get("metrics_pod_labels", PROMETHEUS_POD_LABELS))
    labels = _strings(problems, "labels", given.get("labels"))
    autoscaled = _flag(problems, "autoscaled", given.get("autoscaled"), False)
    digests = _strings(problems, "image_digests", given.get("image_digests"))
    protect = _flag(problems, "protect_model_claim", given.get("protect_model_claim"), False)
    if source.path is not None and settings_read:
        # Only settings that read cleanly are fitted: a value already refused would only echo its problem.
        served_by = {key: deployment.models for key, deployment in deployments.items()}
        for where, problem in fit_problems(repo, served_by, defaults, models, ARG_NAMES):
            problems.add_at(where, problem)
    problems.check()
    # Rendered only from Args without a problem: the renderer takes the settings as fitting their models.
    return ServingSpec(
        namespace=namespace,
        image=image,
        deployments=deployments,
        model_repository=source,
        rendered=render_repository(config_name, repo, served, defaults, models),
        inference_clients=clients,
        ingress=ingress,
        startup_timeout_seconds=startup,
        drain=drain,
        shm_size_limit=shm,
        tmp_size_limit=tmp,
        service_account_annotations=annotations,
        pod_labels=pod_labels,
        pool=pool,
        metrics_namespace=metrics_namespace,
        metrics_pod_labels=metrics_pods,
        labels=labels,
        autoscaled=autoscaled,
        image_digests=digests,
        protect_model_claim=protect,
    )
