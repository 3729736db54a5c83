"""What TritonServing makes of its Args: checked, defaults applied, its models read and rendered.

`serving_spec` checks a TritonServingArgs dict against its declaration (triton_platform/serving/triton_serving_args.py:
every key's shape, default, bounds and format) and the rules that span keys, raising every problem at once, each
line naming the Arg's path, the bad value and what is allowed. It returns a `ServingSpec`: the Args with every
default applied, which the pure builders (triton_manifests.py and the modules it assembles) read as they are, and
the few facts derived from them (the rendered repository, the parsed store, the store's egress).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from triton_platform.args.arg_problems import ArgPath, ArgProblems
from triton_platform.args.arg_schema import named_by, resolve_record
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import DEPLOYMENT_KEY, MODEL
from triton_platform.args.kubernetes_values import quantity_value
from triton_platform.gpu_pool.gpu_pool_contract import Toleration
from triton_platform.http_add_on import pods_service_name, wake_service_problem
from triton_platform.kube.workload_identity import identity_annotation_rules, identity_label_rules
from triton_platform.model_packaging.bundle import (
    BUNDLE_LIMIT,
    CONFIG_MAP_DATA_LIMIT,
    bundle_problems,
    config_map_key_problem,
)
from triton_platform.model_packaging.digest import version_paths
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs, VersionPolicyArgs
from triton_platform.model_packaging.render import RenderedRepository, config_map_data, render_repository
from triton_platform.model_packaging.source import ModelRepository, read_repository
from triton_platform.model_packaging.store import SCHEMES, StoreUri, parse_store_uri
from triton_platform.serving.engine_memory import engine_memory, engine_memory_problems
from triton_platform.serving.model_fit import SettingNames, fit_problems, unserved_steps
from triton_platform.serving.triton_server_args import dynamic_model_control
from triton_platform.serving.triton_serving_args import (
    CONFIG_NAME_FORMAT,
    ContainerResourcesArgs,
    IngressArgs,
    ModelClaimArgs,
    ModelRepositoryArgs,
    ReplicaRangeArgs,
    StoreEgressArgs,
    TritonDeploymentArgs,
    TritonServingArgs,
)

COMPONENT = "TritonServing"
OWN_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/version",
)
"""Labels the component sets on its objects and pods itself (serving_context.py, triton_deployment.py): Triton's
selector, its role and its image version, which the Services, PodDisruptionBudgets, NetworkPolicies and the
ServiceMonitor select by."""
LOADER_KEY = "model-loader"
"""The deployment key whose objects would be named `triton-model-loader`, as the loader's NetworkPolicy is."""
INGRESS_HOST_SUFFIXES = ("", "-grpc")
"""Each deployment's ingress hosts are `<deployment><suffix>.<base_domain>` (triton_ingress.ingress_manifests)."""
HOST_NAME_MAX = 253


@dataclass(frozen=True)
class ServingSpec:
    """TritonServing's Args, checked and with their defaults, and what the component derives from them."""

    args: TritonServingArgs
    """The Args with every default applied (`resolve_record`): what the builders read."""
    rendered: RenderedRepository
    """Every served model's config, rendered as `configs/<config_name>.pbtxt`."""
    store: StoreUri | None
    """The object store the repository is published to: `model_repository.uri`, or the claim's origin."""
    egress: tuple[StoreEgressArgs, ...]
    """Where pods reading the store may connect: `model_repository.store_egress`, or its default. Empty without
    a store."""


def version_policy_rules(problems: ArgProblems, path: ArgPath, args: VersionPolicyArgs) -> None:
    """Exactly one of latest, all, specific: Triton's `version_policy` is a oneof."""
    chosen = [key for key in ("latest", "all", "specific") if key in args]
    if len(chosen) != 1:
        problems.add(path, f"set exactly one of latest, all, specific; got {', '.join(chosen) or 'none'}")


def _checked_settings(problems: ArgProblems, path: ArgPath, args: ModelSettingsArgs) -> ModelSettingsArgs:
    """Resolved settings (`resolve_record`), as the renderer takes them, once the rule their declaration cannot
    state holds: one version policy."""
    if "version_policy" in args:
        version_policy_rules(problems, (*path, "version_policy"), args["version_policy"])
    return args


def model_settings(problems: ArgProblems, path: ArgPath, value: ModelSettingsArgs | None) -> ModelSettingsArgs:
    """One model's settings (or the defaults) at Arg `path`, checked against their declaration, every default
    applied, as the renderer takes them; empty: none set."""
    if value is None:
        return {}
    args = cast(ModelSettingsArgs, resolve_record(problems, path, value, ModelSettingsArgs))
    return _checked_settings(problems, path, args)


def _deployment_rules(problems: ArgProblems, key: str, deployment: TritonDeploymentArgs) -> None:
    """The replica range in order, the limits at least the requests, a name apart from the loader's."""
    path: ArgPath = ("deployments", key)
    if key == LOADER_KEY:
        problems.add(
            path,
            f"{key!r} would name this deployment's objects triton-{key}, the name of the NetworkPolicy this "
            "component adds for its model loader; name the deployment otherwise",
        )
    replica_rules(problems, (*path, "replicas"), deployment.get("replicas", {}))
    resource_rules(problems, (*path, "resources"), deployment.get("resources", {}))


def _pods_services_apart(problems: ArgProblems, deployments: Mapping[str, TritonDeploymentArgs]) -> None:
    """No deployment is named like the Service of another's own pods, which a deployment woken on request gets
    (`<its objects' name>-pods`, http_add_on.pods_service_name): the two Services would be one object."""
    for key in deployments:
        for other, deployment in deployments.items():
            # Both names carry the same `triton-` prefix (serving_context.deployment_object_name), so the objects
            # are one name exactly where the keys are.
            if deployment.get("wake_on_request") and key == pods_service_name(other):
                problems.add(
                    ("deployments", key),
                    f"{key!r} would name this deployment's objects triton-{key}, the Service of deployment "
                    f"{other!r}'s own pods (it wakes on request); name the deployment otherwise",
                )


def _wake_rules(problems: ArgProblems, key: str, deployment: TritonDeploymentArgs, args: TritonServingArgs) -> None:
    """A deployment woken on request starts at zero, something must scale it up, and its namespace names the wake
    Service (`triton-wake-<namespace>`, a DNS label)."""
    path: ArgPath = ("deployments", key)
    if not deployment.get("wake_on_request") or not problems.clean((*path, "replicas", "min")):
        return
    namespace = args.get("namespace")
    problem = wake_service_problem(namespace) if isinstance(namespace, str) and problems.clean(("namespace",)) else None
    if problem is not None:
        problems.add((*path, "wake_on_request"), problem)
    autoscaled = args.get("autoscaled", False)
    low = deployment.get("replicas", {}).get("min")
    if low is not None and low != 0:
        problems.add(
            (*path, "wake_on_request"),
            f"is true but replicas.min is {low}: only a deployment at zero waits for a request to wake it; set "
            "replicas.min 0 or wake_on_request false",
        )
    if not autoscaled:
        problems.add(
            (*path, "wake_on_request"),
            "is true but autoscaled is false: without an autoscaler nothing scales the deployment up from zero",
        )


def replica_rules(problems: ArgProblems, path: ArgPath, replicas: ReplicaRangeArgs) -> None:
    """The replica range in order."""
    low, high = replicas.get("min"), replicas.get("max")
    clean = problems.clean((*path, "min"), (*path, "max"))
    if clean and low is not None and high is not None and low > high:
        problems.add(path, f"min {low} is above max {high}; min must be <= max")


def resource_rules(problems: ArgProblems, path: ArgPath, resources: ContainerResourcesArgs) -> None:
    """Each limit at least its request."""
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    pairs = {
        "cpu": (requests.get("cpu"), limits.get("cpu")),
        "memory": (requests.get("memory"), limits.get("memory")),
    }
    for resource, (request, limit) in pairs.items():
        where = ((*path, "requests", resource), (*path, "limits", resource))
        if request is None or limit is None or not problems.clean(*where):
            continue
        if quantity_value(limit) < quantity_value(request):
            problems.add(where[1], f"{limit} is below its request {request}; limits must be >= requests")


def _store(problems: ArgProblems, path: ArgPath, uri: str | None, source: str) -> StoreUri | None:
    """The store `uri` names for `source` (s3 or gcs), once its own format passed."""
    if uri is None or not problems.clean(path):
        return None
    try:
        return parse_store_uri(uri, source)
    except ValueError as err:
        problems.add(path, str(err))
        return None


def claim_rules(problems: ArgProblems, path: ArgPath, claim: ModelClaimArgs) -> StoreUri | None:
    """A created claim needs an origin to fill it, and a claim the loader fills must be writable; the store its
    `origin` names."""
    origin = claim.get("origin")
    if claim.get("create") and origin is None:
        problems.add(
            (*path, "origin"),
            "missing (required with create): a claim the component creates starts empty, and Triton would find "
            "no model; set the s3:// or gs:// URI the repository is published to (a Job then fills the claim), "
            "or use an existing, filled claim (create: false)",
        )
    if origin is not None and claim.get("access_mode") == "ReadOnlyMany":
        problems.add(
            (*path, "access_mode"),
            "the loader Job writes the repository from origin into the claim, and ReadOnlyMany cannot be written; "
            "use ReadWriteMany (Triton still mounts it read-only)",
        )
    backend = "gcs" if origin is not None and origin.startswith("gs://") else "s3"
    return _store(problems, (*path, "origin"), origin, backend)


def _default_egress(store: StoreUri, credentials_secret: str | None) -> tuple[StoreEgressArgs, ...]:
    """Any address, on the store's port only; GKE's metadata server too where workload identity gives the token."""
    rules: list[StoreEgressArgs] = [{"cidr": cidr, "ports": [store.port]} for cidr in ("0.0.0.0/0", "::/0")]
    if store.backend == "gcs" and credentials_secret is None:
        # GKE workload identity: tokens come from the metadata server, metadata.google.internal on port 80
        # (cloud.google.com/compute/docs/metadata/querying-metadata).
        rules.append({"cidr": "169.254.169.254/32", "ports": [80]})
    return tuple(rules)


def _folder(problems: ArgProblems, path: ArgPath, folder: str | None) -> Path | None:
    """The model repository's local folder, or None where it is missing or not an absolute path to a folder."""
    if folder is None or not problems.clean(path):
        return None
    if not Path(folder).is_absolute():
        # A relative path would depend on where the component runs: a provider's folder, from YAML or TypeScript.
        problems.add(path, f"{folder!r} is not an absolute path; give the model repository's full path")
        return None
    if not Path(folder).is_dir():
        problems.add(path, f"{folder!r} is not a folder; give the local folder of the model repository")
        return None
    return Path(folder)


def _store_keys(problems: ArgProblems, path: ArgPath, args: ModelRepositoryArgs, source: str) -> StoreUri | None:
    """The claim for source `pvc` and the uri for `s3` and `gcs`, each only there; the store they name."""
    claim, store = args.get("pvc"), None
    if claim is not None:
        if source != "pvc":
            problems.add((*path, "pvc"), f"applies only to source 'pvc', not {source!r}")
        store = claim_rules(problems, (*path, "pvc"), claim)
    elif source == "pvc":
        problems.add((*path, "pvc"), "missing (required for source 'pvc'): the claim (pvc.claim_name)")
    if "uri" in args:
        if source in SCHEMES:
            store = _store(problems, (*path, "uri"), args["uri"], source)
        else:
            problems.add((*path, "uri"), f"applies only to sources 's3' and 'gcs', not {source!r}")
    elif source in SCHEMES:
        problems.add((*path, "uri"), f"missing (required for source {source!r}): {SCHEMES[source]}<bucket>/<prefix>")
    return store


def _publishing_keys(problems: ArgProblems, path: ArgPath, args: ModelRepositoryArgs, source: str) -> None:
    """The store's credentials and egress only for a published repository; a revision only for a claim filled
    by hand: anything else rolls the pods by content."""
    published = source in SCHEMES or "origin" in args.get("pvc", {})
    for key in ("credentials_secret", "store_egress"):
        if key in args and not published:
            without = " without pvc.origin" if source == "pvc" else ""
            problems.add(
                (*path, key),
                f"applies only to sources 's3' and 'gcs' and to a pvc with origin, not {source!r}{without}",
            )
    if "revision" not in args:
        return
    if published:
        problems.add(
            (*path, "revision"),
            "does not apply to a published repository (s3, gcs, pvc.origin): the pods read it under its content "
            "digest, so a model change rolls them by itself; remove revision",
        )
    elif source == "bundled":
        problems.add(
            (*path, "revision"),
            "does not apply to source 'bundled': the bundled files roll the pods by content; remove it",
        )


def repository_rules(problems: ArgProblems, path: ArgPath, args: ModelRepositoryArgs) -> StoreUri | None:
    """The keys each source takes, and only those; the object store the repository is published to."""
    source = args.get("source")
    if source is None or not problems.clean((*path, "source")):
        return None  # which keys apply depends on a source that is itself wrong
    store = _store_keys(problems, path, args, source)
    _publishing_keys(problems, path, args, source)
    return store


def claim_spread_rules(problems: ArgProblems, path: ArgPath, args: TritonServingArgs) -> None:
    """A ReadWriteOnce claim mounts on one node only: it serves one pod, so no deployment may run several and no
    two deployments may share it."""
    claim = args.get("model_repository", {}).get("pvc")
    if not isinstance(claim, Mapping) or claim.get("access_mode") != "ReadWriteOnce":
        return
    deployments = args.get("deployments", {})
    spread = [key for key, d in sorted(deployments.items()) if d.get("replicas", {}).get("max", 1) > 1] or (
        sorted(deployments) if len(deployments) > 1 else []
    )
    if spread:
        problems.add(
            (*path, "model_repository", "pvc", "access_mode"),
            f"ReadWriteOnce mounts on one node only, but {', '.join(spread)} can run several pods; use ReadOnlyMany "
            "or ReadWriteMany",
        )


def _bundle_size(problems: ArgProblems, repo: ModelRepository, served_by: Mapping[str, Sequence[str]]) -> None:
    """Each deployment's bundled files fit its ConfigMap (BUNDLE_LIMIT)."""
    for key, models in sorted(served_by.items()):
        files = version_paths(repo, [m for m in models if m in repo.models])
        size = sum(f.stat().st_size for f in files.values() if f.is_file())  # the others are refused by name
        if size > BUNDLE_LIMIT:
            problems.add(
                ("model_repository", "source"),
                f"deployment {key!r} bundles {size} bytes of model files, above the {BUNDLE_LIMIT}-byte ConfigMap "
                "budget; use pvc, s3 or gcs",
            )


def _model_source(
    problems: ArgProblems, args: ModelRepositoryArgs
) -> tuple[Path | None, StoreUri | None, tuple[StoreEgressArgs, ...]]:
    """The repository's folder, the object store it is published to, and the store's egress; the keys each
    source takes, and only those."""
    folder = _folder(problems, ("model_repository", "path"), args.get("path"))
    store = repository_rules(problems, ("model_repository",), args)
    egress = tuple(args.get("store_egress", ()))
    if store is not None and "store_egress" not in args:
        egress = _default_egress(store, args.get("credentials_secret"))
    return folder, store, egress


def ingress_keys(problems: ArgProblems, path: ArgPath, ingress: IngressArgs) -> None:
    """An enabled ingress has its hosts' domain and its certificate."""
    if ingress.get("enabled"):
        for key in ("base_domain", "tls_secret_name"):
            if key not in ingress:
                problems.add((*path, key), "missing (required when enabled)")


def ingress_rules(problems: ArgProblems, path: ArgPath, args: TritonServingArgs) -> None:
    """An enabled ingress has its hosts and certificate; each host a DNS name, and no two deployments' alike."""
    ingress = args.get("ingress", {})
    if not ingress.get("enabled"):
        return
    where: ArgPath = (*path, "ingress")
    ingress_keys(problems, where, ingress)
    domain = ingress.get("base_domain")
    if domain is None or not problems.clean((*where, "base_domain")):
        return
    owners: dict[str, str] = {}
    for name in sorted(args.get("deployments", {})):
        for suffix in INGRESS_HOST_SUFFIXES:
            host = f"{name}{suffix}.{domain}"
            if len(host) > HOST_NAME_MAX:
                problems.add(
                    (*where, "base_domain"),
                    f"host {excerpt(host)} of deployment {name!r} has {len(host)} characters; a DNS name has at most "
                    f"{HOST_NAME_MAX}, so shorten base_domain or the deployment's name",
                )
            if host in owners:
                problems.add(
                    (*path, "deployments", name),
                    f"its ingress host {host!r} is also deployment {owners[host]!r}'s; name the deployment otherwise",
                )
            owners[host] = name


def _own_labels(problems: ArgProblems, args: TritonServingArgs) -> None:
    """A user's label named like one the component sets would be overwritten on some objects and not others."""
    for key, labels in (("labels", args.get("labels", {})), ("pod_labels", args.get("pod_labels", {}))):
        for label in labels:
            if label in OWN_LABELS:
                problems.add(
                    (key, label),
                    "is a label this component sets itself (Triton's selector, role and version, what its Services, "
                    "PodDisruptionBudgets and NetworkPolicies select by); name yours otherwise",
                )


def service_account_rules(problems: ArgProblems, path: ArgPath, args: TritonServingArgs) -> None:
    """A workload-identity annotation set on Triton's ServiceAccount names an identity its cloud takes, and no pod
    label says otherwise than that identity needs (triton_platform/kube/workload_identity.py)."""
    annotations = args.get("service_account_annotations", {})
    identity_annotation_rules(problems, (*path, "service_account_annotations"), annotations)
    identity_label_rules(problems, (*path, "pod_labels"), annotations, args.get("pod_labels", {}))


ARG_NAMES = SettingNames(models="args.models", defaults="args.model_defaults", key=str, file=str)
"""The model-fit checks (triton_platform/serving/model_fit.py) in TritonServing's Args."""


def unknown_model(repo: ModelRepository, name: str, shown: str) -> str | None:
    """Why a deployment cannot serve model `name` from `repo` (its folder written as `shown`): it is not there; or
    None. The stack names it at its own key with these words (platform_config/model_checks.py)."""
    if name in repo.names:
        return None
    return f"model {name!r} is not in the model repository; known models: {repo.describe(shown)}"


def _served_models_exist(
    problems: ArgProblems, repo: ModelRepository, shown: str, served_by: Mapping[str, Sequence[str]]
) -> None:
    """Each served model is a model Triton can load from the repository, an ensemble with its steps beside it."""
    for key, models in served_by.items():
        for i, name in enumerate(models):
            path: ArgPath = ("deployments", key, "models", i)
            if not problems.clean(path):
                continue
            unknown = unknown_model(repo, name, shown)
            if unknown is not None:
                problems.add(path, unknown)
            for problem in repo.problems.get(name, []):
                problems.add(path, f"{problem.file}: {problem.message}")
    for key, unserved in unserved_steps(repo, served_by):
        problems.add(("deployments", key, "models"), unserved)


def _bundled_files_fit(problems: ArgProblems, repo: ModelRepository, served_by: Mapping[str, Sequence[str]]) -> None:
    """Each deployment's bundled files can be ConfigMap keys, one key per file (model_packaging/bundle.py)."""
    found: dict[tuple[Path, str], None] = {}  # a file two deployments bundle is named once
    for models in served_by.values():
        files = version_paths(repo, [m for m in models if m in repo.models])
        found |= dict.fromkeys(bundle_problems(files, str))
    for file, problem in found:
        problems.add_at(str(file), problem)


def _config_maps_fit(
    problems: ArgProblems, rendered: RenderedRepository, served_by: Mapping[str, Sequence[str]]
) -> None:
    """Each deployment's ConfigMap of rendered configs and stack-written files (render.py `config_map_data`): keys
    Kubernetes takes, data within its 1 MiB."""
    for key, models in sorted(served_by.items()):
        served = [m for m in models if m in rendered.models]
        data = config_map_data(rendered, served)
        for name in data:
            problem = config_map_key_problem(name)
            if problem is not None:
                model = next(m for m in served if name.startswith(f"{m}."))
                problems.add(
                    ("deployments", key, "models", list(models).index(model)),
                    f"model {excerpt(model)} needs ConfigMap key '<model>{name[len(model) :]}' for its rendered "
                    f"files, which {problem}; name the model shorter",
                )
        size = sum(len(text.encode()) for text in data.values())
        if size > CONFIG_MAP_DATA_LIMIT:
            problems.add(
                ("deployments", key, "models"),
                f"the rendered configs and engine arguments of deployment {key!r} are {size} bytes in its ConfigMap, "
                f"above Kubernetes' {CONFIG_MAP_DATA_LIMIT} bytes for a ConfigMap's data; split its models across more "
                "deployments, serve fewer versions, or shorten their engine arguments",
            )


def _toleration_rules(problems: ArgProblems, tolerations: list[Toleration]) -> None:
    """A toleration the API server accepts: no value with operator `Exists`, which matches any (kubernetes
    pkg/apis/core/validation, validateTolerations: "value must be empty when `operator` is 'Exists'")."""
    for index, toleration in enumerate(tolerations):
        if toleration.get("operator") == "Exists" and toleration.get("value"):
            problems.add(
                ("pool", "tolerations", index, "value"),
                f"{toleration['value']!r} is set with operator 'Exists', which tolerates any value; the API server "
                "refuses a value there: remove it, or use operator 'Equal'",
            )


def serving_spec(name: str, args: TritonServingArgs, default_config_name: str) -> ServingSpec:
    """TritonServing `name`'s Args checked (ArgsError naming every problem), its models read and rendered."""
    problems = ArgProblems(COMPONENT, name, named_by(TritonServingArgs))
    given = cast(TritonServingArgs, resolve_record(problems, (), args, TritonServingArgs))
    deployments = given.get("deployments", {})
    for key, deployment in deployments.items():
        if DEPLOYMENT_KEY.problem(key) is None:  # a key refused already: its rules would only add noise
            _deployment_rules(problems, key, deployment)
            _wake_rules(problems, key, deployment, given)
    _pods_services_apart(problems, deployments)
    if problems.clean(("model_repository", "pvc"), ("deployments",)):
        claim_spread_rules(problems, (), given)
    folder, store, egress = _model_source(problems, given.get("model_repository", {}))
    served_by = {key: deployment.get("models", []) for key, deployment in deployments.items()}
    served = sorted({model for models in served_by.values() for model in models})
    repo = ModelRepository(Path()) if folder is None else read_repository(folder)
    if folder is not None:
        _served_models_exist(problems, repo, str(folder), served_by)
        if given["model_repository"].get("source") == "bundled":
            _bundled_files_fit(problems, repo, served_by)
            _bundle_size(problems, repo, served_by)
    config_name = given.get("config_name")
    if config_name is None:
        config_name = default_config_name
        problem = CONFIG_NAME_FORMAT.problem(config_name)
        if problem is not None:
            problems.add(("config_name",), f"{problem} (the Pulumi stack's name, its default)")
    defaults = _checked_settings(problems, ("model_defaults",), given.get("model_defaults", {}))
    models = {
        model: _checked_settings(problems, ("models", model), settings)
        for model, settings in given.get("models", {}).items()
    }
    for model in sorted(model for model in set(models) - set(served) if MODEL.problem(model) is None):
        problems.add(
            ("models", model),
            f"settings for model {model!r}, which no deployment serves; add it to a deployment's models or remove them",
        )
    ingress_rules(problems, (), given)
    _toleration_rules(problems, given.get("pool", {}).get("tolerations", []))
    _own_labels(problems, given)
    service_account_rules(problems, (), given)
    if folder is not None and problems.clean(("model_defaults",), ("models",)):
        # Only settings that read cleanly are fitted: a value already refused would only echo its problem.
        fitted = True
        for where, problem in fit_problems(repo, served_by, defaults, models, ARG_NAMES):
            problems.add_at(where, problem)
            fitted = False
        if fitted and not dynamic_model_control(given["model_repository"].get("source", "")):
            known = [model for model in served if model in repo.models]  # the others are named already
            _config_maps_fit(problems, render_repository(config_name, repo, known, defaults, models), served_by)
        gpus = {key: deployment.get("gpus_per_pod", 1) for key, deployment in deployments.items()}
        for key, problem in engine_memory_problems(engine_memory(repo, served_by, defaults, models, gpus)):
            problems.add(("deployments", key, "gpus_per_pod"), problem)
    problems.check()
    # Rendered only from Args without a problem: the renderer takes the settings as fitting their models.
    return ServingSpec(
        args=given,
        rendered=render_repository(config_name, repo, served, defaults, models),
        store=store,
        egress=egress,
    )
