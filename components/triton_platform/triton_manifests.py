"""Pure builders for the Triton serving stack: every Kubernetes object, as plain manifests.

`serving_manifests` returns all of them for one ServingSpec (TritonServing's Args,
checked, every default applied: the builders read the Args' own types); TritonServing only turns them into
resources. Nothing here talks to Pulumi
except through the values it is handed (the admin key and the namespaces may be
pulumi Outputs, which the manifests carry as they are).
"""

from __future__ import annotations

import base64
import hashlib
import math
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pulumi

from triton_platform.http_add_on import INTERCEPTOR_LABELS, pods_service_name, wake_service_address
from triton_platform.images import image_fields
from triton_platform.input_files import InputFile, InputKind
from triton_platform.kubernetes_values import UNHEALTHY_POD_EVICTION_POLICY, quantity_value
from triton_platform.model_packaging.bundle import bundle_key
from triton_platform.model_packaging.digest import files_digest, repository_digest, version_files
from triton_platform.model_packaging.layout import MANIFEST, assemble_script
from triton_platform.model_packaging.store import StoreUri, rclone_settings
from triton_platform.namespace import DNS_EGRESS
from triton_platform.pod_spread import preferred_host_spread
from triton_platform.triton_ports import GRPC_PORT, HTTP_PORT, METRICS_PORT
from triton_platform.triton_serving_args import (
    ModelClaimArgs,
    ModelRepositoryArgs,
    TritonDeploymentArgs,
    TritonServingArgs,
)
from triton_platform.triton_serving_spec import ServingSpec
from triton_platform.workload_identity import identity_pod_labels

MODELS_DIR, STORE_DIR, RENDERED_DIR, CLAIM_DIR = "/models", "/store", "/rendered", "/claim"
STARTUP_PROBE_SECONDS, READINESS_PROBE_SECONDS = 10, 5
"""The probes' periods: a pod ready to serve is seen ready up to one of each later (a wake's last part)."""
TRITON_UID = 1000  # the `triton-server` user of the NGC tritonserver images
SERVICE_ACCOUNT = "triton-server"
ADMIN_KEY_SECRET = "triton-admin-key"
ADMIN_KEY_HEADER = "triton-admin-key"
ADMIN_KEY_ENV = "TRITON_ADMIN_KEY"
ADMIN_APIS = ("model-repository", "logging", "trace", "shared-memory")
"""Restricted in every mode: loading, log and trace control, shared memory are operator actions, never a client's."""
GCS_CREDENTIALS_DIR = "/var/run/secrets/model-store"
CONFIG_HASH_ANNOTATION = "triton-platform/model-config-sha256"
INFERENCE_PRIORITY = 100_000
"""Above every workload without a class (0); far below system-node-critical (2,000,001,000)."""
GRACE_MARGIN_SECONDS = 15


def restricted_apis(source: str) -> str:
    """API groups that need the admin key; with dynamic model control the model config too (NVIDIA's deploy guide)."""
    return ",".join((*ADMIN_APIS, "model-config") if dynamic_model_control(source) else ADMIN_APIS)


def dynamic_model_control(source: str) -> bool:
    """Object storage (`source` s3 or gcs) is shared by every deployment, so each loads its own models explicitly.

    With bundled or PVC storage each pod assembles a repository of just its models
    and Triton loads everything it finds (mode none), with no model-control API at all.
    """
    return source in ("s3", "gcs")


def tritonserver_args(
    config_name: str,
    models: Iterable[str],
    *,
    source: str,
    exit_timeout_seconds: int,
    model_repository: str = MODELS_DIR,
    ports: tuple[int, int, int] = (HTTP_PORT, GRPC_PORT, METRICS_PORT),
    admin_key: str = f"$({ADMIN_KEY_ENV})",
) -> list[str]:
    """tritonserver's flags for one deployment of models from `source`; tests run the real server with the same list."""
    http, grpc, metrics = ports
    args = [
        f"--model-repository={model_repository}",
        # configs/<config_name>.pbtxt is the rendered config; the base config.pbtxt is not shipped.
        f"--model-config-name={config_name}",
        "--disable-auto-complete-config",
    ]
    if dynamic_model_control(source):
        args += ["--model-control-mode=explicit", *(f"--load-model={m}" for m in sorted(models))]
    else:
        args.append("--model-control-mode=none")
    # gRPC callers send the key as header `triton-grpc-protocol-<name>`, HTTP callers as `<name>`.
    restriction = f"{restricted_apis(source)}:{ADMIN_KEY_HEADER}={admin_key}"
    return [
        *args,
        f"--http-restricted-api={restriction}",
        f"--grpc-restricted-protocol={restriction}",
        "--strict-readiness=true",
        "--exit-on-error=true",
        f"--exit-timeout-secs={exit_timeout_seconds}",
        f"--http-port={http}",
        f"--grpc-port={grpc}",
        "--allow-metrics=true",
        "--allow-gpu-metrics=true",
        "--allow-cpu-metrics=true",
        f"--metrics-port={metrics}",
        # p50/p95/p99 per model come from the _summary_us quantiles.
        "--metrics-config=summary_latencies=true",
    ]


def loader_script() -> str:
    """The loader Job's script: copy a published repository into the claim, then rename it into place.

    Runs with SOURCE (rclone path of `<origin>/<digest>`), DIGEST, CLAIM_DIR and
    STACK in its environment, so tests run the very same script against a local
    folder and a local S3. The rename is atomic (same folder), so a crash leaves
    only `<digest>.partial`, which the next try resumes; an existing
    `repositories/<digest>` is complete and left alone.
    """
    return f"""set -eu
target="$CLAIM_DIR/repositories/$DIGEST"
if [ -d "$target" ]; then echo "repositories/$DIGEST is already loaded"; exit 0; fi
# rclone's S3 backend ignores the AWS SDK's region variables (the credentials Secret's, workload identity's).
export RCLONE_S3_REGION="${{RCLONE_S3_REGION:-${{AWS_REGION:-${{AWS_DEFAULT_REGION:-}}}}}}"
if ! rclone lsf "$SOURCE" --files-only | grep -qx {shlex.quote(MANIFEST)}; then
  echo "$SOURCE is not a complete published repository (no {MANIFEST}): run stackctl publish-models --stack $STACK" >&2
  exit 1
fi
mkdir -p "$CLAIM_DIR/repositories"
rclone copy "$SOURCE" "$target.partial" --checksum
if ! grep -qF "\\"digest\\": \\"$DIGEST\\"" "$target.partial/{MANIFEST}"; then
  echo "$SOURCE/{MANIFEST} does not record digest $DIGEST" >&2
  exit 1
fi
mv "$target.partial" "$target"
echo "loaded repositories/$DIGEST from $SOURCE"
"""


def deployment_object_name(deployment: str) -> str:
    """Name of a Triton deployment's Deployment, Service, PDB and NetworkPolicy (and, later, its ScaledObject).

    Prometheus sees it as the `deployment` label of every series the deployment exports.
    """
    return f"triton-{deployment}"


APP_NAME = "triton-inference-server"
"""`app.kubernetes.io/name` of every Triton object: what the ServiceMonitor selects."""


def selector_labels(deployment: str) -> dict[str, str]:
    """Stable across upgrades: never the version."""
    return {
        "app.kubernetes.io/name": APP_NAME,
        "app.kubernetes.io/instance": deployment_object_name(deployment),
    }


def image_version(image: str) -> str:
    """A label-safe version of the image: its tag, or the start of its digest."""
    if "@sha256:" in image:
        return "sha256-" + image.split("@sha256:")[1][:12]
    return image.rpartition(":")[2][:63]


@dataclass(frozen=True)
class ServingContext:
    """What the builders read: TritonServing's checked Args and the admin key it generated."""

    spec: ServingSpec
    admin_key: Any = None
    """The restricted-API key (a string or a pulumi Output)."""

    @cached_property
    def digest(self) -> str:
        """Content digest of the rendered repository: where a published one lives (`<uri>/<digest>`)."""
        return repository_digest(self.spec.rendered)

    @property
    def args(self) -> TritonServingArgs:
        """TritonServing's Args, checked, every default applied."""
        return self.spec.args

    @property
    def repository(self) -> ModelRepositoryArgs:
        return self.spec.args["model_repository"]

    @property
    def store(self) -> StoreUri | None:
        return self.spec.store

    @property
    def namespace(self) -> str:
        return self.spec.args["namespace"]

    @property
    def source(self) -> str:
        """Where the model files come from: `bundled`, `pvc`, `s3` or `gcs`."""
        return self.repository["source"]

    @property
    def config_name(self) -> str:
        """Triton reads each model's config from `configs/<config_name>.pbtxt`: the name it was rendered under."""
        return self.spec.rendered.config_name

    def metadata(self, name: str, deployment: str | None = None, **extra: Any) -> dict[str, Any]:
        labels = dict(self.args["labels"])
        if deployment:
            labels |= {**selector_labels(deployment), "app.kubernetes.io/component": "inference-server"}
        return {"name": name, "namespace": self.namespace, "labels": labels, **extra}

    def priority_class(self) -> str:
        # Cluster-scoped: named after the namespace so stacks sharing a cluster do not collide.
        return f"{self.namespace}-inference"


BUNDLED_FILE = InputKind("bundled model file", 1024 * 1024)
"""A bundled file rides in a ConfigMap, whose data Kubernetes caps at 1 MiB
(kubernetes.io/docs/concepts/configuration/configmap/): no file above that can ship this way."""


def _bundle_files(ctx: ServingContext, deployment: TritonDeploymentArgs) -> dict[str, bytes]:
    if ctx.source != "bundled":
        return {}
    files = version_files(ctx.spec.rendered, deployment["models"])
    return {path: InputFile(source.path, BUNDLED_FILE).read_bytes() for path, source in files.items()}


def pod_digest(ctx: ServingContext, deployment: TritonDeploymentArgs) -> str:
    """Changes whenever what the pods load changes: rendered configs, bundled files, the store's revision."""
    rendered = ctx.spec.rendered.digest(deployment["models"])
    files = files_digest(_bundle_files(ctx, deployment))
    revision = ctx.repository.get("revision", "")
    return hashlib.sha256(f"{rendered}:{files}:{revision}".encode()).hexdigest()


def config_map_name(ctx: ServingContext, deployment: TritonDeploymentArgs, name: str) -> str:
    # Named by content: a change is a new ConfigMap, created before the old one goes.
    return f"triton-{name}-config-{ctx.spec.rendered.digest(deployment['models'])[:10]}"


def bundle_map_name(ctx: ServingContext, deployment: TritonDeploymentArgs, name: str) -> str:
    return f"triton-{name}-models-{files_digest(_bundle_files(ctx, deployment))[:10]}"


def _config_map(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": ctx.metadata(config_map_name(ctx, deployment, name), name),
        "immutable": True,
        "data": {f"{m}.pbtxt": ctx.spec.rendered.models[m].text for m in sorted(deployment["models"])},
    }


def _bundle_map(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    files = _bundle_files(ctx, deployment)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": ctx.metadata(bundle_map_name(ctx, deployment, name), name),
        "immutable": True,
        "binaryData": {bundle_key(path): base64.b64encode(data).decode() for path, data in files.items()},
    }


def _security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _pod_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": TRITON_UID,
        "runAsGroup": TRITON_UID,
        "fsGroup": TRITON_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _store_volume(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    if ctx.source == "pvc":
        claim = ctx.repository["pvc"]
        return {"name": "model-store", "persistentVolumeClaim": {"claimName": claim["claim_name"], "readOnly": True}}
    files = _bundle_files(ctx, deployment)
    items = [{"key": bundle_key(path), "path": path} for path in files]
    return {"name": "model-store", "configMap": {"name": bundle_map_name(ctx, deployment, name), "items": items}}


def _store_mount(ctx: ServingContext) -> dict[str, Any]:
    """The store, read-only; a loaded claim only through its `repositories/<digest>` folder."""
    mount = {"name": "model-store", "mountPath": STORE_DIR, "readOnly": True}
    pvc = ctx.repository.get("pvc")
    if pvc is not None and "origin" in pvc:
        mount["subPath"] = f"repositories/{ctx.digest}"
    return mount


@dataclass(frozen=True)
class StoreAccess:
    """What a container reading the object store needs: credentials by reference only."""

    env: list[dict[str, Any]]
    env_from: list[dict[str, Any]]
    volumes: list[dict[str, Any]]
    mounts: list[dict[str, Any]]


def store_access(ctx: ServingContext) -> StoreAccess:
    """S3: the Secret's keys as the environment; GCS: its credentials.json as a file. Unset: workload identity."""
    secret, store = ctx.repository.get("credentials_secret"), ctx.store
    if store is None or secret is None:
        return StoreAccess([], [], [], [])
    if store.backend == "s3":
        return StoreAccess([], [{"secretRef": {"name": secret}}], [], [])
    return StoreAccess(
        [{"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": f"{GCS_CREDENTIALS_DIR}/credentials.json"}],
        [],
        [{"name": "model-store-credentials", "secret": {"secretName": secret}}],
        [{"name": "model-store-credentials", "mountPath": GCS_CREDENTIALS_DIR, "readOnly": True}],
    )


def _volumes(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> list[dict[str, Any]]:
    serving = ctx.args
    volumes: list[dict[str, Any]] = [
        {"name": "tmp", "emptyDir": {"sizeLimit": serving["tmp_size_limit"]}},
        # The Python backend passes tensors through shared memory.
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": serving["shm_size_limit"]}},
    ]
    if not dynamic_model_control(ctx.source):
        return [
            *volumes,
            {"name": "models", "emptyDir": {"sizeLimit": MODELS_DIR_SIZE}},
            _store_volume(ctx, name, deployment),
            {"name": "rendered-config", "configMap": {"name": config_map_name(ctx, deployment, name)}},
        ]
    return volumes + store_access(ctx).volumes


MODELS_DIR_SIZE = "64Mi"
"""The assembled repository: symlinks and rendered configs only."""
LOG_ALLOWANCE = "512Mi"
"""Container logs count against ephemeral storage; the kubelet rotates them (10Mi x 5 files by default)."""


def triton_ephemeral_storage(serving: TritonServingArgs) -> str:
    """Every byte a Triton pod may write to node disk: /tmp (object-store downloads), the assembled repository, logs.

    Requested as much as allowed, so a pod within its bound is never the first evicted under disk pressure.
    """
    mebibytes = sum(quantity_value(q) for q in (serving["tmp_size_limit"], MODELS_DIR_SIZE, LOG_ALLOWANCE)) / 2**20
    return f"{math.ceil(mebibytes)}Mi"


def _triton_container(ctx: ServingContext, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    serving = ctx.args
    resources = deployment["resources"]
    http = {"path": "/v2/health/ready", "port": "http"}
    mounts: list[dict[str, Any]] = [{"name": "tmp", "mountPath": "/tmp"}, {"name": "dshm", "mountPath": "/dev/shm"}]
    env: list[dict[str, Any]] = [
        {"name": ADMIN_KEY_ENV, "valueFrom": {"secretKeyRef": {"name": ADMIN_KEY_SECRET, "key": "key"}}}
    ]
    if dynamic_model_control(ctx.source):
        assert ctx.store is not None
        # Triton reads the published version itself; a new digest is a new path, so the pods roll.
        repository, access = ctx.store.triton_path(ctx.digest), store_access(ctx)
        mounts, env = mounts + access.mounts, env + access.env
    else:
        repository, access = MODELS_DIR, StoreAccess([], [], [], [])
        mounts += [{"name": "models", "mountPath": MODELS_DIR, "readOnly": True}, _store_mount(ctx)]
    container: dict[str, Any] = {
        "name": "triton",
        **image_fields(serving["image"], serving["image_digests"]),
        "command": ["tritonserver"],
        "args": tritonserver_args(
            ctx.config_name,
            deployment["models"],
            source=ctx.source,
            exit_timeout_seconds=serving["drain"]["exit_timeout_seconds"],
            model_repository=repository,
        ),
        "ports": [
            {"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        "resources": {
            "requests": {
                "cpu": resources["requests"]["cpu"],
                "memory": resources["requests"]["memory"],
                "ephemeral-storage": triton_ephemeral_storage(serving),
            },
            "limits": {
                "cpu": resources["limits"]["cpu"],
                "memory": resources["limits"]["memory"],
                "ephemeral-storage": triton_ephemeral_storage(serving),
                serving["pool"]["gpu_resource"]: str(deployment["gpus_per_pod"]),
            },
        },
        # Model loading can take minutes: the startup probe allows for it, the others start after it.
        "startupProbe": {
            "httpGet": http,
            "periodSeconds": STARTUP_PROBE_SECONDS,
            "timeoutSeconds": 5,
            "failureThreshold": math.ceil(serving["startup_timeout_seconds"] / STARTUP_PROBE_SECONDS),
        },
        "readinessProbe": {
            "httpGet": http,
            "periodSeconds": READINESS_PROBE_SECONDS,
            "timeoutSeconds": 3,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "httpGet": {"path": "/v2/health/live", "port": "http"},
            "periodSeconds": 10,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
        },
        "securityContext": _security_context(),
        "volumeMounts": mounts,
    }
    container["env"] = env
    if access.env_from:
        container["envFrom"] = access.env_from
    pre_stop = serving["drain"]["pre_stop_seconds"]
    if pre_stop:
        # Endpoints are removed while Triton still serves; then SIGTERM starts its own drain.
        container["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", str(pre_stop)]}}}
    return container


def _extra_files(ctx: ServingContext, deployment: TritonDeploymentArgs) -> dict[str, tuple[str, ...]]:
    """Each served model's label and warmup data files, which the assembled repository links beside its versions."""
    models = ctx.spec.rendered.source.models
    return {model: models[model].extra_files for model in deployment["models"] if model in models}


def _assemble_container(ctx: ServingContext, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    return {
        "name": "assemble-model-repository",
        **image_fields(ctx.args["image"], ctx.args["image_digests"]),
        "command": ["/bin/sh", "-c", assemble_script(deployment["models"], _extra_files(ctx, deployment))],
        "env": [
            {"name": "STACK", "value": ctx.config_name},
            {"name": "MODELS_DIR", "value": MODELS_DIR},
            {"name": "STORE_DIR", "value": STORE_DIR},
            {"name": "RENDERED_DIR", "value": RENDERED_DIR},
        ],
        # It writes only into the `models` emptyDir (counted there); the rest is its log.
        "resources": {
            "requests": {"cpu": "50m", "memory": "32Mi", "ephemeral-storage": "16Mi"},
            "limits": {"cpu": "200m", "memory": "64Mi", "ephemeral-storage": "64Mi"},
        },
        "securityContext": _security_context(),
        "volumeMounts": [
            {"name": "models", "mountPath": MODELS_DIR},
            _store_mount(ctx),
            {"name": "rendered-config", "mountPath": RENDERED_DIR, "readOnly": True},
        ],
    }


LOADER_NAME = "triton-model-loader"
LOADER_DEADLINE_SECONDS = 3600
"""The loader's whole budget, every retry included; Pulumi waits as long (triton_serving.LOADER_TIMEOUT)."""


def loader_job_name(ctx: ServingContext) -> str:
    # One Job per published version: a new digest is a new Job, and the Deployments wait for it.
    return f"model-loader-{ctx.digest[:16]}"


def loader_job_manifest(ctx: ServingContext, pvc: ModelClaimArgs) -> dict[str, Any]:
    """Fills `repositories/<digest>` of the claim from pvc.origin, once per digest, for every deployment.

    One Job for the stack, not one per deployment: the repository is the stack's,
    and a single writer never races another for the same `.partial` folder.
    """
    store = ctx.store
    assert store is not None
    access = store_access(ctx)
    labels = {"app.kubernetes.io/name": LOADER_NAME, "app.kubernetes.io/component": "model-loader"}
    metadata = ctx.metadata(loader_job_name(ctx))
    metadata["labels"] |= labels
    settings = {**rclone_settings(store), "SOURCE": store.rclone_path(ctx.digest), "DIGEST": ctx.digest}
    container: dict[str, Any] = {
        "name": "load",
        **image_fields(pvc["loader_image"], ctx.args["image_digests"]),
        "command": ["/bin/sh", "-c", loader_script()],
        "env": [
            *(
                {"name": k, "value": v}
                for k, v in sorted({**settings, "CLAIM_DIR": CLAIM_DIR, "STACK": ctx.config_name}.items())
            ),
            *access.env,
        ],
        "resources": {
            # rclone streams to the claim; its own disk use is logs only.
            "requests": {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "64Mi"},
            "limits": {"cpu": "1", "memory": "512Mi", "ephemeral-storage": "256Mi"},
        },
        "securityContext": _security_context(),
        "volumeMounts": [{"name": "claim", "mountPath": CLAIM_DIR}, *access.mounts],
    }
    if access.env_from:
        container["envFrom"] = access.env_from
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 3,
            "activeDeadlineSeconds": LOADER_DEADLINE_SECONDS,
            # A day to read its logs; a later `pulumi refresh` then drops it and `up` reruns it (a no-op).
            "ttlSecondsAfterFinished": 86_400,
            "template": {
                "metadata": {"labels": {**metadata["labels"], **user_pod_labels(ctx.args)}},
                "spec": {
                    "restartPolicy": "Never",
                    # Triton's ServiceAccount: the same workload identity reads the same store.
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    # Triton's UID: the files it writes are Triton's to read.
                    "securityContext": _pod_security_context(),
                    "containers": [container],
                    "volumes": [
                        {"name": "claim", "persistentVolumeClaim": {"claimName": pvc["claim_name"]}},
                        *access.volumes,
                    ],
                },
            },
        },
    }


def user_pod_labels(args: TritonServingArgs) -> dict[str, str]:
    """`pod_labels`, with those a workload-identity annotation of the ServiceAccount needs (Azure's
    `azure.workload.identity/use: "true"`): an annotation set by hand gives the pods their identity too."""
    return {**identity_pod_labels(args["service_account_annotations"]), **args["pod_labels"]}


def deployment_manifest(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> dict[str, Any]:
    serving = ctx.args
    selector = selector_labels(name)
    pod_labels = {
        **user_pod_labels(serving),
        **ctx.metadata("", name)["labels"],
        "app.kubernetes.io/version": image_version(serving["image"]),
    }
    drain = serving["drain"]
    pod_spec: dict[str, Any] = {
        "serviceAccountName": SERVICE_ACCOUNT,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "priorityClassName": ctx.priority_class(),
        "terminationGracePeriodSeconds": drain["pre_stop_seconds"]
        + drain["exit_timeout_seconds"]
        + GRACE_MARGIN_SECONDS,
        "securityContext": _pod_security_context(),
        "nodeSelector": dict(serving["pool"]["node_selector"]),
        "tolerations": list(serving["pool"]["tolerations"]),
        "containers": [_triton_container(ctx, deployment)],
        "volumes": _volumes(ctx, name, deployment),
    }
    if not dynamic_model_control(ctx.source):
        pod_spec["initContainers"] = [_assemble_container(ctx, deployment)]
    if deployment["replicas"]["max"] > 1:
        # Prefer one replica per node and zone; never block scheduling when the pool is short of nodes.
        pod_spec["affinity"] = preferred_host_spread(selector)
        pod_spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": selector},
            }
            for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")
        ]
    spec: dict[str, Any] = {
        "revisionHistoryLimit": 5,
        "selector": {"matchLabels": selector},
        # Never below the current count during a rollout: a new pod is ready before an old one goes.
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        "template": {
            "metadata": {
                "labels": pod_labels,
                # A config change changes the pod template, which rolls the pods.
                "annotations": {CONFIG_HASH_ANNOTATION: pod_digest(ctx, deployment)},
            },
            "spec": pod_spec,
        },
    }
    if not serving["autoscaled"]:
        spec["replicas"] = deployment["replicas"]["min"]  # the autoscaler owns the count otherwise: never set it
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": ctx.metadata(deployment_object_name(name), name),
        "spec": spec,
    }


def service_manifest(ctx: ServingContext, name: str, service_name: str | None = None) -> dict[str, Any]:
    """The Service of a deployment's pods: the one clients call (`triton-<name>`), or, for a deployment woken on
    request, the interceptor's target (`service_name`)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(service_name or deployment_object_name(name), name),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(name),
            "ports": [
                {"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP", "appProtocol": "http"},
                {
                    "name": "grpc",
                    "port": GRPC_PORT,
                    "targetPort": "grpc",
                    "protocol": "TCP",
                    "appProtocol": "kubernetes.io/h2c",
                },
                {
                    "name": "metrics",
                    "port": METRICS_PORT,
                    "targetPort": "metrics",
                    "protocol": "TCP",
                    "appProtocol": "http",
                },
            ],
        },
    }


def wake_service_manifest(ctx: ServingContext, name: str) -> dict[str, Any]:
    """The Service clients call a deployment woken on request by: an ExternalName to the add-on's wake Service,
    which the interceptor's pods behind it serve on the same ports (triton_platform/http_add_on.py)."""
    address = wake_service_address(ctx.namespace, ctx.args["interceptor_namespace"], ctx.args["cluster_domain"])
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(deployment_object_name(name), name),
        "spec": {
            "type": "ExternalName",
            "externalName": address,
            # Informational for an ExternalName (the client's port is kept): what the wake Service listens on.
            "ports": [
                {"name": "http", "port": HTTP_PORT, "protocol": "TCP", "appProtocol": "http"},
                {"name": "grpc", "port": GRPC_PORT, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"},
            ],
        },
    }


def _peer(namespace: pulumi.Input[str], pod_labels: Mapping[str, str]) -> dict[str, Any]:
    peer: dict[str, Any] = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
    if pod_labels:
        peer["podSelector"] = {"matchLabels": dict(pod_labels)}
    return peer


def store_egress(ctx: ServingContext) -> list[dict[str, Any]]:
    """DNS, and the object store's addresses and ports (`modelRepository.storeEgress`)."""
    return [
        DNS_EGRESS,
        *(
            {
                "to": [{"ipBlock": {"cidr": rule["cidr"]}}],
                "ports": [{"protocol": "TCP", "port": p} for p in rule["ports"]],
            }
            for rule in ctx.spec.egress
        ),
    ]


def loader_network_policy(ctx: ServingContext) -> dict[str, Any]:
    """The loader Job reaches DNS and the object store; nothing reaches it."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": ctx.metadata(LOADER_NAME),
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": LOADER_NAME}},
            "policyTypes": ["Ingress", "Egress"],
            "egress": store_egress(ctx),
        },
    }


def network_policy_manifest(ctx: ServingContext, name: str, woken: bool = False) -> dict[str, Any]:
    """Metrics only from Prometheus; inference only from the configured clients and the ingress controller, and,
    for a deployment woken on request (`woken`), the KEDA HTTP add-on's interceptor, which forwards their requests.

    Egress: DNS, and the object store when Triton reads it itself (s3, gcs); the namespace denies the rest.
    """
    rules: list[dict[str, Any]] = [
        {
            "from": [_peer(ctx.args["metrics_namespace"], ctx.args["metrics_pod_labels"])],
            "ports": [{"protocol": "TCP", "port": METRICS_PORT}],
        }
    ]
    clients = [_peer(c["namespace"], c["pod_labels"]) for c in ctx.args["inference_clients"]]
    ingress = ctx.args["ingress"]
    if ingress["enabled"]:
        clients.append(_peer(ingress["controller_namespace"], {}))
    if woken:
        clients.append(_peer(ctx.args["interceptor_namespace"], INTERCEPTOR_LABELS))
    if clients:
        ports = [{"protocol": "TCP", "port": HTTP_PORT}, {"protocol": "TCP", "port": GRPC_PORT}]
        rules.append({"from": clients, "ports": ports})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": ctx.metadata(deployment_object_name(name), name),
        "spec": {
            "podSelector": {"matchLabels": selector_labels(name)},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": rules,
            "egress": store_egress(ctx) if dynamic_model_control(ctx.source) else [DNS_EGRESS],
        },
    }


def pdb_manifest(ctx: ServingContext, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": ctx.metadata(deployment_object_name(name), name),
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": selector_labels(name)},
            # An unready Triton (a failed model load, a GPU fault) serves nothing: evicting it must never
            # wait for it to become ready, or it blocks node drains (policy/v1 PodDisruptionBudgetSpec).
            "unhealthyPodEvictionPolicy": UNHEALTHY_POD_EVICTION_POLICY,
        },
    }


def ingress_hosts(name: str, base_domain: str) -> dict[str, str]:
    """The host of each protocol's Ingress of a deployment, by protocol."""
    return {"http": f"{name}.{base_domain}", "grpc": f"{name}-grpc.{base_domain}"}


def ingress_manifests(ctx: ServingContext, name: str) -> list[dict[str, Any]]:
    """One Ingress per protocol: ingress-nginx's backend-protocol annotation applies to a whole Ingress."""
    ingress = ctx.args["ingress"]
    out = []
    body = {"nginx.ingress.kubernetes.io/proxy-body-size": ingress["max_request_body"]}
    hosts = ingress_hosts(name, ingress["base_domain"])
    for protocol, extra in (
        ("http", body),
        ("grpc", {**body, "nginx.ingress.kubernetes.io/backend-protocol": "GRPC"}),
    ):
        host = hosts[protocol]
        backend = {"service": {"name": deployment_object_name(name), "port": {"name": protocol}}}
        out.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": ctx.metadata(f"triton-{name}-{protocol}", name, annotations=extra),
                "spec": {
                    "ingressClassName": ingress["class_name"],
                    "tls": [{"hosts": [host], "secretName": ingress["tls_secret_name"]}],
                    "rules": [
                        {"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}
                    ],
                },
            }
        )
    return out


Manifests = dict[str, dict[str, Any]]
"""Objects by role (`service-account`, `general-deployment`, ...): the role names the Pulumi resource."""


def shared_manifests(ctx: ServingContext) -> Manifests:
    """Objects every deployment of the stack shares."""
    service_account = ctx.metadata(SERVICE_ACCOUNT)
    if ctx.args["service_account_annotations"]:
        service_account["annotations"] = dict(ctx.args["service_account_annotations"])
    metadata = ctx.metadata(ctx.priority_class())
    del metadata["namespace"]
    out: Manifests = {
        "service-account": {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": service_account,
            "automountServiceAccountToken": False,
        },
        "priority-class": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": metadata,
            "value": INFERENCE_PRIORITY,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": f"Triton inference serving in {ctx.namespace}: outranks batch and dev workloads.",
        },
    }
    pvc = ctx.repository.get("pvc")
    if pvc is not None and pvc["create"]:
        spec: dict[str, Any] = {
            "accessModes": [pvc["access_mode"]],
            "resources": {"requests": {"storage": pvc["size"]}},
        }
        if pvc.get("storage_class_name"):
            spec["storageClassName"] = pvc["storage_class_name"]
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": ctx.metadata(pvc["claim_name"])}
        out["model-repository"] = {**claim, "spec": spec}
    if pvc is not None and "origin" in pvc:
        out["model-loader"] = loader_job_manifest(ctx, pvc)
        out["model-loader-network-policy"] = loader_network_policy(ctx)
    out["admin-key"] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": ctx.metadata(ADMIN_KEY_SECRET),
        "type": "Opaque",
        "stringData": {"key": ctx.admin_key},
    }
    return out


def deployment_manifests(ctx: ServingContext, name: str, deployment: TritonDeploymentArgs) -> Manifests:
    """Every object of one Triton deployment."""
    out: Manifests = {}
    if not dynamic_model_control(ctx.source):
        # Content-named: a change is a new ConfigMap under the same role, so a replace.
        out[f"{name}-config"] = _config_map(ctx, name, deployment)
        if ctx.source == "bundled":
            out[f"{name}-models"] = _bundle_map(ctx, name, deployment)
    out[f"{name}-deployment"] = deployment_manifest(ctx, name, deployment)
    woken = deployment["wake_on_request"]
    if woken:
        out[f"{name}-pods-service"] = service_manifest(ctx, name, pods_service_name(deployment_object_name(name)))
        out[f"{name}-service"] = wake_service_manifest(ctx, name)
    else:
        out[f"{name}-service"] = service_manifest(ctx, name)
    out[f"{name}-network-policy"] = network_policy_manifest(ctx, name, woken)
    if deployment["replicas"]["max"] > 1:
        out[f"{name}-pdb"] = pdb_manifest(ctx, name)
    if ctx.args["ingress"]["enabled"]:
        http, grpc = ingress_manifests(ctx, name)
        out[f"{name}-ingress-http"], out[f"{name}-ingress-grpc"] = http, grpc
    return out


def serving_manifests(ctx: ServingContext) -> Manifests:
    """All objects of the Triton serving stack."""
    out = shared_manifests(ctx)
    for name, deployment in sorted(ctx.args["deployments"].items()):
        out |= deployment_manifests(ctx, name, deployment)
    return out
