"""The Deployment of one Triton deployment: its pod template, with the Triton container (arguments, ports,
resources, probes, drain), the pod's volumes, placement and spread, and the annotation that rolls the pods when
what they load changes.
"""

from __future__ import annotations

import math
from typing import Any

from triton_platform.args.kubernetes_values import quantity_value
from triton_platform.kube.images import image_fields
from triton_platform.kube.pod_security import pod_security_context, security_context
from triton_platform.kube.pod_spread import preferred_host_spread
from triton_platform.serving.assembled_repository import (
    assemble_container,
    config_map_name,
    pod_digest,
    store_mount,
    store_volume,
)
from triton_platform.serving.object_store_access import StoreAccess, store_access
from triton_platform.serving.serving_context import (
    SERVICE_ACCOUNT,
    ServingContext,
    deployment_object_name,
    selector_labels,
    user_pod_labels,
)
from triton_platform.serving.triton_server_args import (
    ADMIN_KEY_ENV,
    ADMIN_KEY_SECRET,
    MODELS_DIR,
    dynamic_model_control,
    tritonserver_args,
)
from triton_platform.serving.triton_serving_args import TritonDeploymentArgs, TritonServingArgs
from triton_platform.triton_ports import GRPC_PORT, HTTP_PORT, METRICS_PORT

STARTUP_PROBE_SECONDS, READINESS_PROBE_SECONDS = 10, 5
"""The probes' periods: a pod ready to serve is seen ready up to one of each later (a wake's last part)."""
CONFIG_HASH_ANNOTATION = "triton-platform/model-config-sha256"
GRACE_MARGIN_SECONDS = 15


def image_version(image: str) -> str:
    """A label-safe version of the image: its tag, or the start of its digest."""
    if "@sha256:" in image:
        return "sha256-" + image.split("@sha256:")[1][:12]
    return image.rpartition(":")[2][:63]


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
            store_volume(ctx, name, deployment),
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
        mounts += [{"name": "models", "mountPath": MODELS_DIR, "readOnly": True}, store_mount(ctx)]
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
            streaming=ctx.streams(deployment["models"]),
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
        "securityContext": security_context(),
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
        "securityContext": pod_security_context(),
        "nodeSelector": dict(serving["pool"]["node_selector"]),
        "tolerations": list(serving["pool"]["tolerations"]),
        "containers": [_triton_container(ctx, deployment)],
        "volumes": _volumes(ctx, name, deployment),
    }
    if not dynamic_model_control(ctx.source):
        pod_spec["initContainers"] = [assemble_container(ctx, deployment)]
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
